//! A shard to and from its store: what changed since the last save, as a [`Delta`]; a
//! shard rebuilt from what the store holds; and a JSON shard of an earlier build read
//! to be moved into the store.
//!
//! Items are only ever appended to the layers and the perceived list, so a save writes
//! the rows past what the store holds ([`Saved`] keeps those counts), plus the few
//! episodic memories a model rewrite replaced in place. The small state (scene under
//! way, mood, names, goal) is one row, written when its bytes changed; the memory
//! modules are another. Audited prompts leave memory once saved.

use std::collections::BTreeSet;
use std::hash::{Hash as _, Hasher as _};
use std::path::Path;

use super::rows::{Delta, Row, Stored, vector_bytes, vector_of};
use super::*;

/// Format of a shard in a store.
const STORE_FORMAT: u32 = 2;

/// How much of the shard the store holds.
#[derive(Debug, Clone, Default)]
pub(super) struct Saved {
    perceived: usize,
    episodic: usize,
    semantic: usize,
    patterns: usize,
    transitions: usize,
    /// Episodic memories (positions) saved, then replaced by a model rewrite.
    rewritten: BTreeSet<usize>,
    /// The number the next saved prompt gets.
    audit_next: u64,
    /// Hashes of the state row and of the modules row as last saved.
    state_hash: Option<u64>,
    modules_hash: Option<u64>,
}

impl Saved {
    /// Notes that the episodic memory at `position` was replaced.
    pub(super) fn rewritten(&mut self, position: usize) {
        if position < self.episodic {
            self.rewritten.insert(position);
        }
    }
}

/// The state's small part, saved whole (it does not grow with the story).
#[derive(Serialize)]
struct CoreRef<'a> {
    format: u32,
    character: &'a str,
    unwritten: usize,
    moments: &'a [Moment],
    pending: &'a Option<Annotation>,
    mood: &'a Mood,
    last_seq: u64,
    names: &'a BTreeMap<String, String>,
    goal: &'a str,
    module_set: ModuleSet,
}

/// [`CoreRef`] read back.
#[derive(Deserialize)]
struct Core {
    format: u32,
    character: String,
    unwritten: usize,
    moments: Vec<Moment>,
    pending: Option<Annotation>,
    mood: Mood,
    last_seq: u64,
    #[serde(default)]
    names: BTreeMap<String, String>,
    #[serde(default)]
    goal: String,
    #[serde(default)]
    module_set: ModuleSet,
}

fn hash(bytes: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

fn json(value: &impl Serialize, what: &str) -> Result<Vec<u8>, AgentError> {
    serde_json::to_vec(value).map_err(|e| AgentError::Storage(format!("{what}: {e}")))
}

fn decode<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    path: &Path,
    what: &str,
) -> Result<T, AgentError> {
    serde_json::from_slice(bytes)
        .map_err(|e| AgentError::Corrupt(format!("{}: {what}: {e}", path.display())))
}

/// The rows at `positions` of a layer, each item with its vector.
fn rows<T: Serialize>(
    items: &[T],
    positions: impl IntoIterator<Item = usize>,
    vector: impl Fn(usize) -> Option<Vec<u8>>,
    what: &str,
) -> Result<Vec<(u64, Row)>, AgentError> {
    positions
        .into_iter()
        .map(|i| {
            Ok((
                i as u64,
                (json(&items[i], what)?, vector(i).unwrap_or_default()),
            ))
        })
        .collect()
}

/// The rows `from..` of a list without vectors.
fn plain_rows<T: Serialize>(
    items: &[T],
    from: usize,
    what: &str,
) -> Result<Vec<(u64, Vec<u8>)>, AgentError> {
    (from..items.len())
        .map(|i| Ok((i as u64, json(&items[i], what)?)))
        .collect()
}

impl Shard {
    /// Saves the shard to `store` from now on (it holds what [`Saved`] says).
    pub(crate) fn keep_store(&mut self, store: ShardStore) {
        self.store = Some(store);
    }

