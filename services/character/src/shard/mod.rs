//! One character's shard: its profile, its three-layer memory (episodic, semantic,
//! personality), every event it perceived, its emotional state, and the record of the
//! prompts built from it. Nothing else gets in: events the character did not perceive
//! are refused, and the only other input is the character's own profile.

use std::collections::BTreeMap;
use std::path::Path;

use dramatis_embed::Embedder;
use dramatis_memory::modules::{Line, LineKind, ModuleSet, Modules};
use dramatis_memory::{
    EmotionTransition, EpisodicMemory, Fact, MemoryShard, PersonalityPattern, ShardError,
    VisibilityRoute,
};
use dramatis_proto::v1::{
    CharacterProfile, Event, EventKind, MemoryItem, MemoryRef, PromptRecord, Usage,
};
use serde::{Deserialize, Serialize};

use crate::AgentError;
use crate::reverie::emotion::Mood;

/// Format of a saved shard file.
const FORMAT: u32 = 1;

/// Audit layer names.
pub const EPISODIC: &str = "episodic";
pub const SEMANTIC: &str = "semantic";
pub const PERSONALITY: &str = "personality";
pub const PERCEIVED: &str = "perceived";

/// What kind of perceived event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerceivedKind {
    Speech,
    Action,
    Movement,
    Narration,
    SceneStart,
    SceneEnd,
}

/// An event as the character perceived it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Perceived {
    pub seq: u64,
    pub scene_id: String,
    pub kind: PerceivedKind,
    pub speaker: String,
    pub speaker_name: String,
    pub target: String,
    pub target_name: String,
    pub text: String,
    /// The character's own thought (never anyone else's).
    pub thought: String,
    /// Who perceived it (the character saw who was there).
    pub perceivers: Vec<String>,
}

impl Perceived {
    fn from_event(event: &Event) -> Option<Self> {
        let kind = match event.kind() {
            EventKind::Speech => PerceivedKind::Speech,
            EventKind::Action => PerceivedKind::Action,
            EventKind::Movement => PerceivedKind::Movement,
            EventKind::Narration => PerceivedKind::Narration,
            EventKind::SceneStart => PerceivedKind::SceneStart,
            EventKind::SceneEnd => PerceivedKind::SceneEnd,
            EventKind::Unspecified => return None,
        };
        Some(Self {
            seq: event.seq,
            scene_id: event.scene_id.clone(),
            kind,
            speaker: event.speaker.clone(),
            speaker_name: display(&event.speaker_name, &event.speaker).to_owned(),
            target: event.target.clone(),
            target_name: display(&event.target_name, &event.target).to_owned(),
            text: event.text.clone(),
            thought: event.thought.clone(),
            perceivers: event.perceivers.clone(),
        })
    }

    /// The event as a line of the character's working memory ("You" for itself).
    #[must_use]
    pub fn line(&self, me: &str) -> Option<String> {
        let who = if self.speaker == me {
            "You"
        } else {
            self.speaker_name.as_str()
        };
        let to = if self.target.is_empty() {
            String::new()
        } else if self.target == me {
            " (to you)".to_owned()
        } else {
            format!(" (to {})", self.target_name)
        };
        let line = match self.kind {
            PerceivedKind::Speech => format!("{who}{to}: \"{}\"", self.text),
            PerceivedKind::Action | PerceivedKind::Movement => format!("{who}{to}: {}", self.text),
            PerceivedKind::Narration => self.text.clone(),
            PerceivedKind::SceneStart => format!("-- {} --", self.text),
            PerceivedKind::SceneEnd => return None,
        };
        if self.speaker == me && !self.thought.is_empty() {
            Some(format!("{line} (you thought: {})", self.thought))
        } else {
            Some(line)
        }
    }

    /// Id of this event in the audit.
    #[must_use]
    pub fn memory_id(&self) -> String {
        format!("event:{}", self.seq)
    }

