//! The book as text: reading it (with clear refusals for what is not a book), the
//! character list, the partition into chapters and scenes, paragraphs split into
//! narration and quoted speech, sentences, and where each character is named.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use crate::file::id_from;

/// The largest book ingest reads: about 2.8 million words.
pub const MAX_BOOK_BYTES: u64 = 16 * 1024 * 1024;

/// Scenes shorter than this many words join the scene before them (one dramatic unit).
const MIN_SCENE_WORDS: usize = 150;

/// Without chapter headings or scene breaks, the text is cut at paragraph ends into
/// scenes of about this many words.
const UNMARKED_SCENE_WORDS: usize = 1500;

/// Reads a book: UTF-8 text, not empty, at most [`MAX_BOOK_BYTES`]. Line ends are
/// normalised to `\n`.
pub fn read_book(path: &Path) -> anyhow::Result<String> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a file", path.display());
    }
    if meta.len() > MAX_BOOK_BYTES {
        bail!(
            "{} is {:.1} MB; ingest reads books up to {} MB (about 2.8 million words). Split it \
             into volumes and ingest each.",
            path.display(),
            meta.len() as f64 / 1_048_576.0,
            MAX_BOOK_BYTES / 1_048_576
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(at) = bytes.iter().position(|b| *b == 0) {
        bail!(
            "{} is not a text file (a zero byte at offset {at}); ingest reads plain UTF-8 text",
            path.display()
        );
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{} is not UTF-8 text (invalid bytes at offset {}); convert it first, e.g. with iconv",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    if text.trim().is_empty() {
        bail!("{} is empty", path.display());
    }
    Ok(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// One focus character of the list: `Canonical Name | alias, alias | marks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FocusCharacter {
    pub id: String,
    pub name: String,
    pub aliases: Vec<String>,
    /// Marked `narrator`: the character tells some of the book in the first person.
    #[serde(default)]
    pub narrator: bool,
}

impl FocusCharacter {
    /// Every form the text may use: the name, then the aliases.
    pub fn forms(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(self.aliases.iter().map(String::as_str))
    }

    /// The first alias that describes rather than names ("the ferrywoman"): what
    /// strangers see.
    #[must_use]
    pub fn description(&self) -> Option<&str> {
        self.aliases
            .iter()
            .map(String::as_str)
            .find(|a| is_description(a))
    }
}

/// A form that describes (starts with a lowercase word: "the widow") rather than names.
#[must_use]
pub fn is_description(form: &str) -> bool {
    form.chars().next().is_some_and(char::is_lowercase)
}

/// Reads the character list: one `Canonical Name | alias, alias | marks` per line (the
/// aliases and marks may be left out; the only mark is `narrator`); blank lines and `#`
/// comments are skipped. Ids are the name without its titles, lowercased, words joined
/// by `-` (the whole name when two characters would share one).
pub fn read_characters(path: &Path) -> anyhow::Result<Vec<FocusCharacter>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_characters(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Words that give a rank, an office or a form of address before a name.
const TITLE_WORDS: &[&str] = &[
    "mr",
    "mrs",
    "ms",
    "miss",
    "dr",
    "doctor",
    "sir",
    "lady",
    "lord",
    "dame",
    "captain",
    "capt",
    "major",
    "colonel",
    "col",
    "general",
    "lieutenant",
    "lt",
    "sergeant",
    "sgt",
    "inspector",
    "constable",
    "brother",
    "sister",
    "father",
    "elder",
    "professor",
    "prof",
    "rev",
    "reverend",
    "madame",
    "madam",
    "monsieur",
    "mademoiselle",
    "herr",
    "frau",
    "king",
    "queen",
    "prince",
    "princess",
    "count",
    "countess",
    "baron",
    "baroness",
    "duke",
    "duchess",
    "saint",
    "st",
    "uncle",
    "aunt",
    "master",
    "mistress",
    "the",
];

fn is_title_word(word: &str) -> bool {
    let bare = word.trim_end_matches('.').to_lowercase();
    TITLE_WORDS.contains(&bare.as_str())
}

/// Reads a character list: one `Canonical Name | alias, alias | narrator` per line. A
/// character's id is its name without titles, in lowercase words joined by `-`.
pub fn parse_characters(text: &str) -> anyhow::Result<Vec<FocusCharacter>> {
    let mut list: Vec<(usize, String, Vec<String>, bool)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.splitn(3, '|');
        let name = fields.next().unwrap_or(line).trim();
        let aliases = fields.next().unwrap_or("");
        let mut narrator = false;
        for mark in fields.next().unwrap_or("").split(',').map(str::trim) {
            match mark {
                "" => {}
                "narrator" => narrator = true,
                other => bail!(
                    "line {}: unknown mark `{}` (the only mark is `narrator`)",
                    n + 1,
                    prefix(other, 40)
                ),
            }
        }
        if name.is_empty() || name.chars().count() > 80 {
            bail!(
                "line {}: expected `Canonical Name | alias, alias` with a name of 1 to 80 \
                 characters, found `{}`",
                n + 1,
                prefix(line, 40)
            );
        }
        let aliases: Vec<String> = aliases
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty() && *a != name)
            .map(str::to_owned)
            .collect();
        list.push((n + 1, name.to_owned(), aliases, narrator));
    }
    if list.is_empty() {
        bail!("no characters: write one `Canonical Name | alias, alias` per line");
    }
    // The name without its titles ("Mr. Merryweather" is `merryweather`, "Sherlock
    // Holmes" `sherlock-holmes`); the whole name when two would share one.
    let untitled = |name: &str| {
        let words: Vec<&str> = name.split_whitespace().collect();
        let first = words
            .iter()
            .position(|w| !is_title_word(w))
            .unwrap_or(words.len());
        if first == words.len() {
            id_from(name, "character")
        } else {
            id_from(&words[first..].join(" "), "character")
        }
    };
    let mut out: Vec<FocusCharacter> = Vec::new();
    for (line, name, aliases, narrator) in &list {
        let short = untitled(name);
        let shared = list
            .iter()
            .filter(|(_, n, _, _)| untitled(n) == short)
            .count()
            > 1;
        let id = if shared {
            id_from(name, "character")
        } else {
            short
        };
        if out.iter().any(|c| c.id == id) {
            bail!("line {line}: `{name}` is listed twice");
        }
        out.push(FocusCharacter {
            id,
            name: name.clone(),
            aliases: aliases.clone(),
            narrator: *narrator,
        });
    }
    Ok(out)
}

/// At most `n` characters of `text`, with `…` when cut.
#[must_use]
pub fn prefix(text: &str, n: usize) -> String {
    let mut out: String = text.chars().take(n).collect();
    if text.chars().count() > n {
        out.push('…');
    }
    out
}

/// A scene's place in the book: its chapter (1-based) and its byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub chapter: usize,
    pub start: usize,
    pub end: usize,
}

