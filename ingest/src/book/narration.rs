//! Who tells a chapter (a first-person narrator, when the text has one), and a
//! scene's dominant emotion and place as the text words them.

use std::collections::BTreeMap;

use super::lexicon::{EMOTIONS, PLACE_LINKS, PLACE_NOUNS, PLACE_STOPS};
use super::partition::Span;
use super::speech::vocative;
use super::text::{FocusCharacter, Namer, Segment, paragraphs, words, written_words};

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
            for w in written_words(n) {
                total += 1;
                first += usize::from(matches!(w, "I" | "me" | "my" | "My" | "myself"));
            }
        }
    }
    first >= 3 && first * 200 >= total
}

/// Whether `sentence` speaks in the first person ("I", "me", "our"…): in a book's
/// narration, the narrator's own view, which no one else shares.
#[must_use]
pub fn in_first_person(sentence: &str) -> bool {
    written_words(sentence).any(|w| {
        matches!(
            w,
            "I" | "me"
                | "my"
                | "My"
                | "mine"
                | "myself"
                | "we"
                | "We"
                | "us"
                | "our"
                | "Our"
                | "ours"
                | "ourselves"
        )
    })
}

/// Whether `sentence` speaks in the first person or to a "you".
#[must_use]
pub fn in_first_or_second_person(sentence: &str) -> bool {
    in_first_person(sentence)
        || written_words(sentence)
            .any(|w| matches!(w, "you" | "You" | "your" | "Your" | "yourself"))
}

/// Whether `sentence` speaks of the narrator alone: "I", "me" or "my" and no "we",
/// "us" or "our". In a first-person narration such a sentence that names no one else
/// is the narrator's own view ("I had once tossed in my coracle", "that man has gone
/// out of my life"): those beside him perceive what it shows only when it names them.
#[must_use]
pub fn of_the_narrator_alone(sentence: &str) -> bool {
    let mut singular = false;
    for w in written_words(sentence) {
        match w {
            "we" | "We" | "us" | "our" | "Our" | "ours" | "ourselves" => return false,
            "I" | "me" | "my" | "My" | "mine" | "myself" => singular = true,
            _ => {}
        }
    }
    singular
}

/// Whether `sentence` recalls the narrator's own past ("the bay where I had once
/// tossed in the coracle"): a memory, which those walking beside him do not share.
#[must_use]
pub fn recalls_own_past(sentence: &str) -> bool {
    let words: Vec<&str> = written_words(sentence).collect();
    words
        .windows(3)
        .any(|w| w[0] == "I" && w[1] == "had" && matches!(w[2], "once" | "formerly" | "long"))
}

/// Whether `sentence` tells someone's inner life: a word of thinking or feeling
/// (`INNER_LIFE`, lowercase as written, so "Jefferson Hope" is not "hope"). An
/// omniscient narrator tells what a character felt or resolved ("He had always
/// determined, deep down in his resolute heart, that nothing would ever induce him to
/// allow his daughter to wed a Mormon"), which those beside him did not perceive.
#[must_use]
pub fn tells_inner_life(sentence: &str) -> bool {
    written_words(sentence).any(|w| INNER_LIFE.split_whitespace().any(|i| i == w))
}

/// Words that tell what someone thought, felt, knew or resolved: a sentence holding one
/// is a view into a mind, not something those present perceived.
const INNER_LIFE: &str = "thought thoughts thinking felt feel feeling feelings feared fears \
    hoped hopes hope wished longed longing dreaded wondered knew believed suspected \
    determined resolved resolve regarded imagined remembered recollected reflected \
    pondered doubted realised realized decided intended secretly inwardly privately heart \
    mind soul conscious conscience yearned despaired grieved";