    /// The event as a line of the storyline the memory modules share (scene markers
    /// are not lines). Its position is set when the modules take it.
    #[must_use]
    pub fn storyline_line(&self) -> Option<Line> {
        let kind = match self.kind {
            PerceivedKind::Speech => LineKind::Speech,
            PerceivedKind::Action => LineKind::Action,
            PerceivedKind::Movement => LineKind::Movement,
            PerceivedKind::Narration => LineKind::Narration,
            PerceivedKind::SceneStart | PerceivedKind::SceneEnd => return None,
        };
        Some(Line {
            position: 0,
            scene_id: self.scene_id.clone(),
            kind,
            speaker: self.speaker.clone(),
            speaker_name: self.speaker_name.clone(),
            target: self.target.clone(),
            target_name: self.target_name.clone(),
            text: self.text.clone(),
            location: String::new(),
        })
    }
}

/// How the character felt about one of its own utterances (from the action it chose),
/// waiting for the scene end to enter the emotion-transition record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Moment {
    pub seq: u64,
    pub emotion: String,
    pub intensity: f32,
    pub intent: String,
    /// The line it answered.
    pub trigger: String,
}

/// The annotation of the character's last action, until its own event arrives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    pub emotion: String,
    pub intensity: f32,
    pub intent: String,
    pub trigger: String,
}

/// One prompt sent to a language model, with the memory items it contained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub purpose: String,
    pub prompt: String,
    /// (memory id, layer) of every item in the prompt, in prompt order.
    pub items: Vec<(String, String)>,
    pub timestamp_ms: i64,
}

/// A scene the character lived through, ready to be written to long-term memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneDraft {
    pub scene_id: String,
    pub events: Vec<Perceived>,
    pub moments: Vec<Moment>,
    /// Display names of the people the character has met, by id.
    pub names: BTreeMap<String, String>,
}

/// What the write path made of a scene, with one vector per item.
#[derive(Debug, Clone)]
pub struct WrittenScene {
    pub episode: (EpisodicMemory, Vec<f32>),
    pub facts: Vec<(Fact, Vec<f32>)>,
    pub transitions: Vec<EmotionTransition>,
}

/// What one batched model rewrite produced.
#[derive(Debug, Clone, Default)]
pub struct Rewritten {
    /// New text and vector of each rewritten episodic memory.
    pub episodes: Vec<(EpisodicMemory, Vec<f32>)>,
    /// Extra facts the model found, each tied to a line the character perceived.
    pub facts: Vec<(Fact, Vec<f32>)>,
    /// The prompt sent (for the audit) and the usage.
    pub prompt: String,
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    format: u32,
    memory: MemoryShard,
    perceived: Vec<Perceived>,
    /// `perceived[unwritten..]` belong to a scene not yet written to long-term memory.
    unwritten: usize,
    moments: Vec<Moment>,
    pending: Option<Annotation>,
    mood: Mood,
    last_seq: u64,
    audit: Vec<AuditEntry>,
    /// Display names of the people the character has seen speak or be spoken to.
    #[serde(default)]
    names: BTreeMap<String, String>,
    /// Scenes written as digests, waiting for a batched model rewrite.
    #[serde(default)]
    rewrites: Vec<SceneDraft>,
    /// What the character wants, as it last said (starts as the profile's goal).
    #[serde(default)]
    goal: String,
    /// The memory modules on (ReverieMem's layers are `reverie`).
    #[serde(default)]
    module_set: ModuleSet,
    /// The other modules' memory (DualMem, MOOM, BOOKMARKS) and their shared storyline.
    #[serde(default)]
    modules: Modules,
}

/// A character's memory.
#[derive(Debug, Clone)]
pub struct Shard {
    pub profile: CharacterProfile,
    state: State,
}

