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

mod any;
pub mod bookmarks;
pub mod dualmem;
pub mod forgetting;
mod kind;
mod mind;
pub mod moom;
mod text;

use serde::{Deserialize, Serialize};

pub use any::{AnyModule, Modules};
pub use bookmarks::{BookmarkKind, Bookmarks};
pub use dualmem::DualMem;
pub use kind::{KINDS, ModuleKind, ModuleSet};
pub use mind::{Call, Mind, MindError, Reply, Spent};
pub use moom::Moom;
pub use text::{clip, content_words, estimate_tokens, is_stop_word, keywords};

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
    /// The module (a name of [`KINDS`]).
    pub module: String,
    /// What kind of item within the module ("fact", "insight", "plot", "persona", …).
    pub kind: String,
    pub id: String,
    pub text: String,
    /// How much the item bears on the query (see [`ModuleKind::relevance_floor`]).
    #[serde(default)]
    pub relevance: f32,
}

impl Grounding {
    /// Whether the item bears on the query: its relevance reaches its module's floor.
    #[must_use]
    pub fn bears(&self) -> bool {
        ModuleKind::from_name(&self.module)
            .is_some_and(|kind| self.relevance >= kind.relevance_floor())
    }
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

/// The hooks every module implements. A module is also a row of [`KINDS`] and a
/// variant of [`AnyModule`].
#[async_trait::async_trait]
pub trait MemoryModule: Send {
    /// A new, empty module for `character`, who is described by `persona`.
    fn create(character: &str, persona: &str) -> Self
    where
        Self: Sized;
    /// Which module this is.
    fn kind(&self) -> ModuleKind;
    /// The character's persona changed (the profile or the manner of speaking).
    fn set_persona(&mut self, _persona: &str) {}
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
    /// Everything the module holds, as (id, `<module>.<kind>`, text); `storyline` is
    /// what the character perceived so far.
    fn items(&self, storyline: &[Line]) -> Vec<(String, String, String)>;
    /// The module's counters by name (without the module's prefix).
    fn stats(&self) -> Vec<(&'static str, f64)>;
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
pub(crate) mod test_mind;
