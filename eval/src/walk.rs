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

use anyhow::{Context as _, anyhow, bail};
use dramatis_proto::v1::{
    CreateWorldRequest, Event, EventKind, GetWorldRequest, WatchRequest, WorldStatus,
    advance_request, watch_response,
};
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

impl Run {
    /// Takes in `event`, logged when `played` turns had been played.
    fn take(&mut self, played: u32, event: Event) {
        // A scene's end is logged as the next turn begins: the scene ended at the
        // position of its last turn.
        if event.kind == EventKind::SceneEnd as i32 {
            self.scene_ends.push(self.last_turn);
        } else if event.turn > 0 {
            self.last_turn = played;
        }
        self.log.push((played, event));
    }

    /// The run as it stood once `turns` turns had been played: the events logged by
    /// then, each at its position, as a walk that stopped there holds them.
    #[must_use]
    pub fn until(&self, turns: u32) -> Self {
        let mut run = Self::default();
        for (played, event) in self.log.iter().filter(|(at, _)| *at <= turns) {
            run.take(*played, event.clone());
        }
        run.turns = turns.min(self.turns);
        run.finished = self.finished && turns >= self.turns;
        run
    }

    /// The run a whole logged transcript records, each event at the position a walk
    /// one turn at a time would have logged it: with the next line (or, after the
    /// last line, at the end).
    #[must_use]
    pub fn of_log(events: &[Event], finished: bool) -> Self {
        let mut lines_so_far = Vec::with_capacity(events.len());
        let mut lines = 0;
        for event in events {
            lines += u32::from(event.turn > 0);
            lines_so_far.push(lines);
        }
        let mut positions = vec![lines; events.len()];
        let mut next_line = lines;
        for (i, event) in events.iter().enumerate().rev() {
            if event.turn > 0 {
                next_line = lines_so_far[i];
            }
            positions[i] = next_line;
        }
        let mut run = Self::default();
        for (event, played) in events.iter().zip(positions) {
            run.take(played, event.clone());
        }
        run.turns = lines;
        run.finished = finished;
        run
    }
}

/// A story a world service logged, read back whole as an omniscient watcher reads it.
#[derive(Debug, Clone)]
pub struct Logged {
    pub world: String,
    /// The world's title.
    pub title: String,
    /// The name of the scenario it played.
    pub scenario: String,
    pub events: Vec<Event>,
    pub finished: bool,
}

impl Logged {
    /// World `world`'s transcript and status on the service `client` talks to.
    pub async fn read(client: &mut WorldRpc, world: &str) -> anyhow::Result<Self> {
        let info = client
            .get_world(GetWorldRequest {
                world_id: world.to_owned(),
            })
            .await
            .map_err(|s| anyhow!("cannot read world {world}: {}", describe(&s)))?
            .into_inner();
        let mut stream = client
            .watch(WatchRequest {
                world_id: world.to_owned(),
                from_seq: 1,
                no_follow: true,
                pov: String::new(),
            })
            .await
            .map_err(|s| anyhow!("cannot read world {world}'s log: {}", describe(&s)))?
            .into_inner();
        let mut events = Vec::new();
        while let Some(item) = stream
            .message()
            .await
            .map_err(|s| anyhow!("reading world {world}'s log broke: {}", describe(&s)))?
        {
            if let Some(watch_response::Item::Event(event)) = item.item {
                events.push(event);
            }
        }
        Ok(Self {
            world: world.to_owned(),
            title: info.title,
            scenario: info.scenario,
            events,
            finished: info.status == WorldStatus::Finished as i32,
        })
    }

    /// `played_with` of items made from this log.
    #[must_use]
    pub fn played_with(&self) -> String {
        format!("log:{}", self.world)
    }

    /// Its run, each event at its position.
    #[must_use]
    pub fn run(&self) -> Run {
        Run::of_log(&self.events, self.finished)
    }
}

