//! The book cut into chapters and scenes: headings and scene breaks where the text
//! marks them, long unmarked stretches cut where time moves on.

use serde::{Deserialize, Serialize};

use super::cjk::is_chinese_heading;
use super::lexicon::TIME_WORDS;
use super::text::{is_chinese, join_wrapped, lines_with_offsets, sentences, word_count, words};

/// Scenes shorter than this many words join the scene before them (one dramatic unit).
const MIN_SCENE_WORDS: usize = 150;

/// A document's heading with fewer words under it than this before the next cut opens
/// the scene after it instead of making one.
const MIN_HEADING_WORDS: usize = 30;

/// Without chapter headings or scene breaks, the text is cut at paragraph ends into
/// scenes of about this many words.
const UNMARKED_SCENE_WORDS: usize = 1500;

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
    /// The reading units: the stretches between the places the text itself marks a
    /// cut (a chapter's body, a scene-break line, a document's heading, a dated entry,
    /// a paragraph opening at another time, a cut in unmarked text), in order. Scenes
    /// are made of them, several short ones joined. Who is on stage is read over each
    /// unit whole, from its start, so no grouping of scenes hands anyone what was shown
    /// before a cut (`book::read_scenes`).
    pub units: Vec<Span>,
    /// A book told in documents: where each document's heading is ("JONATHAN HARKER'S
    /// JOURNAL", "_Letter, Lucy Westenra to Mina Murray_."), and the heading as
    /// written. Its writer, if a listed character, tells what follows up to the next
    /// one (`narration::narrators`).
    pub documents: Vec<(usize, String)>,
}

/// Words that name a kind of document in its heading.
const DOCUMENT_WORDS: &[&str] = &[
    "journal",
    "diary",
    "letter",
    "telegram",
    "memorandum",
    "log",
    "cutting",
    "note",
    "notes",
    "postcard",
    "report",
    "memo",
    "extract",
    "newspaper",
    "gazette",
    "chronicle",
    "herald",
    "dailygraph",
];

/// A line of its own that heads a document: short, naming a kind of document, and set
/// apart as a heading is (in capitals, or in `_italics_`): "JONATHAN HARKER'S JOURNAL",
/// "_Dr. Seward's Diary._", "_Telegram from Arthur Holmwood to Quincey P. Morris._".
/// The heading without its marks, or `None`.
#[must_use]
pub fn document_heading(line: &str) -> Option<String> {
    let line = line.trim();
    let italic = line.starts_with('_') && line.trim_end_matches('.').ends_with('_');
    let bare = line.trim_matches(|c: char| c == '_' || c == '.' || c.is_whitespace());
    let letters: Vec<char> = bare.chars().filter(|c| c.is_alphabetic()).collect();
    let capitals = !letters.is_empty() && letters.iter().all(|c| c.is_uppercase());
    let count = bare.split_whitespace().count();
    let names_kind = words(bare).any(|w| DOCUMENT_WORDS.contains(&w.as_str()));
    ((italic || capitals) && names_kind && (1..=14).contains(&count) && !bare.contains('_'))
        .then(|| bare.to_owned())
}

