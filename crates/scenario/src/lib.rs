//! Scenario format v1: a TOML file describing a world (locations and the distances
//! between them), its characters (profile, style, starting place), who knows which
//! facts at the start, and a script of scenes. See `scenarios/README.md`.
//!
//! Loading validates everything and reports each problem with the file, line and field.

mod build;
mod cast;
mod catalog;
pub mod fuzz_checks;
mod newcomer;
mod raw;
pub mod sandbox;
pub use cast::{CastIndex, DEFAULT_ATTENTION, MIN_ATTENTION};
mod validate;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;
use std::path::{Path, PathBuf};

use dramatis_proto::v1::MemoryModules;

pub use catalog::{ScenarioCatalog, ScenarioSummary, local_file};
pub use newcomer::NEWCOMER_FIELD;

/// The supported `version` of the format.
pub const FORMAT_VERSION: u32 = 1;

/// A validated scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub title: String,
    pub description: String,
    pub world: String,
    pub locations: Vec<Location>,
    /// Undirected distances between locations (in travel turns).
    pub paths: Vec<Path_>,
    pub characters: Vec<Character>,
    pub facts: Vec<Fact>,
    pub scenes: Vec<Scene>,
    /// Set for an open-ended story (a sandbox); then `scenes` is empty.
    pub open: Option<OpenStory>,
    /// Memory modules every character runs (empty: the agents' default).
    pub memory_modules: Vec<String>,
    /// Most others a character's turn frame and each line it perceives name (the
    /// scenario's `attention`; `None`: the service's default).
    pub attention: Option<usize>,
    /// Where the scenario was read from.
    pub source: PathBuf,
    /// Where each character sits in `characters`, built on first use.
    pub index: CastIndex,
}

/// How an open-ended story runs: a narrator proposes events from the premise; each
/// round is one scene at a location chosen from where the characters are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenStory {
    /// What the story is about. Only the narrator (world-side) reads it.
    pub premise: String,
    /// Narration that opens the story at `opening_location`.
    pub opening: String,
    pub opening_location: String,
    /// Rounds (scenes) the story runs.
    pub rounds: u32,
    /// Turns a scene runs at most.
    pub scene_turns: u32,
    /// Other openings to choose from (an imported card's alternate greetings).
    pub openings: Vec<String>,
}

/// A place in the world.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub id: String,
    pub name: String,
    pub description: String,
}

/// An edge of the location graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path_ {
    pub from: String,
    pub to: String,
    pub distance: u32,
}

/// A character of the story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Character {
    pub id: String,
    pub name: String,
    pub aliases: Vec<String>,
    pub profile: String,
    pub style: String,
    pub location: String,
    /// First-person memories of what the character lived through before the story.
    pub memories: Vec<Memory>,
    /// How the character behaves in kinds of situation, with excerpts as style anchors.
    pub patterns: Vec<Pattern>,
    /// What the character wants at the start (open stories).
    pub goal: String,
    /// This character's memory modules, when they differ from the scenario's.
    pub memory_modules: Option<Vec<String>>,
    /// The characters it knows by name at the start (ids); everyone else is a stranger
    /// to it until it perceives their name (see `story::names`).
    pub knows: BTreeSet<String>,
    /// What others see of it before they know its name ("a tall young man with a
    /// test-tube"); empty: [`STRANGER`].
    pub known_as: String,
    /// In an open story: in no place, perceiving nothing and never acting, until the
    /// director brings it in (`World.Intervene` bring_in); `location` is then where it
    /// enters unless the director says otherwise.
    pub offstage: bool,
    /// Only to be interviewed (the dead, the absent, a person only retold): it has an
    /// agent that can be asked, probed and exported, but it is never placed, never
    /// cast in a scene and never given a turn; a director brings it in only with an
    /// explicit flag (`BringIn.allow_interview_only`).
    pub interview_only: bool,
    /// Labels kept from where it came from (a card's tags). World-side only.
    pub tags: Vec<String>,
    /// The character card it was imported from (a JSON object: the card's fields with
    /// no other place here), carried for `export --format card`; empty when none.
    /// World-side only: no agent receives it.
    pub card: String,
}

/// How a character appears to those who do not know it, when its scenario says nothing.
pub const STRANGER: &str = "a stranger";

impl Character {
    /// What those who do not know its name see of it.
    #[must_use]
    pub fn appearance(&self) -> &str {
        if self.known_as.is_empty() {
            STRANGER
        } else {
            &self.known_as
        }
    }

    /// The forms of its name: the name and the aliases that are proper names (an alias
    /// such as "the doctor" is a description, not a name; Chinese has no capitals, so a
    /// form that opens with a Han character is a name). Longest first.
    #[must_use]
    pub fn name_forms(&self) -> Vec<&str> {
        let mut forms: Vec<&str> = std::iter::once(self.name.as_str())
            .chain(self.aliases.iter().map(String::as_str))
            .filter(|f| {
                f.chars()
                    .next()
                    .is_some_and(|c| c.is_uppercase() || dramatis_base::is_han(c))
            })
            .collect();
        forms.sort_by_key(|f| std::cmp::Reverse(f.len()));
        forms.dedup();
        forms
    }
}

