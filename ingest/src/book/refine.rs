//! The model's part: JSON-schema calls that refine a stage's chunk, each validated,
//! retried once with the reason, then either accepted or reported (never silently
//! dropped: the deterministic result stays and the rejection is listed). Every call's
//! answer is kept in an append-only file keyed by a content hash of the request, and
//! every stage's result in a file keyed by a hash of its inputs, so an interrupted
//! ingest continues where it stopped and a rerun makes no model calls.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, ResponseSchema, parse_json};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::text::prefix;

/// A 64-bit FNV-1a hash of the parts (each length-prefixed, so parts cannot run together).
#[must_use]
pub fn content_hash(parts: &[&[u8]]) -> u64 {
    let mut h = fnv::FnvHasher::default();
    for p in parts {
        h.write_u64(p.len() as u64);
        h.write(p);
    }
    h.finish()
}

/// What one stage cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageCost {
    pub calls: u64,
    /// Calls answered from the cache (not sent to the model).
    pub cached_calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Refinements accepted and rejected.
    pub accepted: u64,
    pub rejected: u64,
    pub seconds: f64,
    /// The whole stage came from its cached result.
    pub from_cache: bool,
}

/// A chunk the model could not refine: the deterministic result was kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    pub stage: String,
    pub chunk: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CachedCall {
    key: String,
    text: String,
    prompt_tokens: u32,
    completion_tokens: u32,
}

#[derive(Debug, Default)]
struct Ledger {
    costs: BTreeMap<String, StageCost>,
    rejections: Vec<Rejection>,
    calls: HashMap<String, CachedCall>,
}

/// One refinement request: which stage and chunk (for the report), what to do, the
/// text the model may read, the answer's JSON schema and its length limit.
#[derive(Debug, Clone)]
pub struct Ask<'a> {
    pub stage: &'a str,
    pub chunk: String,
    pub task: &'a str,
    pub body: &'a str,
    pub schema: serde_json::Value,
    pub max_tokens: u32,
}

/// Makes the calls, counts them, and keeps their answers.
#[derive(Debug)]
pub struct Refiner {
    model: Option<Arc<dyn LanguageModel>>,
    calls_file: Option<PathBuf>,
    ledger: Mutex<Ledger>,
}

const ATTEMPTS: usize = 2;

impl Refiner {
    /// A refiner on `model` (none: the deterministic path only) whose call cache lives
    /// in `cache_dir` (none: not kept).
    pub fn new(
        model: Option<Arc<dyn LanguageModel>>,
        cache_dir: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let mut ledger = Ledger::default();
        let calls_file = cache_dir.map(|d| d.join("calls.jsonl"));
        if let Some(path) = &calls_file
            && let Ok(text) = std::fs::read_to_string(path)
        {
            // A line cut short by a kill is skipped; its call is simply made again.
            for line in text.lines() {
                if let Ok(call) = serde_json::from_str::<CachedCall>(line) {
                    ledger.calls.insert(call.key.clone(), call);
                }
            }
        }
        Ok(Self {
            model,
            calls_file,
            ledger: Mutex::new(ledger),
        })
    }

    /// Whether a model refines the stages.
    #[must_use]
    pub fn has_model(&self) -> bool {
        self.model.is_some()
    }

