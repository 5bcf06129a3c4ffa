//! The characters hosted by one agent process and what they do: attach, perceive, act,
//! answer. Each character's shard sits behind its own lock; nothing crosses shards.
//! Shards are saved to the agent's data directory (when it has one), one store file per
//! character, after every change, and read back when the character is attached again.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dashmap::DashMap;
use dramatis_embed::{CachedEmbedder, DEFAULT_CACHED_TEXTS, Embedder};
use dramatis_llm::{LanguageModel, RoleModels};
use dramatis_proto::v1::{Action, CharacterProfile, Usage};
use tokio::sync::Mutex;

use dramatis_memory::modules::{Grounding, ModuleSet, ReadQuery, Spent};
use dramatis_memory::reverie::{EmotionVectors, RecallSettings};

use crate::boundary::GuardMode;
use crate::error::AgentError;
use crate::mind::AgentMind;
use crate::shard::{DiskShard, JetStreamShard, Shard, ShardBackend as _, ShardStore, store_path};

/// How a scene's episodic memory is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryWrites {
    /// A deterministic first-person digest of what the character perceived (no call).
    #[default]
    Digest,
    /// The digest at once, then the character model rewrites the scene's memory in a
    /// call of its own as the scene ends (never with later scenes in view), with extra
    /// facts and their causes: for capable models.
    Model,
}

/// Settings of an agent process.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub models: RoleModels,
    /// The agent's own embedder.
    pub embedder: Arc<dyn Embedder>,
    pub recall: RecallSettings,
    pub memory_writes: MemoryWrites,
    /// Where shards are saved; in memory only when `None` (and no `shard_stream`).
    pub data_dir: Option<PathBuf>,
    /// Save shards to this JetStream stream instead of `data_dir`, so a character can
    /// move to another agent whole.
    pub shard_stream: Option<crate::shard::ShardStream>,
    /// Audited prompts each character's store keeps, newest first (all when `None`).
    pub audit_keep: Option<u64>,
    /// Tokens a turn's or an answer's prompt may take (estimated): the parts that weigh
    /// least are cut or left out past it ([`crate::prompt::PROMPT_BUDGET_TOKENS`] by
    /// default, which the built-in model's context holds).
    pub prompt_budget_tokens: usize,
    /// Tokens a turn may generate.
    pub act_max_tokens: u32,
    pub answer_max_tokens: u32,
    /// Sampling temperature of turns.
    pub temperature: f32,
    /// Sampling temperature of interview answers (0 is greedy, for evaluation).
    pub answer_temperature: f32,
    /// Attempts after the first when the model's output cannot be used.
    pub act_retries: u32,
    /// Memory modules for every character, overriding what the scenario asks for.
    pub memory_modules: Option<ModuleSet>,
    /// Tokens the memory modules (other than ReverieMem) may add to one prompt.
    pub module_budget_tokens: usize,
    /// What the boundary guard does with a line that uses words its character has no
    /// source for.
    pub boundary_guard: GuardMode,
    /// Whether a turn's line that echoes one in the character's recent context is asked
    /// for again (see `echo.rs`).
    pub echo_guard: bool,
}

impl AgentOptions {
    /// Options with the usual settings; `embedder` is put behind a cache of recent
    /// texts ([`CachedEmbedder`]), shared by the process's characters.
    #[must_use]
    pub fn new(models: RoleModels, embedder: Arc<dyn Embedder>) -> Self {
        Self {
            models,
            embedder: Arc::new(CachedEmbedder::new(embedder, DEFAULT_CACHED_TEXTS)),
            recall: RecallSettings::default(),
            memory_writes: MemoryWrites::Digest,
            data_dir: None,
            shard_stream: None,
            audit_keep: None,
            prompt_budget_tokens: crate::prompt::PROMPT_BUDGET_TOKENS,
            act_max_tokens: 160,
            answer_max_tokens: 80,
            temperature: 0.7,
            answer_temperature: 0.7,
            act_retries: 1,
            memory_modules: None,
            module_budget_tokens: 240,
            boundary_guard: GuardMode::Flag,
            // Off for an agent built in code (tests whose scripted lines repeat on
            // purpose); every agent the CLI starts sets it from --no-echo-guard.
            echo_guard: false,
        }
    }
}

type Key = (String, String);