impl Scenario {
    /// The memory modules `character` runs (`None`: the agents' default). The names
    /// were checked when the scenario was loaded.
    #[must_use]
    pub fn memory_modules_of(&self, character: &Character) -> Option<MemoryModules> {
        let names = character
            .memory_modules
            .as_ref()
            .unwrap_or(&self.memory_modules);
        MemoryModules::parse(names).ok().flatten()
    }
}

/// A first-person memory a character starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub id: String,
    pub text: String,
}

/// A personality pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub id: String,
    pub description: String,
    pub excerpts: Vec<String>,
}

/// How the characters in `known_by` came to see a fact (ReverieMem's routes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Route {
    DirectExperience,
    #[default]
    Observation,
    OrganisationMembership,
    CommonKnowledge,
}

impl Route {
    /// The name used in files and on the wire.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DirectExperience => "direct_experience",
            Self::Observation => "observation",
            Self::OrganisationMembership => "organisation_membership",
            Self::CommonKnowledge => "common_knowledge",
        }
    }
}

/// Something known at the start by exactly the listed characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub id: String,
    pub text: String,
    pub known_by: BTreeSet<String>,
    /// The SPOC part of the SPOCV tuple (optional; `text` is what prompts show).
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub cause: String,
    pub route: Route,
    /// The words that bring it into the prompt of a character who holds it.
    pub keys: Keys,
    /// Known to no one at the start (`known_by` is empty) until a director reveals it.
    pub secret: bool,
    /// The lorebook entry it came from (a JSON object of the fields with no meaning
    /// here), carried for export; empty when none. World-side only.
    pub entry: String,
}

/// A lorebook entry's keyword triggering, carried by a fact: it is selected into the
/// prompt of a character who holds it when a key appears in the scene (with a
/// secondary key too when `selective`), or always when `constant`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Keys {
    pub keys: Vec<String>,
    pub secondary_keys: Vec<String>,
    pub selective: bool,
    pub constant: bool,
    pub case_sensitive: bool,
}

/// A scripted scene.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scene {
    pub id: String,
    pub location: String,
    /// Who acts, in script order.
    pub cast: Vec<String>,
    /// What the scene is for. The world uses it to judge the end; agents never see it.
    pub beat: String,
    /// Phrases whose appearance in a line means the beat was reached.
    pub end_cues: Vec<String>,
    /// Turns before a cue may end the scene.
    pub min_turns: u32,
    pub max_turns: u32,
    /// Narration told to everyone present when the scene opens.
    pub opening: String,
    /// Per-character direction, written from that character's point of view.
    pub directions: BTreeMap<String, String>,
    /// Names learned offstage before this scene: character id -> ids it knows by name
    /// from the scene's start on.
    pub knows: BTreeMap<String, BTreeSet<String>>,
}

/// The largest scenario file read: 8 MiB (the shipped ones are tens of kilobytes; an
/// ingested 100,000-word book's is about a megabyte).
pub const MAX_SCENARIO_BYTES: u64 = 8 * 1024 * 1024;

