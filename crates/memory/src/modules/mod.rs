//! Memory modules beside ReverieMem's layers, all inside one character's shard: DualMem
//! (fact and insight streams), MOOM (plot hierarchy, persona keys, competition–inhibition
//! forgetting) and BOOKMARKS (a bookmark pool synchronised along the storyline).
//!
//! Every module sees the same two write hooks (a line the character perceived, the end
//! of a scene it was in) and one read hook (grounding for a turn or an interview within
//! a token budget). A module reaches an embedder or a language model only through
//! [`Mind`], which the agent implements; a step whose model output is missing or
//! unusable takes the module's deterministic fallback, so every module runs without a
//! capable model. Nothing here sees anything but the character's own storyline.

pub mod bookmarks;
pub mod dualmem;
pub mod forgetting;
pub mod moom;
mod text;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub use bookmarks::{BookmarkKind, Bookmarks};
pub use dualmem::DualMem;
pub use moom::Moom;
pub use text::{estimate_tokens, keywords};

/// The memory modules a character runs. ReverieMem's layers are `reverie`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleSet {
    pub reverie: bool,
    pub dualmem: bool,
    pub moom: bool,
    pub bookmarks: bool,
}

impl Default for ModuleSet {
    /// ReverieMem alone, as before the other modules existed.
    fn default() -> Self {
        Self {
            reverie: true,
            dualmem: false,
            moom: false,
            bookmarks: false,
        }
    }
}

/// The module names, in the order modules contribute grounding.
pub const MODULE_NAMES: [&str; 4] = ["reverie", "dualmem", "moom", "bookmarks"];

impl ModuleSet {
    /// Every module on.
    #[must_use]
    pub fn all() -> Self {
        Self {
            reverie: true,
            dualmem: true,
            moom: true,
            bookmarks: true,
        }
    }

    /// No module: the character has only the scene in front of it.
    #[must_use]
    pub fn none() -> Self {
        Self {
            reverie: false,
            dualmem: false,
            moom: false,
            bookmarks: false,
        }
    }

    /// Parses a comma-separated list of module names (`all` and `none` too).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut set = Self::none();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "all" => set = Self::all(),
                "none" => {}
                "reverie" => set.reverie = true,
                "dualmem" => set.dualmem = true,
                "moom" => set.moom = true,
                "bookmarks" => set.bookmarks = true,
                other => {
                    return Err(format!(
                        "unknown memory module {other:?} (known: {}, all, none)",
                        MODULE_NAMES.join(", ")
                    ));
                }
            }
        }
        Ok(set)
    }

    #[must_use]
    pub fn names(&self) -> Vec<&'static str> {
        let on = [self.reverie, self.dualmem, self.moom, self.bookmarks];
        MODULE_NAMES
            .iter()
            .zip(on)
            .filter_map(|(name, on)| on.then_some(*name))
            .collect()
    }
}

impl fmt::Display for ModuleSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.names();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join(","))
        }
    }
}

/// What a perceived line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    Speech,
    Action,
    Movement,
    Narration,
}

/// One line of the character's own storyline: something it perceived, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// 1-based position in the character's storyline (also MOOM's round).
    pub position: u64,
    pub scene_id: String,
    pub kind: LineKind,
    /// Speaker id; empty for narration.
    pub speaker: String,
    pub speaker_name: String,
    pub target: String,
    pub target_name: String,
    pub text: String,
    /// Where it happened (a location id), when known.
    #[serde(default)]
    pub location: String,
}

impl Line {
    /// The line as a sentence of the storyline, from outside ("Holmes to Watson: …").
    #[must_use]
    pub fn render(&self) -> String {
        let to = if self.target_name.is_empty() {
            String::new()
        } else {
            format!(" to {}", self.target_name)
        };
        match self.kind {
            LineKind::Speech => format!("{}{to}: \"{}\"", self.speaker_name, self.text),
            LineKind::Action | LineKind::Movement => {
                if self.text.starts_with(&self.speaker_name) {
                    self.text.clone()
                } else {
                    format!("{} {}", self.speaker_name, self.text)
                }
            }
            LineKind::Narration => self.text.clone(),
        }
    }
}