/// The book cut into scenes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// The first line of the front matter, if any.
    pub title: Option<String>,
    pub chapters: usize,
    pub scenes: Vec<Span>,
}

/// A chapter needs at least this many words of body under its heading; a heading with
/// less is a part heading, a subtitle or a contents entry, and its text is front matter.
const MIN_CHAPTER_WORDS: usize = 60;

const NUMBER_NAMES: [&str; 20] = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

const ORDINAL_NAMES: [&str; 12] = [
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
    "eleventh", "twelfth",
];

fn is_roman(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| matches!(c, 'I' | 'V' | 'X' | 'L' | 'C'))
}

/// A chapter number: digits, a Roman numeral, a number word ("One", "TWELVE").
fn is_number(word: &str) -> bool {
    let word = word.trim_end_matches(['.', ':']);
    !word.is_empty()
        && (word.chars().all(|c| c.is_ascii_digit())
            || is_roman(word)
            || NUMBER_NAMES.contains(&word.to_lowercase().as_str()))
}

/// A short line that can be a title: capitalised, no sentence end.
fn is_title(line: &str) -> bool {
    let line = line.trim();
    !line.is_empty()
        && line.chars().count() <= 70
        && line.split_whitespace().count() <= 12
        && line
            .chars()
            .next()
            .is_some_and(|c| c.is_uppercase() || c == '(')
        && !line.ends_with(['.', '!', '"', '”', ',', ';'])
}

