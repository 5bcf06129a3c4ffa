//! The book as text: reading it (with clear refusals for what is not a book),
//! paragraphs split into narration and quoted speech, sentences, and where each
//! character is named. The character list is `characters.rs`'s, the partition into
//! chapters and scenes `partition.rs`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context as _, bail};

pub use super::characters::{FocusCharacter, is_description, parse_characters, read_characters};
use super::cjk::is_running_header;
pub use super::cjk::{cjk_break, is_chinese, is_cjk, is_han, join_wrapped, word_count};

/// The largest book ingest reads: about 2.8 million words.
pub const MAX_BOOK_BYTES: u64 = 16 * 1024 * 1024;

/// Reads a book: UTF-8 text, not empty, at most [`MAX_BOOK_BYTES`], or an EPUB (by its
/// `.epub` name or its zip signature), whose spine becomes that text
/// ([`dramatis_formats::epub`]). Line ends are normalised to `\n`.
pub fn read_book(path: &Path) -> anyhow::Result<String> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if !meta.is_file() {
        bail!("{} is not a file", path.display());
    }
    let epub = dramatis_formats::epub::Limits::default();
    let named_epub = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("epub"));
    if named_epub && meta.len() > epub.file_bytes {
        bail!(
            "{} is {} bytes; an EPUB is read up to {} bytes",
            path.display(),
            meta.len(),
            epub.file_bytes
        );
    }
    if !named_epub && meta.len() > MAX_BOOK_BYTES {
        bail!(
            "{} is {:.1} MB; ingest reads books up to {} MB (about 2.8 million words). Split it \
             into volumes and ingest each.",
            path.display(),
            meta.len() as f64 / 1_048_576.0,
            MAX_BOOK_BYTES / 1_048_576
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if named_epub || bytes.starts_with(b"PK\x03\x04") {
        return epub_text(path, &bytes, &epub);
    }
    if let Some(encoding) = utf16(&bytes) {
        bail!(
            "{} is {encoding} text; ingest reads UTF-8. Convert it first: iconv -f UTF-16 -t \
             UTF-8 {} > book.txt",
            path.display(),
            path.display()
        );
    }
    if let Some(at) = bytes.iter().position(|b| *b == 0) {
        bail!(
            "{} is not a text file (a zero byte at offset {at}); ingest reads plain UTF-8 text",
            path.display()
        );
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let (encoding, iconv) = legacy_encoding(bytes);
        anyhow::anyhow!(
            "{} is not UTF-8 text (invalid bytes at offset {}); it looks like {encoding}. \
             Convert it first: iconv -f {iconv} -t UTF-8 {} > book.txt",
            path.display(),
            e.utf8_error().valid_up_to(),
            path.display()
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        bail!("{} is empty", path.display());
    }
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let text = without_page_markers(&text);
    paragraphed(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// A page marker left by a PDF conversion, a line of its own: `----- Page 12 -----`.
fn is_page_marker(line: &str) -> bool {
    let line = line.trim();
    let Some(rest) = line.strip_prefix("---") else {
        return false;
    };
    let inner = rest.trim_matches('-').trim();
    line.ends_with("---")
        && inner
            .strip_prefix("Page")
            .or_else(|| inner.strip_prefix("page"))
            .is_some_and(|n| {
                let n = n.trim();
                !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())
            })
}

/// The text without its PDF page markers (`----- Page N -----`) and the blank lines
/// around each: a page break falls inside a paragraph as often as not, and the
/// paragraph goes on after it (one that starts at the page's head has its indent).
/// A Chinese file's running headers (`吴承恩--西游记--第一回…`) go too, the blank lines
/// around them kept: the chapter heading they repeat comes next.
fn without_page_markers(text: &str) -> String {
    if !text
        .lines()
        .any(|l| is_page_marker(l) || is_running_header(l))
    {
        return text.to_owned();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut keep = vec![true; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        if is_running_header(line) {
            keep[i] = false;
        }
        if !is_page_marker(line) {
            continue;
        }
        keep[i] = false;
        let mut j = i + 1;
        while j < lines.len() && lines[j].trim().is_empty() {
            keep[j] = false;
            j += 1;
        }
        let mut k = i;
        while k > 0 && lines[k - 1].trim().is_empty() {
            k -= 1;
            keep[k] = false;
        }
    }
    lines
        .iter()
        .zip(keep)
        .filter_map(|(l, k)| k.then_some(*l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An EPUB's text (`bytes`, read from `path`), within the reader's bounds and then the
/// book's.
fn epub_text(
    path: &Path,
    bytes: &[u8],
    limits: &dramatis_formats::epub::Limits,
) -> anyhow::Result<String> {
    let text = dramatis_formats::epub::read(bytes, limits)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if text.len() as u64 > MAX_BOOK_BYTES {
        bail!(
            "{} holds {:.1} MB of text; ingest reads books up to {} MB",
            path.display(),
            text.len() as f64 / 1_048_576.0,
            MAX_BOOK_BYTES / 1_048_576
        );
    }
    paragraphed(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// UTF-16 text: a byte-order mark, or a zero in every other byte of its start.
fn utf16(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0xff, 0xfe, ..] => return Some("UTF-16 (little-endian)"),
        [0xfe, 0xff, ..] => return Some("UTF-16 (big-endian)"),
        _ => {}
    }
    let head = &bytes[..bytes.len().min(400) & !1];
    let zeros = |parity: usize| {
        head.iter()
            .skip(parity)
            .step_by(2)
            .filter(|b| **b == 0)
            .count()
    };
    let half = head.len() / 2;
    if half >= 8 && zeros(1) * 10 >= half * 9 && zeros(0) == 0 {
        Some("UTF-16 (little-endian)")
    } else if half >= 8 && zeros(0) * 10 >= half * 9 && zeros(1) == 0 {
        Some("UTF-16 (big-endian)")
    } else {
        None
    }
}

/// The likeliest legacy encoding of text that is not UTF-8, by its bytes above 0x7f, and
/// its name for iconv: most of them in lead-and-trail pairs is a Chinese GB encoding;
/// bytes 0x80–0x9f, which Latin-1 leaves to control codes, are Windows-1252's quotes
/// and dashes; otherwise Latin-1.
fn legacy_encoding(bytes: &[u8]) -> (&'static str, &'static str) {
    let high = bytes.iter().filter(|b| **b >= 0x80).count();
    let mut pairs = 0;
    let mut i = 0;
    while i + 1 < bytes.len() {
        if (0x81..=0xfe).contains(&bytes[i]) && (0x40..=0xfe).contains(&bytes[i + 1]) {
            pairs += 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    if high >= 16 && pairs * 2 * 10 >= high * 9 && high * 10 >= bytes.len() {
        ("GB18030 (Chinese, also read as GBK or GB2312)", "GB18030")
    } else if bytes.iter().any(|b| (0x80..=0x9f).contains(b)) {
        ("Windows-1252 (Western European)", "WINDOWS-1252")
    } else {
        ("Latin-1 (ISO-8859-1)", "ISO-8859-1")
    }
}

/// Fewer blank-line paragraphs than this many words each, in a text this long, means the
/// file marks paragraphs some other way.
const WORDS_PER_PARAGRAPH: usize = 1000;

/// The book with its paragraphs apart by blank lines, as the rest of ingest reads them.
/// A file with fewer than one blank-line paragraph in [`WORDS_PER_PARAGRAPH`] words that
/// starts each paragraph on an indented line, or puts each paragraph on one long line
/// (in Chinese, on a line that ends a sentence), gets its blank lines; one with no mark of a paragraph at all is refused, since every
/// rule of presence counts paragraphs.
fn paragraphed(text: &str) -> anyhow::Result<String> {
    let words = word_count(text);
    let blocks = text.split("\n\n").filter(|b| !b.trim().is_empty()).count();
    if words < 2 * WORDS_PER_PARAGRAPH || blocks * WORDS_PER_PARAGRAPH >= words {
        return Ok(text.to_owned());
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let indented = lines.iter().filter(|l| l.starts_with([' ', '\t'])).count();
    let long = lines.iter().filter(|l| l.chars().count() > 200).count();
    // A Chinese file with a paragraph on each line: most lines end a sentence (a
    // wrapped Chinese line ends one about one time in five, wherever the width fell).
    let ended = lines
        .iter()
        .filter(|l| {
            l.trim_end()
                .ends_with(['。', '！', '？', '”', '」', '』', '：'])
        })
        .count();
    let per_line = is_chinese(text) && ended * 5 >= lines.len() * 3;
    let mut out = String::with_capacity(text.len() + text.len() / 20);
    // Indents mark paragraphs when some lines have one and most do not (verse
    // paragraphs in *Paradise Lost*); a file indented throughout marks nothing by it.
    if !per_line && indented > 1 && indented * 10 < lines.len() * 9 {
        for line in text.lines() {
            if line.starts_with([' ', '\t']) && !line.trim().is_empty() {
                out.push('\n');
            }
            out.push_str(line);
            out.push('\n');
        }
    } else if (per_line || long * 2 >= lines.len()) && lines.len() > 1 {
        for line in lines {
            out.push_str(line);
            out.push_str("\n\n");
        }
    } else {
        bail!(
            "no paragraphs: {words} words in {blocks} blocks, with no blank line, indent or \
             line of its own to mark where a paragraph starts; put a blank line between \
             paragraphs"
        );
    }
    Ok(out)
}

pub use dramatis_runtime::prefix;

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
        let joined = join_wrapped(current);
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
    // Corner brackets (「」, and 『』 for a quote inside one) are the quotes of
    // traditional-character printing.
    let cited = citations(paragraph);
    let (out, open, _) = split_quotes(paragraph, |i, c, _, _, quoted| {
        if cited.contains(&i) {
            return (false, false);
        }
        (
            c == '“' || c == '「' || (c == '"' && !quoted),
            c == '”' || c == '」' || (c == '"' && quoted),
        )
    });
    (out, open)
}

/// The longest phrase a Chinese citation quotes, in characters.
const CITED_CHARS: usize = 20;

/// The positions (char indices) of the marks around each phrase a Chinese sentence
/// cites rather than a line someone speaks: 有“花气袭人”之句, 上书“太虚幻境”四大字. Its
/// opening mark follows a Han character (a line follows a colon, a comma or a break),
/// its closing mark is followed by one, and the phrase ends in no punctuation (a line
/// does: “好。”黛玉道). The phrase stays in the narration, marks and all.
fn citations(paragraph: &str) -> Vec<usize> {
    let chars: Vec<char> = paragraph.chars().collect();
    let mut out = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        if !matches!(c, '“' | '「') || !i.checked_sub(1).is_some_and(|b| is_han(chars[b])) {
            continue;
        }
        let Some(len) = chars[i + 1..]
            .iter()
            .take(CITED_CHARS + 1)
            .position(|c| matches!(c, '“' | '「' | '”' | '」'))
        else {
            continue;
        };
        let close = i + 1 + len;
        let phrase_end = chars[close - 1];
        if len > 0
            && matches!(chars[close], '”' | '」')
            && chars.get(close + 1).is_some_and(|a| is_han(*a))
            && is_han(phrase_end)
        {
            out.extend([i, close]);
        }
    }
    out
}

/// Splits `text` into narration and quotes. `marks(i, c, before, after, quoted)` says
/// whether `c`, the `i`th character, opens or closes a quote there. Returns the segments, whether the last
/// quote was left open, and whether any quote opened.
fn split_quotes(
    text: &str,
    marks: impl Fn(usize, char, Option<char>, Option<char>, bool) -> (bool, bool),
) -> (Vec<Segment>, bool, bool) {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut piece = String::new();
    let mut quoted = false;
    let mut any = false;
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let (opens, closes) = marks(i, c, before, chars.get(i + 1).copied(), quoted);
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
    let (out, _, any) = split_quotes(quote, |_, c, before, after, _| {
        let opens = c == '‘'
            || c == '『'
            || (c == '\''
                && before.is_none_or(|b| b.is_whitespace() || matches!(b, '(' | '—' | '-'))
                && after.is_some_and(char::is_uppercase));
        // "four' scrawled", "out'!": a word's last letter may end the quote too (a
        // dropped letter, "goin' home", closes it early: less is given, never more).
        let closes = c == '’'
            || c == '』'
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
/// except after common abbreviations (`Mr.`); and after a Chinese full stop, `！` or
/// `？` (with the closing marks after it), which need no space.
#[must_use]
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, (at, c)) in chars.iter().enumerate() {
        if *at < start {
            continue;
        }
        if matches!(c, '。' | '！' | '？') {
            // "……罢了。”": the closing marks after the stop end the sentence with it.
            let mut j = i + 1;
            while chars.get(j).is_some_and(|(_, n)| {
                matches!(n, '”' | '」' | '’' | '』' | '！' | '？' | '。' | '…')
            }) {
                j += 1;
            }
            let end = chars.get(j).map_or(text.len(), |(at, _)| *at);
            let sentence = text[start..end].trim();
            if !sentence.is_empty() {
                out.push(sentence);
            }
            start = end;
            continue;
        }
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
    /// A form the list gives two characters or more ("the captain" for Billy Bones and
    /// for Captain Smollett): `character` is only the first of them, so the mention is a
    /// reference that puts no one on stage and speaks for no one by itself.
    pub shared: bool,
}

/// Finds the characters' name forms in texts: whole words, longest form first, each
/// stretch of text claimed once. Descriptions match with a capital first letter too.
#[derive(Debug, Clone)]
pub struct Namer {
    forms: Vec<(String, String, bool)>, // (form, character id, by name)
    /// Forms that more than one character owns, and their owners.
    shared: BTreeMap<String, Vec<String>>,
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
        let mut owners: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (form, id, _) in &forms {
            owners.entry(form.as_str()).or_default().insert(id.as_str());
        }
        // A given name one character is listed by and another's full name starts with
        // ("Tom": Tom Redruth's, and Tom Morgan's first name) is theirs to share: the
        // book may mean either, or a third the list leaves out.
        for (form, id, by_name) in &forms {
            if let Some((first, _)) = form.split_once(' ').filter(|_| *by_name)
                && let Some(ids) = owners.get_mut(first)
            {
                ids.insert(id.as_str());
            }
        }
        let shared = owners
            .into_iter()
            .filter(|(_, ids)| ids.len() > 1)
            .map(|(form, ids)| {
                (
                    form.to_owned(),
                    ids.into_iter().map(str::to_owned).collect(),
                )
            })
            .collect();
        Self { forms, shared }
    }

    /// Whom mention `m` of `text` may mean: its one character, or every owner of a
    /// shared form ("the captain": Billy Bones and Captain Smollett).
    #[must_use]
    pub fn owners<'a>(&'a self, m: &Mention<'a>, text: &str) -> Vec<&'a str> {
        match self.shared.get(&text[m.start..m.end]) {
            Some(ids) if m.shared => ids.iter().map(String::as_str).collect(),
            _ => vec![m.character],
        }
    }

    /// Every mention in `text`, in order.
    #[must_use]
    pub fn mentions<'a>(&'a self, text: &str) -> Vec<Mention<'a>> {
        let mut claimed: Vec<(usize, usize)> = Vec::new();
        let mut out = Vec::new();
        for (form, id, by_name) in &self.forms {
            for (start, _) in text.match_indices(form.as_str()) {
                let end = start + form.len();
                if !dramatis_base::whole_word_at(text, start, end)
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
                    shared: self.shared.contains_key(form),
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
                    last.shared &= m.shared;
                }
                _ => merged.push(m),
            }
        }
        merged
    }
}

/// Whole-word, case-insensitive: does `text` contain `phrase`?
#[must_use]
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    let text = text.to_lowercase();
    let phrase = phrase.to_lowercase();
    text.match_indices(phrase.as_str())
        .any(|(s, _)| dramatis_base::whole_word_at(&text, s, s + phrase.len()))
}

/// Lowercased alphabetic words of a text.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    written_words(text)
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty())
}

/// The words of a text as written (case kept): "Hope" the name is not "hope".
pub fn written_words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
}

/// Whether `word` begins with a capital.
#[must_use]
pub fn starts_upper(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
}

/// Lines of `text` with their byte offsets.
pub(super) fn lines_with_offsets(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |line| {
        let start = at;
        at += line.len();
        (start, line.trim_end_matches('\n'))
    })
}