/// A paragraph that opens a dated entry of a journal or diary: a date or time in
/// italics at its start ("_3 May. Bistritz._--Left Munich…", "_Later._--I endorse…",
/// "_11 p. m._--I gave Renfield…").
fn entry_start(paragraph: &str) -> bool {
    let Some(rest) = paragraph.trim_start().strip_prefix('_') else {
        return false;
    };
    let Some(close) = rest.find('_').filter(|at| *at <= 60) else {
        return false;
    };
    let head = &rest[..close];
    let after = rest[close + 1..].trim_start_matches('.');
    let dated = words(head)
        .any(|w| TIME_WORDS.contains(&w.as_str()) || matches!(w.as_str(), "later" | "day" | "m"))
        || head.chars().any(|c| c.is_ascii_digit());
    dated && (after.starts_with("--") || after.starts_with('—') || after.starts_with(' '))
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
    // "Chapter I.]": the end of an illustration's caption that holds the heading.
    let line = line.trim().trim_end_matches([']', ')']);
    if line.is_empty() || line.chars().count() > 70 {
        return false;
    }
    if is_chinese_heading(line) {
        return true;
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
    if is_chinese(sentence) {
        return opens_chinese_shift(sentence);
    }
    let head = head_words(sentence);
    TIME_SHIFTS.iter().any(|m| head.contains(m))
}

/// Openings of Chinese narration that move the story to another time, or, in the
/// storyteller's manner, to another thread of it (`却说`, `且说`: "now we tell of…").
const CHINESE_TIME_SHIFTS: &[&str] = &[
    "次日",
    "一日",
    "这日",
    "那日",
    "是日",
    "当日",
    "至次日",
    "到了次日",
    "至晚",
    "晚间",
    "当晚",
    "至晚间",
    "展眼",
    "光阴",
    "过了几日",
    "几日后",
    "却说",
    "且说",
    "话说",
    "如今且说",
    "那一日",
    "這日",
    "當日",
    "當晚",
    "晚間",
    "話說",
    "卻說",
    "過了幾日",
    "展眼間",
    "光陰",
    "是晚",
    "次早",
    "这一日",
    "這一日",
    "可巧这日",
    "可巧這日",
    "到了这天",
    "到了這天",
    "倏忽",
    "至掌灯",
    "至掌燈",
];

/// Where sentences of narration inside the Chinese block `text[start..end]` (not its
/// first) open at another time or thread, or move to another place: byte offsets of their first characters. A
/// sentence inside a quote is speech, not the storyteller's, and cuts nothing.
fn chinese_shifts_inside(text: &str, start: usize, end: usize) -> Vec<usize> {
    let block = &text[start..end];
    if !is_chinese(block) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut after_stop = false;
    for (i, c) in block.char_indices() {
        match c {
            '“' | '「' => depth += 1,
            '”' | '」' => depth = depth.saturating_sub(1),
            '。' | '！' | '？' => after_stop = true,
            c if c.is_whitespace() => {}
            _ => {
                if after_stop
                    && depth == 0
                    && (opens_chinese_shift(&block[i..]) || opens_chinese_move(&block[i..]))
                {
                    out.push(start + i);
                }
                after_stop = false;
            }
        }
    }
    out
}

/// Verbs that take a Chinese sentence's subject to another place ("一径回至贾母房中",
/// "一面来至自己卧室"), and the endings of the place they name after.
const CHINESE_ARRIVALS: &[&str] = &[
    "回至",
    "来至",
    "來至",
    "回到",
    "来到",
    "來到",
    "走至",
    "走到",
    "进入",
    "進入",
    "迳往",
    "逕往",
    "一径往",
    "一徑往",
    "回往",
    "竟往",
    "便往",
    "遂往",
    "直往",
];
const CHINESE_PLACES: &[&str] = &[
    "房中", "房里", "房裏", "房内", "房內", "院中", "院内", "院內", "府中", "府里", "府裏", "屋里",
    "屋裏", "屋内", "屋內", "卧室", "臥室", "门前", "門前", "厅上", "廳上", "家中", "家里", "家裏",
    "书房", "書房", "上房", "这边", "這邊", "那边", "那邊",
];
/// How far after the verb the place's ending may come, in characters.
const PLACE_REACH: usize = 10;

/// Does a Chinese sentence of narration (its quote-free first sentence, at most 60
/// characters) take its subject to another place: an arrival verb with a place ending
/// within a few characters after it? The story moves on there: a scene of its own, so
/// those left behind hear nothing of it.
fn opens_chinese_move(text: &str) -> bool {
    let sentence: String = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .take_while(|c| !matches!(c, '。' | '！' | '？' | '“' | '「' | '：'))
        .take(60)
        .collect();
    CHINESE_ARRIVALS.iter().any(|verb| {
        sentence.match_indices(verb).any(|(at, _)| {
            let after: String = sentence[at + verb.len()..]
                .chars()
                .take(PLACE_REACH)
                .collect();
            CHINESE_PLACES.iter().any(|place| after.contains(place))
        })
    })
}

/// Does Chinese text open at another time or thread (after any quote mark or
/// indent)?
fn opens_chinese_shift(text: &str) -> bool {
    let head =
        text.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '　' | '“' | '「'));
    CHINESE_TIME_SHIFTS.iter().any(|m| head.starts_with(m))
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
    let joined = join_wrapped(paragraph);
    // A Chinese paragraph holds its dialogue with its narration; its opening alone
    // says where it stands.
    if is_chinese(&joined) {
        return opens_chinese_shift(&joined) || opens_chinese_move(&joined);
    }
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

/// The chapter headings among `blocks`: (heading start, body start) each, and the
/// titles under them that head a document ("CHAPTER I" over "JONATHAN HARKER'S
/// JOURNAL").
type Headings = (Vec<(usize, usize)>, Vec<(usize, String)>);