    /// The model's name, for stage-cache keys ("none" on the deterministic path).
    #[must_use]
    pub fn model_name(&self) -> String {
        self.model
            .as_ref()
            .map_or_else(|| "none".to_owned(), |m| m.name().to_owned())
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds to a stage's cost.
    pub fn cost(&self, stage: &str, update: impl FnOnce(&mut StageCost)) {
        update(self.ledger().costs.entry(stage.to_owned()).or_default());
    }

    #[must_use]
    pub fn costs(&self) -> BTreeMap<String, StageCost> {
        self.ledger().costs.clone()
    }

    #[must_use]
    pub fn rejections(&self) -> Vec<Rejection> {
        self.ledger().rejections.clone()
    }

    /// The rejections one stage reported.
    #[must_use]
    pub fn rejections_of(&self, stage: &str) -> Vec<Rejection> {
        let ledger = self.ledger();
        ledger
            .rejections
            .iter()
            .filter(|r| r.stage == stage)
            .cloned()
            .collect()
    }

    /// Reports again the rejections of a stage read from its cache.
    pub fn restore(&self, rejections: Vec<Rejection>) {
        self.ledger().rejections.extend(rejections);
    }

    /// Asks the model to refine one chunk; the answer must parse as `T` and pass
    /// `check`. Returns `None` (and
    /// reports the chunk) when two attempts fail, or at once without a model.
    pub async fn ask<T: DeserializeOwned>(
        &self,
        ask: Ask<'_>,
        check: impl Fn(&T) -> Result<(), String>,
    ) -> Option<T> {
        let Ask {
            stage,
            chunk,
            task,
            body,
            schema,
            max_tokens,
        } = ask;
        let model = self.model.as_ref()?;
        let system = format!(
            "You help turn a novel into a story world (Dramatis ingest, stage: {stage}). \
             Answer with one JSON object that follows the schema, and nothing else."
        );
        let mut user = format!("{task}\n\n{body}");
        let mut reason = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                user.push_str(&format!(
                    "\n\nYour last answer was not usable: {reason}. Answer again, JSON only."
                ));
            }
            let request = CompletionRequest::new(vec![
                ChatMessage::system(system.clone()),
                ChatMessage::user(user.clone()),
            ])
            .with_max_tokens(max_tokens)
            .with_temperature(0.0)
            .with_schema(ResponseSchema {
                name: stage.replace(' ', "_"),
                schema: schema.clone(),
            });
            let text = match self.complete(model.as_ref(), stage, &request).await {
                Ok(text) => text,
                Err(e) => {
                    reason = prefix(&e, 120);
                    continue;
                }
            };
            match parse_json::<T>(&text, |_| true) {
                Some((value, _)) => match check(&value) {
                    Ok(()) => {
                        self.cost(stage, |c| c.accepted += 1);
                        return Some(value);
                    }
                    Err(why) => reason = prefix(&why, 160),
                },
                None => {
                    reason = format!("not JSON of the asked shape: `{}`", prefix(text.trim(), 60))
                }
            }
        }
        self.cost(stage, |c| c.rejected += 1);
        self.ledger().rejections.push(Rejection {
            stage: stage.to_owned(),
            chunk,
            reason,
        });
        None
    }

    async fn complete(
        &self,
        model: &dyn LanguageModel,
        stage: &str,
        request: &CompletionRequest,
    ) -> Result<String, String> {
        let schema = request
            .schema
            .as_ref()
            .map(|s| s.schema.to_string())
            .unwrap_or_default();
        let key = format!(
            "{:016x}",
            content_hash(&[
                model.name().as_bytes(),
                request.prompt_text().as_bytes(),
                schema.as_bytes(),
                &request.max_tokens.to_le_bytes(),
            ])
        );
        // Bound first: the ledger's guard must be gone before `cost` locks it again.
        let hit = self.ledger().calls.get(&key).cloned();
        if let Some(hit) = hit {
            self.cost(stage, |c| c.cached_calls += 1);
            return Ok(hit.text);
        }
        let done = model
            .complete(request, None)
            .await
            .map_err(|e| format!("the model failed: {e}"))?;
        self.cost(stage, |c| {
            c.calls += 1;
            c.prompt_tokens += u64::from(done.prompt_tokens);
            c.completion_tokens += u64::from(done.completion_tokens);
        });
        let call = CachedCall {
            key: key.clone(),
            text: done.text.clone(),
            prompt_tokens: done.prompt_tokens,
            completion_tokens: done.completion_tokens,
        };
        if let Some(path) = &self.calls_file {
            // Appended and flushed per call: a kill loses at most the call in flight.
            let line = serde_json::to_string(&call).unwrap_or_default();
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut file| writeln!(file, "{line}"));
            if let Err(error) = appended {
                tracing::warn!(path = %path.display(), %error,
                    "cannot keep a model answer; a resumed ingest asks for it again");
            }
        }
        self.ledger().calls.insert(key, call);
        Ok(done.text)
    }
}

/// Stage results on disk, keyed by the hash of their inputs.
#[derive(Debug, Clone)]
pub struct StageCache {
    dir: Option<PathBuf>,
}

impl StageCache {
    #[must_use]
    pub fn new(dir: Option<&Path>) -> Self {
        Self {
            dir: dir.map(Path::to_path_buf),
        }
    }

    fn path(&self, stage: &str, key: u64) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{stage}-{key:016x}.json")))
    }

    pub fn load<T: DeserializeOwned>(&self, stage: &str, key: u64) -> Option<T> {
        let text = std::fs::read_to_string(self.path(stage, key)?).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes through a temporary file and a rename, so a kill never leaves half a result.
    pub fn store<T: Serialize>(&self, stage: &str, key: u64, value: &T) -> anyhow::Result<()> {
        let Some(path) = self.path(stage, key) else {
            return Ok(());
        };
        let temp = path.with_extension("json.partial");
        std::fs::write(&temp, serde_json::to_vec(value)?)
            .with_context(|| format!("cannot write {}", temp.display()))?;
        std::fs::rename(&temp, &path).with_context(|| format!("cannot write {}", path.display()))
    }
}
