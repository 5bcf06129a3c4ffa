//! The scripted-scene scheduler: given the state, what happens next — open a scene,
//! let a character act, close the scene, or nothing (the script is done).

use crate::scenario::{Scenario, Scene};
use crate::state::WorldState;

/// The next step of a scripted story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    OpenScene,
    Turn { actor: String },
    CloseScene { reason: String },
    Finished,
}

/// Decides the next step.
#[must_use]
pub fn next_step(state: &WorldState, scenario: &Scenario) -> Step {
    let Some(scene) = scenario.scenes.get(state.scene) else {
        return Step::Finished;
    };
    if !state.scene_open {
        return Step::OpenScene;
    }
    if state.beat_reached {
        return Step::CloseScene {
            reason: format!("The beat was reached: {}", scene.beat),
        };
    }
    if state.scene_turn >= scene.max_turns {
        return Step::CloseScene {
            reason: format!("The turn limit of {} was reached.", scene.max_turns),
        };
    }
    match next_actor(state, scene) {
        Some(actor) => Step::Turn { actor },
        None => Step::CloseScene {
            reason: "Nobody of the cast is left at the location.".into(),
        },
    }
}

/// Who acts next: the person just addressed, if in the cast and present; otherwise the
/// present cast member who has spoken least in this scene (never the last actor unless
/// alone), ties going to script order after the last actor.
#[must_use]
pub fn next_actor(state: &WorldState, scene: &Scene) -> Option<String> {
    let present: Vec<&String> = scene
        .cast
        .iter()
        .filter(|c| {
            state
                .locations
                .get(*c)
                .is_some_and(|l| *l == scene.location)
        })
        .collect();
    if present.is_empty() {
        return None;
    }
    if let Some(target) = &state.last_target
        && present.contains(&target)
        && state.last_actor.as_ref() != Some(target)
    {
        return Some(target.clone());
    }
    let last = state.last_actor.as_ref();
    let start = last
        .and_then(|l| scene.cast.iter().position(|c| c == l))
        .map_or(0, |i| i + 1);
    (0..scene.cast.len())
        .map(|k| &scene.cast[(start + k) % scene.cast.len()])
        .filter(|c| present.contains(c) && (Some(*c) != last || present.len() == 1))
        .min_by_key(|c| state.turns_by.get(*c).copied().unwrap_or(0))
        .cloned()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::scenario::{Character, Location};

    fn scenario() -> Scenario {
        let character = |id: &str, at: &str| Character {
            id: id.into(),
            name: id.into(),
            aliases: vec![],
            profile: "p".into(),
            style: String::new(),
            location: at.into(),
            memories: vec![],
            patterns: vec![],
        };
        Scenario {
            name: "t".into(),
            title: "t".into(),
            description: String::new(),
            world: String::new(),
            locations: vec![Location {
                id: "lab".into(),
                name: "Lab".into(),
                description: String::new(),
            }],
            paths: vec![],
            characters: vec![
                character("a", "lab"),
                character("b", "lab"),
                character("c", "lab"),
            ],
            facts: vec![],
            scenes: vec![Scene {
                id: "s".into(),
                location: "lab".into(),
                cast: vec!["a".into(), "b".into(), "c".into()],
                beat: "x".into(),
                end_cues: vec!["farewell".into()],
                min_turns: 1,
                max_turns: 3,
                opening: String::new(),
                directions: BTreeMap::new(),
            }],
            source: PathBuf::from("t.toml"),
        }
    }

    #[test]
    fn addressed_character_answers_then_the_quietest_acts() {
        let scenario = scenario();
        let scene = &scenario.scenes[0];
        let mut state = WorldState::initial(&scenario);
        let took_turn = |state: &mut WorldState, who: &str, target: Option<&str>| {
            state.last_actor = Some(who.into());
            state.last_target = target.map(Into::into);
            *state.turns_by.entry(who.into()).or_default() += 1;
        };
        assert_eq!(next_actor(&state, scene).as_deref(), Some("a"));
        took_turn(&mut state, "a", Some("c"));
        assert_eq!(
            next_actor(&state, scene).as_deref(),
            Some("c"),
            "the addressed answers"
        );
        took_turn(&mut state, "c", Some("a"));
        assert_eq!(next_actor(&state, scene).as_deref(), Some("a"));
        took_turn(&mut state, "a", None);
        assert_eq!(
            next_actor(&state, scene).as_deref(),
            Some("b"),
            "the quiet one gets a turn"
        );
        took_turn(&mut state, "b", None);
        assert_eq!(
            next_actor(&state, scene).as_deref(),
            Some("c"),
            "fewest turns, then script order"
        );
        state.locations.insert("c".into(), "elsewhere".into());
        assert_eq!(
            next_actor(&state, scene).as_deref(),
            Some("a"),
            "absent characters never act"
        );
    }

    #[test]
    fn scene_closes_on_turn_limit_or_beat() {
        let scenario = scenario();
        let mut state = WorldState::initial(&scenario);
        assert_eq!(next_step(&state, &scenario), Step::OpenScene);
        state.scene_open = true;
        assert!(matches!(next_step(&state, &scenario), Step::Turn { .. }));
        state.scene_turn = 3;
        assert!(
            matches!(next_step(&state, &scenario), Step::CloseScene { reason } if reason.contains("turn limit"))
        );
        state.scene_turn = 1;
        state.beat_reached = true;
        assert!(
            matches!(next_step(&state, &scenario), Step::CloseScene { reason } if reason.contains("beat"))
        );
        state.scene = 1;
        assert_eq!(next_step(&state, &scenario), Step::Finished);
    }
}