/// The characters of this agent. Cheap to clone.
#[derive(Debug, Clone)]
pub struct CharacterAgents {
    pub(crate) shards: Arc<DashMap<Key, Arc<Mutex<Shard>>>>,
    /// For shards kept in JetStream: set when a save failed, and the character must
    /// be read again before it is used (see [`ShardStore::lost`]).
    lost: Arc<DashMap<Key, Arc<std::sync::atomic::AtomicBool>>>,
    pub(crate) options: Arc<AgentOptions>,
    pub(crate) emotion_vectors: Arc<EmotionVectors>,
    /// The work of calls under way that outlives its handler (a turn streamed to the
    /// world): shutdown waits for it ([`CharacterAgents::finish`]). A shard's writer is
    /// not one of them: it lives as long as its shard, and shutdown waits for its saves
    /// through [`CharacterAgents::save_all`].
    pub(crate) tasks: tokio_util::task::TaskTracker,
}

/// What an Act produced.
#[derive(Debug, Clone)]
pub struct ActOutcome {
    pub action: Action,
}

/// What an Answer produced.
#[derive(Debug, Clone)]
pub struct AnswerOutcome {
    pub answer: String,
    pub usage: Usage,
    /// Nothing the character remembers bears on the question; the answer says so.
    pub abstained: bool,
    /// With options: the one the character holds evidence for.
    pub choice: Option<usize>,
}

/// A file-name-safe rendering of an id.
fn file_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c.to_string()
            } else {
                format!("%{:02X}", u32::from(c))
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_owned()
}

impl CharacterAgents {
    #[must_use]
    pub fn new(options: AgentOptions) -> Self {
        // The gate's synonyms take a second or two to read: read them now, off the
        // caller's thread, rather than on the first question.
        if options.recall.gate.is_some() && options.recall.synonyms {
            std::thread::spawn(|| crate::evidence::thesaurus().len());
        }
        Self {
            shards: Arc::default(),
            lost: Arc::default(),
            options: Arc::new(options),
            emotion_vectors: Arc::default(),
            tasks: tokio_util::task::TaskTracker::new(),
        }
    }

    /// Stops taking call work and waits, for at most `bound`, for what is under way.
    /// Returns how many tasks were still running when the bound passed.
    pub async fn finish(&self, bound: std::time::Duration) -> usize {
        dramatis_runtime::shutdown::finish(&self.tasks, bound).await
    }

    pub(crate) fn shard(
        &self,
        world: &str,
        character: &str,
    ) -> Result<Arc<Mutex<Shard>>, AgentError> {
        let key = (world.to_owned(), character.to_owned());
        self.forget_if_lost(&key);
        self.shards
            .get(&key)
            .map(|s| Arc::clone(s.value()))
            .ok_or_else(|| AgentError::NotAttached {
                world: world.to_owned(),
                character: character.to_owned(),
            })
    }

    /// Where the shard of `character` in `world` was saved as JSON by earlier builds
    /// (its store is beside it: [`store_path`]).
    #[must_use]
    pub fn shard_path(&self, world: &str, character: &str) -> Option<PathBuf> {
        self.options.data_dir.as_ref().map(|dir| {
            dir.join(file_safe(world))
                .join(format!("{}.json", file_safe(character)))
        })
    }

    /// Creates the character's shard, or keeps the one in memory, or reads the one
    /// saved on disk. Returns the number of memory items and whether a shard was
    /// resumed.
    pub async fn attach(
        &self,
        world: &str,
        character: &str,
        profile: CharacterProfile,
    ) -> Result<(u32, bool), AgentError> {
        if profile.id != character {
            return Err(AgentError::InvalidArgument(format!(
                "profile.id {:?} does not match character_id {character:?}",
                profile.id
            )));
        }
        let modules = match &self.options.memory_modules {
            Some(set) => *set,
            None => match &profile.memory_modules {
                None => ModuleSet::default(),
                Some(list) => crate::modules::set_of(list).map_err(|e| {
                    AgentError::InvalidArgument(format!("profile.memory_modules: {e}"))
                })?,
            },
        };
        let key = (world.to_owned(), character.to_owned());
        self.forget_if_lost(&key);
        if let Some(existing) = self.shards.get(&key).map(|s| Arc::clone(s.value())) {
            let items = existing.lock().await.memory().len();
            return Ok((dramatis_runtime::saturating_u32(items), true));
        }
        let (mut shard, resumed) = match (
            &self.options.shard_stream,
            self.shard_path(world, character),
        ) {
            (Some(stream), _) => self.open_remote(stream, world, character, profile).await?,
            (None, Some(json)) => self.open_saved(profile, json).await?,
            (None, None) => (
                Shard::new(profile, self.options.embedder.as_ref()).await?,
                false,
            ),
        };
        shard.use_modules(modules);
        shard.save()?.wait().await?;
        let items = shard.memory().len();
        if let Some(store) = shard.store() {
            self.lost.insert(key.clone(), store.lost());
        }
        // A concurrent attach of the same character may have won; keep the first.
        self.shards
            .entry(key)
            .or_insert_with(|| Arc::new(Mutex::new(shard)));
        tracing::info!(
            world_id = world,
            character,
            resumed,
            items,
            "character attached"
        );
        Ok((dramatis_runtime::saturating_u32(items), resumed))
    }

