//! The scheduler: given the state, what happens next — open a scene, let a character
//! act, close the scene, or nothing (the story is done). Scripted stories follow their
//! script; open stories run rounds, one scene each, where the characters are.

use crate::state::WorldState;
use dramatis_scenario::{OpenStory, Scenario};

/// The next step of a story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Open the script's next scene.
    OpenScene,
    /// Open a round's scene at a location (open stories).
    OpenAt {
        location: String,
    },
    /// A traveller reaches its destination (open stories).
    Arrive {
        who: String,
        location: String,
    },
    /// Nobody is at any location: the round passes on the road.
    PassRound,
    /// Ask the narrator whether the scene is over (once per scene, open stories).
    Judge,
    Turn {
        actor: String,
    },
    CloseScene {
        reason: String,
    },
    Finished,
}

/// What the narrator made of the scene running (open stories).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Not judged yet.
    Unjudged,
    /// Judged, and the scene goes on.
    GoOn,
    /// Judged complete: the scene closes next. A verdict, not an event, so that a
    /// service that stops between the judgement and the scene's end closes the scene
    /// when it restarts instead of playing it to its turn limit.
    Over,
}

/// Why a scene the narrator judged complete ends.
pub const NARRATOR_ENDED: &str = "The narrator judged the scene complete.";

/// Decides the next step. `verdict` says what the narrator made of the scene running.
#[must_use]
pub fn next_step(state: &WorldState, scenario: &Scenario, verdict: Verdict) -> Step {
    if let Some(open) = &scenario.open {
        return open_step(state, scenario, open, verdict);
    }
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
    match next_actor(state, &scene.cast, &scene.location) {
        Some(actor) => Step::Turn { actor },
        None => Step::CloseScene {
            reason: "Nobody of the cast is left at the location.".into(),
        },
    }
}

/// Turns of a scene with one character in it.
pub const SOLO_TURNS: u32 = 2;

/// The turn of the narrator's judgement in a scene of `turns` turns: two thirds in,
/// after at least three lines (one call per scene; at 8 turns it comes after line 5).
#[must_use]
pub fn judge_turn(turns: u32) -> u32 {
    (turns * 2 / 3).max(3)
}

fn open_step(state: &WorldState, scenario: &Scenario, open: &OpenStory, verdict: Verdict) -> Step {
    if state.finished(scenario) {
        return Step::Finished;
    }
    if !state.scene_open {
        if let Some((who, (location, _))) = state
            .travelling
            .iter()
            .find(|(_, (_, due))| *due <= state.scene)
        {
            return Step::Arrive {
                who: who.clone(),
                location: location.clone(),
            };
        }
        return match choose_location(state, scenario) {
            Some(location) => Step::OpenAt { location },
            None => Step::PassRound,
        };
    }
    if verdict == Verdict::Over {
        return Step::CloseScene {
            reason: NARRATOR_ENDED.into(),
        };
    }
    let present = state.present_at(&state.scene_location);
    if present.is_empty() {
        return Step::CloseScene {
            reason: "Everyone has left.".into(),
        };
    }
    // Someone alone gets a couple of turns (to think aloud, or to leave), not a scene.
    let alone = present.len() == 1;
    let limit = if alone {
        open.scene_turns.min(SOLO_TURNS)
    } else {
        open.scene_turns
    };
    if state.scene_turn >= limit {
        return Step::CloseScene {
            reason: format!("The turn limit of {limit} was reached."),
        };
    }
    if verdict == Verdict::Unjudged && !alone && state.scene_turn >= judge_turn(open.scene_turns) {
        return Step::Judge;
    }
    match next_actor(state, &present, &state.scene_location) {
        Some(actor) => Step::Turn { actor },
        None => Step::CloseScene {
            reason: "Everyone has left.".into(),
        },
    }
}