/// One item a module contributes to a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grounding {
    /// The module (one of [`MODULE_NAMES`]).
    pub module: String,
    /// What kind of item within the module ("fact", "insight", "plot", "persona", …).
    pub kind: String,
    pub id: String,
    pub text: String,
}

/// What a read asks for.
#[derive(Debug, Clone, Copy)]
pub struct ReadQuery<'a> {
    /// The question (interview) or the situation (turn).
    pub text: &'a str,
    /// Its embedding.
    pub vector: &'a [f32],
    /// An interview question rather than a turn.
    pub answering: bool,
    /// Present characters' ids (whose personas matter now).
    pub present: &'a [String],
}

/// What a module may ask of the agent that runs it.
#[async_trait::async_trait]
pub trait Mind: Send + Sync {
    /// Embeddings of `texts`, in order.
    async fn embed(&self, texts: &[String]) -> Vec<Vec<f32>>;
    /// The model's answer to `prompt` as JSON valid against `schema`, or `None` when no
    /// capable model is configured or its output stayed unusable; the caller then takes
    /// its deterministic fallback. `purpose` names the step in the prompt audit.
    async fn json(
        &self,
        purpose: &str,
        prompt: &str,
        schema: &serde_json::Value,
    ) -> Option<serde_json::Value>;
}

/// The hooks every module implements.
#[async_trait::async_trait]
pub trait MemoryModule: Send {
    /// The module's name (one of [`MODULE_NAMES`]).
    fn name(&self) -> &'static str;
    /// A line the character perceived; `storyline` is everything perceived so far,
    /// this line last.
    async fn observe(&mut self, mind: &dyn Mind, storyline: &[Line]);
    /// The end of a scene the character was in.
    async fn scene_end(&mut self, mind: &dyn Mind, storyline: &[Line], scene_id: &str);
    /// Grounding for `query`, best first.
    async fn ground(
        &mut self,
        mind: &dyn Mind,
        storyline: &[Line],
        query: &ReadQuery<'_>,
    ) -> Vec<Grounding>;
    /// Memory items the module keeps now.
    fn kept(&self) -> usize;
}

/// The modules of one shard other than ReverieMem's layers (which the agent's read path
/// handles), with the character's storyline they share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Modules {
    pub storyline: Vec<Line>,
    pub dualmem: Option<DualMem>,
    pub moom: Option<Moom>,
    pub bookmarks: Option<Bookmarks>,
}

impl Modules {
    /// The modules `set` turns on (ReverieMem is not among them), for `character`.
    #[must_use]
    pub fn new(set: ModuleSet, character: &str, persona: &str) -> Self {
        Self {
            storyline: Vec::new(),
            dualmem: set.dualmem.then(|| DualMem::new(character, persona)),
            moom: set
                .moom
                .then(|| Moom::new(character, moom::MoomConfig::default())),
            bookmarks: set.bookmarks.then(|| Bookmarks::new(character)),
        }
    }

    fn each(&mut self) -> Vec<&mut dyn MemoryModule> {
        let mut out: Vec<&mut dyn MemoryModule> = Vec::new();
        if let Some(m) = self.dualmem.as_mut() {
            out.push(m);
        }
        if let Some(m) = self.moom.as_mut() {
            out.push(m);
        }
        if let Some(m) = self.bookmarks.as_mut() {
            out.push(m);
        }
        out
    }

    /// Whether any module is on.
    #[must_use]
    pub fn any(&self) -> bool {
        self.dualmem.is_some() || self.moom.is_some() || self.bookmarks.is_some()
    }

    /// Appends a perceived line (its position is set here) and lets every module see it.
    pub async fn observe(&mut self, mind: &dyn Mind, mut line: Line) {
        line.position = self.storyline.len() as u64 + 1;
        self.storyline.push(line);
        let storyline = std::mem::take(&mut self.storyline);
        for module in self.each() {
            module.observe(mind, &storyline).await;
        }
        self.storyline = storyline;
    }

