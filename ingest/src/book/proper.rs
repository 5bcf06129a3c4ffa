//! Proper names in the text: capitalised phrases that are not sentence starters, and
//! the kind of entity each one is.

use std::collections::BTreeSet;

use super::lexicon::{ORGANISATION_HEADS, TIME_WORDS};
use super::scenes::Scene;

pub(super) const NUMBER_WORDS: &[&str] = &[
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "twenty", "thirty", "forty", "fifty", "hundred", "thousand",
];

pub(super) const FUNCTION_WORDS: &[&str] = &[
    "of", "in", "on", "at", "and", "was", "were", "had", "is", "to", "from", "with", "that", "for",
    "but", "or", "by", "into", "under", "as", "he", "she", "they", "it", "which",
];

const SENTENCE_STARTERS: &[&str] = &[
    "The", "A", "An", "He", "She", "It", "They", "We", "I", "You", "But", "And", "On", "In",
    "When", "Then", "There", "This", "That", "If", "What", "Who", "Why", "How", "Not", "No", "Yes",
    "Under", "Out", "At", "For", "My", "His", "Her", "Our", "Your", "Their", "Now", "Outside",
    "Inside", "Below", "Above", "Near", "Every", "Everyone", "Nobody", "Neither", "Somebody",
    "Someone", "Whoever", "Since", "Because", "Only", "So", "Mind", "Give", "Tell", "Father",
    "Mother", "Sir", "Miss", "Mr", "Mrs", "Very", "Once", "Thank",
];

/// Capitalised words the book uses inside sentences (not first): the proper nouns a
/// sentence may also start with.
pub(super) fn mid_sentence_capitals(scenes: &[Scene]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for s in scenes {
        for sentence in &s.sentences {
            let tokens: Vec<&str> = sentence.text.split_whitespace().collect();
            for (i, raw) in tokens.iter().enumerate().skip(1) {
                let w = clean_word(raw);
                if w.chars().next().is_some_and(char::is_uppercase)
                    && !tokens[i - 1].ends_with(['.', '!', '?', ':', '"'])
                {
                    out.insert(w.to_owned());
                }
            }
        }
    }
    out
}

pub(super) fn clean_word(raw: &str) -> &str {
    let w = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
    w.strip_suffix("'s").unwrap_or(w)
}

/// Capitalised phrases of a sentence: candidate names. A word in first position counts
/// only when the book also capitalises it mid-sentence; contractions never do.
pub(super) fn proper_phrases(sentence: &str, proper: &BTreeSet<String>) -> Vec<String> {
    let tokens: Vec<&str> = sentence.split_whitespace().collect();
    let mut out = Vec::new();
    let mut current: Vec<String> = Vec::new();
    for (i, raw) in tokens.iter().enumerate() {
        let w = clean_word(raw);
        let capital = w.chars().next().is_some_and(char::is_uppercase);
        let starter = i == 0 || tokens[i - 1].ends_with(['.', '!', '?', ':', '"']);
        let keep = capital
            && !(starter && (SENTENCE_STARTERS.contains(&w) || !proper.contains(w)))
            && w.len() > 1
            && !w.contains('\'');
        if keep {
            current.push(w.to_owned());
        }
        let ends = !keep || raw.ends_with([',', '.', ';', ':', '!', '?']) || raw.ends_with("'s");
        if ends && !current.is_empty() {
            out.push(current.join(" "));
            current.clear();
        }
    }
    if !current.is_empty() {
        out.push(current.join(" "));
    }
    out
}

pub(super) fn kind_of(
    phrase: &str,
    sentence: &str,
    scene_places: &BTreeSet<String>,
) -> &'static str {
    let last = phrase.split_whitespace().last().unwrap_or("");
    if ORGANISATION_HEADS.contains(&last) {
        return "organisation";
    }
    if TIME_WORDS.contains(&phrase.to_lowercase().as_str()) {
        return "time";
    }
    if scene_places.iter().any(|p| p.contains(phrase)) {
        return "place";
    }
    let lower = sentence.to_lowercase();
    let p = phrase.to_lowercase();
    for prep in [
        "at ", "in ", "to ", "from ", "on ", "under ", "below ", "across ", "near ",
    ] {
        if lower.contains(&format!("{prep}{p}")) || lower.contains(&format!("{prep}the {p}")) {
            return "place";
        }
    }
    if lower.contains(&format!("the {p}")) {
        return "object";
    }
    "person"
}