/// A heading line: `CHAPTER I`, `Chapter One`, `Chapter the First`, `PART II`, `BOOK 3`,
/// `I. The Crossing`, `1.`, `12`, `IV`, `ONE`. What follows the number on the line, if
/// anything, is the chapter's title.
fn is_heading(line: &str) -> bool {
    let line = line.trim();
    if line.is_empty() || line.chars().count() > 70 {
        return false;
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    let first = words[0].to_lowercase();
    if matches!(first.as_str(), "chapter" | "part" | "book") {
        return match words.get(1) {
            Some(w) if is_number(w) => true,
            Some(w) if w.eq_ignore_ascii_case("the") => words
                .get(2)
                .is_some_and(|o| ORDINAL_NAMES.contains(&o.to_lowercase().trim_end_matches('.'))),
            _ => false,
        };
    }
    let number = words[0].trim_end_matches('.');
    let numeral =
        !number.is_empty() && (number.chars().all(|c| c.is_ascii_digit()) || is_roman(number));
    if numeral {
        // "IV", "12.", or "I. The Crossing" (the title needs the period).
        return words.len() == 1 || (words[0].ends_with('.') && is_title(&words[1..].join(" ")));
    }
    // A number word alone, in capitals: "ONE".
    words.len() == 1
        && NUMBER_NAMES.contains(&first.trim_end_matches('.'))
        && line.chars().all(|c| !c.is_lowercase())
}

fn is_scene_break(line: &str) -> bool {
    let line = line.trim();
    !line.is_empty()
        && line
            .chars()
            .all(|c| matches!(c, '*' | '#' | '-' | '~' | '•' | '⁂' | ' '))
}

/// Lines of `text` with their byte offsets.
fn lines_with_offsets(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |line| {
        let start = at;
        at += line.len();
        (start, line.trim_end_matches('\n'))
    })
}

/// Runs of non-blank lines: (start, end) byte ranges and the lines.
fn blocks(text: &str) -> Vec<(usize, usize, Vec<&str>)> {
    let mut out: Vec<(usize, usize, Vec<&str>)> = Vec::new();
    let mut open = false;
    for (start, line) in lines_with_offsets(text) {
        if line.trim().is_empty() {
            open = false;
            continue;
        }
        let end = start + line.len();
        match out.last_mut() {
            Some(last) if open => {
                last.1 = end;
                last.2.push(line);
            }
            _ => out.push((start, end, vec![line])),
        }
        open = true;
    }
    out
}

/// Openings of a paragraph that move the story to another time: the paragraph starts
/// a new scene ("The next morning…", "At three o'clock precisely I was at Baker Street").
const TIME_SHIFTS: &[&str] = &[
    "next morning",
    "next day",
    "next evening",
    "following morning",
    "following day",
    "following evening",
    "that evening",
    "that night",
    "that afternoon",
    "o'clock",
    "hours later",
    "an hour later",
    "days later",
    "a day later",
    "weeks later",
    "a week later",
    "months later",
    "years later",
    "we met next day",
    "in the morning",
    "in the evening",
    "it was upon the",
    "on the morning of",
    "on the evening of",
    // Moving on: "We left him working among his chemicals", "As we made our way".
    "we left",
    "i left",
    "we reached",
    "we arrived",
    "we drove",
    "we returned",
    "i returned",
    "made our way",
    "made my way",
    "set off",
    "set out",
    "found ourselves",
    "on reaching",
    "on arriving",
    "started off",
    "walked for",
    "rode for",
    "travelled for",
    "for a couple of",
    "day he",
    "day they",
];

/// Does a sentence of narration move the story in time or place within its first words
/// ("Upon rising next morning he found…", "But that night…")? Unlike a paragraph that
/// opens a scene, a sentence that goes on ("but", "still") counts.
#[must_use]
pub fn moves_in_time(sentence: &str) -> bool {
    let head = head_words(sentence);
    TIME_SHIFTS.iter().any(|m| head.contains(m))
}

