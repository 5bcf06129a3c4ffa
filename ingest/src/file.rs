//! The scenario file as ingest and import write it: the subset of the format
//! (`scenarios/README.md`) they produce, serialised to TOML. What they write is read back
//! with the world's own loader before it is kept, so the two cannot drift apart.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use dramatis_scenario::Scenario;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct ScenarioFile {
    pub version: u32,
    pub name: String,
    pub title: String,
    pub description: String,
    pub world: World,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open: Option<Open>,
    pub locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathEntry>,
    pub characters: Vec<Character>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<Fact>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scenes: Vec<Scene>,
}

#[derive(Debug, Clone, Serialize)]
pub struct World {
    pub description: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Open {
    pub premise: String,
    pub opening: String,
    pub opening_location: String,
    pub rounds: u32,
    pub scene_turns: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub openings: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Location {
    pub id: String,
    pub name: String,
    pub description: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct PathEntry {
    pub from: String,
    pub to: String,
    pub distance: u32,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Character {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    pub profile: String,
    pub style: String,
    pub location: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub goal: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub knows: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub known_as: String,
    /// Never on stage (the dead, the absent, a person only retold): asked, never cast.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub interview_only: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub memories: Vec<Memory>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<Pattern>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The card's fields with no other place here, as a JSON object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub card: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    pub id: String,
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Pattern {
    pub id: String,
    pub description: String,
    pub excerpts: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Fact {
    pub id: String,
    pub text: String,
    pub known_by: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subject: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub predicate: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub object: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cause: String,
    pub route: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secondary_keys: Vec<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub selective: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub constant: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub case_sensitive: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub secret: bool,
    /// The lorebook entry's fields with no meaning here, as a JSON object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub entry: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Scene {
    pub id: String,
    pub location: String,
    pub cast: Vec<String>,
    pub beat: String,
    pub min_turns: u32,
    pub max_turns: u32,
    pub opening: String,
    /// Names learned offstage before this scene: id -> ids it knows by name from here.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub knows: std::collections::BTreeMap<String, Vec<String>>,
}

impl ScenarioFile {
    /// Writes `DIR/scenario.toml`, checked by the world's loader first; returns its path.
    pub fn write(&self, dir: &Path, header: &str) -> anyhow::Result<PathBuf> {
        let body = toml::to_string(self).context("cannot render the scenario as TOML")?;
        let text = format!("{header}\n{body}");
        let path = dir.join("scenario.toml");
        Scenario::parse(&text, &path)
            .map_err(|e| anyhow::anyhow!("the imported scenario does not load: {e}"))?;
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }
}

/// An id the scenario format accepts (lowercase ASCII letters, digits, `-`, `_`) made
/// from `code`; `fallback` when nothing of it is left (a code in Chinese characters).
#[must_use]
pub fn id_from(code: &str, fallback: &str) -> String {
    let mut id = String::new();
    for c in code.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if (c == '-' || c == '_' || c.is_whitespace()) && !id.ends_with('-') {
            id.push('-');
        }
    }
    let id = id.trim_matches('-').to_owned();
    if id.is_empty() {
        fallback.to_owned()
    } else {
        id
    }
}