impl Scenario {
    /// Reads and validates a scenario file: a regular file (never a FIFO or a device,
    /// which could block or never end) of at most [`MAX_SCENARIO_BYTES`], UTF-8.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let io = |message: String| ScenarioError::Io {
            path: path.to_path_buf(),
            message,
        };
        let meta = std::fs::metadata(path).map_err(|e| io(e.to_string()))?;
        if !meta.is_file() {
            return Err(io("not a regular file".into()));
        }
        if meta.len() > MAX_SCENARIO_BYTES {
            return Err(io(format!(
                "{} bytes; a scenario file may have at most {MAX_SCENARIO_BYTES}",
                meta.len()
            )));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SCENARIO_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| io(e.to_string()))?;
        if bytes.len() as u64 > MAX_SCENARIO_BYTES {
            return Err(io(format!(
                "a scenario file may have at most {MAX_SCENARIO_BYTES} bytes"
            )));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            io(format!(
                "not UTF-8 text (invalid bytes at offset {})",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Self::parse(&text, path)
    }

    /// Validates scenario text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ScenarioError> {
        let invalid = |e: &toml::de::Error, field: String| ScenarioError::Invalid {
            path: path.to_path_buf(),
            problems: vec![Problem {
                line: e.span().map_or(1, |span| Lines::of(text).line(span.start)),
                field,
                message: e.message().to_owned(),
            }],
        };
        let document = toml::Deserializer::parse(text).map_err(|e| invalid(&e, String::new()))?;
        // The path of the value that did not fit (`scenes[0].max_turns`), beside the
        // line toml gives.
        let raw: raw::RawScenario = serde_path_to_error::deserialize(document)
            .map_err(|e| invalid(e.inner(), field_path(e.path())))?;
        validate::validate(raw, text, path)
    }

    /// Scenes in the script, or rounds of the open story.
    #[must_use]
    pub fn length(&self) -> usize {
        self.open.as_ref().map_or(self.scenes.len(), |o| {
            usize::try_from(o.rounds).unwrap_or(usize::MAX)
        })
    }

    #[must_use]
    pub fn location(&self, id: &str) -> Option<&Location> {
        self.locations.iter().find(|l| l.id == id)
    }

    #[must_use]
    pub fn character(&self, id: &str) -> Option<&Character> {
        self.position(id).map(|at| &self.characters[at])
    }

    /// A character's name, or the id itself for someone the scenario does not name.
    #[must_use]
    pub fn name_of<'a>(&'a self, id: &'a str) -> &'a str {
        self.character(id).map_or(id, |c| c.name.as_str())
    }

    /// A place's name, or the id itself for a place the scenario does not have.
    #[must_use]
    pub fn place_name<'a>(&'a self, id: &'a str) -> &'a str {
        self.location(id).map_or(id, |l| l.name.as_str())
    }

    /// Finds a location by id or name (ASCII case-insensitive, surrounding spaces ignored).
    #[must_use]
    pub fn find_location(&self, needle: &str) -> Option<&Location> {
        let needle = needle.trim();
        self.locations
            .iter()
            .find(|l| l.id.eq_ignore_ascii_case(needle) || l.name.eq_ignore_ascii_case(needle))
    }

    /// Finds a character by id, name or alias (case-insensitive).
    #[must_use]
    pub fn find_character(&self, needle: &str) -> Option<&Character> {
        let needle = needle.trim().to_lowercase();
        self.characters.iter().find(|c| {
            c.id.to_lowercase() == needle
                || c.name.to_lowercase() == needle
                || c.aliases.iter().any(|a| a.to_lowercase() == needle)
        })
    }

    /// Locations one path away from `location`, with their distances.
    #[must_use]
    pub fn neighbours(&self, location: &str) -> Vec<(&str, u32)> {
        self.paths
            .iter()
            .filter_map(|p| {
                if p.from == location {
                    Some((p.to.as_str(), p.distance))
                } else if p.to == location {
                    Some((p.from.as_str(), p.distance))
                } else {
                    None
                }
            })
            .collect()
    }

    /// Facts `character` knows at the start.
    pub fn knowledge_of<'a>(&'a self, character: &'a str) -> impl Iterator<Item = &'a Fact> + 'a {
        self.facts
            .iter()
            .filter(move |f| f.known_by.contains(character))
    }
}

/// One problem found in a scenario file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    /// Dotted path of the field, e.g. `scenes[2].cast[1]`.
    pub field: String,
    pub message: String,
}

/// A deserialisation path as this module names fields (`scenes[0].max_turns`),
/// without the private keys `toml`'s spans travel under.
fn field_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut field = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => field.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if key.starts_with("$__") {
                    continue;
                }
                if !field.is_empty() {
                    field.push('.');
                }
                field.push_str(key);
            }
            Segment::Unknown => {}
        }
    }
    field
}

/// Why a scenario could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("{}", render(path, problems))]
    Invalid {
        path: PathBuf,
        problems: Vec<Problem>,
    },
}

/// The most problems an error's text lists (all are kept in [`ScenarioError::Invalid`]):
/// a spec with thousands of mistakes gets a readable, bounded answer.
pub const SHOWN_PROBLEMS: usize = 20;

impl ScenarioError {
    /// The same error naming the file as `path` (what the client knows it by, not
    /// where the server keeps it).
    #[must_use]
    pub fn shown_as(self, path: PathBuf) -> Self {
        match self {
            Self::Io { message, .. } => Self::Io { path, message },
            Self::Invalid { problems, .. } => Self::Invalid { path, problems },
        }
    }
}

fn render(path: &Path, problems: &[Problem]) -> String {
    let mut lines: Vec<String> = problems
        .iter()
        .take(SHOWN_PROBLEMS)
        .map(|p| {
            if p.field.is_empty() {
                format!("{}:{}: {}", path.display(), p.line, p.message)
            } else {
                format!("{}:{}: {}: {}", path.display(), p.line, p.field, p.message)
            }
        })
        .collect();
    if problems.len() > SHOWN_PROBLEMS {
        lines.push(format!(
            "{}: … and {} more problems",
            path.display(),
            problems.len() - SHOWN_PROBLEMS
        ));
    }
    lines.join("\n")
}

/// Line numbers of byte offsets in one text, each found by a binary search over where
/// its lines start (counting newlines from the start for every problem made a text
/// with many problems quadratic to check).
pub(crate) struct Lines {
    /// Offsets just past each newline.
    starts: Vec<usize>,
}

impl Lines {
    pub(crate) fn of(text: &str) -> Self {
        Self {
            starts: text
                .bytes()
                .enumerate()
                .filter_map(|(i, b)| (b == b'\n').then_some(i + 1))
                .collect(),
        }
    }

    /// 1-based line number of byte `offset`.
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&start| start <= offset) + 1
    }
}