/// The narrator of each first-person chapter (1-based chapter → character id).
///
/// A chapter whose title names its teller ("Narrative Continued by the Doctor") is told
/// by that listed narrator. Otherwise a character marked `narrator` in the list tells
/// every first-person chapter; with
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
    let mut previous_end = 0;
    for (chapter, (start, end)) in ranges {
        let text = &book[start..end];
        let above = previous_end;
        previous_end = end;
        if !first_person(text) {
            continue;
        }
        // A title that names the teller is the surest evidence, and local to the
        // chapter: it overrides the list's one narrator and the vocatives.
        let titled = title_above(book, above, start)
            .into_iter()
            .find_map(|line| teller_named(line, namer))
            .filter(|id| marked.is_empty() || marked.contains(&id.as_str()));
        if let Some(id) = titled {
            out.insert(chapter, id);
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

/// Who tells each part of a book, however its scenes are grouped: in a book told in
/// documents, the writer of the document a part is in, when the writer is listed and
/// the document is in the first person (a newspaper's cutting, or a listed character's
/// letter in the third person, has no narrator); before the first document, or in a
/// book without any, the chapter's narrator ([`narrators`]).
#[derive(Debug, Clone)]
pub struct Tellers {
    /// (heading offset, end of the document, its first-person writer if any).
    documents: Vec<(usize, usize, Option<String>)>,
    chapters: BTreeMap<usize, String>,
}

impl Tellers {
    #[must_use]
    pub fn new(
        book: &str,
        documents: &[(usize, String)],
        chapters: BTreeMap<usize, String>,
        namer: &Namer,
    ) -> Self {
        let documents = documents
            .iter()
            .enumerate()
            .map(|(i, (at, heading))| {
                let end = documents.get(i + 1).map_or(book.len(), |(next, _)| *next);
                let writer = writer_of(heading, namer).filter(|_| first_person(&book[*at..end]));
                (*at, end, writer)
            })
            .collect();
        Self {
            documents,
            chapters,
        }
    }

    /// Who tells the text at book offset `at`, in `chapter`.
    #[must_use]
    pub fn at(&self, at: usize, chapter: usize) -> Option<String> {
        match self
            .documents
            .iter()
            .rev()
            .find(|(start, _, _)| *start <= at)
        {
            Some((_, _, writer)) => writer.clone(),
            None => self.chapters.get(&chapter).cloned(),
        }
    }

    /// Where documents start: a scene never runs across one, since its writer is
    /// another.
    pub fn starts(&self) -> impl Iterator<Item = usize> + '_ {
        self.documents.iter().map(|(at, _, _)| *at)
    }
}

/// The listed character a document heading names as its writer: "Jonathan Harker's
/// Journal", "Letter from Miss Mina Murray to Miss Lucy Westenra", "Telegram, Arthur
/// Holmwood to Quincey P. Morris". What comes after " to " is whom it is sent to.
fn writer_of(heading: &str, namer: &Namer) -> Option<String> {
    let heading = readable(heading);
    let from = heading.split(" to ").next().unwrap_or(&heading);
    namer.mentions(from).first().map(|m| m.character.to_owned())
}

/// A heading as the names in it are written: "JONATHAN HARKER'S JOURNAL" read as
/// "Jonathan Harker's Journal"; a heading not all in capitals as it is.
fn readable(heading: &str) -> String {
    let capitals = heading
        .chars()
        .filter(|c| c.is_alphabetic())
        .all(char::is_uppercase);
    if !capitals {
        return heading.to_owned();
    }
    heading
        .split_whitespace()
        .map(|w| {
            let lower = w.to_lowercase();
            let mut c = lower.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Words a chapter's title tells its teller with, before "by": "Narrative Continued by
/// the Doctor", "Told by Huck", "Related by Mr. Sholto".
const TELLING: [&str; 10] = [
    "narrative",
    "narrated",
    "told",
    "related",
    "continued",
    "resumed",
    "written",
    "account",
    "statement",
    "story",
];

/// The one listed character a chapter's title names as its teller ("Narrative
/// Continued by the Doctor: How the Ship Was Abandoned"): a telling word, then "by"
/// and a name or a listed form. A form several characters share names no one.
fn teller_named(title: &str, namer: &Namer) -> Option<String> {
    let title = readable(title);
    let lower = title.to_lowercase();
    let by = lower.find(" by ")?;
    let told = lower[..by]
        .split(|c: char| !c.is_alphabetic())
        .any(|w| TELLING.contains(&w));
    if !told {
        return None;
    }
    let after = &title[by + " by ".len()..];
    let named = after.split([':', ';', '.', '(']).next().unwrap_or(after);
    let mentions = namer.mentions(named);
    let first = mentions.first()?;
    match namer.owners(first, named)[..] {
        [one] => Some(one.to_owned()),
        _ => None,
    }
}

/// The title lines above a chapter's body that starts at `start` (after `from`, the end
/// of the chapter before): the last few lines of what lies between.
fn title_above(book: &str, from: usize, start: usize) -> Vec<&str> {
    let mut at = start.saturating_sub(TITLE_ZONE).max(from);
    while !book.is_char_boundary(at) {
        at += 1;
    }
    book[at..start]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect()
}

/// Bytes above a chapter's body searched for its title.
const TITLE_ZONE: usize = 300;

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
