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

/// Whether `text` holds `word` as a whole word, ignoring case.
#[must_use]
pub fn contains_word(text: &str, word: &str) -> bool {
    tokens(text)
        .iter()
        .any(|t| t.word.eq_ignore_ascii_case(word))
}

/// The lowercased words of `text`, for repeated look-ups.
#[must_use]
pub fn word_set(text: &str) -> BTreeSet<String> {
    tokens(text).iter().map(|t| t.word.to_lowercase()).collect()
}
