//! Chinese (and other CJK) text: which characters are CJK, whether a text is Chinese,
//! how its words are counted and how its wrapped lines join. The rest of ingest reads a
//! Chinese book through these, with the same stages and rules as an English one.

/// A Chinese, Japanese or Korean character: a Han ideograph (simplified or
/// traditional), kana, or a full-width mark of CJK punctuation. Words written in them
/// stand without spaces between, and a line broken between two of them joins with none.
#[must_use]
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F // CJK punctuation: 。、「」『』
        | 0x3040..=0x30FF // kana
        | 0x3400..=0x4DBF // extension A
        | 0x4E00..=0x9FFF // unified ideographs
        | 0xF900..=0xFAFF // compatibility ideographs
        | 0xFF00..=0xFF60 // full-width forms: ，！？：；（）
        | 0x20000..=0x2FA1F) // extensions B and on
}

/// Marks English and Chinese printing share (curly quotes, the ellipsis, the dash):
/// which side of a line break they are on says nothing of its script.
fn shared_mark(c: char) -> bool {
    matches!(c, '“' | '”' | '‘' | '’' | '…' | '—')
}

/// Whether a line break between `before` and `after` falls inside Chinese text: the
/// nearest character on each side that is not a shared mark is CJK.
#[must_use]
pub fn cjk_break(before: &str, after: &str) -> bool {
    let significant = |c: &char| !shared_mark(*c);
    before.chars().rev().find(significant).is_some_and(is_cjk)
        && after.chars().find(significant).is_some_and(is_cjk)
}

pub use dramatis_base::is_han;

/// Whether a text is written in Chinese: more Han ideographs than Latin letters.
#[must_use]
pub fn is_chinese(text: &str) -> bool {
    let (mut han, mut latin) = (0usize, 0usize);
    for c in text.chars() {
        if is_han(c) {
            han += 1;
        } else if c.is_alphabetic() {
            latin += 1;
        }
    }
    han > latin
}

/// Words in a text: its whitespace-separated tokens, where each Han ideograph counts as
/// a word of its own (Chinese puts no space between words, and a word is one or two of
/// them). Every length rule of ingest (a chapter's least body, a scene's least size)
/// counts with this.
#[must_use]
pub fn word_count(text: &str) -> usize {
    text.split_whitespace()
        .map(|t| {
            let han = t.chars().filter(|c| is_han(*c)).count();
            let rest = t.chars().any(|c| c.is_alphanumeric() && !is_han(c));
            han + usize::from(rest || han == 0)
        })
        .sum()
}

/// Whitespace-separated pieces (a paragraph's wrapped lines) joined into one line: one
/// space between two, none where both sides are CJK (a Chinese line broken
/// mid-sentence).
#[must_use]
pub fn join_wrapped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in text.split_whitespace() {
        if !out.is_empty() && !cjk_break(&out, piece) {
            out.push(' ');
        }
        out.push_str(piece);
    }
    out
}

/// A Chinese chapter heading: `第N回` (or `章`, `节`, `卷`), N in Chinese numerals or
/// digits, then the end of the line or a space and the title (the couplet of a
/// classical novel: `第一回  甄士隐梦幻识通灵 贾雨村风尘怀闺秀`). `第四回中…`, a
/// sentence that starts with the words, is none.
#[must_use]
pub fn is_chinese_heading(line: &str) -> bool {
    let Some(rest) = line.trim().strip_prefix('第') else {
        return false;
    };
    let digits = rest
        .chars()
        .take_while(|c| "零〇一二三四五六七八九十百千两0123456789０１２３４５６７８９".contains(*c))
        .count();
    let mut after = rest.chars().skip(digits);
    digits > 0
        && after
            .next()
            .is_some_and(|c| matches!(c, '回' | '章' | '节' | '節' | '卷'))
        && after
            .next()
            .is_none_or(|c| c.is_whitespace() || matches!(c, '：' | ':' | '　'))
}

/// A running header of a Chinese text file, repeated over each chapter: the author,
/// the title and the chapter heading joined by dashes (`吴承恩--西游记--第一回　…`).
/// It is no part of the story, and the heading it repeats follows it.
#[must_use]
pub fn is_running_header(line: &str) -> bool {
    line.rsplit_once("--")
        .is_some_and(|(lead, heading)| !lead.trim().is_empty() && is_chinese_heading(heading))
}