    /// The character's shard from its store; or from the JSON file an earlier build
    /// saved (`json`), moved into a new store and removed; or new. Returns it (saving
    /// to its store) and whether it was resumed.
    async fn open_saved(
        &self,
        profile: CharacterProfile,
        json: PathBuf,
    ) -> Result<(Shard, bool), AgentError> {
        let path = store_path(&json);
        let (backend, read) = match Self::read_saved(&path, &profile).await {
            Err(AgentError::Corrupt(why)) => {
                // Nothing in it can be trusted; what the character lived through is in
                // the world's log, and the world sends it again from event 1 (this
                // attach answers `last_seq` 0). The bytes are kept for a post-mortem.
                let aside = {
                    let path = path.clone();
                    tokio::task::spawn_blocking(move || crate::shard::set_aside(&path))
                        .await
                        .map_err(|e| AgentError::Storage(format!("setting a store aside: {e}")))??
                };
                tracing::error!(path = %path.display(), aside = %aside.display(), %why,
                    "a corrupt shard store was set aside; the character is rebuilt from the world's log");
                Self::read_saved(&path, &profile).await?
            }
            other => other?,
        };
        let store = ShardStore::start(backend, self.options.audit_keep);
        let (mut shard, resumed, migrated) = match read {
            Some(shard) => (shard, true, json.is_file()),
            None if json.is_file() => (Shard::load_json(profile, &json)?, true, true),
            None => (
                Shard::new(profile, self.options.embedder.as_ref()).await?,
                false,
                false,
            ),
        };
        shard.keep_store(store);
        if migrated {
            // Into the store first; the old files go only once it is committed.
            shard.save()?.wait().await?;
            Shard::remove_json(&json);
            tracing::info!(from = %json.display(), to = %path.display(), "moved a JSON shard into its store");
        }
        Ok((shard, resumed))
    }

    /// Opens the store at `path` (created when absent) and reads the shard it holds, if
    /// any. [`AgentError::Corrupt`] when its bytes are not a store or its rows do not
    /// decode; a panic of the reader counts as that too.
    async fn read_saved(
        path: &Path,
        profile: &CharacterProfile,
    ) -> Result<(DiskShard, Option<Shard>), AgentError> {
        let (path, profile) = (path.to_path_buf(), profile.clone());
        let shown = path.display().to_string();
        tokio::task::spawn_blocking(move || {
            let (backend, stored) = DiskShard::open(&path)?;
            let shard = Shard::from_store(profile, &stored, &path)?;
            Ok::<_, AgentError>((backend, shard))
        })
        .await
        .map_err(|e| AgentError::Corrupt(format!("{shown}: reading it failed: {e}")))?
    }

    /// The character's shard from its JetStream subject, read into a store in memory
    /// that saves there; or new. Returns it and whether it was resumed.
    async fn open_remote(
        &self,
        stream: &crate::shard::ShardStream,
        world: &str,
        character: &str,
        profile: CharacterProfile,
    ) -> Result<(Shard, bool), AgentError> {
        let keep = self.options.audit_keep;
        let (backend, stored) = JetStreamShard::open(stream, world, character, keep).await?;
        let path = backend.name().to_path_buf();
        let store = ShardStore::start(backend, keep);
        let (mut shard, resumed) = match Shard::from_store(profile.clone(), &stored, &path)? {
            Some(shard) => (shard, true),
            None => (
                Shard::new(profile, self.options.embedder.as_ref()).await?,
                false,
            ),
        };
        shard.keep_store(store);
        Ok((shard, resumed))
    }

    /// Drops the character whose copy of its shard was lost (a save to JetStream or to
    /// disk failed): the next call finds it detached, and its attach reads it again.
    fn forget_if_lost(&self, key: &Key) {
        let lost = self
            .lost
            .get(key)
            .is_some_and(|l| l.load(std::sync::atomic::Ordering::Relaxed));
        if lost {
            self.lost.remove(key);
            self.shards.remove(key);
            tracing::warn!(world_id = %key.0, character = %key.1,
                "a save of the shard failed; the character will be read again");
        }
    }