impl Shard {
    /// A shard holding the profile and the character's own starting memories (episodic
    /// layer), knowledge (semantic layer, visible to this character by the route the
    /// scenario gives) and personality patterns, embedded in one batch.
    pub async fn new(
        profile: CharacterProfile,
        embedder: &dyn Embedder,
    ) -> Result<Self, AgentError> {
        let me = profile.id.clone();
        let mut texts: Vec<String> = Vec::new();
        texts.extend(profile.memories.iter().map(|m| m.text.clone()));
        texts.extend(profile.knowledge.iter().map(|f| f.text.clone()));
        texts.extend(profile.patterns.iter().map(|p| p.description.clone()));
        let vectors = embedder.embed(&texts).await?;
        let mut vectors = vectors.into_iter();
        let mut memory = MemoryShard::new(me.clone());
        for m in &profile.memories {
            let vector = vectors.next().unwrap_or_default();
            memory.episodic.add(
                EpisodicMemory {
                    id: format!("memory:{}", m.id),
                    scene_id: String::new(),
                    text: m.text.clone(),
                },
                &vector,
            );
        }
        for f in &profile.knowledge {
            let vector = vectors.next().unwrap_or_default();
            let fact = Fact {
                id: format!("fact:{}", f.id),
                subject: f.subject.clone(),
                predicate: f.predicate.clone(),
                object: f.object.clone(),
                cause: f.cause.clone(),
                visibility: std::iter::once(me.clone()).collect(),
                route: route(&f.route),
                text: f.text.clone(),
            };
            memory.semantic.add(fact, &vector);
        }
        for p in &profile.patterns {
            let vector = vectors.next().unwrap_or_default();
            memory.personality.add_pattern(
                PersonalityPattern {
                    id: format!("pattern:{}", p.id),
                    description: p.description.clone(),
                    excerpts: p.excerpts.clone(),
                },
                &vector,
            );
        }
        let goal = profile.goal.clone();
        Ok(Self {
            profile,
            state: State {
                format: FORMAT,
                memory,
                perceived: Vec::new(),
                unwritten: 0,
                moments: Vec::new(),
                pending: None,
                mood: Mood::default(),
                last_seq: 0,
                audit: Vec::new(),
                names: BTreeMap::new(),
                rewrites: Vec::new(),
                goal,
                module_set: ModuleSet::default(),
                modules: Modules::default(),
            },
        })
    }

    /// The persona the modules interpret through: the profile and manner of speaking.
    #[must_use]
    pub fn persona(&self) -> String {
        format!(
            "{} {}",
            self.profile.profile.trim(),
            self.profile.speaking_style.trim()
        )
        .trim()
        .to_owned()
    }

    /// Turns the memory modules of `set` on (new ones start empty) and the others off;
    /// a changed persona makes DualMem's older insights stale.
    pub fn use_modules(&mut self, set: ModuleSet) {
        let persona = self.persona();
        self.state.modules.use_set(set, &self.profile.id, &persona);
        self.state.module_set = set;
    }

    #[must_use]
    pub fn module_set(&self) -> ModuleSet {
        self.state.module_set
    }

    /// The memory modules beside ReverieMem's layers.
    #[must_use]
    pub fn modules(&self) -> &Modules {
        &self.state.modules
    }

    pub fn modules_mut(&mut self) -> &mut Modules {
        &mut self.state.modules
    }

    /// Reads a shard saved by [`Shard::save`] for this profile's character.
    pub fn load(profile: CharacterProfile, path: &Path) -> Result<Self, AgentError> {
        let state: State = dramatis_memory::load_json(path)?;
        state.memory.validate(path)?;
        if state.format != FORMAT {
            return Err(AgentError::Storage(format!(
                "{}: shard format {}, this build reads {FORMAT}",
                path.display(),
                state.format
            )));
        }
        if state.memory.character != profile.id {
            return Err(AgentError::Storage(format!(
                "{}: holds the shard of {:?}, not {:?}",
                path.display(),
                state.memory.character,
                profile.id
            )));
        }
        Ok(Self { profile, state })
    }

    /// Writes the shard to `path` (atomically).
    pub fn save(&self, path: &Path) -> Result<(), ShardError> {
        dramatis_memory::save_json(path, &self.state)
    }

    #[must_use]
    pub fn id(&self) -> &str {
        &self.profile.id
    }

    #[must_use]
    pub fn last_seq(&self) -> u64 {
        self.state.last_seq
    }

    /// The three layers.
    #[must_use]
    pub fn layers(&self) -> &MemoryShard {
        &self.state.memory
    }

    #[must_use]
    pub fn mood(&self) -> &Mood {
        &self.state.mood
    }

    pub fn set_mood(&mut self, mood: Mood) {
        self.state.mood = mood;
    }