/// The first eight words of a text, lowercased, one space apart: where a change of time
/// is said.
fn head_words(text: &str) -> String {
    text.split_whitespace()
        .take(8)
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Does this paragraph (narration only) open at another time?
fn shifts_time(paragraph: &str) -> bool {
    let joined = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.contains(['"', '“']) {
        return false;
    }
    let head = head_words(&joined);
    // "Yet upon that afternoon…", "But that night…": the story goes on, same scene.
    let goes_on = head.split_whitespace().next().is_some_and(|w| {
        matches!(
            w.trim_matches(|c: char| !c.is_alphanumeric()),
            "yet" | "but" | "and" | "so" | "still" | "or" | "nor" | "for" | "then"
        )
    });
    let first = sentences(&head).into_iter().next().unwrap_or("").to_owned();
    // "For five days he toiled…", "For some months Jefferson Hope lingered…": a span
    // of time passes, though "for" alone goes on.
    let lasting = first.starts_with("for ")
        && words(&first)
            .take(5)
            .any(|w| matches!(w.as_str(), "days" | "weeks" | "months" | "years" | "hours"));
    lasting || (!goes_on && TIME_SHIFTS.iter().any(|m| first.contains(m)))
}

/// Cuts the book into chapters and scenes.
///
/// A heading is a block of its own (blank lines around it): the heading line and, on the
/// next line or as the next one-line block, its title. A heading with fewer than
/// [`MIN_CHAPTER_WORDS`] words under it (a part heading, a contents entry) starts no
/// chapter; front matter before the first chapter is left out. Inside a chapter,
/// scenes start at scene breaks (`* * *`) and at paragraphs that open at another time.
/// Scenes under [`MIN_SCENE_WORDS`] words join a neighbour in the same chapter. A text
/// with no chapters and no breaks is also cut at paragraph ends about every
/// [`UNMARKED_SCENE_WORDS`] words.
#[must_use]
pub fn partition(text: &str) -> Partition {
    let blocks = blocks(text);
    // Headings: (heading start, body start).
    let mut headings: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < blocks.len() {
        let (start, end, lines) = &blocks[i];
        // A title on the heading's own block may end with a period ("… John Watson,
        // M.D.").
        if lines.len() <= 2
            && is_heading(lines[0])
            && (lines.len() == 1 || is_title(lines[1].trim().trim_end_matches('.')))
        {
            let mut body = *end;
            // A title as the next one-line block.
            if lines.len() == 1
                && let Some((_, title_end, title)) = blocks.get(i + 1)
                && title.len() == 1
                && is_title(title[0])
                && !is_heading(title[0])
            {
                body = *title_end;
                i += 1;
            }
            headings.push((*start, body));
        }
        i += 1;
    }
    let words_in = |s: usize, e: usize| text[s..e].split_whitespace().count();
    let chapters: Vec<(usize, usize)> = headings
        .iter()
        .enumerate()
        .map(|(i, (_, body))| (*body, headings.get(i + 1).map_or(text.len(), |h| h.0)))
        .filter(|(s, e)| words_in(*s, *e) >= MIN_CHAPTER_WORDS)
        .collect();
    let title = text[..headings.first().map_or(0, |h| h.0)]
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_owned);
    let bodies = if chapters.is_empty() {
        vec![(0, text.len())]
    } else {
        chapters
    };
    let mut scenes = Vec::new();
    for (c, (start, end)) in bodies.iter().enumerate() {
        // Cuts: scene-break lines (left out) and time shifts (kept, they open the scene).
        let mut pieces = Vec::new();
        let mut at = *start;
        let mut marked = false;
        for (b_start, b_end, lines) in blocks.iter().filter(|b| b.0 >= *start && b.1 <= *end) {
            if lines.len() == 1 && is_scene_break(lines[0]) {
                pieces.push((at, *b_start));
                at = *b_end;
                marked = true;
            } else if shifts_time(&lines.join(" ")) {
                pieces.push((at, *b_start));
                at = *b_start;
            }
        }
        pieces.push((at, *end));
        if bodies.len() == 1 && !marked {
            pieces = pieces
                .into_iter()
                .flat_map(|(s, e)| cut_unmarked(text, s, e))
                .collect();
        }
        let mut merged: Vec<Span> = Vec::new();
        for (s, e) in pieces {
            let words = words_in(s, e);
            if words == 0 {
                continue;
            }
            match merged.last_mut() {
                Some(last) if words < MIN_SCENE_WORDS => last.end = e,
                _ => merged.push(Span {
                    chapter: c + 1,
                    start: s,
                    end: e,
                }),
            }
        }
        // A short first piece merges forward instead.
        if merged.len() > 1 && words_in(merged[0].start, merged[0].end) < MIN_SCENE_WORDS {
            let first = merged.remove(0);
            merged[0].start = first.start;
        }
        scenes.extend(merged);
    }
    Partition {
        title,
        chapters: bodies.len(),
        scenes,
    }
}

fn cut_unmarked(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut pieces = Vec::new();
    let mut at = start;
    let mut words = 0;
    let body = &text[start..end];
    let mut offset = start;
    for para in body.split_inclusive("\n\n") {
        words += para.split_whitespace().count();
        offset += para.len();
        if words >= UNMARKED_SCENE_WORDS {
            pieces.push((at, offset));
            at = offset;
            words = 0;
        }
    }
    if at < end {
        pieces.push((at, end));
    }
    pieces
}