    /// The highest event sequence `character`'s shard holds.
    pub async fn last_seq(&self, world: &str, character: &str) -> Result<u64, AgentError> {
        Ok(self.shard(world, character)?.lock().await.last_seq())
    }

    /// Unloads a character; deletes its saved shard (and the world's folder, once
    /// empty) unless `keep_shard`, in which case what is not saved yet (a last turn's
    /// prompts) is saved first.
    pub async fn detach(
        &self,
        world: &str,
        character: &str,
        keep_shard: bool,
    ) -> Result<(), AgentError> {
        self.lost.remove(&(world.to_owned(), character.to_owned()));
        let shard = self
            .shards
            .remove(&(world.to_owned(), character.to_owned()))
            .map(|(_, shard)| shard);
        if keep_shard {
            let shard = shard.ok_or_else(|| AgentError::NotAttached {
                world: world.to_owned(),
                character: character.to_owned(),
            })?;
            let saved = shard.lock().await.save()?;
            saved.wait().await?;
        } else if let Some(stream) = &self.options.shard_stream {
            // Its writer first, so nothing is published after the purge.
            drop(shard);
            stream.remove(world, character).await?;
        }
        // A shard is removed whether or not it is attached here: a world that could not
        // be restored (so never attached it) still deletes its characters' shards.
        if let Some(json) = self.shard_path(world, character).filter(|_| !keep_shard) {
            Shard::remove_json(&json);
            let path = store_path(&json);
            if let Err(e) = std::fs::remove_file(&path)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove shard file");
            }
            crate::shard::remove_set_aside(&path);
            // The world's folder goes with its last shard (fails harmlessly otherwise).
            if let Some(folder) = json.parent() {
                let _ = std::fs::remove_dir(folder); // not empty, or gone: both fine
            }
        }
        Ok(())
    }

    /// Saves every attached character's unsaved state (at shutdown). Failures are
    /// logged: the rest are still saved.
    pub async fn save_all(&self) {
        let shards: Vec<(Key, Arc<Mutex<Shard>>)> = self
            .shards
            .iter()
            .map(|e| (e.key().clone(), Arc::clone(e.value())))
            .collect();
        for ((world, character), shard) in shards {
            let saved = shard.lock().await.save();
            if let Err(error) = async { saved?.wait().await }.await {
                tracing::error!(world, character, %error, "cannot save a shard at shutdown");
            }
        }
    }

    /// A copy of the shard, with its whole prompt audit (read from its store).
    pub async fn snapshot(&self, world: &str, character: &str) -> Result<Shard, AgentError> {
        let shard = self.shard(world, character)?;
        let shard = shard.lock().await;
        // The read is queued behind every save submitted so far, under the lock: it
        // sees every saved prompt, and the copy holds those not yet saved.
        let saved = shard.store().map(ShardStore::audit);
        let copy = shard.clone();
        drop(shard);
        match saved {
            Some(read) => Ok(copy.with_saved_audit(read.await?)),
            None => Ok(copy),
        }
    }

    /// The modules' mind for one operation: the agent's embedder, and the character
    /// model when module steps may call it (with model-written memory).
    pub(crate) fn mind<'a>(&'a self, model: &'a dyn LanguageModel) -> AgentMind<'a> {
        let calls = self.options.memory_writes == MemoryWrites::Model;
        AgentMind::new(self.options.embedder.as_ref(), calls.then_some(model))
    }

    /// Grounding from the memory modules for `text` (none when no module is on); their
    /// model calls are added to `spent` and audited.
    pub(crate) async fn module_grounding(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        text: &str,
        answering: bool,
        present: &[String],
        spent: &mut Spent,
    ) -> Result<Vec<Grounding>, AgentError> {
        if !shard.modules().any() {
            return Ok(Vec::new());
        }
        let vector = self
            .options
            .embedder
            .embed(&[text.to_owned()])
            .await?
            .pop()
            .unwrap_or_default();
        let mind = self.mind(model);
        let grounding = shard
            .modules_mut()
            .ground(
                &mind,
                &ReadQuery {
                    text,
                    vector: &vector,
                    answering,
                    present,
                },
                self.options.module_budget_tokens,
            )
            .await;
        let (calls, audit) = mind.finish();
        spent.add(calls);
        for entry in audit {
            shard.record_prompt(entry);
        }
        Ok(grounding)
    }
}