    /// A scene the character was in has ended.
    pub async fn scene_end(&mut self, mind: &dyn Mind, scene_id: &str) {
        let storyline = std::mem::take(&mut self.storyline);
        for module in self.each() {
            module.scene_end(mind, &storyline, scene_id).await;
        }
        self.storyline = storyline;
    }

    /// Grounding from every module within `budget_tokens`: each module gets an equal
    /// share, and what one leaves unused passes to the next. Items keep each module's
    /// order.
    pub async fn ground(
        &mut self,
        mind: &dyn Mind,
        query: &ReadQuery<'_>,
        budget_tokens: usize,
    ) -> Vec<Grounding> {
        let storyline = std::mem::take(&mut self.storyline);
        let mut modules = self.each();
        let mut out = Vec::new();
        let mut left = budget_tokens;
        let count = modules.len();
        for (i, module) in modules.iter_mut().enumerate() {
            let share = left / (count - i);
            let mut used = 0;
            for item in module.ground(mind, &storyline, query).await {
                let cost = estimate_tokens(&item.text);
                if used + cost > share {
                    break;
                }
                used += cost;
                out.push(item);
            }
            left -= used;
        }
        drop(modules);
        self.storyline = storyline;
        out
    }

    /// Everything the modules hold, as (id, source, text): the source is
    /// `<module>.<kind>`. The shared storyline is listed as `modules.storyline`.
    #[must_use]
    pub fn items(&self) -> Vec<(String, String, String)> {
        let mut out: Vec<(String, String, String)> = self
            .storyline
            .iter()
            .map(|l| {
                (
                    format!("line:{}", l.position),
                    "modules.storyline".to_owned(),
                    l.render(),
                )
            })
            .collect();
        if let Some(dual) = &self.dualmem {
            out.extend(
                dual.facts
                    .iter()
                    .map(|f| (f.id.clone(), "dualmem.fact".to_owned(), f.text.clone())),
            );
            out.extend(
                dual.insights
                    .iter()
                    .map(|i| (i.id.clone(), "dualmem.insight".to_owned(), i.text.clone())),
            );
        }
        if let Some(moom) = &self.moom {
            out.extend(moom.plot.iter().map(|m| {
                (
                    m.id.clone(),
                    format!("moom.plot-{}", m.level),
                    m.text.clone(),
                )
            }));
            let now = self.storyline.len() as u64;
            out.extend(moom.personas.keys().filter_map(|person| {
                moom.describe(person, now).map(|text| {
                    (
                        format!("moom:persona:{person}"),
                        "moom.persona".to_owned(),
                        text,
                    )
                })
            }));
        }
        if let Some(marks) = &self.bookmarks {
            out.extend(marks.pool.iter().map(|b| {
                let mut text = format!("{} — {}", b.query, b.answer);
                if !b.evidence.is_empty() {
                    text.push_str(" [evidence: ");
                    text.push_str(&b.evidence.join(" | "));
                    text.push(']');
                }
                (b.id.clone(), "bookmarks.bookmark".to_owned(), text)
            }));
        }
        out
    }

    /// The modules' counters by name (`<module>.<counter>`).
    #[must_use]
    pub fn stats(&self) -> std::collections::HashMap<String, f64> {
        let mut out = std::collections::HashMap::new();
        if let Some(marks) = &self.bookmarks {
            let s = marks.stats;
            for (name, value) in [
                ("proposals", s.proposals),
                ("reused", s.reused),
                ("derived", s.derived),
                ("created", s.created),
                ("hits", s.reused + s.derived),
                ("lines_read", s.lines_read),
                ("tokens_saved", s.tokens_saved),
                ("calls", marks.calls),
            ] {
                out.insert(format!("bookmarks.{name}"), value as f64);
            }
            out.insert("bookmarks.hit_rate".into(), s.hit_rate());
        }
        if let Some(dual) = &self.dualmem {
            for (name, value) in [
                ("facts", dual.facts.len() as u64),
                ("insights", dual.insights.len() as u64),
                ("null_insights", dual.null_insights),
                ("regenerated", dual.regenerated),
                ("calls", dual.calls),
            ] {
                out.insert(format!("dualmem.{name}"), value as f64);
            }
        }
        if let Some(moom) = &self.moom {
            let made = moom.made();
            for (name, value) in [
                ("plot_made", made.iter().sum::<u64>()),
                ("plot_kept", moom.plot.len() as u64),
                ("personas", moom.personas.len() as u64),
                ("calls", moom.calls),
            ] {
                out.insert(format!("moom.{name}"), value as f64);
            }
        }
        out
    }

