//! The scenario file as written, with source spans for every value that can be wrong.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

pub(crate) type S<T> = Spanned<T>;

/// Per character id, the ids it knows by name.
pub(crate) type Acquainted = BTreeMap<S<String>, Vec<S<String>>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub version: S<u32>,
    pub name: S<String>,
    pub title: S<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub world: RawWorld,
    #[serde(default)]
    pub locations: Vec<RawLocation>,
    #[serde(default)]
    pub paths: Vec<RawPath>,
    #[serde(default)]
    pub characters: Vec<RawCharacter>,
    #[serde(default)]
    pub facts: Vec<RawFact>,
    #[serde(default)]
    pub scenes: Vec<RawScene>,
    #[serde(default)]
    pub open: Option<S<RawOpen>>,
    #[serde(default)]
    pub memory: Option<RawMemory_>,
    /// Most others a character's turn and each line it perceives name (the rest are
    /// counted).
    #[serde(default)]
    pub attention: Option<S<u32>>,
}

/// Which memory modules the characters run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMemory_ {
    pub modules: Vec<S<String>>,
}

/// An open-ended story (a sandbox) instead of a script.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOpen {
    pub premise: S<String>,
    /// Narration that opens the story, told at `opening_location`.
    #[serde(default)]
    pub opening: String,
    #[serde(default)]
    pub opening_location: Option<S<String>>,
    pub rounds: S<u32>,
    #[serde(default)]
    pub scene_turns: Option<S<u32>>,
    /// Other openings to choose from (a card's alternate greetings).
    #[serde(default)]
    pub openings: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWorld {
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLocation {
    pub id: S<String>,
    pub name: S<String>,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPath {
    pub from: S<String>,
    pub to: S<String>,
    pub distance: S<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCharacter {
    pub id: S<String>,
    pub name: S<String>,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub profile: S<String>,
    #[serde(default)]
    pub style: String,
    pub location: S<String>,
    #[serde(default)]
    pub memories: Vec<RawMemory>,
    #[serde(default)]
    pub patterns: Vec<RawPattern>,
    #[serde(default)]
    pub goal: String,
    #[serde(default)]
    pub memory_modules: Option<Vec<S<String>>>,
    /// The characters this one knows by name at the start.
    #[serde(default)]
    pub knows: Vec<S<String>>,
    /// What the others see of this character until they learn its name.
    #[serde(default)]
    pub known_as: Option<S<String>>,
    /// In an open story: in no place until the director brings it in.
    #[serde(default)]
    pub offstage: Option<S<bool>>,
    /// Only to be interviewed: an agent, but never placed nor given a turn.
    #[serde(default)]
    pub interview_only: Option<S<bool>>,
    /// Labels kept from where the character came from (a card's tags).
    #[serde(default)]
    pub tags: Vec<String>,
    /// The character card it was imported from, as a JSON object: the card's fields
    /// that have no other place here, carried for export.
    #[serde(default)]
    pub card: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMemory {
    pub id: S<String>,
    pub text: S<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPattern {
    pub id: S<String>,
    pub description: S<String>,
    #[serde(default)]
    pub excerpts: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFact {
    pub id: S<String>,
    pub text: S<String>,
    pub known_by: S<Vec<S<String>>>,
    #[serde(default)]
    pub subject: String,
    #[serde(default)]
    pub predicate: String,
    #[serde(default)]
    pub object: String,
    #[serde(default)]
    pub cause: String,
    #[serde(default)]
    pub route: super::Route,
    /// Keyword triggering (a lorebook entry's): words that bring the fact into the
    /// prompt of a character who holds it.
    #[serde(default)]
    pub keys: Vec<String>,
    #[serde(default)]
    pub secondary_keys: Vec<String>,
    #[serde(default)]
    pub selective: bool,
    #[serde(default)]
    pub constant: bool,
    #[serde(default)]
    pub case_sensitive: bool,
    /// Known to no one until a director reveals it: `known_by` is then empty.
    #[serde(default)]
    pub secret: Option<S<bool>>,
    /// The lorebook entry it came from, as a JSON object: the entry's fields with no
    /// meaning here, carried for export.
    #[serde(default)]
    pub entry: Option<S<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScene {
    pub id: S<String>,
    pub location: S<String>,
    pub cast: S<Vec<S<String>>>,
    pub beat: S<String>,
    #[serde(default)]
    pub end_cues: Vec<String>,
    #[serde(default)]
    pub min_turns: Option<S<u32>>,
    pub max_turns: S<u32>,
    #[serde(default)]
    pub opening: String,
    #[serde(default)]
    pub directions: Option<S<BTreeMap<S<String>, String>>>,
    /// Names learned between scenes: who knows whom by name from this scene on.
    #[serde(default)]
    pub knows: Option<S<Acquainted>>,
}
