//! Words of a text as the KBF items compare them: runs of letters and digits, matched
//! whole and without regard to case.

use std::collections::BTreeSet;

/// One word of a text: its byte range and whether it opens a sentence.
pub struct Token<'a> {
    pub start: usize,
    pub word: &'a str,
    pub opens_sentence: bool,
}

pub fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    let mut opens_sentence = true;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        if c.is_alphanumeric() {
            start.get_or_insert(i);
            continue;
        }
        if let Some(s) = start.take() {
            out.push(Token {
                start: s,
                word: &text[s..i],
                opens_sentence,
            });
            opens_sentence = false;
        }
        if matches!(c, '.' | '!' | '?' | ':' | '"' | '\u{201c}' | '\n') {
            opens_sentence = true;
        }
    }
    out
}

/// Whether `text` holds `word` as a whole word, ignoring case. A word with Chinese in it
/// is found anywhere it stands whole, as Chinese puts no space between words (a token
/// of Chinese is a whole clause, so it would never equal a name or a phrase).
#[must_use]
pub fn contains_word(text: &str, word: &str) -> bool {
    if has_han(word) {
        return contains_han(text, word);
    }
    tokens(text)
        .iter()
        .any(|t| t.word.eq_ignore_ascii_case(word))
}

/// Whether `word` has a Han character in it.
#[must_use]
pub fn has_han(word: &str) -> bool {
    word.chars().any(dramatis_base::is_han)
}

/// `word` (with Chinese in it) found in `text`, case aside, standing whole at its
/// Latin edges.
fn contains_han(text: &str, word: &str) -> bool {
    let text = text.to_lowercase();
    let word = word.trim().to_lowercase();
    !word.is_empty()
        && text
            .match_indices(word.as_str())
            .any(|(at, _)| dramatis_base::whole_word_at(&text, at, at + word.len()))
}

/// The lowercased words of `text`, for repeated look-ups.
#[must_use]
pub fn word_set(text: &str) -> BTreeSet<String> {
    tokens(text).iter().map(|t| t.word.to_lowercase()).collect()
}
