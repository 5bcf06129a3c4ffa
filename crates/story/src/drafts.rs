//! The events a story step produces, before the world numbers them and decides who
//! perceives them: a scene's opening, an open story's round, an arrival, a scene's end,
//! and an agent's (or a person's) action resolved against the world's rules.

use dramatis_proto::v1::{Action, ActionKind, Event, EventKind, Usage};

use crate::names::Perspective;
use crate::state::WorldState;
use dramatis_scenario::Scenario;

/// An event before the world numbers it and decides who perceives it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Draft {
    pub kind: EventKind,
    pub speaker: String,
    pub text: String,
    pub target: String,
    /// Where it happens (for movement: the destination).
    pub location: String,
    /// For movement: where the actor left from.
    pub origin: Option<String>,
    /// For a departure on a journey: where to, and how many rounds it takes.
    pub destination: String,
    pub travel_rounds: u32,
    /// Characters who perceive it though they are not (yet) at the location: an
    /// arriving traveller.
    pub told: Vec<String>,
    pub thought: String,
    pub turn: u32,
    pub usage: Option<Usage>,
    /// The agent's fallback line (its model failed).
    pub fallback: bool,
    /// A scene's start: the place's description.
    pub place_description: String,
    /// Put in by the story's director.
    pub director: bool,
    /// Perceived by those `told` only, wherever they are (a whisper, a revelation).
    pub private: bool,
    /// The actor's own state after its turn, as its agent wrote it.
    pub actor_state: String,
}

/// Where the event stands in the log, and who perceived it: what the world adds to a
/// draft to make it an event.
#[derive(Debug, Clone)]
pub struct Stamp<'a> {
    pub world_id: &'a str,
    pub seq: u64,
    pub perceivers: Vec<String>,
    /// For a movement between two places: the perceivers at the origin.
    pub origin_perceivers: Vec<String>,
    pub timestamp_ms: i64,
}

impl Draft {
    /// The event this draft becomes in `state`, with its speaker's and target's names.
    #[must_use]
    pub fn into_event(self, scenario: &Scenario, state: &WorldState, stamp: Stamp<'_>) -> Event {
        let scene_id = scene_id_for(scenario, state, self.kind);
        Event {
            world_id: stamp.world_id.to_owned(),
            seq: stamp.seq,
            scene_index: dramatis_base::saturating_u32(state.scene + 1),
            scene_id,
            speaker_name: scenario.name_of(&self.speaker).to_owned(),
            target_name: scenario.name_of(&self.target).to_owned(),
            speaker: self.speaker,
            kind: self.kind as i32,
            text: self.text,
            target: self.target,
            location: self.location,
            perceivers: stamp.perceivers,
            origin_perceivers: stamp.origin_perceivers,
            perceiver_names: Vec::new(),
            thought: self.thought,
            usage: self.usage,
            timestamp_ms: stamp.timestamp_ms,
            turn: self.turn,
            destination: self.destination,
            travel_rounds: self.travel_rounds,
            fallback: self.fallback,
            place_description: self.place_description,
            director: self.director,
            others_perceiving: 0,
            actor_state: self.actor_state,
        }
    }
}

/// The scene an event belongs to: the script's scene, or the open story's round.
#[must_use]
pub fn scene_id_for(scenario: &Scenario, state: &WorldState, kind: EventKind) -> String {
    if scenario.open.is_none() {
        return scenario
            .scenes
            .get(state.scene)
            .map(|s| s.id.clone())
            .unwrap_or_default();
    }
    if state.scene_open || kind == EventKind::SceneStart {
        format!("round-{}", state.scene + 1)
    } else {
        String::new()
    }
}

/// What the place `location` looks like (empty for a place the scenario does not
/// describe).
fn place_description(scenario: &Scenario, location: &str) -> String {
    scenario
        .location(location)
        .map(|l| l.description.trim().to_owned())
        .unwrap_or_default()
}

