//! Stage 1, scene preparation (deterministic path): each scene's place, time and
//! atmosphere, who speaks each quoted line, who leaves, and the roster of focus
//! characters: present and active, present but silent, or only referenced.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::lexicon::{
    EMOTIONS, EXIT_PHRASES, FEMALE_HINTS, MALE_HINTS, PLACE_LINKS, PLACE_NOUNS, PLACE_STOPS,
    SPEECH_VERBS, TIME_WORDS, atmosphere_of,
};
use super::text::{
    FocusCharacter, Namer, Segment, Span, inner_segments, moves_in_time, paragraphs, prefix,
    quoted_paragraphs, sentences, words,
};

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
    /// then.
    #[must_use]
    pub fn present_at(&self, paragraph: usize) -> BTreeSet<String> {
        self.present()
            .filter(|c| self.entries.get(*c).is_none_or(|came| *came <= paragraph))
            .filter(|c| {
                self.stays.get(*c).is_none_or(|stays| {
                    stays
                        .iter()
                        .any(|(from, until)| (*from..*until).contains(&paragraph))
                })
            })
            .filter(|c| self.exits.get(*c).is_none_or(|gone| paragraph < *gone))
            .cloned()
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gender {
    He,
    She,
    Unknown,
}

/// What the whole book tells before any scene is read: each focus character's pronoun
/// and the names of other speakers seen in tags ("said Silas").
#[derive(Debug, Clone)]
pub struct BookFacts {
    genders: BTreeMap<String, Gender>,
    other_speakers: BTreeSet<String>,
    /// Each focus character's family name (the last word of its name) and whether its
    /// name marks an elder (a rank, "old", "elder"): whom "my father" or "my brother"
    /// may mean.
    families: BTreeMap<String, (String, bool)>,
}

impl BookFacts {
    #[must_use]
    pub fn read(text: &str, characters: &[FocusCharacter], namer: &Namer) -> Self {
        let mut genders = BTreeMap::new();
        let mut votes: BTreeMap<&str, (i32, i32)> = BTreeMap::new();
        let mut other_speakers = BTreeSet::new();
        for para in paragraphs(text) {
            for seg in &para {
                let Segment::Narration(n) = seg else { continue };
                if let Some(Tag::Named(name)) = speech_tag(n, namer)
                    && namer.mentions(&name).is_empty()
                {
                    other_speakers.insert(name);
                }
                for s in sentences(n) {
                    let mentions = namer.mentions(s);
                    let ids: BTreeSet<&str> = mentions.iter().map(|m| m.character).collect();
                    let [id] = ids.into_iter().collect::<Vec<_>>()[..] else {
                        continue;
                    };
                    let w: Vec<String> = words(s).collect();
                    let he = w.iter().any(|w| matches!(w.as_str(), "he" | "his" | "him"));
                    let she = w
                        .iter()
                        .any(|w| matches!(w.as_str(), "she" | "her" | "hers"));
                    let v = votes.entry(id).or_default();
                    v.0 += i32::from(he && !she);
                    v.1 += i32::from(she && !he);
                }
            }
        }
        for c in characters {
            let hint = |list: &[&str]| {
                c.forms()
                    .flat_map(|f| words(f).collect::<Vec<_>>())
                    .any(|w| list.contains(&w.as_str()))
            };
            let gender = match (hint(MALE_HINTS), hint(FEMALE_HINTS)) {
                (true, false) => Gender::He,
                (false, true) => Gender::She,
                _ => match votes.get(c.id.as_str()) {
                    Some((he, she)) if he > she => Gender::He,
                    Some((he, she)) if she > he => Gender::She,
                    _ => Gender::Unknown,
                },
            };
            genders.insert(c.id.clone(), gender);
        }
        let families = characters
            .iter()
            .filter_map(|c| {
                let family = c.name.split_whitespace().last()?.to_lowercase();
                let elder = c
                    .forms()
                    .any(|f| words(f).any(|w| ELDER_WORDS.contains(&w.as_str())));
                Some((c.id.clone(), (family, elder)))
            })
            .collect();
        Self {
            genders,
            other_speakers,
            families,
        }
    }

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
    fn is(&self, speaker: &Speaker, pronoun: Gender) -> bool {
        pronoun != Gender::Unknown
            && matches!(speaker, Speaker::Focus(id) if self.genders.get(id) == Some(&pronoun))
    }

    /// Not known to take another pronoun.
    fn fits(&self, speaker: &Speaker, pronoun: Gender) -> bool {
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
const KIN_WORDS: &[(&str, Gender, bool)] = &[
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
const ELDER_WORDS: &[&str] = &[
    "major", "colonel", "captain", "general", "old", "elder", "senior", "madame", "mrs",
];

/// A character the text stops showing (no line, no action, not acted on) is taken to
/// have left the story's focus after this many paragraphs of narration (paragraphs with
/// no quoted speech: while people talk, those who listen stay).
pub const FADE_PARAGRAPHS: usize = 8;

/// Who a speech tag names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tag {
    /// A focus character, by a name form or an alias ("the cabman").
    Focus(String),
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

/// Words that open a description ("my companion", "the inspector").
const DETERMINERS: &[&str] = &[
    "my", "our", "the", "his", "her", "a", "an", "this", "that", "their",
];

fn clean_word(w: &str) -> String {
    w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_owned()
}

fn is_speech_verb(word: &str) -> bool {
    SPEECH_VERBS.contains(&word)
}

/// Whom the words at the start of `head` name: a focus character, the narrator, a
/// pronoun, a description or a capitalised name. `words` are `head`'s words, lowercased.
fn subject_at(head: &str, words: &[String], namer: &Namer) -> Option<Tag> {
    let first = words.first()?;
    // "Holmes", "Mr. Holmes", or a description before the name ("the wary Jones").
    let described = DETERMINERS.contains(&first.as_str());
    if let Some(m) = namer
        .mentions(head)
        .first()
        .filter(|m| m.start <= 4 || (described && head[..m.start].split_whitespace().count() <= 2))
    {
        return Some(Tag::Focus(m.character.to_owned()));
    }
    match first.as_str() {
        "i" => Some(Tag::Narrator),
        "he" => Some(Tag::Pronoun(Gender::He)),
        "she" => Some(Tag::Pronoun(Gender::She)),
        // A thing or a group speaks no quoted line we can give anyone.
        "it" | "they" | "we" | "you" | "there" | "this" | "these" | "those" => None,
        w if DETERMINERS.contains(&w) => Some(Tag::Unnamed {
            owner: match w {
                "his" => Some(Gender::He),
                "her" => Some(Gender::She),
                _ => None,
            },
            other: words.get(1).is_some_and(|n| n == "other"),
        }),
        _ => {
            let raw = clean_word(head.split_whitespace().next()?);
            raw.chars()
                .next()
                .is_some_and(char::is_uppercase)
                .then_some(Tag::Named(raw))
        }
    }
}

/// A speech tag in the narration after a quote: "said he", "cried Holmes", "remarked
/// my companion", "I answered", "he asked in wonder", "Holmes laughed", "the inspector
/// said".
fn speech_tag(narration: &str, namer: &Namer) -> Option<Tag> {
    let first = sentences(narration).into_iter().next()?;
    let head: Vec<&str> = first.split_whitespace().take(6).collect();
    let lower: Vec<String> = head.iter().map(|w| clean_word(w).to_lowercase()).collect();
    // "said Silas", "asked the priest", "said I"
    if lower.first().is_some_and(|w| is_speech_verb(w)) {
        let rest = head[1..].join(" ");
        return subject_at(&rest, &lower[1..], namer);
    }
    let subject = subject_at(first, &lower, namer)?;
    match subject {
        // A name at the start is the speaker, a verb of speech or not ("Ben took off
        // his hat"); a pronoun too ("she nodded").
        Tag::Focus(_) | Tag::Pronoun(_) => Some(subject),
        // "I", a description or another name needs a verb of speech within a few words.
        _ => lower
            .iter()
            .skip(1)
            .take(3)
            .any(|w| is_speech_verb(w))
            .then_some(subject),
    }
}

/// A tag leading into a quote, in the narration before it in the same paragraph:
/// "Holmes said:", "Then I asked him,", "said Silas,".
fn lead_in(narration: &str, namer: &Namer) -> Option<Tag> {
    if !narration.ends_with([':', ',']) {
        return None;
    }
    let last = sentences(narration).into_iter().last()?;
    let lower: Vec<String> = words(last).collect();
    let verb = lower.iter().position(|w| is_speech_verb(w))?;
    if verb == 0 {
        let rest: Vec<&str> = last.split_whitespace().skip(1).collect();
        return subject_at(&rest.join(" "), &lower[1..], namer);
    }
    // The subject is the nearest name or pronoun before the verb.
    let tokens: Vec<&str> = last.split_whitespace().collect();
    for start in (0..verb.min(tokens.len())).rev() {
        let head = tokens[start..].join(" ");
        match subject_at(&head, &lower[start..], namer) {
            Some(Tag::Focus(id)) => return Some(Tag::Focus(id)),
            Some(t @ (Tag::Narrator | Tag::Pronoun(_))) => return Some(t),
            _ => {}
        }
    }
    None
}

/// The focus character a quote addresses by name ("Whatever have you been doing with
/// yourself, Watson?", "Watson, come here"): not the one who says it.
pub(super) fn vocative(quote: &str, namer: &Namer) -> Option<String> {
    namer.mentions(quote).into_iter().find_map(|m| {
        let after = quote[m.end..].chars().next();
        let before = quote[..m.start].trim_end();
        let bounded_after = after.is_none_or(|c| matches!(c, ',' | '!' | '?' | '.' | ';'));
        let bounded_before = before.is_empty()
            || before.ends_with(',')
            || before.ends_with("dear")
            || before.ends_with("Dear")
            || before.ends_with(" my")
            || before.ends_with("O");
        (m.by_name && bounded_after && bounded_before).then(|| m.character.to_owned())
    })
}

/// The focus character a speech tag says the line was said to: "I said to Mrs. Hudson",
/// "he remarked to Sherlock Holmes".
fn said_to(tag: &str, namer: &Namer) -> Option<String> {
    let first = sentences(tag).into_iter().next()?;
    let head: String = first
        .split_whitespace()
        .take(8)
        .collect::<Vec<_>>()
        .join(" ");
    namer.mentions(&head).into_iter().find_map(|m| {
        let before = head[..m.start].trim_end();
        (before.ends_with(" to") && words(before).take(4).any(|w| is_speech_verb(&w)))
            .then(|| m.character.to_owned())
    })
}

/// The focus character a quote introduces as its speaker: "I'm Joseph Stangerson", "I
/// am Holmes", "my name is Mary Morstan", "you may address me as the Count".
fn introduces(quote: &str, namer: &Namer) -> Option<String> {
    const OPENERS: [&str; 6] = [
        "i'm ",
        "i am ",
        "my name is ",
        "address me as ",
        "call me ",
        "name's ",
    ];
    let lower = quote.to_lowercase();
    namer.mentions(quote).into_iter().find_map(|m| {
        let before = &lower[..m.start];
        (m.by_name && OPENERS.iter().any(|o| before.ends_with(o))).then(|| m.character.to_owned())
    })
}

/// The conversation so far in a scene: who spoke, who the narration named, who was
/// addressed last.
struct Voices<'a> {
    facts: &'a BookFacts,
    /// The scene's first-person narrator, never a "he", "she" or description.
    narrator: Option<&'a str>,
    spoken: Vec<Speaker>,
    mentioned: Vec<Speaker>,
    addressed: Option<Speaker>,
    /// The paragraphs at which the text showed each focus character so far.
    shown: BTreeMap<String, Vec<usize>>,
    /// The paragraph being read.
    now: usize,
    /// Paragraphs of narration only, up to and including each paragraph.
    clock: Vec<usize>,
    /// Paragraphs in which the narrator moves on ("We followed him into the
    /// housekeeper's room"): who the text does not show there is left behind.
    moved: Vec<usize>,
    /// Someone off the list the narration just brought in ("the door was thrown open by
    /// a Hindoo servant"), its pronoun, and the paragraph: the "he" of a line in the next
    /// two paragraphs, unless a focus character it could be is shown first.
    newcomer: Option<(Speaker, Gender, usize)>,
    /// Who left, and the paragraph from which they are gone.
    exits: BTreeMap<String, usize>,
}

impl Voices<'_> {
    fn is_narrator(&self, s: &Speaker) -> bool {
        self.narrator.is_some_and(|n| s.focus() == Some(n))
    }

    /// Turn-taking: the speaker before the last one, different from it; when only one
    /// has spoken yet, the one other person on stage, if there is exactly one.
    fn alternate(&self) -> Option<Speaker> {
        let last = self.spoken.last()?;
        if let Some(before) = self
            .spoken
            .iter()
            .rev()
            .find(|s| *s != last && self.on_stage(s))
        {
            return Some(before.clone());
        }
        let mut others = self
            .narrator
            .map(str::to_owned)
            .into_iter()
            .chain(self.shown.keys().cloned())
            .map(Speaker::Focus)
            .filter(|s| s != last && self.on_stage(s));
        let other = others.next()?;
        others.next().is_none().then_some(other)
    }

    /// A third person on stage: the nearest candidate known to take the pronoun, else
    /// the nearest it fits (the narration
    /// of this paragraph, the one addressed last, the turn-taking partner, the last
    /// speakers, the last named on stage). Never the narrator, never someone who has not
    /// come on stage: a guess must not put anyone in the room.
    fn resolve(&self, in_paragraph: &[Speaker], pronoun: Gender) -> Option<Speaker> {
        self.resolve_except(in_paragraph, pronoun, None)
    }

    /// [`Self::resolve`], passing over `except`.
    fn resolve_except(
        &self,
        in_paragraph: &[Speaker],
        pronoun: Gender,
        except: Option<&Speaker>,
    ) -> Option<Speaker> {
        let candidates = || {
            in_paragraph
                .iter()
                .rev()
                .cloned()
                .chain(self.addressed.clone())
                .chain(self.alternate())
                .chain(self.spoken.iter().rev().cloned())
                .chain(self.mentioned.iter().rev().cloned())
                .filter(|s| !self.is_narrator(s) && self.on_stage(s) && Some(s) != except)
        };
        if let Some((who, gender, at)) = &self.newcomer {
            let fits =
                pronoun == Gender::Unknown || *gender == Gender::Unknown || *gender == pronoun;
            if fits && self.now <= at + 2 {
                return Some(who.clone());
            }
        }
        // Someone known to take the pronoun first; someone not known not to, after.
        candidates()
            .find(|s| self.facts.is(s, pronoun))
            .or_else(|| candidates().find(|s| self.facts.fits(s, pronoun)))
            .or_else(|| self.went_along(pronoun))
    }

    /// The one character the narrator's last move may have taken along: shown before
    /// the move, within [`FADE_PARAGRAPHS`], not gone, and the only one known to take
    /// the pronoun ("Yet upon that afternoon … 'It is cocaine,' he said"). Who is shown
    /// again soon after a move went along.
    fn went_along(&self, pronoun: Gender) -> Option<Speaker> {
        if pronoun == Gender::Unknown {
            return None;
        }
        let mut fitting = self.shown.iter().filter(|(id, seen)| {
            self.narrator != Some(id.as_str())
                && self.exits.get(*id).is_none_or(|gone| self.now < *gone)
                && seen
                    .last()
                    .is_some_and(|last| self.clock[self.now] - self.clock[*last] <= FADE_PARAGRAPHS)
                && self.facts.is(&Speaker::Focus((*id).clone()), pronoun)
        });
        let (id, _) = fitting.next()?;
        fitting.next().is_none().then(|| Speaker::Focus(id.clone()))
    }

    fn on_stage(&self, s: &Speaker) -> bool {
        s.focus().is_none_or(|id| {
            self.narrator == Some(id)
                || self.exits.get(id).is_none_or(|gone| self.now < *gone)
                    && self
                        .shown
                        .get(id)
                        .and_then(|seen| seen.last())
                        .is_some_and(|last| {
                            self.clock[self.now] - self.clock[*last] <= FADE_PARAGRAPHS
                                && !self.moved.iter().any(|m| *last < *m && *m <= self.now)
                        })
        })
    }

    /// The text shows `id` at paragraph `p`.
    fn show(&mut self, id: &str, p: usize) {
        let could_be = self.newcomer.as_ref().is_some_and(|(_, gender, _)| {
            self.narrator != Some(id) && self.facts.fits(&Speaker::Focus(id.to_owned()), *gender)
        });
        if could_be {
            self.newcomer = None;
        }
        let seen = self.shown.entry(id.to_owned()).or_default();
        if seen.last() != Some(&p) {
            seen.push(p);
        }
    }

    fn speaker_of(&self, tag: Tag, in_paragraph: &[Speaker]) -> Option<Speaker> {
        match tag {
            Tag::Focus(id) => Some(Speaker::Focus(id)),
            Tag::Named(name) => Some(Speaker::Other(name)),
            Tag::Pronoun(g) => self.resolve(in_paragraph, g),
            Tag::Narrator => Some(match self.narrator {
                Some(id) => Speaker::Focus(id.to_owned()),
                None => Speaker::Other("I".to_owned()),
            }),
            Tag::Unnamed { other: true, .. } => self.alternate(),
            Tag::Unnamed { owner: None, .. } => self.resolve(in_paragraph, Gender::Unknown),
            // "said her preserver": someone there other than the one "her" means.
            Tag::Unnamed { owner: Some(g), .. } => {
                let owner = self.resolve(in_paragraph, g);
                self.resolve_except(in_paragraph, Gender::Unknown, owner.as_ref())
                    .filter(|s| Some(s) != owner.as_ref())
            }
        }
    }
}

/// Who lived what `sentence` tells, as [`Sentence::actors`]: those it names who act
/// next, the family of `teller` it names so ("My father received a letter"), and who
/// first said the retold line it is part of.
fn actors(
    sentence: &str,
    teller: Option<&str>,
    retold_by: Option<&Speaker>,
    namer: &Namer,
    facts: &BookFacts,
) -> BTreeSet<String> {
    let named = namer
        .mentions(sentence)
        .into_iter()
        .filter(|m| acts_after(&sentence[m.end..]))
        .map(|m| m.character.to_owned());
    let kin = teller
        .map(|t| kin_refs(sentence, t, facts))
        .unwrap_or_default()
        .into_iter()
        .filter(|(start, end, _)| *start == 0 || acts_after(&sentence[*end..]))
        .map(|(_, _, id)| id);
    named
        .chain(kin)
        .chain(retold_by.and_then(Speaker::focus).map(str::to_owned))
        .collect()
}

/// Does the text after a name say that person acted: a verb of acting in the past
/// next, adverbs skipped ("quietly took"), not a state ("was", "had") nor speech?
fn acts_after(rest: &str) -> bool {
    if rest.starts_with("'s") || rest.starts_with("’s") || rest.starts_with(',') {
        return false;
    }
    words(rest).find(|w| !w.ends_with("ly")).is_some_and(|w| {
        is_past_verb(&w)
            && !matches!(
                w.as_str(),
                "said" | "cried" | "asked" | "answered" | "shouted" | "whispered"
            )
    })
}

/// "my father", "our brother" in `text` said by `teller`: where, and whom it means.
fn kin_refs(text: &str, teller: &str, facts: &BookFacts) -> Vec<(usize, usize, String)> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    for owner in ["my ", "our "] {
        for (at, _) in lower.match_indices(owner) {
            if at > 0
                && lower[..at]
                    .chars()
                    .last()
                    .is_some_and(char::is_alphanumeric)
            {
                continue;
            }
            let rest = &lower[at + owner.len()..];
            let word: String = rest.chars().take_while(|c| c.is_alphabetic()).collect();
            if let Some(id) = facts.kin(teller, &word) {
                out.push((at, at + owner.len() + word.len(), id));
            }
        }
    }
    out.sort();
    out
}

/// Does a retold line hold a sentence of the quote that retells it: the sentence's
/// first words, up to a quote mark, are in the line?
fn holds(line: &str, sentence: &str) -> bool {
    let core: String = sentence
        .trim_start_matches(|c: char| c == '\'' || c == '‘' || c.is_whitespace())
        .chars()
        .take_while(|c| *c != '\'' && *c != '’')
        .take(24)
        .collect();
    core.len() >= 8 && line.contains(core.trim_end())
}

/// One speaker's retelling of what others said, through its quoted paragraphs: whom its
/// words name, and whose lines it has retold.
#[derive(Default)]
struct Retelling {
    teller: Option<Speaker>,
    /// Focus characters its words named, with the paragraph.
    mentioned: Vec<(Speaker, usize)>,
    /// Those named in the last sentence of its words so far: whom a "he" or "she" just
    /// after most likely means.
    last_named: Vec<Speaker>,
    /// Those the teller says lived it alongside ("my brother and I", "I and Holmes"):
    /// what the teller says "we" did, and the lines retold, they lived too.
    companions: BTreeSet<String>,
    spoken: Vec<Speaker>,
}

impl Retelling {
    /// The lines retold in quote `q` (paragraph `p`), each given to the one its tag
    /// names: "I" is the teller, "he" or "she" someone the retelling named, an untagged
    /// line the one who spoke the retold line before it. A line nobody fits is left out.
    fn lines(&mut self, q: &str, p: usize, namer: &Namer, facts: &BookFacts) -> Vec<Utterance> {
        let Some(inner) = inner_segments(q) else {
            self.name_in(q, p, namer, facts);
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut last: Option<Speaker> = None;
        for (i, seg) in inner.iter().enumerate() {
            let line = match seg {
                Segment::Narration(n) => {
                    self.name_in(n, p, namer, facts);
                    continue;
                }
                Segment::Quote(line) => line,
            };
            let tag = match inner.get(i + 1) {
                Some(Segment::Narration(n)) => speech_tag(n, namer),
                _ => None,
            }
            .or_else(|| match i.checked_sub(1).map(|j| &inner[j]) {
                Some(Segment::Narration(n)) => lead_in(n, namer),
                _ => None,
            });
            let addressed = vocative(line, namer).map(Speaker::Focus);
            let speaker = match tag {
                Some(Tag::Focus(id)) => Some(Speaker::Focus(id)),
                Some(Tag::Named(name)) => Some(Speaker::Other(name)),
                Some(Tag::Narrator) => self.teller.clone(),
                Some(Tag::Pronoun(g)) => self.resolve(g, p, facts),
                // "said the taller of the pair": someone the list does not name.
                Some(Tag::Unnamed { .. }) => None,
                // Untagged: the one who spoke the retold line before it in this
                // paragraph; at the paragraph's start, turn-taking. A phrase quoted
                // inside the teller's own sentence ("with 'The sign of the four'
                // scrawled across it") is nobody's line.
                None if last.is_some() => last.clone(),
                None if i == 0 => self
                    .spoken
                    .last()
                    .and_then(|before| self.spoken.iter().rev().find(|s| *s != before).cloned()),
                None => None,
            }
            .filter(|s| Some(s) != addressed.as_ref());
            let Some(speaker) = speaker else { continue };
            if self.spoken.last() != Some(&speaker) {
                self.spoken.push(speaker.clone());
            }
            last = Some(speaker.clone());
            out.push(Utterance {
                speaker,
                text: line.clone(),
                paragraph: p,
            });
        }
        out
    }

    /// Records whom the teller's own words in `text` name, by name or as its family
    /// ("my father"), in order.
    fn name_in(&mut self, text: &str, p: usize, namer: &Namer, facts: &BookFacts) {
        let mut named: Vec<(usize, String)> = namer
            .mentions(text)
            .iter()
            .map(|m| (m.start, m.character.to_owned()))
            .collect();
        if let Some(teller) = self.teller.as_ref().and_then(Speaker::focus) {
            named.extend(
                kin_refs(text, teller, facts)
                    .into_iter()
                    .map(|(at, _, id)| (at, id)),
            );
        }
        named.sort();
        for (at, id) in &named {
            let before = &text[..*at];
            let after = &text[*at..];
            let with_me = after.split_once(" and I").is_some_and(|(name, rest)| {
                !name.contains([',', '.', ';'])
                    && name.split_whitespace().count() <= 4
                    && !rest.starts_with(|c: char| c.is_alphanumeric())
            });
            if with_me || before.ends_with("I and ") {
                self.companions.insert(id.clone());
            }
        }
        let last_start = sentences(text).last().map_or(0, |l| text.len() - l.len());
        self.last_named = named
            .iter()
            .filter(|(at, _)| *at >= last_start)
            .map(|(_, id)| Speaker::Focus(id.clone()))
            .collect();
        self.mentioned
            .extend(named.into_iter().map(|(_, id)| (Speaker::Focus(id), p)));
    }

    /// "he" or "she" in a retelling: the one the teller named in its last sentence,
    /// else retold last, else named in this paragraph or the three before, that is known to take it, else that it fits; never the
    /// teller.
    fn resolve(&self, pronoun: Gender, p: usize, facts: &BookFacts) -> Option<Speaker> {
        let candidates = || {
            self.last_named
                .iter()
                .rev()
                .chain(self.spoken.iter().rev())
                .chain(
                    self.mentioned
                        .iter()
                        .rev()
                        .filter(|(_, at)| at + 3 >= p)
                        .map(|(s, _)| s),
                )
                .filter(|s| Some(*s) != self.teller.as_ref())
        };
        candidates()
            .find(|s| facts.is(s, pronoun))
            .or_else(|| candidates().find(|s| facts.fits(s, pronoun)))
            .cloned()
    }
}

/// Prepares one scene from its text (the deterministic path). `narrator` is the focus
/// character telling it in the first person, if any: on stage throughout, and "I".
#[must_use]
pub fn prepare(
    number: usize,
    span: Span,
    text: &str,
    namer: &Namer,
    facts: &BookFacts,
    narrator: Option<&str>,
) -> Scene {
    let paras = quoted_paragraphs(text);
    let mut voices = Voices {
        facts,
        narrator,
        spoken: Vec::new(),
        mentioned: Vec::new(),
        addressed: None,
        shown: BTreeMap::new(),
        now: 0,
        clock: paras
            .iter()
            .scan(0, |n, p| {
                *n += usize::from(!p.segments.iter().any(|s| matches!(s, Segment::Quote(_))));
                Some(*n)
            })
            .collect(),
        moved: Vec::new(),
        newcomer: None,
        exits: BTreeMap::new(),
    };
    let mut utterances = Vec::new();
    let mut all_sentences = Vec::new();
    // Who is on stage from which paragraph: by speaking, or named on stage by the
    // narration.
    let mut entries: BTreeMap<String, usize> = BTreeMap::new();
    if let Some(n) = narrator {
        entries.insert(n.to_owned(), 0);
    }
    let mut named: BTreeSet<String> = BTreeSet::new();
    let other_in = |text: &str| {
        facts
            .other_speakers
            .iter()
            .find(|n| {
                text.split_whitespace()
                    .next()
                    .is_some_and(|w| w.trim_end_matches("'s") == n.as_str())
            })
            .map(|n| Speaker::Other(n.clone()))
    };
    let mut open_speaker: Option<Speaker> = None;
    let mut retold = Vec::new();
    let mut unattributed = Vec::new();
    let mut retelling = Retelling::default();
    let mut returns: BTreeSet<(String, usize)> = BTreeSet::new();
    for (p, para) in paras.iter().enumerate() {
        voices.now = p;
        let segs = &para.segments;
        let mut in_paragraph: Vec<Speaker> = Vec::new();
        // The subject of the narration just before a quote in this paragraph.
        let mut actor: Option<Speaker> = None;
        let mut paragraph_speaker: Option<Speaker> = None;
        let continued = open_speaker.take();
        // A retelling goes on only through one teller's quoted paragraphs.
        if matches!(segs.first(), Some(Segment::Narration(_))) {
            retelling = Retelling::default();
        }
        let introduced = segs.iter().find_map(|s| match s {
            Segment::Quote(q) => introduces(q, namer),
            Segment::Narration(_) => None,
        });
        // Whom this paragraph's quotes address by name: the likely next speaker.
        let mut addressed: Option<Speaker> = None;
        for (i, seg) in segs.iter().enumerate() {
            match seg {
                Segment::Narration(n) => {
                    actor = None;
                    for s in sentences(n) {
                        let lower: Vec<String> = words(s).collect();
                        let mentions = namer.mentions(s);
                        for m in &mentions {
                            named.insert(m.character.to_owned());
                            // Only a mention on stage can be a speaker later.
                            if !present_mention(s, m.start, m.end) {
                                continue;
                            }
                            tracing::debug!(
                                target: "dramatis_ingest::presence",
                                scene = number,
                                paragraph = p,
                                character = m.character,
                                "shown by narration: {}",
                                prefix(s, 160)
                            );
                            entries.entry(m.character.to_owned()).or_insert(p);
                            // "Lestrade, who had been in the front room…, reappeared":
                            // he was away since the text last showed him.
                            if comes_back(s, m.end) {
                                returns.insert((m.character.to_owned(), p));
                            }
                            voices.show(m.character, p);
                            in_paragraph.push(Speaker::Focus(m.character.to_owned()));
                            voices
                                .mentioned
                                .push(Speaker::Focus(m.character.to_owned()));
                        }
                        if let Some(o) = other_in(s) {
                            in_paragraph.push(o);
                        }
                        if mentions.is_empty()
                            && let Some((noun, gender)) = newcomer_in(&lower)
                        {
                            voices.newcomer =
                                Some((Speaker::Other(format!("the {noun}")), gender, p));
                        }
                        actor = match subject_at(s, &lower, namer) {
                            Some(Tag::Focus(id)) => Some(Speaker::Focus(id)),
                            Some(Tag::Narrator) => voices.speaker_of(Tag::Narrator, &[]),
                            Some(Tag::Pronoun(g)) => voices.resolve(&in_paragraph, g),
                            _ => other_in(s),
                        };
                        let moves = (narrator.is_some() && moves_on(&lower)) || moves_in_time(s);
                        if moves && voices.moved.last() != Some(&p) {
                            tracing::debug!(
                                target: "dramatis_ingest::presence",
                                scene = number,
                                paragraph = p,
                                "moves on: {}",
                                prefix(s, 120)
                            );
                            voices.moved.push(p);
                        }
                        if let Some(who) = exit_of(s, namer, &voices) {
                            voices.exits.entry(who).or_insert(p + 1);
                        }
                        // "…," remarked the wary Jones as they left the room: the people
                        // it names and the one the line was said to leave.
                        let lower_s = s.to_lowercase();
                        if lower_s.contains("they ")
                            && EXIT_PHRASES
                                .iter()
                                .any(|x| lower_s.contains(&format!("they {x}")))
                        {
                            let leaving: Vec<String> = mentions
                                .iter()
                                .map(|m| m.character.to_owned())
                                .chain(
                                    addressed
                                        .as_ref()
                                        .and_then(Speaker::focus)
                                        .map(str::to_owned),
                                )
                                .collect();
                            for who in leaving {
                                voices.exits.entry(who).or_insert(p + 1);
                            }
                        } else if mentions.is_empty() && they_go(&lower) {
                            // "He handed them a shilling each, and away they buzzed down
                            // the stairs": those sent off, everyone on stage but the
                            // narrator, the one who spoke last and those this paragraph
                            // shows.
                            let last = voices.spoken.last().and_then(Speaker::focus);
                            let leaving: Vec<String> = voices
                                .shown
                                .iter()
                                .filter(|(id, seen)| {
                                    Some(id.as_str()) != last
                                        && narrator != Some(id.as_str())
                                        && seen.last() != Some(&p)
                                        && voices.on_stage(&Speaker::Focus((*id).clone()))
                                })
                                .map(|(id, _)| id)
                                .cloned()
                                .collect();
                            for who in leaving {
                                voices.exits.entry(who).or_insert(p + 1);
                            }
                        }
                        all_sentences.push(Sentence {
                            text: s.to_owned(),
                            paragraph: p,
                            spoken_by: None,
                            actors: actors(s, narrator, None, namer, facts),
                        });
                    }
                }
                Segment::Quote(q) => {
                    for m in namer.mentions(q) {
                        named.insert(m.character.to_owned());
                    }
                    let after = match segs.get(i + 1) {
                        Some(Segment::Narration(n)) => speech_tag(n, namer),
                        _ => None,
                    };
                    let before = match i.checked_sub(1).map(|j| &segs[j]) {
                        Some(Segment::Narration(n)) => lead_in(n, namer),
                        _ => None,
                    };
                    // "I'm Joseph Stangerson": the speaker says who it is, for every
                    // quote of the paragraph a name does not tag.
                    let named_tag =
                        matches!(after.as_ref().or(before.as_ref()), Some(Tag::Focus(_)));
                    let after_is_tag = after.is_some();
                    let tag = introduced
                        .clone()
                        .filter(|_| !named_tag)
                        .map(Tag::Focus)
                        .or(after)
                        .or(before);
                    let has_tag = tag.is_some();
                    let tagged = tag.and_then(|tag| match tag {
                        // A pronoun in a paragraph that already has a speaker who
                        // fits it is that speaker.
                        Tag::Pronoun(g) => paragraph_speaker
                            .clone()
                            .filter(|s| facts.fits(s, g) && !voices.is_narrator(s))
                            .or_else(|| voices.speaker_of(tag, &in_paragraph)),
                        _ => voices.speaker_of(tag, &in_paragraph),
                    });
                    // "…," I said to Mrs. Hudson: she is addressed, and likely answers.
                    let told = match segs.get(i + 1) {
                        Some(Segment::Narration(n)) if after_is_tag => said_to(n, namer),
                        _ => None,
                    };
                    let vocative = vocative(q, namer).or(told).map(Speaker::Focus);
                    // A tag that names no one who can be found leaves the line unknown;
                    // only an untagged line is given by the conversation.
                    let untagged = || !has_tag;
                    let speaker = tagged
                        .or_else(|| paragraph_speaker.clone().filter(|_| untagged()))
                        .or_else(|| (i == 0 && untagged()).then(|| continued.clone()).flatten())
                        .or_else(|| actor.clone().filter(|_| untagged()))
                        .or_else(|| {
                            voices.addressed.clone().filter(|a| {
                                untagged() && Some(a) != voices.spoken.last() && voices.on_stage(a)
                            })
                        })
                        .or_else(|| voices.alternate().filter(|_| untagged()))
                        .filter(|s| Some(s) != vocative.as_ref());
                    if retelling.teller != speaker {
                        retelling = Retelling {
                            teller: speaker.clone(),
                            ..Retelling::default()
                        };
                    }
                    let lines = retelling.lines(q, p, namer, facts);
                    for s in sentences(q) {
                        let retold_by =
                            lines.iter().find(|u| holds(&u.text, s)).map(|u| &u.speaker);
                        let mut actors = actors(
                            s,
                            speaker.as_ref().and_then(Speaker::focus),
                            retold_by,
                            namer,
                            facts,
                        );
                        // "When we entered his room…": the teller's companions lived it.
                        if retold_by.is_some() || words(s).any(|w| w == "we") {
                            actors.extend(retelling.companions.iter().cloned());
                        }
                        all_sentences.push(Sentence {
                            text: s.to_owned(),
                            paragraph: p,
                            spoken_by: speaker.clone(),
                            actors,
                        });
                    }
                    for u in &lines {
                        tracing::debug!(
                            target: "dramatis_ingest::presence",
                            scene = number,
                            paragraph = p,
                            speaker = ?u.speaker,
                            "retold: {}",
                            prefix(&u.text, 80)
                        );
                    }
                    retold.extend(lines);
                    if vocative.is_some() {
                        addressed = vocative;
                    }
                    if speaker.is_none() {
                        unattributed.push((p, q.clone()));
                    }
                    if let Some(speaker) = speaker {
                        if let Some(id) = speaker.focus() {
                            tracing::debug!(
                                target: "dramatis_ingest::presence",
                                scene = number,
                                paragraph = p,
                                character = id,
                                "speaks: {}",
                                prefix(q, 80)
                            );
                            entries.entry(id.to_owned()).or_insert(p);
                            voices.show(id, p);
                        }
                        paragraph_speaker = Some(speaker.clone());
                        if voices.spoken.last() != Some(&speaker) {
                            voices.spoken.push(speaker.clone());
                        }
                        utterances.push(Utterance {
                            speaker,
                            text: q.clone(),
                            paragraph: p,
                        });
                    }
                }
            }
        }
        if segs.iter().any(|s| matches!(s, Segment::Quote(_))) {
            voices.addressed = addressed;
        }
        if para.open {
            open_speaker = paragraph_speaker;
        }
    }
    let mut stays: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    for (id, seen) in &voices.shown {
        if narrator == Some(id.as_str()) {
            continue;
        }
        // Gone at the first paragraph more than FADE_PARAGRAPHS of narration later…
        let faded = |p: usize| {
            (p..paras.len())
                .find(|q| voices.clock[*q] - voices.clock[p] > FADE_PARAGRAPHS)
                .unwrap_or(paras.len())
        };
        // …or, when the text does not show them again by then, where the narrator
        // moves on after the last time it did: who is shown again soon went along.
        let left_behind = |p: usize| {
            voices
                .moved
                .iter()
                .find(|m| **m > p)
                .map_or(faded(p), |m| faded(p).min(*m))
        };
        let ranges = stays.entry(id.clone()).or_default();
        let mut last_seen = None;
        for p in seen {
            let returned = returns.contains(&(id.clone(), *p));
            match (ranges.last_mut(), last_seen) {
                // Back from somewhere: away since the paragraph after the last showing.
                (Some(last), Some(before)) if returned && before < *p => {
                    last.1 = last.1.min(before + 1);
                    ranges.push((*p, faded(*p)));
                }
                (Some(last), Some(before)) if *p < faded(before) => last.1 = faded(*p),
                (Some(last), _) => {
                    if let Some(before) = last_seen {
                        last.1 = left_behind(before);
                    }
                    ranges.push((*p, faded(*p)));
                }
                (None, _) => ranges.push((*p, faded(*p))),
            }
            last_seen = Some(*p);
        }
        if let (Some(last), Some(before)) = (ranges.last_mut(), last_seen) {
            last.1 = left_behind(before);
        }
    }
    let active: BTreeSet<String> = utterances
        .iter()
        .filter_map(|u| u.speaker.focus().map(str::to_owned))
        .collect();
    let silent: BTreeSet<String> = entries
        .keys()
        .filter(|c| !active.contains(*c))
        .cloned()
        .collect();
    let referenced: BTreeSet<String> = named
        .iter()
        .filter(|c| !entries.contains_key(*c))
        .cloned()
        .collect();
    let opening: String = paras
        .first()
        .map(|p| {
            p.segments
                .iter()
                .filter_map(|s| match s {
                    Segment::Narration(n) => Some(n.as_str()),
                    Segment::Quote(_) => None,
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    let location = place_phrase(&opening).unwrap_or_else(|| format!("scene {number}"));
    let time = words(&opening)
        .find(|w| {
            TIME_WORDS.contains(&w.as_str())
                && !matches!(
                    w.as_str(),
                    "years" | "months" | "weeks" | "winters" | "o'clock"
                )
        })
        .unwrap_or_default();
    Scene {
        number,
        span,
        location,
        time,
        atmosphere: atmosphere_of(dominant_emotion(text)).to_owned(),
        active,
        silent,
        referenced,
        utterances,
        retold,
        unattributed,
        sentences: all_sentences,
        exits: voices.exits,
        entries,
        stays,
        paragraph_starts: paras.iter().map(|p| span.start + p.start).collect(),
        narrator: narrator.map(str::to_owned),
    }
}

/// Words after a name that make the sentence an aside about someone (pluperfect,
/// modal, present tense): "Kit had lent him the token", "Holmes would have known".
const ASIDE_WORDS: &[&str] = &[
    "had", "would", "could", "might", "must", "should", "will", "is", "has", "may", "shall", "used",
];

/// Words by which a text names the dead.
const DEAD_WORDS: &[&str] = &[
    "dead", "late", "body", "corpse", "deceased", "murdered", "death", "grave", "funeral",
];

/// Words right before a name that make it the topic, not a person in the room: "told
/// him about the priest", "a letter from Holmes".
const TOPIC_WORDS: &[&str] = &[
    "about",
    "of",
    "for",
    "from",
    "concerning",
    "like",
    "than",
    "unlike",
    "whom",
];

/// Words a little before a name that put it in someone's thoughts or letters: "I had
/// heard of Holmes", "I thought that Lestrade", "wrote to Gregson".
const THOUGHT_WORDS: &[&str] = &[
    "heard",
    "thought",
    "remembered",
    "knew",
    "wrote",
    "written",
    "letter",
    "telegram",
    "note",
    "wondered",
    "imagined",
    "dreamed",
];

/// Phrases that put a sentence at a grave or a death, or leave someone behind ("Miss
/// Morstan had remained behind with the frightened housekeeper"): the people it names
/// are not shown where the story goes on.
const DEATH_CUES: &[&str] = &[
    " died",
    "was dead",
    "is dead",
    "was gone",
    "were gone",
    "grave",
    "buried",
    "epitaph",
    "corpse",
    "funeral",
    "remained behind",
    "stayed behind",
    "left behind",
];

/// Words before "to" that tie a name to a thing, not to an action in the room:
/// "belonged to Miss Morstan", "a letter addressed to Holmes".
const NOT_PRESENCE_BEFORE_TO: &[&str] = &[
    "belonged",
    "belongs",
    "belonging",
    "owed",
    "due",
    "according",
    "known",
    "unknown",
    "married",
    "engaged",
    "related",
    "left",
    "bequeathed",
    "sent",
    "addressed",
    "devoted",
    "loyal",
    "faithful",
    "attached",
    "similar",
    "letter",
    "message",
    "note",
];

/// Words before a name that bring the person into the action: "turned to Holmes", "sat
/// with Lucy", "glanced at Lestrade".
const PRESENCE_WORDS: &[&str] = &[
    "with", "beside", "towards", "toward", "at", "to", "behind", "followed", "joined", "met",
    "found", "saw", "greeted", "upon", "by",
];

/// A narration mention that puts the character on stage: the subject near the start
/// of a sentence that is not an aside, or the person an action is directed at. A name
/// that is the topic ("told him about the priest"), in an aside ("Kit had lent him the
/// token") or anywhere else is not evidence of presence: a character only talked about
/// must not be handed the scene.
fn present_mention(sentence: &str, start: usize, end: usize) -> bool {
    let before: Vec<String> = words(&sentence[..start]).collect();
    let after: Vec<String> = words(&sentence[end..])
        .skip_while(|w| w.ends_with("ly"))
        .take(1)
        .collect();
    let aside = after
        .first()
        .is_some_and(|w| ASIDE_WORDS.contains(&w.as_str()));
    let topic = before
        .last()
        .is_some_and(|w| TOPIC_WORDS.contains(&w.as_str()))
        || before
            .iter()
            .rev()
            .take(4)
            .any(|w| THOUGHT_WORDS.contains(&w.as_str()));
    // "the dead man", "the body": a corpse in the room knows nothing.
    let dead = words(&sentence[start..end])
        .chain(before.last().cloned())
        .any(|w| DEAD_WORDS.contains(&w.as_str()));
    // An inscription ("JOHN FERRIER, … Died August 4th"), a grave, a death: no one is
    // shown by a sentence that buries them.
    let inscription = sentence[start..end]
        .chars()
        .filter(|c| c.is_alphabetic())
        .count()
        > 1
        && !sentence[start..end].chars().any(char::is_lowercase);
    let lower = sentence.to_lowercase();
    let burial = DEATH_CUES.iter().any(|c| lower.contains(c));
    // "Mrs. Cecil Forrester was out for the evening".
    let next_two: Vec<String> = words(&sentence[end..]).take(2).collect();
    let away = matches!(
        next_two.first().map(String::as_str),
        Some("was" | "is" | "were")
    ) && matches!(
        next_two.get(1).map(String::as_str),
        Some("out" | "away" | "absent")
    );
    // "against the glare of the furnace I could see old Smith": seen from afar, not
    // among those who see and hear what happens here.
    let tail = before
        .iter()
        .rev()
        .take(4)
        .rev()
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    let distant = [
        "could see",
        "could make out",
        "could discern",
        "sight of",
        "could just see",
    ]
    .iter()
    .any(|c| tail.contains(c));
    if aside || topic || dead || inscription || burial || away || distant {
        return false;
    }
    // "Sholto's death", "Morstan's baggage": a name that only qualifies a thing shows
    // no one, unless it opens the sentence ("Holmes's face lit up").
    let possessive = sentence[end..].starts_with("'s") || sentence[end..].starts_with("’s");
    if possessive && before.len() > 2 {
        return false;
    }
    // "Holmes and I", "…, when Lestrade entered"; not the last of a list ("Stangerson,
    // Kemball, Johnston, and Drebber").
    let subject = before.len() <= 2
        || before.last().is_some_and(|w| match w.as_str() {
            "and" => before.len() <= 4,
            "then" | "when" | "while" | "as" => true,
            _ => false,
        });
    // "turned to Holmes", "I recognized young Stamford": the person an action in the
    // past tense is directed at (a description's own first word skipped).
    let verb = before.iter().rposition(|w| {
        !matches!(
            w.as_str(),
            "young" | "old" | "little" | "the" | "my" | "our" | "miss" | "mr" | "mrs" | "dr"
        )
    });
    let directed = verb.is_some_and(|at| {
        let w = before[at].as_str();
        // The word before the verb, adverbs skipped: "belonged rightfully to Miss
        // Morstan", "had possessed Major Sholto".
        let prior = before[..at].iter().rev().find(|w| !w.ends_with("ly"));
        let pluperfect = prior.is_some_and(|p| ASIDE_WORDS.contains(&p.as_str()) || p == "have");
        let owed = w == "to" && prior.is_some_and(|p| NOT_PRESENCE_BEFORE_TO.contains(&p.as_str()));
        !pluperfect && !owed && (PRESENCE_WORDS.contains(&w) || (w.len() > 3 && w.ends_with("ed")))
    });
    // "our landlady entered", "before Holmes returned": the subject of a verb in the
    // past tense, wherever the clause starts.
    let acts = after.first().is_some_and(|w| is_past_verb(w));
    subject || directed || acts
}

/// Verbs of acting in the simple past that often follow their subject.
const PAST_VERBS: &[&str] = &[
    "came",
    "went",
    "sat",
    "stood",
    "rose",
    "ran",
    "took",
    "gave",
    "said",
    "saw",
    "made",
    "put",
    "held",
    "sprang",
    "drew",
    "threw",
    "led",
    "brought",
    "began",
    "fell",
    "got",
    "lay",
    "spoke",
    "struck",
    "shook",
    "bent",
    "caught",
    "sank",
    "broke",
    "wrote",
    "read",
    "cried",
    "laughed",
    "smiled",
    "nodded",
    "entered",
    "returned",
    "shouted",
    "whispered",
    "answered",
    "asked",
];

/// A verb in the simple past: the common irregular ones, or a regular "-ed" form.
pub(super) fn is_past_verb(word: &str) -> bool {
    PAST_VERBS.contains(&word)
        || (word.len() > 4 && word.ends_with("ed") && !matches!(word, "indeed" | "need" | "seed"))
}

/// Does the sentence bring the character named before `end` back ("Lestrade, who had
/// been in the front room…, reappeared", "Holmes returned")?
fn comes_back(sentence: &str, end: usize) -> bool {
    let lower = sentence.to_lowercase();
    ["reappeared", "came back", "re-entered", "reentered"]
        .iter()
        .any(|w| lower.contains(w))
        || words(&sentence[end..]).next().as_deref() == Some("returned")
}

/// Nouns for a person the narration brings in without a name, and the pronoun each
/// takes.
const PERSON_NOUNS: &[(&str, Gender)] = &[
    ("man", Gender::He),
    ("fellow", Gender::He),
    ("gentleman", Gender::He),
    ("boy", Gender::He),
    ("lad", Gender::He),
    ("coachman", Gender::He),
    ("cabman", Gender::He),
    ("policeman", Gender::He),
    ("constable", Gender::He),
    ("commissionaire", Gender::He),
    ("footman", Gender::He),
    ("butler", Gender::He),
    ("woman", Gender::She),
    ("lady", Gender::She),
    ("girl", Gender::She),
    ("maid", Gender::She),
    ("servant", Gender::Unknown),
    ("voice", Gender::Unknown),
    ("stranger", Gender::Unknown),
    ("visitor", Gender::Unknown),
    ("messenger", Gender::Unknown),
    ("figure", Gender::Unknown),
];

/// Words before "a …" that make the person one who comes or acts.
const AGENT_BEFORE: &[&str] = &[
    "by", "before", "when", "came", "entered", "appeared", "then", "suddenly", "heard",
];

/// An unnamed person brought in by an indefinite description among a sentence's words:
/// "a small, dark, brisk man", "a Hindoo servant", "a deep voice below".
fn newcomer_in(lower: &[String]) -> Option<(&'static str, Gender)> {
    lower.iter().enumerate().find_map(|(at, w)| {
        // One who comes or acts: at the start, or after "by", "before", "came"… ("thrown
        // open by a Hindoo servant"); not a likeness or a predicate ("like a man
        // possessed", "to a lonely man").
        let agent = at
            .checked_sub(1)
            .is_none_or(|b| AGENT_BEFORE.contains(&lower[b].as_str()));
        if (w != "a" && w != "an") || !agent {
            return None;
        }
        lower.iter().skip(at + 1).take(4).find_map(|n| {
            PERSON_NOUNS
                .iter()
                .find(|(noun, _)| noun == n)
                .map(|(noun, gender)| (*noun, *gender))
        })
    })
}

/// Verbs by which people go somewhere.
const MOTION_VERBS: &[&str] = &[
    "went",
    "walked",
    "drove",
    "ascended",
    "descended",
    "climbed",
    "passed",
    "hurried",
    "ran",
    "entered",
    "left",
    "stepped",
    "mounted",
    "crossed",
    "rattled",
    "proceeded",
    "dashed",
    "rushed",
    "emerged",
    "returned",
    "reached",
    "arrived",
    "made",
    "set",
    "started",
    "sped",
    "turned",
    "came",
    "clambered",
    "filed",
];

/// Does a narration sentence (its lowercased words) move the narrator on: "we" or "I"
/// opening a clause, a verb of motion within the next few words ("Twice as we ascended",
/// "Then I went upstairs"; not "we followed him" or "we all descended together", where
/// the company goes along)?
fn moves_on(lower: &[String]) -> bool {
    // "They landed me at Vauxhall": the narrator alone is taken on ("brought us" takes
    // the company along).
    let carried = lower.windows(2).any(|pair| {
        matches!(
            pair[0].as_str(),
            "brought" | "landed" | "took" | "carried" | "drove" | "led" | "conveyed"
        ) && pair[1] == "me"
    });
    if carried {
        return true;
    }
    // "we" or "I" opening the sentence or a clause ("Holmes nodded, and we ascended"),
    // not "the room which we entered".
    lower.iter().enumerate().any(|(at, w)| {
        (w == "we" || w == "i")
            && (at == 0
                || matches!(
                    lower[at - 1].as_str(),
                    "and" | "then" | "so" | "as" | "when" | "while" | "till" | "until" | "now"
                ))
            && (at + 1..lower.len().min(at + 4)).any(|v| goes(lower, v))
    }) && !lower.iter().any(|w| w == "together" || w == "all")
}

/// Is `lower[at]` a verb of going: one that only means going ("ascended"), or one that
/// may ("passed", "left", "made") followed by where to ("passed into", "made our way")?
fn goes(lower: &[String], at: usize) -> bool {
    let verb = lower[at].as_str();
    if !MOTION_VERBS.contains(&verb) {
        return false;
    }
    if !matches!(
        verb,
        "passed" | "left" | "turned" | "made" | "set" | "came" | "started" | "returned"
    ) {
        return true;
    }
    lower.get(at + 1).is_some_and(|next| match next.as_str() {
        "our" | "my" => verb == "made",
        w => matches!(
            w,
            "out"
                | "off"
                | "into"
                | "through"
                | "up"
                | "down"
                | "along"
                | "over"
                | "across"
                | "to"
                | "away"
                | "back"
                | "in"
                | "from"
                | "round"
                | "towards"
                | "toward"
                | "on"
                | "the"
        ),
    })
}

/// Does a sentence send a group off ("away they buzzed down the stairs", "the clatter
/// of horses' hoofs told him that they were beyond his reach")? "they" then, within
/// three words, a verb of going followed by away, out, off or down, or "were gone",
/// "were beyond".
fn they_go(lower: &[String]) -> bool {
    lower.iter().enumerate().any(|(at, w)| {
        let near = |v: usize| lower.get(v).map_or("", String::as_str);
        w == "they"
            && (at + 1..lower.len().min(at + 4)).any(|v| {
                let going = MOTION_VERBS.contains(&near(v))
                    || matches!(
                        near(v),
                        "buzzed" | "scampered" | "trooped" | "scurried" | "rode" | "galloped"
                    );
                (going
                    && (v + 1..v + 3).any(|d| matches!(near(d), "away" | "out" | "off" | "down")))
                    || (near(v) == "were" && matches!(near(v + 1), "gone" | "beyond"))
            })
    })
}

/// The focus character a sentence takes off the stage, if any.
fn exit_of(sentence: &str, namer: &Namer, voices: &Voices<'_>) -> Option<String> {
    let lower = sentence.to_lowercase();
    if !EXIT_PHRASES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    if let Some(m) = namer.mentions(sentence).first().filter(|m| m.start <= 5) {
        return Some(m.character.to_owned());
    }
    let first_words: Vec<String> = words(sentence).take(3).collect();
    let gender = if first_words.iter().any(|w| w == "he") {
        Gender::He
    } else if first_words.iter().any(|w| w == "she") {
        Gender::She
    } else {
        return None;
    };
    voices
        .spoken
        .iter()
        .rev()
        .find(|s| voices.facts.fits(s, gender) && !voices.is_narrator(s))
        .and_then(|s| s.focus().map(str::to_owned))
}

/// Narration (outside quotes) that says "I", "me" or "my" at least once in 200 words,
/// and at least three times: a first-person telling. Third-person chapters of the
/// test novels have none at all; first-person ones have 1 to 8 in 100.
#[must_use]
pub fn first_person(text: &str) -> bool {
    let mut total = 0usize;
    let mut first = 0usize;
    for para in paragraphs(text) {
        for seg in &para {
            let Segment::Narration(n) = seg else { continue };
            for w in n.split(|c: char| !c.is_alphanumeric() && c != '\'') {
                if w.is_empty() {
                    continue;
                }
                total += 1;
                first += usize::from(matches!(w, "I" | "me" | "my" | "My" | "myself"));
            }
        }
    }
    first >= 3 && first * 200 >= total
}

/// The narrator of each first-person chapter (1-based chapter → character id).
///
/// A character marked `narrator` in the list tells every first-person chapter; with
/// several marked, or none, the one the others address by name in the chapter's
/// quotes ("…, Watson?") and the narration never names, and failing that the one chosen
/// most often over the book. A chapter nobody can be bound to is left out.
#[must_use]
pub fn narrators(
    book: &str,
    spans: &[Span],
    characters: &[FocusCharacter],
    namer: &Namer,
) -> BTreeMap<usize, String> {
    let mut ranges: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    for s in spans {
        let r = ranges.entry(s.chapter).or_insert((s.start, s.end));
        r.0 = r.0.min(s.start);
        r.1 = r.1.max(s.end);
    }
    let marked: Vec<&str> = characters
        .iter()
        .filter(|c| c.narrator)
        .map(|c| c.id.as_str())
        .collect();
    let mut out = BTreeMap::new();
    let mut undecided = Vec::new();
    let mut chosen: BTreeMap<String, usize> = BTreeMap::new();
    for (chapter, (start, end)) in ranges {
        let text = &book[start..end];
        if !first_person(text) {
            continue;
        }
        if let [only] = marked[..] {
            out.insert(chapter, only.to_owned());
            continue;
        }
        let mut addressed: BTreeMap<String, usize> = BTreeMap::new();
        let mut narrated: BTreeMap<String, usize> = BTreeMap::new();
        for para in paragraphs(text) {
            for seg in &para {
                match seg {
                    Segment::Quote(q) => {
                        if let Some(id) = vocative(q, namer) {
                            *addressed.entry(id).or_default() += 1;
                        }
                    }
                    Segment::Narration(n) => {
                        for m in namer.mentions(n) {
                            *narrated.entry(m.character.to_owned()).or_default() += 1;
                        }
                    }
                }
            }
        }
        let best = addressed
            .iter()
            .filter(|(id, n)| {
                (marked.is_empty() || marked.contains(&id.as_str()))
                    && narrated.get(*id).copied().unwrap_or(0) < **n
            })
            .max_by_key(|(id, n)| (**n, std::cmp::Reverse((*id).clone())))
            .map(|(id, _)| id.clone());
        match best {
            Some(id) => {
                *chosen.entry(id.clone()).or_default() += 1;
                out.insert(chapter, id);
            }
            None => undecided.push(chapter),
        }
    }
    let usual = chosen
        .iter()
        .max_by_key(|(id, n)| (**n, std::cmp::Reverse((*id).clone())))
        .map(|(id, _)| id.clone());
    if let Some(usual) = usual {
        for chapter in undecided {
            out.insert(chapter, usual.clone());
        }
    }
    out
}

/// The emotion whose words a text uses most ("" when none).
#[must_use]
pub fn dominant_emotion(text: &str) -> &'static str {
    let mut counts = [0usize; EMOTIONS.len()];
    for w in words(text) {
        for (i, (_, list)) in EMOTIONS.iter().enumerate() {
            if list.contains(&w.as_str()) {
                counts[i] += 1;
            }
        }
    }
    counts
        .iter()
        .enumerate()
        .filter(|(_, c)| **c > 0)
        .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))
        .map_or("", |(i, _)| EMOTIONS[i].0)
}

/// The first place named in a passage: a place noun grown leftwards over its modifiers
/// ("St Brendan's chapel") and rightwards over linked places ("the lighthouse on Gull
/// Point").
#[must_use]
pub fn place_phrase(text: &str) -> Option<String> {
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let clean = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
            .to_owned()
    };
    let is_place = |w: &str| PLACE_NOUNS.contains(&clean(w).to_lowercase().as_str());
    let head = tokens.iter().position(|w| is_place(w))?;
    let mut start = head;
    while start > 0 && head - start < 3 {
        let prev = clean(tokens[start - 1]);
        let lower = prev.to_lowercase();
        if tokens[start - 1].ends_with([',', '.', ';', ':']) {
            break;
        }
        if matches!(lower.as_str(), "the" | "a" | "an") {
            start -= 1;
            break;
        }
        if PLACE_STOPS.contains(&lower.as_str()) || prev.is_empty() {
            break;
        }
        start -= 1;
    }
    let mut end = head + 1;
    // "… on Gull Point", "… of the lighthouse"
    while end + 1 < tokens.len() && !tokens[end - 1].ends_with([',', '.', ';', ':']) {
        let link = clean(tokens[end]).to_lowercase();
        if !PLACE_LINKS.contains(&link.as_str()) {
            break;
        }
        let mut j = end + 1;
        if clean(tokens[j]).eq_ignore_ascii_case("the") {
            j += 1;
        }
        let mut k = j;
        while k < tokens.len()
            && (clean(tokens[k])
                .chars()
                .next()
                .is_some_and(char::is_uppercase)
                || is_place(tokens[k]))
        {
            k += 1;
            if tokens[k - 1].ends_with([',', '.', ';', ':']) {
                break;
            }
        }
        if k == j {
            break;
        }
        end = k;
    }
    let phrase = tokens[start..end]
        .iter()
        .map(|w| clean(w))
        .collect::<Vec<_>>()
        .join(" ");
    let mut phrase = phrase.trim().to_owned();
    if phrase.starts_with("The ") {
        phrase.replace_range(0..1, "t");
    }
    (!phrase.is_empty()).then_some(phrase)
}
