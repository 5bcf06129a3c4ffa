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
        scene_index: dramatis_runtime::saturating_u32(state.scene + 1),
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