/// A scripted scene's opening: movements of the cast to the scene's location, the scene
/// marker, then the opening narration.
#[must_use]
pub fn scene_opening(scenario: &Scenario, state: &WorldState) -> Vec<Draft> {
    let scene = &scenario.scenes[state.scene];
    let place = scenario.place_name(&scene.location);
    let mut drafts = Vec::new();
    for who in &scene.cast {
        let at = state.locations.get(who).cloned().unwrap_or_default();
        if at != scene.location {
            drafts.push(Draft {
                kind: EventKind::Movement,
                speaker: who.clone(),
                text: format!("{} goes to {place}.", scenario.name_of(who)),
                location: scene.location.clone(),
                origin: Some(at),
                ..Draft::default()
            });
        }
    }
    drafts.push(Draft {
        kind: EventKind::SceneStart,
        text: format!("Scene {}: {place}", state.scene + 1),
        location: scene.location.clone(),
        place_description: place_description(scenario, &scene.location),
        ..Draft::default()
    });
    if !scene.opening.trim().is_empty() {
        drafts.push(Draft {
            kind: EventKind::Narration,
            text: scene.opening.trim().to_owned(),
            location: scene.location.clone(),
            ..Draft::default()
        });
    }
    drafts
}

/// A round of an open story at `location`: the scene marker, the story's opening (first
/// round), and the event the narrator proposed (`proposal`: where, what), told where it
/// happens.
#[must_use]
pub fn round_opening(
    scenario: &Scenario,
    state: &WorldState,
    location: &str,
    proposal: Option<(String, String)>,
) -> Vec<Draft> {
    let mut drafts = vec![Draft {
        kind: EventKind::SceneStart,
        text: format!(
            "Round {}: {}",
            state.scene + 1,
            scenario.place_name(location)
        ),
        location: location.to_owned(),
        place_description: place_description(scenario, location),
        ..Draft::default()
    }];
    if let Some(open) = &scenario.open
        && state.scene == 0
        && !open.opening.trim().is_empty()
    {
        let at = if open.opening_location.is_empty() {
            location.to_owned()
        } else {
            open.opening_location.clone()
        };
        drafts.push(Draft {
            kind: EventKind::Narration,
            text: open.opening.trim().to_owned(),
            location: at,
            ..Draft::default()
        });
    }
    if let Some((at, text)) = proposal {
        drafts.push(Draft {
            kind: EventKind::Narration,
            text,
            location: at,
            ..Draft::default()
        });
    }
    drafts
}

/// A traveller arrives: the traveller perceives it, and so does everyone there.
#[must_use]
pub fn arrival(scenario: &Scenario, who: &str, location: &str) -> Draft {
    Draft {
        kind: EventKind::Movement,
        text: format!(
            "{} arrives at {}.",
            scenario.name_of(who),
            scenario.place_name(location)
        ),
        speaker: who.to_owned(),
        location: location.to_owned(),
        told: vec![who.to_owned()],
        ..Draft::default()
    }
}

/// A round in which everyone is on the road.
#[must_use]
pub fn quiet_round() -> Draft {
    Draft {
        kind: EventKind::SceneEnd,
        text: "Time passes on the roads.".into(),
        ..Draft::default()
    }
}

/// The end of the scene running in `state`, for `reason`.
#[must_use]
pub fn scene_end(state: &WorldState, reason: String) -> Draft {
    Draft {
        kind: EventKind::SceneEnd,
        text: reason,
        location: state.scene_location.clone(),
        ..Draft::default()
    }
}

