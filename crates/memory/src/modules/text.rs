//! Small text helpers the modules share: content words, a clip, and the token estimate
//! every crate shares.

use std::collections::BTreeSet;

/// Words that carry no content for matching queries.
const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for",
    "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i",
    "if", "in", "into", "is", "it", "its", "just", "me", "my", "now", "of", "on", "or", "our",
    "she", "so", "some", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "to", "up", "us", "was", "we", "were", "what", "when", "where", "which",
    "who", "whom", "why", "will", "with", "would", "you", "your",
];

/// Whether `word` (lower-cased) is a word with no content for matching.
#[must_use]
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

pub use dramatis_base::estimate_tokens;

/// The content words of `text`: lower-cased, stop words and one-letter words removed.
#[must_use]
pub fn keywords(text: &str) -> BTreeSet<String> {
    content_words(text).collect()
}

/// The content words of `text` in order, repeats kept: lower-cased, possessive "'s"
/// dropped, stop words and one-letter words removed.
pub fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\'').to_lowercase())
        .map(|w| w.strip_suffix("'s").map(str::to_owned).unwrap_or(w))
        .filter(|w| w.chars().count() > 1 && !is_stop_word(w))
}

/// Shortens `text` to at most `words` words, marking the cut.
#[must_use]
pub fn clip(text: &str, words: usize) -> String {
    let all: Vec<&str> = text.split_whitespace().collect();
    if all.len() <= words {
        all.join(" ")
    } else {
        format!("{} …", all[..words].join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_drop_stop_words_and_possessives() {
        let words: Vec<String> = keywords("Where is Holmes's violin, and who has it?")
            .into_iter()
            .collect();
        assert_eq!(words, ["holmes", "violin"]);
        assert_eq!(clip("one two three four", 2), "one two …");
    }
}
