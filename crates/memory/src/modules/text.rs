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
/// dropped, stop words and one-letter words removed. Chinese has no spaces between
/// words, so a run of Han characters gives its overlapping character pairs (黛玉笑道:
/// 黛玉, 玉笑, 笑道), and a lone one itself: a two-character name or word is always one of
/// them, with no dictionary to miss a name the book coined.
pub fn content_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .flat_map(script_runs)
        .filter_map(|(run, han)| {
            if han {
                return Some(han_pairs(run));
            }
            let word = run.trim_matches('\'').to_lowercase();
            let word = word.strip_suffix("'s").map(str::to_owned).unwrap_or(word);
            (word.chars().count() > 1 && !is_stop_word(&word)).then(|| vec![word])
        })
        .flatten()
}

/// `word` cut where it passes between Han and other letters, each piece marked Han or not.
fn script_runs(word: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut han = None;
    for (at, c) in word.char_indices() {
        let this = dramatis_base::is_han(c);
        if han.is_some_and(|h| h != this) {
            out.push((&word[start..at], !this));
            start = at;
        }
        han = Some(this);
    }
    if let Some(han) = han {
        out.push((&word[start..], han));
    }
    out
}

/// The overlapping pairs of a run of Han characters (a lone character: itself).
fn han_pairs(run: &str) -> Vec<String> {
    let chars: Vec<char> = run.chars().collect();
    if chars.len() < 2 {
        return vec![run.to_owned()];
    }
    chars.windows(2).map(|pair| pair.iter().collect()).collect()
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

    #[test]
    fn chinese_gives_its_character_pairs_and_english_beside_it_its_words() {
        let words: Vec<String> = content_words("黛玉笑道：好。Holmes的玉").collect();
        assert_eq!(words, ["黛玉", "玉笑", "笑道", "好", "holmes", "的玉"]);
        // The English of a mixed text is read as before.
        let english: Vec<String> = content_words("Holmes's violin, and the Jezail").collect();
        assert_eq!(english, ["holmes", "violin", "jezail"]);
    }
}
