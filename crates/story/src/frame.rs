//! The scene frame a character acts in: where it is, who else is there, the scene's
//! direction for it, the turn, and the ways out. Only what the character can see.

use dramatis_proto::v1 as pb;

use crate::state::WorldState;
use dramatis_scenario::Scenario;

/// The frame of `actor`'s turn in the scene running in `state`.
#[must_use]
pub fn frame_for(scenario: &Scenario, state: &WorldState, actor: &str) -> pb::SceneFrame {
    let here = state.scene_location.clone();
    let location = scenario.location(&here);
    let exits: Vec<String> = scenario
        .neighbours(&here)
        .into_iter()
        .map(|(id, _)| id.to_owned())
        .collect();
    let (direction, max_turns, scenes_here) = match &scenario.open {
        // Open stories: the character's own goal steers it (kept in its shard).
        Some(open) => (
            String::new(),
            open.scene_turns,
            state.stay.get(actor).copied().unwrap_or(0),
        ),
        None => {
            let scene = &scenario.scenes[state.scene];
            (
                scene.directions.get(actor).cloned().unwrap_or_default(),
                scene.max_turns,
                0,
            )
        }
    };
    pb::SceneFrame {
        scene_id: state.scene_id.clone(),
        scene_index: dramatis_base::saturating_u32(state.scene + 1),
        location_id: here.clone(),
        location_name: location.map(|l| l.name.clone()).unwrap_or_default(),
        location_description: location.map(|l| l.description.clone()).unwrap_or_default(),
        present: state
            .present_at(&here)
            .into_iter()
            .filter(|who| who != actor)
            .map(|who| pb::PresentCharacter {
                name: scenario.name_of(&who).to_owned(),
                id: who,
            })
            .collect(),
        direction,
        turn: state.scene_turn + 1,
        max_turns,
        exits,
        scenes_here,
        others_present: 0,
        seed: 0,
    }
}

#[cfg(test)]
mod tests {
    use dramatis_proto::v1::Event;

    use super::*;
    use crate::drafts::{Stamp, scene_opening};
    use crate::test_scenarios::{open_story, scripted};

    /// `state` after the drafts of the first scene's opening are applied.
    fn opened(scenario: &Scenario) -> WorldState {
        let mut state = WorldState::initial(scenario);
        for (seq, draft) in scene_opening(scenario, &state).into_iter().enumerate() {
            let event: Event = draft.into_event(
                scenario,
                &state,
                Stamp {
                    world_id: "w",
                    seq: seq as u64 + 1,
                    perceivers: Vec::new(),
                    origin_perceivers: Vec::new(),
                    timestamp_ms: 0,
                },
            );
            state.apply(scenario, &event);
        }
        state
    }

    #[test]
    fn a_frame_shows_the_place_the_others_present_the_direction_and_the_exits() {
        let scenario = scripted();
        let state = opened(&scenario);
        let frame = frame_for(&scenario, &state, "watson");
        assert_eq!(
            (
                frame.scene_id.as_str(),
                frame.scene_index,
                frame.turn,
                frame.max_turns
            ),
            ("meeting", 1, 1, 4)
        );
        assert_eq!(
            (frame.location_id.as_str(), frame.location_name.as_str()),
            ("lab", "the Lab")
        );
        assert_eq!(frame.location_description, "Bottles and burners.");
        let present: Vec<(&str, &str)> = frame
            .present
            .iter()
            .map(|p| (p.id.as_str(), p.name.as_str()))
            .collect();
        // Not Watson himself, and not Lestrade, who stayed at the bar.
        assert_eq!(present, [("holmes", "Sherlock Holmes")]);
        assert_eq!(frame.direction, "You need rooms.");
        assert_eq!(frame_for(&scenario, &state, "holmes").direction, "");
        assert_eq!(frame.exits, ["bar"]);
        assert_eq!(frame.scenes_here, 0);
    }

    #[test]
    fn an_open_story_frame_has_no_direction_and_counts_the_stay() {
        let scenario = open_story();
        let mut state = WorldState::initial(&scenario);
        state.scene_location = "lab".into();
        state.stay.insert("holmes".into(), 3);
        let frame = frame_for(&scenario, &state, "holmes");
        assert_eq!(
            (frame.direction.as_str(), frame.max_turns, frame.scenes_here),
            ("", 5, 3)
        );
        assert_eq!(frame.present.len(), 0, "Watson starts at the bar");
    }
}

#[cfg(test)]
mod crowd_tests {
    use std::path::Path;

    use dramatis_proto::v1::{Event, EventKind};
    use dramatis_scenario::Scenario;

    use super::frame_for;
    use crate::names::Perspective;
    use crate::state::WorldState;

