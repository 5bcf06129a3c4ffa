//! Stage 1, scene preparation (deterministic path): each scene's place, time and
//! atmosphere, who speaks each quoted line, who leaves, and the roster of focus
//! characters: present and active, present but silent, or only referenced.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use super::partition::Span;

/// Who spoke a line: a focus character (its id) or someone else (the name the tag used).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Speaker {
    Focus(String),
    Other(String),
}

impl Speaker {
    #[must_use]
    pub fn focus(&self) -> Option<&str> {
        match self {
            Self::Focus(id) => Some(id),
            Self::Other(_) => None,
        }
    }
}

/// One quoted line and who spoke it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Utterance {
    pub speaker: Speaker,
    pub text: String,
    pub paragraph: usize,
}

/// A sentence of the scene, with the paragraph it is in and whether it was spoken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sentence {
    pub text: String,
    pub paragraph: usize,
    pub spoken_by: Option<Speaker>,
    /// Focus characters who lived what it tells, here or not: who it says acted
    /// ("Drebber swallowed the pill", "my father received a letter", by whoever says
    /// it), and who first said a line it retells.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub actors: BTreeSet<String>,
}

/// A prepared scene.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scene {
    /// 1-based, in book order.
    pub number: usize,
    pub span: Span,
    pub location: String,
    pub time: String,
    pub atmosphere: String,
    pub active: BTreeSet<String>,
    pub silent: BTreeSet<String>,
    pub referenced: BTreeSet<String>,
    pub utterances: Vec<Utterance>,
    /// Lines a speaker retells inside its own quote ("'God forgive you!' cried Madame
    /// Charpentier"), each with the one who first said it. Who says them here is the
    /// teller (in `utterances`); those who first said them need not be here at all.
    #[serde(default)]
    pub retold: Vec<Utterance>,
    /// Quoted lines no rule could give a speaker (the model path may, among those on
    /// stage): their text and paragraph.
    #[serde(default)]
    pub unattributed: Vec<(usize, String)>,
    pub sentences: Vec<Sentence>,
    /// Focus characters who leave, and the paragraph from which they are gone.
    pub exits: BTreeMap<String, usize>,
    /// Focus characters on stage, and the paragraph from which they are there.
    #[serde(default)]
    pub entries: BTreeMap<String, usize>,
    /// When each focus character is on stage: paragraph ranges `[from, until)`. The text
    /// shows a character (it speaks, acts or is acted on) and it stays for
    /// [`FADE_PARAGRAPHS`] paragraphs after the last time it is shown; the narrator stays
    /// throughout. A scene cut too long hands a character less, never more.
    #[serde(default)]
    pub stays: BTreeMap<String, Vec<(usize, usize)>>,
    /// Where each paragraph starts in the book (byte offset).
    #[serde(default)]
    pub paragraph_starts: Vec<usize>,
    /// The paragraphs where a reading unit starts (a break the text marks, or the
    /// scene's start): what the narration carries from sentence to sentence (whom "he"
    /// means, who is unseen) starts afresh there.
    #[serde(default)]
    pub unit_starts: Vec<usize>,
    /// The focus character telling the scene in the first person, if any.
    #[serde(default)]
    pub narrator: Option<String>,
}

impl Scene {
    /// Present (active or silent) focus characters.
    pub fn present(&self) -> impl Iterator<Item = &String> {
        self.active.iter().chain(&self.silent)
    }

    /// Those on stage when the scene ends.
    #[must_use]
    pub fn present_at_end(&self) -> BTreeSet<String> {
        match self.paragraph_starts.len() {
            // Layers written before paragraphs were recorded: entries and exits only.
            0 => self.present_at(usize::MAX),
            n => self.present_at(n - 1),
        }
    }

    /// Those on stage at some time between book offsets `start` and `end`.
    #[must_use]
    pub fn present_between(&self, start: usize, end: usize) -> BTreeSet<String> {
        let first = self
            .paragraph_starts
            .partition_point(|at| *at <= start)
            .saturating_sub(1);
        let last = self.paragraph_starts.partition_point(|at| *at < end);
        if self.paragraph_starts.is_empty() {
            return self.present().cloned().collect();
        }
        (first..last.max(first + 1))
            .flat_map(|p| self.present_at(p))
            .collect()
    }