    /// What the character wants, in its own words.
    #[must_use]
    pub fn goal(&self) -> &str {
        &self.state.goal
    }

    /// The character revises its goal (an empty goal keeps the old one).
    pub fn revise_goal(&mut self, goal: &str) {
        if !goal.trim().is_empty() {
            goal.trim().clone_into(&mut self.state.goal);
        }
    }

    /// Every event the character perceived, in order.
    #[must_use]
    pub fn perceived(&self) -> &[Perceived] {
        &self.state.perceived
    }

    /// The events of the scene under way (not yet written to long-term memory).
    #[must_use]
    pub fn current_scene(&self) -> &[Perceived] {
        &self.state.perceived[self.state.unwritten..]
    }

    /// Everything the shard holds, as memory items tagged with their layer.
    #[must_use]
    pub fn memory(&self) -> Vec<MemoryItem> {
        let layers = &self.state.memory;
        let item = |id: &str, source: &str, text: String, seq: u64| MemoryItem {
            id: id.to_owned(),
            source: source.to_owned(),
            text,
            seq,
        };
        let episodic = layers
            .episodic
            .items()
            .iter()
            .map(|m| item(&m.id, EPISODIC, m.text.clone(), 0));
        let semantic = layers
            .semantic
            .facts()
            .iter()
            .map(|f| item(&f.id, SEMANTIC, f.text.clone(), 0));
        let patterns = layers.personality.patterns().iter().map(|p| {
            let text = format!("{} e.g. {}", p.description, p.excerpts.join(" / "));
            item(&p.id, PERSONALITY, text, 0)
        });
        let me = self.id();
        let perceived = self.state.perceived.iter().filter_map(|p| {
            p.line(me)
                .map(|line| item(&p.memory_id(), PERCEIVED, line, p.seq))
        });
        let modules = self
            .state
            .modules
            .items()
            .into_iter()
            .map(|(id, source, text)| item(&id, &source, text, 0));
        episodic
            .chain(semantic)
            .chain(patterns)
            .chain(perceived)
            .chain(modules)
            .collect()
    }

    /// Every prompt built from this shard, oldest first.
    #[must_use]
    pub fn prompts(&self) -> Vec<PromptRecord> {
        self.state
            .audit
            .iter()
            .map(|entry| PromptRecord {
                memory_ids: entry.items.iter().map(|(id, _)| id.clone()).collect(),
                items: entry
                    .items
                    .iter()
                    .map(|(id, layer)| MemoryRef {
                        id: id.clone(),
                        layer: layer.clone(),
                        module: module_of(layer).to_owned(),
                    })
                    .collect(),
                prompt: entry.prompt.clone(),
                purpose: entry.purpose.clone(),
                character_id: self.profile.id.clone(),
                timestamp_ms: entry.timestamp_ms,
            })
            .collect()
    }

    /// Remembers a prompt built from this shard.
    pub fn record_prompt(&mut self, entry: AuditEntry) {
        self.state.audit.push(entry);
    }

    /// Keeps the annotation of the action just chosen until its event arrives.
    pub fn expect_own(&mut self, annotation: Annotation) {
        self.state.pending = Some(annotation);
    }

    /// Stores perceived events. Events already seen are skipped; an event this
    /// character did not perceive, or that carries someone else's thought, is refused
    /// (and nothing from the batch is stored). Returns how many were accepted and the
    /// scenes that ended, ready for the write path.
    pub fn perceive(&mut self, events: &[Event]) -> Result<(u32, Vec<SceneDraft>), AgentError> {
        let me = self.profile.id.clone();
        for event in events {
            if !event.perceivers.contains(&me) || (!event.thought.is_empty() && event.speaker != me)
            {
                return Err(AgentError::NotPerceived {
                    seq: event.seq,
                    character: me,
                });
            }
        }
        let mut accepted = 0;
        let mut ended = Vec::new();
        for event in events {
            if event.seq <= self.state.last_seq {
                continue;
            }
            self.state.last_seq = event.seq;
            accepted += 1;
            let Some(perceived) = Perceived::from_event(event) else {
                continue;
            };
            // A new scene closes the previous one even if its end was not perceived
            // (the character walked out before it ended).
            if self
                .current_scene()
                .last()
                .is_some_and(|last| last.scene_id != perceived.scene_id)
            {
                ended.extend(self.close_scene());
            }
            self.note_own_moment(&perceived);
            for (id, name) in [
                (&perceived.speaker, &perceived.speaker_name),
                (&perceived.target, &perceived.target_name),
            ] {
                if !id.is_empty() && !name.is_empty() {
                    self.state.names.insert(id.clone(), name.clone());
                }
            }
            let closes = perceived.kind == PerceivedKind::SceneEnd;
            self.state.perceived.push(perceived);
            if closes {
                ended.extend(self.close_scene());
            }
        }
        Ok((accepted, ended))
    }

