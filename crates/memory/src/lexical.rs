//! A lexical index over a layer's texts, by position: the other half of hybrid recall.
//! Dense vectors find a fact told in other words; shared rare words find one that the
//! embedder scores low because the question is worded far from it (a place, a number,
//! a rare noun). Scores are Okapi BM25 (k1 = 1.2, b = 0.75) over word stems: lower-cased,
//! stop words dropped, Snowball's English stemmer (`rust-stemmers`), so "wounded" finds
//! "wound" and "lodgings" finds "lodging".
//!
//! It lives beside the vectors, is rebuilt from the texts when a layer is read back,
//! and is cloned with its layer (a scratch copy for an interview), which is why it is
//! a plain map rather than a search library's engine.

use std::collections::HashMap;
use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};

use crate::modules::content_words;

const K1: f32 = 1.2;
const B: f32 = 0.75;

static ENGLISH: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

/// The stems of `text`'s content words, in order, repeats kept.
#[must_use]
pub fn stems(text: &str) -> Vec<String> {
    content_words(text)
        .map(|w| ENGLISH.stem(&w).into_owned())
        .collect()
}

/// Postings of each stem, and each text's length in stems.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lexical {
    /// Stem → (position, occurrences in that text), positions ascending.
    postings: HashMap<String, Vec<(u32, u16)>>,
    lengths: Vec<u32>,
    total: u64,
}

impl Lexical {
    /// Indexes the text at the next position.
    pub fn push(&mut self, text: &str) {
        let position = u32::try_from(self.lengths.len()).unwrap_or(u32::MAX);
        let words = stems(text);
        let mut counts: HashMap<String, u16> = HashMap::new();
        for word in &words {
            let count = counts.entry(word.clone()).or_default();
            *count = count.saturating_add(1);
        }
        for (word, count) in counts {
            self.postings
                .entry(word)
                .or_default()
                .push((position, count));
        }
        let length = u32::try_from(words.len()).unwrap_or(u32::MAX);
        self.lengths.push(length);
        self.total += u64::from(length);
    }

    /// How rare `stem` is among the texts: BM25's inverse document frequency (a stem
    /// no text holds is as rare as one in half a text).
    #[must_use]
    pub fn rarity(&self, stem: &str) -> f32 {
        let n = self.lengths.len() as f32;
        let df = self.postings.get(stem).map_or(0.0, |p| p.len() as f32);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// How many texts hold `stem`.
    #[must_use]
    pub fn holders(&self, stem: &str) -> usize {
        self.postings.get(stem).map_or(0, Vec::len)
    }

    /// Texts indexed.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The `k` positions `admit` lets through that score highest for `query`, best
    /// first (ties by position), with their BM25 scores; texts sharing no stem with
    /// the query are never returned.
    #[must_use]
    pub fn search(
        &self,
        query: &str,
        k: usize,
        admit: impl Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        if k == 0 || self.lengths.is_empty() {
            return Vec::new();
        }
        let n = self.lengths.len() as f32;
        let average = (self.total as f32 / n).max(1.0);
        let mut asked = stems(query);
        asked.sort_unstable();
        asked.dedup();
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for word in &asked {
            let Some(postings) = self.postings.get(word) else {
                continue;
            };
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(position, count) in postings {
                let tf = f32::from(count);
                let length = self.lengths[position as usize] as f32;
                let weight = tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average));
                *scores.entry(position).or_default() += idf * weight;
            }
        }
        let mut found: Vec<(usize, f32)> = scores
            .into_iter()
            .map(|(p, s)| (p as usize, s))
            .filter(|(p, _)| admit(*p))
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found.truncate(k);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(texts: &[&str]) -> Lexical {
        let mut index = Lexical::default();
        for text in texts {
            index.push(text);
        }
        index
    }

    #[test]
    fn stems_drop_stop_words_and_fold_endings() {
        assert_eq!(
            stems("He was wounded at Maiwand; the wounds healed."),
            ["wound", "maiwand", "wound", "heal"]
        );
    }

    #[test]
    fn a_rare_shared_word_ranks_its_text_first_and_unshared_texts_are_left_out() {
        let index = index(&[
            "Watson was struck by a Jezail bullet at the battle of Maiwand.",
            "Holmes plays the violin late at night.",
            "The battle was long and the night was cold.",
            "Stamford works at the hospital.",
        ]);
        let found = index.search("Which battle, Maiwand or Kandahar, wounded him?", 5, |_| {
            true
        });
        let order: Vec<usize> = found.iter().map(|(p, _)| *p).collect();
        assert_eq!(order, [0, 2], "{found:?}");
        assert!(found[0].1 > found[1].1);
        // Only what `admit` lets through.
        let found = index.search("battle Maiwand", 5, |p| p != 0);
        assert_eq!(found.iter().map(|(p, _)| *p).collect::<Vec<_>>(), [2]);
        assert!(index.search("telegram", 5, |_| true).is_empty());
    }
}
