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
        let position = dramatis_base::saturating_u32(self.lengths.len());
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
        let length = dramatis_base::saturating_u32(words.len());
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
        self.search_counting(query, k, admit).0
    }

    /// [`Lexical::search`], and how many postings it read.
    ///
    /// Exact top k without reading every posting of a common stem (MaxScore, term at a
    /// time): stems are taken rarest first, and a text's weight for one stem is below
    /// `idf × (k1 + 1)`. Once the k-th best score so far exceeds what the stems left
    /// could add up to, no text outside the candidates can reach the top k, so a
    /// common stem (a name in most of a character's facts) only adds its weight to the
    /// candidates, found by binary search in its postings, instead of walking them
    /// all.
    fn search_counting(
        &self,
        query: &str,
        k: usize,
        admit: impl Fn(usize) -> bool,
    ) -> (Vec<(usize, f32)>, usize) {
        if k == 0 || self.lengths.is_empty() {
            return (Vec::new(), 0);
        }
        let n = self.lengths.len() as f32;
        let average = (self.total as f32 / n).max(1.0);
        let mut asked = stems(query);
        asked.sort_unstable();
        asked.dedup();
        // (postings, idf) of each asked stem some text holds, rarest first.
        let mut terms: Vec<(&[(u32, u16)], f32)> = asked
            .iter()
            .filter_map(|word| self.postings.get(word))
            .map(|postings| {
                let df = postings.len() as f32;
                (
                    postings.as_slice(),
                    (1.0 + (n - df + 0.5) / (df + 0.5)).ln(),
                )
            })
            .collect();
        terms.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.len().cmp(&b.0.len())));
        let weight = |position: u32, count: u16| {
            let tf = f32::from(count);
            let length = self.lengths[position as usize] as f32;
            tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average))
        };
        // What the stems from each one on could still add to a text's score.
        let mut rest: Vec<f32> = terms.iter().map(|(_, idf)| idf * (K1 + 1.0)).collect();
        for i in (0..rest.len().saturating_sub(1)).rev() {
            rest[i] += rest[i + 1];
        }
        // Admitted texts met so far, with their scores over the stems read.
        let mut scores: HashMap<u32, f32> = HashMap::new();
        let mut read = 0;
        for (i, &(postings, idf)) in terms.iter().enumerate() {
            if kth_best(&scores, k).is_some_and(|kth| rest[i] < kth) {
                for (position, score) in &mut scores {
                    read += 1;
                    if let Ok(at) = postings.binary_search_by_key(position, |p| p.0) {
                        *score += idf * weight(*position, postings[at].1);
                    }
                }
                continue;
            }
            for &(position, count) in postings {
                read += 1;
                if let Some(score) = scores.get_mut(&position) {
                    *score += idf * weight(position, count);
                } else if admit(position as usize) {
                    scores.insert(position, idf * weight(position, count));
                }
            }
        }
        let mut found: Vec<(usize, f32)> =
            scores.into_iter().map(|(p, s)| (p as usize, s)).collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found.truncate(k);
        (found, read)
    }
}

/// The `k`-th best of `scores`; `None` while there are fewer than `k`.
fn kth_best(scores: &HashMap<u32, f32>, k: usize) -> Option<f32> {
    if scores.len() < k {
        return None;
    }
    let mut values: Vec<f32> = scores.values().copied().collect();
    let (_, kth, _) = values.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    Some(*kth)
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

    /// Issue 65. A Chinese question has no spaces: read as one word it matched nothing.
    #[test]
    fn a_chinese_question_finds_the_memory_that_shares_its_words() {
        let index = index(&[
            "那宝玉落草时，嘴里衔下一块五彩晶莹的玉来。",
            "黛玉进府那日，众人都来相见。",
            "雨村在葫芦庙里借住。",
        ]);
        let found = index.search("宝玉落草时嘴里衔着什么？", 5, |_| true);
        let order: Vec<usize> = found.iter().map(|(p, _)| *p).collect();
        assert_eq!(order.first(), Some(&0), "{found:?}");
        assert!(!order.contains(&2), "{found:?}");
    }

    /// Every posting of every asked stem read, as the search did before MaxScore.
    fn search_every_posting(
        index: &Lexical,
        query: &str,
        k: usize,
        admit: impl Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        let n = index.lengths.len() as f32;
        let average = (index.total as f32 / n).max(1.0);
        let mut asked = stems(query);
        asked.sort_unstable();
        asked.dedup();
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for word in &asked {
            let Some(postings) = index.postings.get(word) else {
                continue;
            };
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(position, count) in postings {
                let tf = f32::from(count);
                let length = index.lengths[position as usize] as f32;
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

    /// A story's facts: a name in every one, a place in every third, a rare word in a
    /// few.
    fn story(texts: usize) -> Lexical {
        let places = ["harbour", "chapel", "market"];
        let rare = ["lantern", "ledger", "compass", "anchor", "violin"];
        let mut index = Lexical::default();
        for i in 0..texts {
            let mut text = format!("Ada walked to the {}", places[i % 3]);
            if i % 97 == 0 {
                text.push_str(&format!(" with a {}", rare[i / 97 % rare.len()]));
            }
            if i % 2 == 0 {
                text.push_str(" and Ada waited");
            }
            index.push(&text);
        }
        index
    }

    #[test]
    fn maxscore_finds_what_reading_every_posting_finds() {
        let index = story(2_000);
        let queries = [
            "Did Ada see the lantern at the harbour?",
            "Ada and the ledger",
            "the market",
            "Ada",
            "violin chapel compass Ada",
            "nothing shared here",
        ];
        for query in queries {
            for k in [1, 3, 8, 50] {
                for (name, admit) in [
                    ("all", Box::new(|_| true) as Box<dyn Fn(usize) -> bool>),
                    ("odd", Box::new(|p| p % 2 == 1)),
                    ("few", Box::new(|p| p % 97 == 0 || p % 5 == 1)),
                ] {
                    let fast = index.search(query, k, &admit);
                    let every = search_every_posting(&index, query, k, &admit);
                    let positions = |f: &[(usize, f32)]| f.iter().map(|h| h.0).collect::<Vec<_>>();
                    assert_eq!(
                        positions(&fast),
                        positions(&every),
                        "{query:?} k={k} {name}"
                    );
                    for (a, b) in fast.iter().zip(&every) {
                        assert!((a.1 - b.1).abs() < 1e-4, "{query:?}: {a:?} vs {b:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_name_in_every_fact_is_not_read_whole_once_a_rare_word_decides() {
        let index = story(4_000);
        // "ada" is in all 4,000 texts, "harbour" in a third, "lantern" in 9.
        let (found, read) = index.search_counting("Ada, the lantern, the harbour", 8, |_| true);
        assert_eq!(found.len(), 8);
        assert!(found[0].0 % 97 == 0, "{found:?}");
        // Reading every posting is 4,000 + 1,334 + 9.
        assert!(read < 200, "read {read} postings");
        // Without a rare word nothing decides early, and every posting is read.
        let (_, read) = index.search_counting("Ada", 8, |_| true);
        assert_eq!(read, 4_000);
    }
}