/// Part of a paragraph: the narrator's words, or words spoken aloud.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Narration(String),
    Quote(String),
}

/// A scene's paragraphs (blank-line separated; wrapped lines joined), each split into
/// narration and quotes. Straight (`"`) and curly (`“ ”`) quotes are read; a quote left
/// open at the paragraph's end closes there.
#[must_use]
pub fn paragraphs(text: &str) -> Vec<Vec<Segment>> {
    quoted_paragraphs(text)
        .into_iter()
        .map(|p| p.segments)
        .collect()
}

/// A paragraph's segments, whether its last quote was left open (by the printing
/// convention, a speech that goes on in the next paragraph), and where it starts in the
/// text (byte offset of its first line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paragraph {
    pub segments: Vec<Segment>,
    pub open: bool,
    pub start: usize,
}

/// [`paragraphs`], with each paragraph's open quote and offset.
#[must_use]
pub fn quoted_paragraphs(text: &str) -> Vec<Paragraph> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    let flush = |current: &mut String, start: usize, out: &mut Vec<Paragraph>| {
        let joined = current.split_whitespace().collect::<Vec<_>>().join(" ");
        if !joined.is_empty() {
            let (segments, open) = segments(&joined);
            out.push(Paragraph {
                segments,
                open,
                start,
            });
        }
        current.clear();
    };
    for (at, line) in lines_with_offsets(text) {
        if line.trim().is_empty() {
            flush(&mut current, start, &mut out);
        } else {
            if current.is_empty() {
                start = at;
            }
            current.push(' ');
            current.push_str(line);
        }
    }
    flush(&mut current, start, &mut out);
    out
}

fn segments(paragraph: &str) -> (Vec<Segment>, bool) {
    let (out, open, _) = split_quotes(paragraph, |c, _, _, quoted| {
        (
            c == '“' || (c == '"' && !quoted),
            c == '”' || (c == '"' && quoted),
        )
    });
    (out, open)
}

/// Splits `text` into narration and quotes. `marks(c, before, after, quoted)` says
/// whether `c` opens or closes a quote there. Returns the segments, whether the last
/// quote was left open, and whether any quote opened.
fn split_quotes(
    text: &str,
    marks: impl Fn(char, Option<char>, Option<char>, bool) -> (bool, bool),
) -> (Vec<Segment>, bool, bool) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut piece = String::new();
    let mut quoted = false;
    let mut any = false;
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let (opens, closes) = marks(c, before, chars.get(i + 1).copied(), quoted);
        if opens && !quoted {
            push_segment(&mut out, &mut piece, false);
            quoted = true;
            any = true;
        } else if closes && quoted {
            push_segment(&mut out, &mut piece, true);
            quoted = false;
        } else {
            piece.push(c);
        }
    }
    push_segment(&mut out, &mut piece, quoted);
    (out, quoted, any)
}

/// Speech retold inside a quote, in single quotes: `'No good can come of falsehood,
/// mother,' she said. 'Let us be frank.'` The quote's words split into the teller's
/// narration and the quoted lines it retells; `None` when it retells none. A single
/// quote opens before a capital letter after a space (not `don't`, not `'em`) and closes
/// after a word or punctuation before a space, punctuation or the end; one left open
/// closes at the end.
#[must_use]
pub fn inner_segments(quote: &str) -> Option<Vec<Segment>> {
    let (out, _, any) = split_quotes(quote, |c, before, after, _| {
        let opens = c == '‘'
            || (c == '\''
                && before.is_none_or(|b| b.is_whitespace() || matches!(b, '(' | '—' | '-'))
                && after.is_some_and(char::is_uppercase));
        // "four' scrawled", "out'!": a word's last letter may end the quote too (a
        // dropped letter, "goin' home", closes it early: less is given, never more).
        let closes = c == '’'
            || (c == '\''
                && before.is_some_and(|b| b.is_alphanumeric() || ",.!?;-—".contains(b))
                && after.is_none_or(|a| !a.is_alphanumeric()));
        (opens, closes)
    });
    any.then_some(out)
}

fn push_segment(out: &mut Vec<Segment>, piece: &mut String, quoted: bool) {
    let text = piece.trim().to_owned();
    piece.clear();
    if text.is_empty() {
        return;
    }
    out.push(if quoted {
        Segment::Quote(text)
    } else {
        Segment::Narration(text)
    });
}

const ABBREVIATIONS: [&str; 9] = ["Mr", "Mrs", "Ms", "Dr", "St", "Capt", "Prof", "Rev", "No"];

