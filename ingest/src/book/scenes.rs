//! Stage 1, scene preparation (deterministic path): each scene's place, time and
//! atmosphere, who speaks each quoted line, who leaves, and the roster of focus
//! characters: present and active, present but silent, or only referenced.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::lexicon::{
    EMOTIONS, EXIT_PHRASES, FEMALE_HINTS, MALE_HINTS, PLACE_LINKS, PLACE_NOUNS, PLACE_STOPS,
    SPEECH_VERBS, TIME_WORDS, atmosphere_of,
};
use super::text::{FocusCharacter, Namer, Segment, Span, paragraphs, sentences, words};

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
    pub sentences: Vec<Sentence>,
    /// Focus characters who leave, and the paragraph from which they are gone.
    pub exits: BTreeMap<String, usize>,
}

impl Scene {
    /// Present (active or silent) focus characters.
    pub fn present(&self) -> impl Iterator<Item = &String> {
        self.active.iter().chain(&self.silent)
    }

    /// Those present at `paragraph`: everyone present who has not left by then.
    #[must_use]
    pub fn present_at(&self, paragraph: usize) -> BTreeSet<String> {
        self.present()
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
        Self {
            genders,
            other_speakers,
        }
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

enum Tag {
    Named(String),
    Focus(String),
    Pronoun(Gender),
}

/// A speech tag at the start of narration that follows a quote: "said Silas", "Maren's
/// mouth tightened", "she said".
fn speech_tag(narration: &str, namer: &Namer) -> Option<Tag> {
    let first = sentences(narration).into_iter().next()?;
    let head: Vec<&str> = first.split_whitespace().take(6).collect();
    let clean = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
            .to_owned()
    };
    let lower: Vec<String> = head.iter().map(|w| clean(w).to_lowercase()).collect();
    // "said Silas", "asked the priest"
    if lower
        .first()
        .is_some_and(|w| SPEECH_VERBS.contains(&w.as_str()))
    {
        let rest = head[1..].join(" ");
        if let Some(m) = namer.mentions(&rest).first().filter(|m| m.start == 0) {
            return Some(Tag::Focus(m.character.to_owned()));
        }
        let name = clean(head.get(1)?);
        match name.as_str() {
            "he" => return Some(Tag::Pronoun(Gender::He)),
            "she" => return Some(Tag::Pronoun(Gender::She)),
            _ if name.chars().next().is_some_and(char::is_uppercase) => {
                return Some(Tag::Named(name));
            }
            _ => return None,
        }
    }
    // "Maren said", "Maren's mouth tightened", "the boy said"
    if let Some(m) = namer.mentions(first).first().filter(|m| m.start <= 4) {
        return Some(Tag::Focus(m.character.to_owned()));
    }
    match lower.first().map(String::as_str) {
        Some("he") => Some(Tag::Pronoun(Gender::He)),
        Some("she") => Some(Tag::Pronoun(Gender::She)),
        _ => {
            let name = clean(head.first()?);
            let verb = lower.get(1).map(String::as_str).unwrap_or("");
            (name.chars().next().is_some_and(char::is_uppercase) && SPEECH_VERBS.contains(&verb))
                .then_some(Tag::Named(name))
        }
    }
}

/// Who speaks, given the lines so far: the alternation candidate (the speaker before
/// the last one), recent narration mentions, then the last speaker, with the pronoun's
/// gender when there is one.
struct Voices<'a> {
    facts: &'a BookFacts,
    spoken: Vec<Speaker>,
    mentioned: Vec<Speaker>,
}

impl Voices<'_> {
    fn alternate(&self) -> Option<Speaker> {
        let last = self.spoken.last()?;
        self.spoken.iter().rev().find(|s| *s != last).cloned()
    }

    /// Someone known to be "he" (or "she") first; someone whose pronoun is unknown
    /// only when no one known fits.
    fn resolve(&self, in_paragraph: &[Speaker], pronoun: Gender) -> Option<Speaker> {
        let candidates = || {
            in_paragraph
                .iter()
                .rev()
                .cloned()
                .chain(self.alternate())
                .chain(self.mentioned.iter().rev().cloned())
                .chain(self.spoken.last().cloned())
        };
        candidates()
            .find(|s| self.facts.is(s, pronoun))
            .or_else(|| candidates().find(|s| self.facts.fits(s, pronoun)))
    }
}