    /// Those present at `paragraph`: everyone present who has come in and not left by
    /// then. Only the narrator is there throughout; anyone else is there only within
    /// its stays, and one with none recorded is not there at all (layers written
    /// before paragraphs were recorded keep entries and exits only).
    #[must_use]
    pub fn present_at(&self, paragraph: usize) -> BTreeSet<String> {
        let recorded = !self.paragraph_starts.is_empty();
        self.present()
            .filter(|c| self.entries.get(*c).is_none_or(|came| *came <= paragraph))
            .filter(|c| match self.stays.get(*c) {
                Some(stays) => stays
                    .iter()
                    .any(|(from, until)| (*from..*until).contains(&paragraph)),
                None => !recorded || self.narrator.as_ref() == Some(*c),
            })
            .filter(|c| self.exits.get(*c).is_none_or(|gone| paragraph < *gone))
            .cloned()
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gender {
    He,
    She,
    Unknown,
}

/// What the whole book tells before any scene is read: each focus character's pronoun
/// and the names of other speakers seen in tags ("said Silas").
#[derive(Debug, Clone)]
pub struct BookFacts {
    pub(super) genders: BTreeMap<String, Gender>,
    pub(super) other_speakers: BTreeSet<String>,
    /// Words the book writes in lower case somewhere ("here", "straightway"): a capital
    /// at a sentence's start does not make one of them a name.
    pub(super) common: HashSet<String>,
    /// Each focus character's family name (the last word of its name) and whether its
    /// name marks an elder (a rank, "old", "elder"): whom "my father" or "my brother"
    /// may mean.
    pub(super) families: BTreeMap<String, (String, bool)>,
}

impl BookFacts {
    /// Whom `speaker` means by "my father", "our brother", "my daughter": the one other
    /// focus character of its family name not known to be of the other sex, or, of
    /// several, the one elder (a parent) or the one not (a sibling or child).
    #[must_use]
    pub fn kin(&self, speaker: &str, word: &str) -> Option<String> {
        let (gender, elder) = KIN_WORDS
            .iter()
            .find(|(w, _, _)| *w == word)
            .map(|(_, g, e)| (*g, *e))?;
        let (family, _) = self.families.get(speaker)?;
        let of_kind: Vec<(&String, bool)> = self
            .families
            .iter()
            .filter(|(id, (f, _))| {
                *id != speaker && f == family && self.fits(&Speaker::Focus((*id).clone()), gender)
            })
            .map(|(id, (_, e))| (id, *e))
            .collect();
        let pick = match of_kind.as_slice() {
            [(one, _)] => Some(*one),
            many => {
                let mut fitting = many.iter().filter(|(_, e)| *e == elder);
                match (fitting.next(), fitting.next()) {
                    (Some((one, _)), None) => Some(*one),
                    _ => None,
                }
            }
        };
        pick.cloned()
    }

    /// Known to take this pronoun.
    pub(super) fn is(&self, speaker: &Speaker, pronoun: Gender) -> bool {
        pronoun != Gender::Unknown
            && matches!(speaker, Speaker::Focus(id) if self.genders.get(id) == Some(&pronoun))
    }

    /// Not known to take another pronoun.
    pub(super) fn fits(&self, speaker: &Speaker, pronoun: Gender) -> bool {
        match speaker {
            Speaker::Focus(id) => {
                let g = self.genders.get(id).copied().unwrap_or(Gender::Unknown);
                pronoun == Gender::Unknown || g == Gender::Unknown || g == pronoun
            }
            Speaker::Other(_) => true,
        }
    }
}

/// Family words, the sex they name, and whether they name an elder.
pub(super) const KIN_WORDS: &[(&str, Gender, bool)] = &[
    ("father", Gender::He, true),
    ("mother", Gender::She, true),
    ("brother", Gender::He, false),
    ("sister", Gender::She, false),
    ("son", Gender::He, false),
    ("daughter", Gender::She, false),
    ("uncle", Gender::He, true),
    ("aunt", Gender::She, true),
];

/// Words in a name that mark an elder of a family: a rank, "old", "elder".
pub(super) const ELDER_WORDS: &[&str] = &[
    "major", "colonel", "captain", "general", "old", "elder", "senior", "madame", "mrs",
];

/// A character the text stops showing (no line, no action, not acted on) is taken to
/// have left the story's focus after this many paragraphs of narration (paragraphs with
/// no quoted speech: while people talk, those who listen stay).
pub const FADE_PARAGRAPHS: usize = 8;

/// A character the text stops showing is gone after this many paragraphs of any kind,
/// talk included: one who neither speaks, acts nor is spoken to for that long is not
/// known to be listening. Measured on the answer books (`eval/answers/`): 6 takes
/// *Pride and Prejudice*'s leaks from 23 to 9 and *Dracula*'s from 15 to 11, at 0.05
/// to 0.13 of `known_by` recall.
pub const LISTEN_PARAGRAPHS: usize = 6;

/// Who a speech tag names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tag {
    /// A focus character, by a name form or an alias ("the cabman").
    Focus(String),
    /// A form two or more focus characters share ("said the captain"): whichever of
    /// them is on stage, when only one is.
    OneOf(Vec<String>),
    /// Someone off the list, by a capitalised name ("said Silas").
    Named(String),
    Pronoun(Gender),
    /// "I": the narrator.
    Narrator,
    /// A description the list does not hold ("my companion", "the stranger"): one of
    /// the people in the conversation, never the narrator. "her preserver" is not the
    /// one "her" means (`owner`); "the other" is the turn-taking partner.
    Unnamed {
        owner: Option<Gender>,
        other: bool,
    },
}