/// Sentences of `text`: cut after `.`, `!` or `?` (and closing quotes) before a space,
/// except after common abbreviations (`Mr.`).
#[must_use]
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, (at, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        let next = chars.get(i + 1).map(|(_, c)| *c);
        // "…a weak heart.' Morstan": a closing quote mark ends the sentence with it.
        let quoted = next.is_some_and(|n| matches!(n, '\'' | '’' | '"' | '”'))
            && chars.get(i + 2).is_none_or(|(_, c)| c.is_whitespace());
        if next.is_some_and(|n| !n.is_whitespace()) && !quoted {
            continue;
        }
        let word = text[start..*at]
            .rsplit(char::is_whitespace)
            .next()
            .unwrap_or("")
            .trim_start_matches(|c: char| !c.is_alphanumeric());
        // "Mr.", and a middle initial ("Enoch J. Drebber"): "I." ends a sentence.
        let initial = word.len() == 1 && word != "I" && word.chars().all(char::is_uppercase);
        if *c == '.' && (ABBREVIATIONS.contains(&word) || initial) {
            continue;
        }
        let end = match (quoted, next) {
            (true, Some(q)) => at + c.len_utf8() + q.len_utf8(),
            _ => at + c.len_utf8(),
        };
        let sentence = text[start..end].trim();
        if !sentence.is_empty() {
            out.push(sentence);
        }
        start = end;
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Where a character is named in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mention<'a> {
    pub character: &'a str,
    pub start: usize,
    pub end: usize,
    /// A name form ("Mrs Crane"), not a description ("the widow").
    pub by_name: bool,
}

/// Finds the characters' name forms in texts: whole words, longest form first, each
/// stretch of text claimed once. Descriptions match with a capital first letter too.
#[derive(Debug, Clone)]
pub struct Namer {
    forms: Vec<(String, String, bool)>, // (form, character id, by name)
}

impl Namer {
    #[must_use]
    pub fn new(characters: &[FocusCharacter]) -> Self {
        let mut forms = Vec::new();
        for c in characters {
            for form in c.forms() {
                let by_name = !is_description(form);
                forms.push((form.to_owned(), c.id.clone(), by_name));
                if !by_name {
                    let mut cap = form.to_owned();
                    if let Some(first) = cap.get_mut(0..1) {
                        first.make_ascii_uppercase();
                    }
                    forms.push((cap, c.id.clone(), false));
                }
            }
        }
        forms.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        Self { forms }
    }

    /// Every mention in `text`, in order.
    #[must_use]
    pub fn mentions<'a>(&'a self, text: &str) -> Vec<Mention<'a>> {
        let mut claimed: Vec<(usize, usize)> = Vec::new();
        let mut out = Vec::new();
        for (form, id, by_name) in &self.forms {
            for (start, _) in text.match_indices(form.as_str()) {
                let end = start + form.len();
                if !word_bounded(text, start, end)
                    || claimed.iter().any(|(s, e)| start < *e && *s < end)
                {
                    continue;
                }
                claimed.push((start, end));
                out.push(Mention {
                    character: id,
                    start,
                    end,
                    by_name: *by_name,
                });
            }
        }
        out.sort_by_key(|m| m.start);
        // "the ex-prize-fighter McMurdo": a description and a name of one person side by
        // side are one mention.
        let mut merged: Vec<Mention<'a>> = Vec::with_capacity(out.len());
        for m in out {
            match merged.last_mut() {
                Some(last)
                    if last.character == m.character
                        && text[last.end..m.start].trim().is_empty() =>
                {
                    last.end = m.end;
                    last.by_name |= m.by_name;
                }
                _ => merged.push(m),
            }
        }
        merged
    }
}

fn word_bounded(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].chars().next_back();
    let after = text[end..].chars().next();
    !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
}

/// Whole-word, case-insensitive: does `text` contain `phrase`?
#[must_use]
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    let text = text.to_lowercase();
    let phrase = phrase.to_lowercase();
    text.match_indices(phrase.as_str())
        .any(|(s, _)| word_bounded(&text, s, s + phrase.len()))
}

/// Lowercased alphabetic words of a text.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty())
}

/// Counts of each word over texts.
#[must_use]
pub fn word_counts<'a>(texts: impl Iterator<Item = &'a str>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for text in texts {
        for w in words(text) {
            *counts.entry(w).or_insert(0) += 1;
        }
    }
    counts
}