    /// Pairs the character's own event with the annotation of the action behind it.
    fn note_own_moment(&mut self, perceived: &Perceived) {
        if perceived.speaker != self.profile.id {
            return;
        }
        // The world may trim or cap the words, so the next own event is the one.
        if let Some(annotation) = self.state.pending.take() {
            self.state.moments.push(Moment {
                seq: perceived.seq,
                emotion: annotation.emotion,
                intensity: annotation.intensity,
                intent: annotation.intent,
                trigger: annotation.trigger,
            });
        }
    }

    fn close_scene(&mut self) -> Option<SceneDraft> {
        let events = self.current_scene().to_vec();
        self.state.unwritten = self.state.perceived.len();
        let moments = std::mem::take(&mut self.state.moments);
        let scene_id = events.first()?.scene_id.clone();
        events
            .iter()
            .any(|e| e.kind != PerceivedKind::SceneEnd)
            .then(|| SceneDraft {
                scene_id,
                events,
                moments,
                names: self.state.names.clone(),
            })
    }

    /// Queues a scene for the batched model rewrite; returns the queue once it holds
    /// `batch` scenes (and empties it).
    pub fn queue_rewrite(&mut self, draft: SceneDraft, batch: usize) -> Option<Vec<SceneDraft>> {
        self.state.rewrites.push(draft);
        (self.state.rewrites.len() >= batch.max(1))
            .then(|| std::mem::take(&mut self.state.rewrites))
    }

    /// Puts a batched rewrite in place of the digests.
    pub fn commit_rewrite(&mut self, rewritten: Rewritten) {
        let layers = &mut self.state.memory;
        for (episode, vector) in rewritten.episodes {
            layers.episodic.upsert(episode, &vector);
        }
        for (fact, vector) in rewritten.facts {
            layers.semantic.add(fact, &vector);
        }
    }

    /// Adds what the write path made of a scene to the layers.
    pub fn commit(&mut self, written: WrittenScene) {
        let layers = &mut self.state.memory;
        let (episode, vector) = written.episode;
        layers.episodic.add(episode, &vector);
        for (fact, vector) in written.facts {
            layers.semantic.add(fact, &vector);
        }
        for transition in written.transitions {
            layers.personality.record(transition);
        }
    }
}

/// The memory module an audit layer belongs to: ReverieMem's three layers are
/// `reverie`, the scene under way is `scene`, and module items are named
/// `<module>.<kind>`.
#[must_use]
pub fn module_of(layer: &str) -> &str {
    match layer {
        EPISODIC | SEMANTIC | PERSONALITY => "reverie",
        PERCEIVED => "scene",
        other => other.split('.').next().unwrap_or(other),
    }
}

/// The visibility route a scenario names (`direct`, `observation`, `organisation`,
/// `common`); direct experience when unnamed.
fn route(name: &str) -> VisibilityRoute {
    match name.trim().to_lowercase().as_str() {
        "observation" | "observed" => VisibilityRoute::Observation,
        "organisation" | "organization" | "organisation_membership" => {
            VisibilityRoute::OrganisationMembership
        }
        "common" | "common_knowledge" => VisibilityRoute::CommonKnowledge,
        _ => VisibilityRoute::DirectExperience,
    }
}

pub(crate) fn display<'a>(name: &'a str, id: &'a str) -> &'a str {
    if name.is_empty() { id } else { name }
}

#[cfg(test)]
mod tests {
    use dramatis_embed::FakeEmbedder;
    use dramatis_proto::v1::KnownFact;