    /// The store the shard is saved to.
    #[must_use]
    pub fn store(&self) -> Option<&ShardStore> {
        self.store.as_ref()
    }

    /// Queues a save of what changed since the last one. Only serialising the change
    /// happens here (under the shard's lock); wait for the returned save once the lock
    /// is released.
    pub fn save(&mut self) -> Result<PendingSave, AgentError> {
        if self.store.is_none() {
            return Ok(PendingSave::none());
        }
        let delta = self.delta()?;
        match &self.store {
            Some(store) if !delta.is_empty() => Ok(store.submit(delta)),
            _ => Ok(PendingSave::none()),
        }
    }

    /// The two rows saved whole: the small state and the memory modules.
    fn whole_rows(&self) -> Result<(Vec<u8>, Vec<u8>), AgentError> {
        let state = &self.state;
        let core = json(
            &CoreRef {
                format: STORE_FORMAT,
                character: &state.memory.character,
                unwritten: state.unwritten,
                moments: &state.moments,
                pending: &state.pending,
                mood: &state.mood,
                last_seq: state.last_seq,
                names: &state.names,
                goal: &state.goal,
                module_set: state.module_set,
            },
            "state",
        )?;
        Ok((core, json(&state.modules, "modules")?))
    }

    /// What changed since the last save, marked as saved.
    pub(super) fn delta(&mut self) -> Result<Delta, AgentError> {
        let (core, modules) = self.whole_rows()?;
        let state = &self.state;
        let layers = &state.memory;
        let saved = &mut self.saved;
        let mut delta = Delta::default();
        let core_hash = hash(&core);
        if saved.state_hash != Some(core_hash) {
            saved.state_hash = Some(core_hash);
            delta.state = Some(core);
        }
        let modules_hash = hash(&modules);
        if saved.modules_hash != Some(modules_hash) {
            saved.modules_hash = Some(modules_hash);
            delta.modules = Some(modules);
        }
        delta.perceived = plain_rows(&state.perceived, saved.perceived, "perceived")?;
        let episodic = layers.episodic.items();
        // New episodes, then those a model rewrite replaced in place.
        let changed = (saved.episodic..episodic.len()).chain(saved.rewritten.iter().copied());
        delta.episodic = rows(
            episodic,
            changed,
            |i| layers.episodic.vector_at(i).map(vector_bytes),
            "episodic",
        )?;
        let semantic = layers.semantic.facts();
        delta.semantic = rows(
            semantic,
            saved.semantic..semantic.len(),
            |i| layers.semantic.vector_at(i).map(vector_bytes),
            "semantic",
        )?;
        let personality = &layers.personality;
        let patterns = personality.patterns();
        delta.patterns = rows(
            patterns,
            saved.patterns..patterns.len(),
            |i| personality.pattern_vector_at(i).map(vector_bytes),
            "patterns",
        )?;
        let transitions = personality.transitions();
        delta.transitions = plain_rows(transitions, saved.transitions, "transition")?;
        delta.audit = state
            .audit
            .iter()
            .zip(saved.audit_next..)
            .map(|(entry, key)| Ok((key, json(entry, "audit entry")?)))
            .collect::<Result<_, AgentError>>()?;
        saved.audit_next += delta.audit.len() as u64;
        saved.perceived = state.perceived.len();
        saved.episodic = episodic.len();
        saved.rewritten.clear();
        saved.semantic = semantic.len();
        saved.patterns = patterns.len();
        saved.transitions = transitions.len();
        self.state.audit.clear();
        Ok(delta)
    }