/// Prepares one scene from its text (the deterministic path).
#[must_use]
pub fn prepare(number: usize, span: Span, text: &str, namer: &Namer, facts: &BookFacts) -> Scene {
    let paras = paragraphs(text);
    let mut voices = Voices {
        facts,
        spoken: Vec::new(),
        mentioned: Vec::new(),
    };
    let mut utterances = Vec::new();
    let mut all_sentences = Vec::new();
    let mut exits = BTreeMap::new();
    let mut narrated: BTreeSet<String> = BTreeSet::new();
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
    for (p, segs) in paras.iter().enumerate() {
        let mut in_paragraph: Vec<Speaker> = Vec::new();
        let mut paragraph_speaker: Option<Speaker> = None;
        for (i, seg) in segs.iter().enumerate() {
            match seg {
                Segment::Narration(n) => {
                    for s in sentences(n) {
                        for m in namer.mentions(s) {
                            named.insert(m.character.to_owned());
                            if present_mention(s, m.start, m.end) {
                                narrated.insert(m.character.to_owned());
                            }
                            in_paragraph.push(Speaker::Focus(m.character.to_owned()));
                            voices
                                .mentioned
                                .push(Speaker::Focus(m.character.to_owned()));
                        }
                        if let Some(o) = other_in(s) {
                            in_paragraph.push(o);
                        }
                        if let Some(who) = exit_of(s, namer, &voices) {
                            exits.entry(who).or_insert(p + 1);
                        }
                        all_sentences.push(Sentence {
                            text: s.to_owned(),
                            paragraph: p,
                            spoken_by: None,
                        });
                    }
                }
                Segment::Quote(q) => {
                    for m in namer.mentions(q) {
                        named.insert(m.character.to_owned());
                    }
                    let tag = match segs.get(i + 1) {
                        Some(Segment::Narration(n)) => speech_tag(n, namer),
                        _ => None,
                    };
                    let speaker = match tag {
                        Some(Tag::Focus(id)) => Some(Speaker::Focus(id)),
                        Some(Tag::Named(name)) => Some(Speaker::Other(name)),
                        Some(Tag::Pronoun(g)) => paragraph_speaker
                            .clone()
                            .filter(|s| facts.fits(s, g))
                            .or_else(|| voices.resolve(&in_paragraph, g)),
                        None => paragraph_speaker
                            .clone()
                            .or_else(|| in_paragraph.last().cloned())
                            .or_else(|| voices.alternate()),
                    };
                    for s in sentences(q) {
                        all_sentences.push(Sentence {
                            text: s.to_owned(),
                            paragraph: p,
                            spoken_by: speaker.clone(),
                        });
                    }
                    if let Some(speaker) = speaker {
                        paragraph_speaker = Some(speaker.clone());
                        voices.spoken.push(speaker.clone());
                        utterances.push(Utterance {
                            speaker,
                            text: q.clone(),
                            paragraph: p,
                        });
                    }
                }
            }
        }
    }
    let active: BTreeSet<String> = utterances
        .iter()
        .filter_map(|u| u.speaker.focus().map(str::to_owned))
        .collect();
    let silent: BTreeSet<String> = narrated.difference(&active).cloned().collect();
    let referenced: BTreeSet<String> = named
        .iter()
        .filter(|c| !active.contains(*c) && !silent.contains(*c))
        .cloned()
        .collect();
    let opening: String = paras
        .first()
        .map(|segs| {
            segs.iter()
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
        sentences: all_sentences,
        exits,
    }
}

/// A narration mention that puts the character on stage: not in a pluperfect aside
/// ("Kit had lent him the token") and not the topic of talk ("told him about the priest").
fn present_mention(sentence: &str, start: usize, end: usize) -> bool {
    let before: Vec<String> = words(&sentence[..start]).collect();
    let after: Vec<String> = words(&sentence[end..]).take(1).collect();
    let topic = before
        .last()
        .is_some_and(|w| matches!(w.as_str(), "about" | "of" | "for"));
    let aside = after.first().is_some_and(|w| w == "had");
    !topic && !aside
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
        .find(|s| voices.facts.fits(s, gender))
        .and_then(|s| s.focus().map(str::to_owned))
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
