//! One character's shard: its profile, its three-layer memory (episodic, semantic,
//! personality), every event it perceived, its emotional state, and the record of the
//! prompts built from it. Nothing else gets in: events the character did not perceive
//! are refused, and the only other input is the character's own profile.

use std::collections::BTreeMap;

use dramatis_embed::Embedder;
use dramatis_memory::modules::{ModuleKind, ModuleSet, Modules};
use dramatis_memory::reverie::Reverie;
use dramatis_memory::{EpisodicMemory, Fact, PersonalityPattern, ReverieLayers, VisibilityRoute};
use dramatis_proto::v1::{CharacterProfile, Event};
use serde::{Deserialize, Serialize};

use crate::error::AgentError;

mod as_of;
mod backend;
mod jetstream;
mod legacy;
mod persist;
mod rows;
mod saver;
mod scenes;
mod scratch;
mod store;
mod vocabulary;
mod wire;
pub use backend::{DiskShard, JetStreamShard, SaveError, ShardBackend};
pub use dramatis_memory::reverie::{
    Annotation, Joint, Moment, Perceived, PerceivedKind, Phrase, Rewritten, SceneDraft,
    WrittenScene,
};
pub use jetstream::{COMPACT_AFTER, RemoteShard, ShardStream};
pub use rows::{Delta, Stored};
pub use saver::{PendingSave, ShardStore};
pub use store::{read_file as read_store_file, remove_set_aside, set_aside, store_path};
pub(crate) use vocabulary::{add_words, trim_word};
pub use wire::module_of;
pub(crate) use wire::perceived_of;

pub use dramatis_memory::reverie::{EPISODIC, Mood, PERCEIVED, PERSONALITY, SEMANTIC};

/// Format of a shard saved as one JSON file (earlier builds; read to migrate).
const FORMAT: u32 = 1;

/// One prompt sent to a language model, with the memory items it contained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub purpose: String,
    pub prompt: String,
    /// (memory id, layer) of every item in the prompt, in prompt order.
    pub items: Vec<(String, String)>,
    pub timestamp_ms: i64,
    /// Words of the reply to this prompt that the boundary guard found no source for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flagged: Vec<String>,
    /// What the echo guard decided about the reply to this prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guard: Vec<String>,
}

/// The saved state. Fields a file holds that this build does not know are ignored:
/// `rewrites`, the queue of scenes waiting for a batched model rewrite in earlier
/// builds, is dropped on load (those scenes keep their digests).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct State {
    format: u32,
    memory: ReverieLayers,
    perceived: Vec<Perceived>,
    /// `perceived[unwritten..]` belong to a scene not yet written to long-term memory.
    unwritten: usize,
    moments: Vec<Moment>,
    pending: Option<Annotation>,
    mood: Mood,
    last_seq: u64,
    /// Prompts audited and not yet saved (with no store: every prompt). Read from
    /// JSON shards of the first layout, which kept the audit inside; never written as
    /// part of the state.
    #[serde(default, skip_serializing)]
    audit: Vec<AuditEntry>,
    /// Display names of the people the character has seen speak or be spoken to.
    #[serde(default)]
    names: BTreeMap<String, String>,
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
    /// Where the shard is saved (none: the agent keeps no files).
    store: Option<ShardStore>,
    /// What the store already holds.
    saved: persist::Saved,
    /// Every word (lower-cased) of the layers' items and the perceived lines: what the
    /// boundary guard counts as sourced. Kept as items arrive, so a check costs the
    /// line's length, not the shard's size; rebuilt when a shard is read.
    vocabulary: std::sync::Arc<std::collections::HashSet<String>>,
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
        let mut memory = ReverieLayers::new(me.clone());
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
        let mut shard = Self {
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
                goal,
                module_set: ModuleSet::default(),
                modules: Modules::default(),
            },
            store: None,
            saved: persist::Saved::default(),
            vocabulary: std::sync::Arc::default(),
        };
        shard.rebuild_vocabulary();
        Ok(shard)
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
    pub fn layers(&self) -> &ReverieLayers {
        &self.state.memory
    }

    /// ReverieMem over this shard's layers and mood, on when the module set holds it.
    #[must_use]
    pub fn reverie(&self) -> Reverie<'_> {
        Reverie {
            layers: &self.state.memory,
            mood: &self.state.mood,
            character: &self.profile.id,
            name: &self.profile.name,
            on: self.state.module_set.contains(ModuleKind::Reverie),
        }
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

    /// Remembers a prompt built from this shard.
    pub fn record_prompt(&mut self, entry: AuditEntry) {
        self.state.audit.push(entry);
    }

    /// Notes a guard's decision about the reply to the latest prompt.
    pub fn note_last_prompt(&mut self, note: String) {
        if let Some(entry) = self.state.audit.last_mut() {
            entry.guard.push(note);
        }
    }

    /// Notes on the latest prompt that its reply used `words` the character has no
    /// source for.
    pub fn flag_last_prompt(&mut self, words: &[String]) {
        if let Some(entry) = self.state.audit.last_mut() {
            entry.flagged.extend(words.iter().cloned());
        }
    }

    /// Keeps the annotation of the action just chosen until its event arrives.
    pub fn expect_own(&mut self, annotation: Annotation) {
        self.state.pending = Some(annotation);
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
mod tests;

/// An audit entry of the given purpose, for tests of the shard's files.
#[cfg(test)]
pub(crate) fn test_entry(purpose: &str) -> AuditEntry {
    AuditEntry {
        purpose: purpose.into(),
        prompt: format!("prompt of {purpose}"),
        items: vec![("fact:1".into(), "semantic".into())],
        timestamp_ms: 7,
        flagged: Vec::new(),
        guard: Vec::new(),
    }
}
