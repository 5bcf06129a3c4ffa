//! The state of a world that events change: where everyone is, which scene is running
//! and how far it got. Derived only from events (`apply`), so replaying the log
//! rebuilds it exactly.

use std::collections::BTreeMap;

use dramatis_proto::v1::{Event, EventKind, Usage};

use crate::attention::Attention;
use crate::names::Acquaintances;
use dramatis_scenario::Scenario;

/// The mutable state of one world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldState {
    /// Character id -> location id (characters on the road are absent).
    pub locations: BTreeMap<String, String>,
    /// Characters on a journey (open stories): destination and the round they arrive.
    pub travelling: BTreeMap<String, (String, usize)>,
    /// 0-based index of the scene running or next to run (in an open story: the round).
    pub scene: usize,
    /// Id and location of the scene running (or last run).
    pub scene_id: String,
    pub scene_location: String,
    /// Location id -> the scene (round) index of the last scene there.
    pub last_scene_at: BTreeMap<String, usize>,
    /// Character id -> scenes in a row it has been part of at the same place.
    pub stay: BTreeMap<String, u32>,
    pub scene_open: bool,
    /// Turns taken in the open scene.
    pub scene_turn: u32,
    pub total_turns: u32,
    pub last_actor: Option<String>,
    pub last_target: Option<String>,
    /// A line of the open scene carried one of its end cues.
    pub beat_reached: bool,
    /// Turns each character took in the open scene.
    pub turns_by: BTreeMap<String, u32>,
    pub usage: Usage,
    /// The names the characters learned so far.
    pub acquaintances: Acquaintances,
    /// Who each character lately dealt with (what its attention ranks by).
    pub attention: Attention,
}

impl WorldState {
    /// The state before the first event.
    #[must_use]
    pub fn initial(scenario: &Scenario) -> Self {
        Self {
            locations: scenario
                .characters
                .iter()
                .filter(|c| !c.offstage && !c.interview_only)
                .map(|c| (c.id.clone(), c.location.clone()))
                .collect(),
            travelling: BTreeMap::new(),
            scene: 0,
            scene_id: String::new(),
            scene_location: String::new(),
            last_scene_at: BTreeMap::new(),
            stay: BTreeMap::new(),
            scene_open: false,
            scene_turn: 0,
            total_turns: 0,
            last_actor: None,
            last_target: None,
            beat_reached: false,
            turns_by: BTreeMap::new(),
            usage: Usage::default(),
            acquaintances: Acquaintances::default(),
            attention: Attention::default(),
        }
    }

    /// Whether the script (or the open story's rounds) has run out.
    #[must_use]
    pub fn finished(&self, scenario: &Scenario) -> bool {
        self.scene >= scenario.length()
    }

    /// Characters at `location`, in id order.
    #[must_use]
    pub fn present_at(&self, location: &str) -> Vec<String> {
        self.locations
            .iter()
            .filter(|(_, at)| at.as_str() == location)
            .map(|(who, _)| who.clone())
            .collect()
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, scenario: &Scenario, event: &Event) {
        if let Some(usage) = &event.usage {
            self.usage.add_calls_and_tokens(usage);
            self.usage.latency_ms += usage.latency_ms;
        }
        let scene = scenario.scenes.get(self.scene);
        self.acquaintances.learn(scenario, scene, event);
        self.attention.apply(event);
        match event.kind() {
            EventKind::SceneStart => {
                self.scene_open = true;
                self.scene_id.clone_from(&event.scene_id);
                self.scene_location.clone_from(&event.location);
                self.last_scene_at
                    .insert(event.location.clone(), self.scene);
                for who in &event.perceivers {
                    *self.stay.entry(who.clone()).or_default() += 1;
                }
                self.scene_turn = 0;
                self.beat_reached = false;
                self.last_actor = None;
                self.last_target = None;
                self.turns_by.clear();
            }
            EventKind::SceneEnd => {
                self.scene_open = false;
                self.scene += 1;
            }
            EventKind::Movement if event.travel_rounds > 0 => {
                self.locations.remove(&event.speaker);
                self.stay.remove(&event.speaker);
                let arrives = self.scene + usize::try_from(event.travel_rounds).unwrap_or(1);
                self.travelling
                    .insert(event.speaker.clone(), (event.destination.clone(), arrives));
            }
            EventKind::Movement => {
                self.travelling.remove(&event.speaker);
                self.stay.remove(&event.speaker);
                self.locations
                    .insert(event.speaker.clone(), event.location.clone());
            }
            EventKind::Speech
            | EventKind::Action
            | EventKind::Narration
            | EventKind::Unspecified => {}
        }
        if event.turn > 0 {
            self.scene_turn += 1;
            self.total_turns += 1;
            self.last_actor = Some(event.speaker.clone());
            *self.turns_by.entry(event.speaker.clone()).or_default() += 1;
            self.last_target = (!event.target.is_empty()).then(|| event.target.clone());
            if let Some(scene) = scenario.scenes.get(self.scene) {
                let text = event.text.to_lowercase();
                if self.scene_turn >= scene.min_turns
                    && scene
                        .end_cues
                        .iter()
                        .any(|cue| text.contains(&cue.to_lowercase()))
                {
                    self.beat_reached = true;
                }
            }
        }
    }
}