fn headings(blocks: &[(usize, usize, Vec<&str>)]) -> Headings {
    let mut headings: Vec<(usize, usize)> = Vec::new();
    // A title that heads a document ("CHAPTER I" over "JONATHAN HARKER'S JOURNAL").
    let mut titled_documents: Vec<(usize, String)> = Vec::new();
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
                && let Some((title_start, title_end, title)) = blocks.get(i + 1)
                && title.len() == 1
                && is_title(title[0])
                && !is_heading(title[0])
            {
                if let Some(heading) = document_heading(title[0]) {
                    titled_documents.push((*title_start, heading));
                }
                body = *title_end;
                i += 1;
            }
            headings.push((*start, body));
        } else if lines.len() > 2 && is_chinese_heading(lines[0]) && !is_heading(lines[1]) {
            // A Chinese heading with the chapter's first verse right under it, no blank
            // line between (a list of headings, the contents, is no chapter).
            headings.push((*start, start + lines[0].len()));
        }
        i += 1;
    }
    (headings, titled_documents)
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
    let (headings, titled_documents) = headings(&blocks);
    let words_in = |s: usize, e: usize| word_count(&text[s..e]);
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
    let mut units = Vec::new();
    let mut documents = Vec::new();
    let mut titled_documents = titled_documents.into_iter().peekable();
    for (c, (start, end)) in bodies.iter().enumerate() {
        // Cuts: scene-break lines (left out) and time shifts (kept, they open the scene).
        let mut pieces = Vec::new();
        let mut at = *start;
        let mut marked = false;
        while let Some((title_at, _)) = titled_documents.peek()
            && *title_at < *start
        {
            let document = titled_documents.next().expect("peeked");
            documents.push(document);
        }
        // Where a document starts (its heading): a scene of its own, never joined to the
        // one before, since its writer is another.
        let mut document_starts = vec![*start];
        for (b_start, b_end, lines) in blocks.iter().filter(|b| b.0 >= *start && b.1 <= *end) {
            if lines.len() == 1 && is_scene_break(lines[0]) {
                pieces.push((at, *b_start));
                at = *b_end;
                marked = true;
            } else if let Some(heading) = document_heading(lines[0]) {
                documents.push((*b_start, heading));
                document_starts.push(*b_start);
                pieces.push((at, *b_start));
                at = *b_start;
            } else if shifts_time(&lines.join(" ")) || entry_start(lines[0]) {
                pieces.push((at, *b_start));
                at = *b_start;
            }
            // A Chinese paragraph runs on for pages: the storyteller moves to another
            // day or thread inside it, at the start of a sentence of narration.
            for cut in chinese_shifts_inside(text, *b_start, *b_end) {
                pieces.push((at, cut));
                at = cut;
            }
        }
        pieces.push((at, *end));
        if bodies.len() == 1 && !marked {
            pieces = pieces
                .into_iter()
                .flat_map(|(s, e)| cut_unmarked(text, s, e))
                .collect();
        }
        let mut merged = join_short(
            &pieces,
            c + 1,
            (&document_starts, *end),
            &words_in,
            &mut units,
        );
        // A short first piece merges forward instead, unless a document starts after it.
        if merged.len() > 1
            && words_in(merged[0].start, merged[0].end) < MIN_SCENE_WORDS
            && !documents.iter().any(|(at, _)| *at == merged[1].start)
        {
            let first = merged.remove(0);
            merged[0].start = first.start;
        }
        scenes.extend(merged);
    }
    Partition {
        title,
        chapters: bodies.len(),
        scenes,
        units,
        documents,
    }
}

/// The cut pieces of chapter `chapter` as scenes: each piece is a reading unit (added
/// to `units`); a piece under [`MIN_SCENE_WORDS`] joins the scene before it unless it
/// opens a document, and a document's bare heading opens the piece after it.
fn join_short(
    pieces: &[(usize, usize)],
    c: usize,
    (document_starts, end): (&[usize], usize),
    words_in: &dyn Fn(usize, usize) -> usize,
    units: &mut Vec<Span>,
) -> Vec<Span> {
    let mut merged: Vec<Span> = Vec::new();
    // A heading with next to nothing under it before the next cut (a document's
    // heading over its first dated entry) opens the piece after it.
    let mut heading_at: Option<usize> = None;
    for &(s, e) in pieces {
        let words = words_in(s, e);
        if words == 0 {
            continue;
        }
        units.push(Span {
            chapter: c,
            start: s,
            end: e,
        });
        let opens_document = document_starts.contains(&s) || heading_at.is_some();
        if document_starts.contains(&s) && words < MIN_HEADING_WORDS {
            heading_at = Some(s);
            continue;
        }
        let s = heading_at.take().unwrap_or(s);
        match merged.last_mut() {
            Some(last) if words < MIN_SCENE_WORDS && !opens_document => last.end = e,
            _ => merged.push(Span {
                chapter: c,
                start: s,
                end: e,
            }),
        }
    }
    if let Some(s) = heading_at {
        match merged.last_mut() {
            Some(last) => last.end = end,
            None => merged.push(Span {
                chapter: c,
                start: s,
                end,
            }),
        }
    }
    merged
}

fn cut_unmarked(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut pieces = Vec::new();
    let mut at = start;
    let mut words = 0;
    let body = &text[start..end];
    let mut offset = start;
    for para in body.split_inclusive("\n\n") {
        words += word_count(para);
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