    use super::*;

    async fn shard() -> Shard {
        Shard::new(
            CharacterProfile {
                id: "watson".into(),
                name: "John Watson".into(),
                knowledge: vec![KnownFact {
                    id: "wound".into(),
                    text: "I was wounded at Maiwand.".into(),
                    ..KnownFact::default()
                }],
                ..CharacterProfile::default()
            },
            &FakeEmbedder::new(16),
        )
        .await
        .expect("shard")
    }

    fn event(
        seq: u64,
        kind: EventKind,
        speaker: &str,
        perceivers: &[&str],
        thought: &str,
    ) -> Event {
        Event {
            seq,
            scene_id: "s1".into(),
            speaker: speaker.into(),
            kind: kind as i32,
            text: format!("line {seq}"),
            perceivers: perceivers.iter().map(|p| (*p).to_owned()).collect(),
            thought: thought.into(),
            ..Event::default()
        }
    }

    fn speech(seq: u64, speaker: &str, perceivers: &[&str], thought: &str) -> Event {
        event(seq, EventKind::Speech, speaker, perceivers, thought)
    }

    #[tokio::test]
    async fn stores_perceived_events_once_and_refuses_foreign_ones() {
        let mut shard = shard().await;
        let batch = [
            speech(1, "holmes", &["holmes", "watson"], ""),
            speech(2, "watson", &["watson"], "tired"),
        ];
        assert_eq!(shard.perceive(&batch).expect("accepted").0, 2);
        assert_eq!(
            shard.perceive(&batch).expect("replayed").0,
            0,
            "duplicates are skipped"
        );
        let not_mine = shard.perceive(&[speech(3, "holmes", &["holmes"], "")]);
        assert!(matches!(
            not_mine,
            Err(AgentError::NotPerceived { seq: 3, .. })
        ));
        let leaked_thought = shard.perceive(&[speech(4, "holmes", &["watson"], "secret")]);
        assert!(matches!(
            leaked_thought,
            Err(AgentError::NotPerceived { seq: 4, .. })
        ));
        let texts: Vec<(String, String)> = shard
            .memory()
            .into_iter()
            .map(|m| (m.source, m.text))
            .collect();
        assert_eq!(
            texts,
            [
                (SEMANTIC.to_owned(), "I was wounded at Maiwand.".to_owned()),
                (PERCEIVED.to_owned(), "holmes: \"line 1\"".to_owned()),
                (
                    PERCEIVED.to_owned(),
                    "You: \"line 2\" (you thought: tired)".to_owned()
                )
            ]
        );
        assert_eq!(shard.last_seq(), 2);
    }

    #[tokio::test]
    async fn a_scene_closes_at_its_end_or_when_another_begins() {
        let mut shard = shard().await;
        shard.expect_own(Annotation {
            emotion: "curiosity".into(),
            intensity: 0.66,
            intent: "learn more".into(),
            trigger: "line 1".into(),
        });
        let (_, ended) = shard
            .perceive(&[
                speech(1, "holmes", &["holmes", "watson"], ""),
                speech(2, "watson", &["holmes", "watson"], ""),
            ])
            .expect("accepted");
        assert!(ended.is_empty());
        assert_eq!(shard.current_scene().len(), 2);
        let (_, ended) = shard
            .perceive(&[event(3, EventKind::SceneEnd, "", &["holmes", "watson"], "")])
            .expect("accepted");
        assert_eq!(ended.len(), 1);
        assert_eq!(
            ended[0].events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(
            ended[0].moments.len(),
            1,
            "own line paired with its annotation"
        );
        assert_eq!(ended[0].moments[0].seq, 2);
        assert!(shard.current_scene().is_empty());
        let mut next = speech(4, "holmes", &["watson"], "");
        next.scene_id = "s2".into();
        let mut later = speech(5, "holmes", &["watson"], "");
        later.scene_id = "s3".into();
        let (_, ended) = shard.perceive(&[next, later]).expect("accepted");
        assert_eq!(ended.len(), 1, "s2 closed when s3 began");
        assert_eq!(ended[0].scene_id, "s2");
    }
}
