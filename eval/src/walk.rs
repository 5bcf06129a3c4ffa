//! A story walked through the world service one position at a time, as an evaluation
//! client: the log it produced so far, each event with the story position (turns
//! played) at which it was logged, and what each character could know at a position.
//!
//! A position is a count of turns played (`WorldInfo.total_turns`; scene markers and
//! narration are not turns). Asking at position `p` means: the world has played `p`
//! turns and stopped. An event logged while turn `p` was played has position `p`, so it
//! has been perceived by the time the world stops there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{anyhow, bail};
use dramatis_proto::v1::{Event, EventKind, WorldStatus, advance_request};
use dramatis_runtime::client::{WorldRpc, advance, describe};
use dramatis_scenario::Scenario;

use crate::words::word_set;

/// What a walked story has logged so far.
#[derive(Debug, Clone, Default)]
pub struct Run {
    /// Every event, with the position at which it was logged, in log order.
    pub log: Vec<(u32, Event)>,
    /// The position at the end of each scene (after its last turn), in order.
    pub scene_ends: Vec<u32>,
    /// Position of the latest turn logged.
    pub(crate) last_turn: u32,
    /// Turns played so far.
    pub turns: u32,
    pub finished: bool,
}

/// A world being walked.
pub struct Walk {
    pub client: WorldRpc,
    pub world: String,
    pub run: Run,
}

impl Walk {
    /// Creates a world from `scenario_path` on the service `client` talks to.
    pub async fn start(mut client: WorldRpc, scenario_path: &Path) -> anyhow::Result<Self> {
        let world = crate::create_world_from_file(&mut client, scenario_path).await?;
        Ok(Self {
            client,
            world,
            run: Run::default(),
        })
    }

    /// Plays until `at` turns have been played (`None`: to the end of the story), one
    /// turn per call so every event gets its exact position. Stops early, without error,
    /// when the story ends first; [`Run::turns`] says where it stopped.
    pub async fn advance_to(&mut self, at: Option<u32>) -> anyhow::Result<()> {
        while !self.run.finished && at.is_none_or(|at| self.run.turns < at) {
            let response = advance(
                &mut self.client,
                &self.world,
                advance_request::Until::Turns(1),
            )
            .await
            .map_err(|e| anyhow!("the story stopped: {}", describe(&e.status)))?;
            let info = response
                .world
                .ok_or_else(|| anyhow!("Advance returned no world"))?;
            let played = info.total_turns;
            let finished = info.status == WorldStatus::Finished as i32;
            if played == self.run.turns && response.events.is_empty() && !finished {
                bail!("the story made no progress at position {}", self.run.turns);
            }
            for event in response.events {
                // A scene's end is logged as the next turn begins: the scene ended at
                // the position of its last turn.
                if event.kind == EventKind::SceneEnd as i32 {
                    self.run.scene_ends.push(self.run.last_turn);
                } else if event.turn > 0 {
                    self.run.last_turn = played;
                }
                self.run.log.push((played, event));
            }
            self.run.turns = played;
            self.run.finished = finished;
        }
        Ok(())
    }

    /// Plays the whole story.
    pub async fn play_to_end(&mut self) -> anyhow::Result<()> {
        self.advance_to(None).await
    }
}

/// Something a character may know: a starting fact, a starting memory or self-knowledge,
/// or an event in the log.
#[derive(Debug, Clone)]
pub struct Source {
    /// `fact:ID`, `self:CHARACTER`, `scene:SEQ` or `line:SEQ`.
    pub id: String,
    pub fact: Option<String>,
    pub line: Option<u64>,
    pub text: String,
    /// Position at which it was logged (0 for what is known at the start).
    pub logged_at: u32,
    /// Each character that knows it, and from which position.
    pub known_from: BTreeMap<String, u32>,
    /// Its lowercased words, read once.
    words: BTreeSet<String>,
}

impl Source {
    fn new(
        id: String,
        fact: Option<String>,
        line: Option<u64>,
        text: String,
        logged_at: u32,
        known_from: BTreeMap<String, u32>,
    ) -> Self {
        Self {
            words: word_set(&text),
            id,
            fact,
            line,
            text,
            logged_at,
            known_from,
        }
    }

    /// Whether its text holds `word` as a whole word, ignoring case.
    #[must_use]
    pub fn holds(&self, word: &str) -> bool {
        self.words.contains(&word.to_lowercase())
    }

    /// Whether `character` knows it once `at` turns have been played.
    #[must_use]
    pub fn known_by(&self, character: &str, at: u32) -> bool {
        self.known_from
            .get(character)
            .is_some_and(|from| *from <= at)
    }

    /// Whether it may be the source of a probe item (facts and logged events; what a
    /// character knows of itself only decides who could know an answer).
    #[must_use]
    pub fn probed(&self) -> bool {
        self.fact.is_some() || self.line.is_some()
    }
}

/// Event kinds whose text a character perceives and may be asked about.
fn perceived_text(kind: i32) -> bool {
    [EventKind::Speech, EventKind::Action, EventKind::Narration]
        .into_iter()
        .any(|k| k as i32 == kind)
}

/// Everything any character could know in `run` of `scenario`: each fact (known from
/// the start by its `known_by`), each character's own profile, patterns and memories
/// (known by it alone), each spoken line, action and narration with text (known by its
/// perceivers from the position it was logged at), and each scene's place, its name and
/// description (known by those present when the scene starts).
#[must_use]
pub fn sources(scenario: &Scenario, run: &Run) -> Vec<Source> {
    let mut out = Vec::new();
    for fact in &scenario.facts {
        out.push(Source::new(
            format!("fact:{}", fact.id),
            Some(fact.id.clone()),
            None,
            fact.text.clone(),
            0,
            fact.known_by.iter().map(|c| (c.clone(), 0)).collect(),
        ));
    }
    for character in &scenario.characters {
        let mut own = vec![character.profile.clone(), character.style.clone()];
        own.extend(character.memories.iter().map(|m| m.text.clone()));
        for pattern in &character.patterns {
            own.push(pattern.description.clone());
            own.extend(pattern.excerpts.iter().cloned());
        }
        out.push(Source::new(
            format!("self:{}", character.id),
            None,
            None,
            own.join("\n"),
            0,
            BTreeMap::from([(character.id.clone(), 0)]),
        ));
    }
    for (at, event) in &run.log {
        if event.kind == EventKind::SceneStart as i32 {
            // Being there: the place's name and look, known by those present.
            let place = scenario.location(&event.location);
            out.push(Source::new(
                format!("scene:{}", event.seq),
                None,
                None,
                format!(
                    "{}\n{}",
                    event.text,
                    place.map(|l| l.description.as_str()).unwrap_or_default()
                ),
                *at,
                event.perceivers.iter().map(|c| (c.clone(), *at)).collect(),
            ));
            continue;
        }
        if !perceived_text(event.kind) || event.text.trim().is_empty() {
            continue;
        }
        let mut known_from: BTreeMap<String, u32> =
            event.perceivers.iter().map(|c| (c.clone(), *at)).collect();
        if !event.speaker.is_empty() {
            known_from.insert(event.speaker.clone(), *at);
        }
        out.push(Source::new(
            format!("line:{}", event.seq),
            None,
            Some(event.seq),
            event.text.clone(),
            *at,
            known_from,
        ));
    }
    out
}