    /// Forty people on one square, `c00` knowing `c01` from the start, with the
    /// scenario's `attention` line.
    fn square(attention: &str) -> Result<Scenario, dramatis_scenario::ScenarioError> {
        let mut text = format!(
            "version = 1\nname = \"sq\"\ntitle = \"Square\"\n{attention}\n\
             [open]\npremise = \"A fair.\"\nopening_location = \"square\"\nrounds = 2\n\
             [[locations]]\nid = \"square\"\nname = \"the Square\"\n"
        );
        for i in 0..40 {
            let knows = if i == 0 { "knows = [\"c01\"]\n" } else { "" };
            text.push_str(&format!(
                "[[characters]]\nid = \"c{i:02}\"\nname = \"Person {i}\"\nprofile = \"p\"\n\
                 location = \"square\"\n{knows}"
            ));
        }
        Scenario::parse(&text, Path::new("square.toml"))
    }

    fn everyone() -> Vec<String> {
        (0..40).map(|i| format!("c{i:02}")).collect()
    }

    /// The scene opened, `c30` addressed `c00`, then `c35` spoke.
    fn played(scenario: &Scenario) -> (WorldState, Event) {
        let mut state = WorldState::initial(scenario);
        let start = Event {
            seq: 1,
            kind: EventKind::SceneStart as i32,
            location: "square".into(),
            perceivers: everyone(),
            ..Event::default()
        };
        let line = |seq: u64, speaker: &str, target: &str| Event {
            seq,
            turn: 1,
            kind: EventKind::Speech as i32,
            location: "square".into(),
            speaker: speaker.into(),
            target: target.into(),
            text: "Fine weather.".into(),
            perceivers: everyone(),
            ..Event::default()
        };
        let last = line(3, "c35", "");
        for event in [start, line(2, "c30", "c00"), last.clone()] {
            state.apply(scenario, &event);
        }
        (state, last)
    }

    fn view<'a>(scenario: &'a Scenario, state: &'a WorldState, me: &'a str) -> Perspective<'a> {
        Perspective {
            scenario,
            world_id: "w",
            known: &state.acquaintances,
            attention: &state.attention,
            me,
        }
    }

    #[test]
    fn in_a_crowd_a_turn_names_the_addresser_and_the_last_speaker_first_and_counts_the_rest() {
        let scenario = square("").expect("parses");
        let (state, last) = played(&scenario);
        let me = view(&scenario, &state, "c00");
        let frame = me.frame(frame_for(&scenario, &state, "c00"));
        let ids: Vec<&str> = frame.present.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids.len(), 12);
        assert_eq!(frame.others_present, 39 - 12);
        // Strangers by handle, the one known from the start by id, then the nearest.
        assert_eq!(ids[0], me.handle("c30"));
        assert_eq!(ids[1], me.handle("c35"));
        assert_eq!(ids[2], "c01");
        assert_eq!(ids[3], me.handle("c02"));
        assert!(ids.iter().all(|id| !id.starts_with('c') || *id == "c01"));

        // The copy of the last line names c00 itself, the speaker and the addresser.
        let copy = me.event(&last).expect("c00 perceived it");
        assert_eq!(copy.perceivers.len(), 13);
        assert_eq!(copy.others_perceiving, 40 - 13);
        for who in ["c00", "c35", "c30", "c01"] {
            assert!(copy.perceivers.contains(&me.handle(who)), "{who}");
        }
        assert_eq!(copy.perceivers.len(), copy.perceiver_names.len());
        // The log keeps every perceiver.
        assert_eq!(last.perceivers.len(), 40);

        // Someone else's turn ranks by its own dealings: c35 spoke last, so c30 (the
        // one before) is its first, and c00 is not pinned.
        let other = view(&scenario, &state, "c20");
        let frame = other.frame(frame_for(&scenario, &state, "c20"));
        assert_eq!(frame.present[0].id, other.handle("c35"));
        assert_eq!(frame.present[1].id, other.handle("c30"));
    }

    #[test]
    fn the_scenario_sets_the_attention_and_a_small_one_is_refused_with_its_line() {
        let scenario = square("attention = 5").expect("parses");
        let (state, _) = played(&scenario);
        let frame = view(&scenario, &state, "c00").frame(frame_for(&scenario, &state, "c00"));
        assert_eq!((frame.present.len(), frame.others_present), (5, 34));
        let everyone = square("attention = 100").expect("parses");
        let (state, _) = played(&everyone);
        let frame = view(&everyone, &state, "c00").frame(frame_for(&everyone, &state, "c00"));
        assert_eq!((frame.present.len(), frame.others_present), (39, 0));
        let refused = square("attention = 2").expect_err("too small").to_string();
        assert!(
            refused.contains("square.toml:4: attention: must be at least 3"),
            "{refused}"
        );
    }
}