/// Turns an agent's (or a person's) action into an event the world accepts: a target
/// must be present and named as the actor knows it (a handle it was given, or a name it
/// knows), movement must follow a path from here; anything else degrades to a plain
/// action.
#[must_use]
pub fn resolve(view: Perspective<'_>, state: &WorldState, action: &Action) -> Draft {
    let (scenario, actor) = (view.scenario, view.me);
    let here = state.locations.get(actor).cloned().unwrap_or_default();
    let present = state.present_at(&here);
    let target = view
        .resolve(&action.target)
        .filter(|t| *t != actor && present.iter().any(|p| p == t))
        .map(str::to_owned)
        .unwrap_or_default();
    let mut text = action.text.trim().to_owned();
    if text.is_empty() {
        text = format!("{} pauses.", scenario.name_of(actor));
    }
    let mut draft = Draft {
        kind: EventKind::Speech,
        speaker: actor.to_owned(),
        text,
        target,
        location: here.clone(),
        thought: action.thought.trim().to_owned(),
        turn: state.scene_turn + 1,
        usage: action.usage,
        fallback: action.fallback,
        actor_state: action.actor_state.clone(),
        ..Draft::default()
    };
    match action.kind() {
        ActionKind::Speech | ActionKind::Unspecified => draft.text = view.spoken(&draft.text),
        ActionKind::Action => draft.kind = EventKind::Action,
        ActionKind::Movement => {
            let wanted = action.destination.trim();
            let reachable = scenario.find_location(wanted).and_then(|place| {
                scenario
                    .neighbours(&here)
                    .into_iter()
                    .find(|(id, _)| *id == place.id)
            });
            if let Some((place, distance)) = reachable {
                draft.kind = EventKind::Movement;
                draft.target.clear();
                if scenario.open.is_some() {
                    // A journey: seen leaving here; on the road for the distance.
                    draft.destination = place.to_owned();
                    draft.travel_rounds = distance.max(1);
                } else {
                    draft.location = place.to_owned();
                    draft.origin = Some(here);
                }
            } else {
                draft.kind = EventKind::Action;
            }
        }
    }
    draft
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_scenarios::{open_story, scripted};

    /// `who`'s view of the test world "w".
    fn by<'a>(scenario: &'a Scenario, state: &'a WorldState, who: &'a str) -> Perspective<'a> {
        Perspective {
            scenario,
            world_id: "w",
            known: &state.acquaintances,
            attention: &state.attention,
            me: who,
        }
    }

    fn action(kind: ActionKind, text: &str) -> Action {
        Action {
            kind: kind as i32,
            text: text.into(),
            ..Action::default()
        }
    }

    #[test]
    fn a_scene_opens_with_the_cast_walking_in_then_its_marker_and_narration() {
        let scenario = scripted();
        let state = WorldState::initial(&scenario);
        let drafts = scene_opening(&scenario, &state);
        let kinds: Vec<EventKind> = drafts.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::Movement,
                EventKind::SceneStart,
                EventKind::Narration
            ]
        );
        // Holmes starts at the lab, where the scene is; Watson walks over from the bar.
        assert_eq!(drafts[0].speaker, "watson");
        assert_eq!(drafts[0].text, "John Watson goes to the Lab.");
        assert_eq!(
            (drafts[0].origin.as_deref(), drafts[0].location.as_str()),
            (Some("bar"), "lab")
        );
        assert_eq!(drafts[1].text, "Scene 1: the Lab");
        assert_eq!(drafts[2].text, "A smell of chemicals.");
        assert!(
            drafts
                .iter()
                .all(|d| d.speaker.is_empty() || d.kind == EventKind::Movement)
        );
    }

    #[test]
    fn an_open_round_opens_with_the_story_and_the_narrators_event_where_they_happen() {
        let scenario = open_story();
        let state = WorldState::initial(&scenario);
        let proposal = Some(("bar".to_owned(), "A bell rings.".to_owned()));
        let drafts = round_opening(&scenario, &state, "lab", proposal);
        let told: Vec<(&str, &str)> = drafts
            .iter()
            .map(|d| (d.text.as_str(), d.location.as_str()))
            .collect();
        assert_eq!(
            told,
            [
                ("Round 1: the Lab", "lab"),
                ("Fog on the river.", "bar"),
                ("A bell rings.", "bar")
            ]
        );
        let mut later = state.clone();
        later.scene = 1;
        assert_eq!(round_opening(&scenario, &later, "lab", None).len(), 1);
    }

    #[test]
    fn speech_to_someone_absent_loses_its_target_and_empty_text_becomes_a_pause() {
        let scenario = scripted();
        let state = WorldState::initial(&scenario);
        let mut said = action(ActionKind::Speech, "  Hello.  ");
        said.target = "Lestrade".into();
        said.thought = " hm ".into();
        let draft = resolve(by(&scenario, &state, "holmes"), &state, &said);
        assert_eq!(
            (draft.kind, draft.text.as_str(), draft.target.as_str()),
            (EventKind::Speech, "Hello.", "")
        );
        assert_eq!(
            (draft.location.as_str(), draft.thought.as_str()),
            ("lab", "hm")
        );
        assert_eq!(draft.turn, 1);
        // Watson is at the bar with Lestrade, so Lestrade is a target there (by alias).
        let mut to = action(ActionKind::Speech, "Inspector!");
        to.target = "the inspector".into();
        assert_eq!(
            resolve(by(&scenario, &state, "watson"), &state, &to).target,
            "lestrade"
        );
        let blank = resolve(
            by(&scenario, &state, "watson"),
            &state,
            &action(ActionKind::Action, " "),
        );
        assert_eq!(
            (blank.kind, blank.text.as_str()),
            (EventKind::Action, "John Watson pauses.")
        );
    }

    /// Issue 65. Watson has not met Holmes: a line of his that names Holmes (a model
    /// that knows the book) says what Watson sees instead, until he hears the name.
    #[test]
    fn a_name_the_speaker_never_came_across_is_said_as_what_it_sees() {
        let scenario = scripted();
        let mut state = WorldState::initial(&scenario);
        let guessed = action(
            ActionKind::Speech,
            "Holmes, you look tired. Lestrade agrees.",
        );
        let draft = resolve(by(&scenario, &state, "watson"), &state, &guessed);
        assert_eq!(
            draft.text, "A tall young man with a test-tube, you look tired. Lestrade agrees.",
            "Watson knows Lestrade from the start"
        );
        // Lestrade names Holmes at the bar, where Holmes is not: Watson heard the name.
        let named = Event {
            seq: 1,
            kind: EventKind::Speech as i32,
            speaker: "lestrade".into(),
            text: "Holmes is at the lab again.".into(),
            perceivers: vec!["lestrade".into(), "watson".into()],
            ..Event::default()
        };
        state.apply(&scenario, &named);
        let draft = resolve(by(&scenario, &state, "watson"), &state, &guessed);
        assert_eq!(draft.text, "Holmes, you look tired. Lestrade agrees.");
        // An action is the world's description: it is rendered per viewer, not here.
        let acted = resolve(
            by(&scenario, &WorldState::initial(&scenario), "watson"),
            &state,
            &action(ActionKind::Action, "Watson nods at Holmes."),
        );
        assert_eq!(acted.text, "Watson nods at Holmes.");
    }

    #[test]
    fn movement_follows_a_path_or_degrades_to_an_action() {
        let scenario = scripted();
        let state = WorldState::initial(&scenario);
        let mut go = action(ActionKind::Movement, "sets off");
        go.destination = "The Bar".into();
        go.target = "watson".into();
        let moved = resolve(by(&scenario, &state, "holmes"), &state, &go);
        assert_eq!(moved.kind, EventKind::Movement);
        assert_eq!(
            (
                moved.location.as_str(),
                moved.origin.as_deref(),
                moved.target.as_str()
            ),
            ("bar", Some("lab"), "")
        );
        go.destination = "the moon".into();
        assert_eq!(
            resolve(by(&scenario, &state, "holmes"), &state, &go).kind,
            EventKind::Action
        );
        // The cellar exists but no path leads there from the lab.
        go.destination = "cellar".into();
        assert_eq!(
            resolve(by(&scenario, &state, "holmes"), &state, &go).kind,
            EventKind::Action
        );
    }

    #[test]
    fn in_an_open_story_movement_is_a_journey_of_the_paths_length() {
        let scenario = open_story();
        let state = WorldState::initial(&scenario);
        let mut go = action(ActionKind::Movement, "leaves");
        go.destination = "bar".into();
        let journey = resolve(by(&scenario, &state, "holmes"), &state, &go);
        assert_eq!(journey.kind, EventKind::Movement);
        assert_eq!(
            (
                journey.location.as_str(),
                journey.destination.as_str(),
                journey.travel_rounds,
                journey.origin
            ),
            ("lab", "bar", 2, None)
        );
    }

    #[test]
    fn an_event_carries_the_names_the_scene_and_its_stamp() {
        let scenario = scripted();
        let state = WorldState::initial(&scenario);
        let mut said = action(ActionKind::Speech, "Hello.");
        said.usage = Some(Usage {
            llm_calls: 2,
            ..Usage::default()
        });
        let mut draft = resolve(by(&scenario, &state, "watson"), &state, &said);
        draft.target = "lestrade".into();
        let event = draft.into_event(
            &scenario,
            &state,
            Stamp {
                world_id: "w",
                seq: 7,
                perceivers: vec!["lestrade".into(), "watson".into()],
                origin_perceivers: Vec::new(),
                timestamp_ms: 42,
            },
        );
        assert_eq!(
            (event.world_id.as_str(), event.seq, event.timestamp_ms),
            ("w", 7, 42)
        );
        assert_eq!((event.scene_index, event.scene_id.as_str()), (1, "meeting"));
        assert_eq!(
            (event.speaker_name.as_str(), event.target_name.as_str()),
            ("John Watson", "Inspector Lestrade")
        );
        assert_eq!(event.perceivers, ["lestrade", "watson"]);
        assert_eq!(event.usage.map(|u| u.llm_calls), Some(2));
        let open = open_story();
        let idle = WorldState::initial(&open);
        assert_eq!(scene_id_for(&open, &idle, EventKind::Movement), "");
        assert_eq!(scene_id_for(&open, &idle, EventKind::SceneStart), "round-1");
    }
}