/// Where a round's scene happens: the location with the most characters; on a tie, the
/// one whose last scene is longest ago (never is longest), then the first in the
/// scenario's order. `None` when everyone is on the road.
#[must_use]
pub fn choose_location(state: &WorldState, scenario: &Scenario) -> Option<String> {
    scenario
        .locations
        .iter()
        .enumerate()
        .map(|(order, l)| (state.present_at(&l.id).len(), l, order))
        .filter(|(count, _, _)| *count > 0)
        .min_by_key(|(count, l, order)| {
            let last = state.last_scene_at.get(&l.id).map_or(0, |round| round + 1);
            (std::cmp::Reverse(*count), last, *order)
        })
        .map(|(_, l, _)| l.id.clone())
}

/// Who acts next: the person just addressed, if in the cast and present; otherwise the
/// present cast member who has spoken least in this scene (never the last actor unless
/// alone), ties going to script order after the last actor.
#[must_use]
pub fn next_actor(state: &WorldState, cast: &[String], location: &str) -> Option<String> {
    let present: Vec<&String> = cast
        .iter()
        .filter(|c| state.locations.get(*c).is_some_and(|l| l == location))
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
        .and_then(|l| cast.iter().position(|c| c == l))
        .map_or(0, |i| i + 1);
    (0..cast.len())
        .map(|k| &cast[(start + k) % cast.len()])
        .filter(|c| present.contains(c) && (Some(*c) != last || present.len() == 1))
        .min_by_key(|c| state.turns_by.get(*c).copied().unwrap_or(0))
        .cloned()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use dramatis_scenario::{Character, Location, Scene};

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
            goal: String::new(),
            memory_modules: None,
            knows: std::collections::BTreeSet::new(),
            known_as: String::new(),
            offstage: false,
            interview_only: false,
            tags: vec![],
            card: String::new(),
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
                knows: BTreeMap::new(),
            }],
            open: None,
            memory_modules: vec![],
            attention: None,
            source: PathBuf::from("t.toml"),
            index: dramatis_scenario::CastIndex::default(),
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
        assert_eq!(
            next_actor(&state, &scene.cast, &scene.location).as_deref(),
            Some("a")
        );
        took_turn(&mut state, "a", Some("c"));
        assert_eq!(
            next_actor(&state, &scene.cast, &scene.location).as_deref(),
            Some("c"),
            "the addressed answers"
        );
        took_turn(&mut state, "c", Some("a"));
        assert_eq!(
            next_actor(&state, &scene.cast, &scene.location).as_deref(),
            Some("a")
        );
        took_turn(&mut state, "a", None);
        assert_eq!(
            next_actor(&state, &scene.cast, &scene.location).as_deref(),
            Some("b"),
            "the quiet one gets a turn"
        );
        took_turn(&mut state, "b", None);
        assert_eq!(
            next_actor(&state, &scene.cast, &scene.location).as_deref(),
            Some("c"),
            "fewest turns, then script order"
        );
        state.locations.insert("c".into(), "elsewhere".into());
        assert_eq!(
            next_actor(&state, &scene.cast, &scene.location).as_deref(),
            Some("a"),
            "absent characters never act"
        );
    }

    #[test]
    fn scene_closes_on_turn_limit_or_beat() {
        let scenario = scenario();
        let mut state = WorldState::initial(&scenario);
        assert_eq!(
            next_step(&state, &scenario, Verdict::Unjudged),
            Step::OpenScene
        );
        state.scene_open = true;
        assert!(matches!(
            next_step(&state, &scenario, Verdict::Unjudged),
            Step::Turn { .. }
        ));
        state.scene_turn = 3;
        assert!(
            matches!(next_step(&state, &scenario, Verdict::Unjudged), Step::CloseScene { reason } if reason.contains("turn limit"))
        );
        state.scene_turn = 1;
        state.beat_reached = true;
        assert!(
            matches!(next_step(&state, &scenario, Verdict::Unjudged), Step::CloseScene { reason } if reason.contains("beat"))
        );
        state.scene = 1;
        assert_eq!(
            next_step(&state, &scenario, Verdict::Unjudged),
            Step::Finished
        );
    }

    fn open_scenario() -> Scenario {
        let mut scenario = scenario();
        scenario.scenes.clear();
        scenario.locations.push(Location {
            id: "street".into(),
            name: "Street".into(),
            description: String::new(),
        });
        scenario.characters[2].location = "street".into();
        scenario.open = Some(OpenStory {
            premise: "p".into(),
            opening: String::new(),
            opening_location: String::new(),
            rounds: 2,
            scene_turns: 4,
            openings: vec![],
        });
        scenario
    }

    #[test]
    fn an_open_round_picks_the_busiest_place_judges_once_and_ends() {
        let scenario = open_scenario();
        let mut state = WorldState::initial(&scenario);
        assert_eq!(
            next_step(&state, &scenario, Verdict::Unjudged),
            Step::OpenAt {
                location: "lab".into()
            },
            "two characters in the lab, one in the street"
        );
        state.scene_open = true;
        state.scene_location = "lab".into();
        assert!(matches!(
            next_step(&state, &scenario, Verdict::Unjudged),
            Step::Turn { .. }
        ));
        state.scene_turn = judge_turn(4);
        assert_eq!(next_step(&state, &scenario, Verdict::Unjudged), Step::Judge);
        assert!(
            matches!(
                next_step(&state, &scenario, Verdict::GoOn),
                Step::Turn { .. }
            ),
            "judged once per scene"
        );
        assert_eq!(
            next_step(&state, &scenario, Verdict::Over),
            Step::CloseScene {
                reason: NARRATOR_ENDED.into()
            },
            "a scene judged complete closes next, whoever would act"
        );
        state.scene_turn = 4;
        assert!(matches!(
            next_step(&state, &scenario, Verdict::GoOn),
            Step::CloseScene { reason } if reason.contains("turn limit")
        ));
        state.scene_turn = 1;
        state.locations.remove("a");
        state.locations.remove("b");
        assert!(matches!(
            next_step(&state, &scenario, Verdict::Unjudged),
            Step::CloseScene { reason } if reason.contains("left")
        ));
        state.scene = 2;
        assert_eq!(
            next_step(&state, &scenario, Verdict::Unjudged),
            Step::Finished
        );
    }

    #[test]
    fn an_interview_only_character_is_never_placed_nor_given_a_turn() {
        let mut scenario = open_scenario();
        // a and b would make the lab the busiest place; b is only to be asked.
        scenario.characters[1].interview_only = true;
        let mut state = WorldState::initial(&scenario);
        assert_eq!(
            state.locations.keys().collect::<Vec<_>>(),
            ["a", "c"],
            "placed nowhere"
        );
        let mut turns = Vec::new();
        for _ in 0..40 {
            match next_step(&state, &scenario, Verdict::GoOn) {
                Step::OpenAt { location } => {
                    state.scene_open = true;
                    state.scene_location = location;
                    state.scene_turn = 0;
                }
                Step::Turn { actor } => {
                    state.scene_turn += 1;
                    *state.turns_by.entry(actor.clone()).or_default() += 1;
                    state.last_actor = Some(actor.clone());
                    turns.push(actor);
                }
                Step::CloseScene { .. } | Step::Judge => {
                    state.scene_open = false;
                    state.scene += 1;
                }
                Step::Finished => break,
                other => panic!("unexpected step {other:?}"),
            }
        }
        assert!(!turns.is_empty(), "the others act");
        assert!(
            turns.iter().all(|t| t != "b"),
            "the interview-only one never acts: {turns:?}"
        );
    }

    #[test]
    fn travellers_arrive_when_due_and_an_empty_world_passes_the_round() {
        let scenario = open_scenario();
        let mut state = WorldState::initial(&scenario);
        state.locations.clear();
        state.travelling.insert("a".into(), ("street".into(), 1));
        assert_eq!(
            next_step(&state, &scenario, Verdict::Unjudged),
            Step::PassRound
        );
        state.scene = 1;
        assert_eq!(
            next_step(&state, &scenario, Verdict::Unjudged),
            Step::Arrive {
                who: "a".into(),
                location: "street".into()
            }
        );
        // Ties go to the place whose last scene is longest ago.
        let mut tie = WorldState::initial(&scenario);
        tie.locations.remove("b");
        tie.last_scene_at.insert("lab".into(), 0);
        assert_eq!(choose_location(&tie, &scenario).as_deref(), Some("street"));
    }
}