/// A world being walked.
pub struct Walk {
    pub client: WorldRpc,
    pub world: String,
    pub run: Run,
    /// A replay's log: each event the walk logs must be the one logged with its number,
    /// and a log of an unfinished story is walked no further than its last line.
    source: Option<Logged>,
    /// The replay of an unfinished story's log stops at its last line.
    end: Option<u32>,
    /// The moment questions are put at (`Ask.as_of`, a seq): none, as the world stands.
    pub as_of: Option<u64>,
}

impl Walk {
    /// Creates a world from `scenario_path` on the service `client` talks to.
    pub async fn start(mut client: WorldRpc, scenario_path: &Path) -> anyhow::Result<Self> {
        let world = crate::create_world_from_file(&mut client, scenario_path).await?;
        Ok(Self {
            client,
            world,
            run: Run::default(),
            source: None,
            end: None,
            as_of: None,
        })
    }

    /// Creates a world from `scenario_path` whose turns are played from `logged`'s
    /// lines (`CreateWorldRequest.replay`) instead of by a model.
    pub async fn replay(
        mut client: WorldRpc,
        scenario_path: &Path,
        logged: Logged,
    ) -> anyhow::Result<Self> {
        let world = client
            .create_world(CreateWorldRequest {
                source: Some(crate::file_source(scenario_path)),
                replay: logged.events.clone(),
                ..CreateWorldRequest::default()
            })
            .await
            .map_err(|s| anyhow!("cannot replay world {}: {}", logged.world, describe(&s)))?
            .into_inner()
            .world_id;
        let end = (!logged.finished).then(|| logged.run().turns);
        Ok(Self {
            client,
            world,
            run: Run::default(),
            source: Some(logged),
            end,
            as_of: None,
        })
    }

    /// Plays until `at` turns have been played (`None`: to the end of the story), one
    /// turn per call so every event gets its exact position. Stops early, without error,
    /// when the story ends first; [`Run::turns`] says where it stopped.
    pub async fn advance_to(&mut self, at: Option<u32>) -> anyhow::Result<()> {
        let at = match (at, self.end) {
            (Some(at), Some(end)) => Some(at.min(end)),
            (at, end) => at.or(end),
        };
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
                if let Some(logged) = &self.source {
                    follows(logged, &event)?;
                }
                self.run.take(played, event);
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

/// Fails unless `event` of a replay is the event its log holds under the same number:
/// the same kind, actor, words, target, place and perceivers.
fn follows(logged: &Logged, event: &Event) -> anyhow::Result<()> {
    let was = usize::try_from(event.seq)
        .ok()
        .and_then(|seq| logged.events.get(seq.checked_sub(1)?))
        .with_context(|| {
            format!(
                "the replay logged event {}, past the end of world {}'s log",
                event.seq, logged.world
            )
        })?;
    let sorted = |who: &[String]| {
        let mut who = who.to_vec();
        who.sort_unstable();
        who
    };
    let fields = |e: &Event| {
        (
            e.kind,
            e.speaker.clone(),
            e.text.clone(),
            e.target.clone(),
            e.location.clone(),
            sorted(&e.perceivers),
        )
    };
    if fields(was) != fields(event) {
        bail!(
            "the replay left world {}'s log at event {}: it logged {:?} by {:?}, the log \
             holds {:?} by {:?}",
            logged.world,
            event.seq,
            short(&event.text),
            event.speaker,
            short(&was.text),
            was.speaker
        );
    }
    Ok(())
}

/// The first 60 characters of `text`, for messages.
fn short(text: &str) -> String {
    text.chars().take(60).collect()
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

    /// Whether its text holds `word` as a whole word, ignoring case (a Chinese one
    /// anywhere it stands).
    #[must_use]
    pub fn holds(&self, word: &str) -> bool {
        if crate::words::has_han(word) {
            return crate::words::contains_word(&self.text, word);
        }
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