    /// Items each module keeps (the storyline itself not counted).
    #[must_use]
    pub fn kept(&mut self) -> BTreeMap<&'static str, usize> {
        self.each()
            .into_iter()
            .map(|m| (m.name(), m.kept()))
            .collect()
    }
}

/// A JSON schema for an object with exactly `properties`, every one required.
pub(crate) fn object_schema(properties: serde_json::Value) -> serde_json::Value {
    let required: Vec<serde_json::Value> = properties
        .as_object()
        .map(|o| o.keys().map(|k| k.as_str().into()).collect())
        .unwrap_or_default();
    let mut schema = serde_json::Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), properties);
    schema.insert("required".into(), required.into());
    schema.insert("additionalProperties".into(), false.into());
    schema.into()
}

/// Asks the model for one non-empty text field; `None` when it gave none (the caller
/// takes its fallback).
pub(crate) async fn ask_text(
    mind: &dyn Mind,
    purpose: &str,
    prompt: &str,
    field: &str,
) -> Option<String> {
    let schema = object_schema(serde_json::json!({ field: {"type": "string", "minLength": 1} }));
    mind.json(purpose, prompt, &schema)
        .await
        .and_then(|v| v[field].as_str().map(|t| t.trim().to_owned()))
        .filter(|t| !t.is_empty())
}

pub use crate::vector::cosine;

#[cfg(test)]
pub(crate) mod test_mind {
    //! A mind for module tests: bag-of-words vectors and scripted JSON answers.

    use std::sync::Mutex;

    use super::Mind;

    /// Embeds by hashing lower-cased words into 64 buckets, so texts sharing words are
    /// near; answers `json` from a queue (None when empty: the fallback path).
    #[derive(Debug, Default)]
    pub struct TestMind {
        pub answers: Mutex<Vec<serde_json::Value>>,
        pub asked: Mutex<Vec<String>>,
    }

    impl TestMind {
        pub fn answering(answers: Vec<serde_json::Value>) -> Self {
            Self {
                answers: Mutex::new(answers),
                asked: Mutex::default(),
            }
        }

        pub fn asked(&self) -> Vec<String> {
            self.asked.lock().expect("lock").clone()
        }
    }

    pub fn bag(text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; 64];
        for word in text
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
        {
            let h = word
                .bytes()
                .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
            v[(h % 64) as usize] += 1.0;
        }
        v
    }

    #[async_trait::async_trait]
    impl Mind for TestMind {
        async fn embed(&self, texts: &[String]) -> Vec<Vec<f32>> {
            texts.iter().map(|t| bag(t)).collect()
        }

        async fn json(
            &self,
            purpose: &str,
            _prompt: &str,
            _schema: &serde_json::Value,
        ) -> Option<serde_json::Value> {
            self.asked.lock().expect("lock").push(purpose.to_owned());
            let mut answers = self.answers.lock().expect("lock");
            if answers.is_empty() {
                None
            } else {
                Some(answers.remove(0))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_sets_parse_and_print() {
        assert_eq!(
            ModuleSet::parse("reverie").expect("parses"),
            ModuleSet::default()
        );
        assert_eq!(ModuleSet::parse("all").expect("parses"), ModuleSet::all());
        assert_eq!(ModuleSet::parse("").expect("parses"), ModuleSet::none());
        let set = ModuleSet::parse("moom, bookmarks").expect("parses");
        assert_eq!(set.to_string(), "moom,bookmarks");
        assert_eq!(ModuleSet::none().to_string(), "none");
        let error = ModuleSet::parse("reverie,memgpt").expect_err("unknown");
        assert!(error.contains("\"memgpt\""), "{error}");
    }
}