    /// The shard `stored` holds for this profile's character; `None` when the store is
    /// empty (made, but nothing committed yet).
    pub fn from_store(
        profile: CharacterProfile,
        stored: &Stored,
        path: &Path,
    ) -> Result<Option<Self>, AgentError> {
        let Some(state) = &stored.state else {
            return Ok(None);
        };
        let core: Core = decode(state, path, "state")?;
        if core.format != STORE_FORMAT {
            return Err(AgentError::Storage(format!(
                "{}: shard format {}, this build reads {STORE_FORMAT}",
                path.display(),
                core.format
            )));
        }
        if core.character != profile.id {
            return Err(AgentError::Storage(format!(
                "{}: holds the shard of {:?}, not {:?}",
                path.display(),
                core.character,
                profile.id
            )));
        }
        let mut memory = ReverieLayers::new(core.character);
        for (item, vector) in &stored.episodic {
            memory
                .episodic
                .add(decode(item, path, "episodic")?, &vector_of(vector));
        }
        for (item, vector) in &stored.semantic {
            memory
                .semantic
                .add(decode(item, path, "semantic")?, &vector_of(vector));
        }
        for (item, vector) in &stored.patterns {
            memory
                .personality
                .add_pattern(decode(item, path, "patterns")?, &vector_of(vector));
        }
        for transition in &stored.transitions {
            memory
                .personality
                .record(decode(transition, path, "transitions")?);
        }
        let perceived: Vec<Perceived> = stored
            .perceived
            .iter()
            .map(|p| decode(p, path, "perceived"))
            .collect::<Result<_, _>>()?;
        if core.unwritten > perceived.len() {
            return Err(AgentError::Corrupt(format!(
                "{}: the scene under way starts at {} of {} perceived events",
                path.display(),
                core.unwritten,
                perceived.len()
            )));
        }
        let modules = match &stored.modules {
            Some(bytes) => decode(bytes, path, "modules")?,
            None => Modules::default(),
        };
        let mut shard = Self {
            profile,
            state: State {
                format: FORMAT,
                memory,
                perceived,
                unwritten: core.unwritten,
                moments: core.moments,
                pending: core.pending,
                mood: core.mood,
                last_seq: core.last_seq,
                audit: Vec::new(),
                names: core.names,
                goal: core.goal,
                module_set: core.module_set,
                modules,
            },
            store: None,
            saved: Saved::default(),
            vocabulary: std::sync::Arc::default(),
        };
        shard.rebuild_vocabulary();
        shard.mark_saved(stored.audit_next)?;
        Ok(Some(shard))
    }

    /// Marks everything in memory as held by the store, whose next audit number is
    /// `audit_next` (so an unchanged shard is not written again).
    fn mark_saved(&mut self, audit_next: u64) -> Result<(), AgentError> {
        let (core, modules) = self.whole_rows()?;
        let layers = &self.state.memory;
        self.saved = Saved {
            perceived: self.state.perceived.len(),
            episodic: layers.episodic.items().len(),
            semantic: layers.semantic.facts().len(),
            patterns: layers.personality.patterns().len(),
            transitions: layers.personality.transitions().len(),
            rewritten: BTreeSet::new(),
            audit_next,
            state_hash: Some(hash(&core)),
            modules_hash: Some(hash(&modules)),
        };
        Ok(())
    }

    /// Reads a shard an earlier build saved as JSON (`path`, with its audit file beside
    /// it) for this profile's character. Nothing is written: save it to a store, then
    /// remove the old files ([`Shard::remove_json`]).
    pub fn load_json(profile: CharacterProfile, path: &Path) -> Result<Self, AgentError> {
        let mut state: State = dramatis_memory::load_json(path)?;
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
        let in_file = legacy::read_audit(&legacy::audit_path(path))?;
        state.audit = legacy::merge_audit(std::mem::take(&mut state.audit), in_file);
        let mut shard = Self {
            profile,
            state,
            store: None,
            saved: Saved::default(),
            vocabulary: std::sync::Arc::default(),
        };
        shard.rebuild_vocabulary();
        Ok(shard)
    }

    /// Removes the files of a JSON shard (`path` and its audit file).
    pub fn remove_json(path: &Path) {
        legacy::remove(path);
    }

    /// Every prompt built from this shard, oldest first: `saved` (read from the store)
    /// then those not yet saved. For a copy shown to a client.
    pub fn with_saved_audit(mut self, saved: Vec<AuditEntry>) -> Self {
        let unsaved = std::mem::replace(&mut self.state.audit, saved);
        self.state.audit.extend(unsaved);
        self
    }
}
