//! The words a character has a source for in its shard, kept as items arrive: the
//! boundary guard checks a line against them without reading the whole shard. An
//! episode a model rewrite replaced leaves its words in: they were a source once.

use std::collections::HashSet;
use std::sync::Arc;

use super::Shard;

impl Shard {
    /// Reads every word of the layers' items and perceived lines anew.
    pub(super) fn rebuild_vocabulary(&mut self) {
        let mut words = HashSet::new();
        for item in self.layer_items() {
            add_words(&mut words, &item.text);
        }
        self.vocabulary = Arc::new(words);
    }

    /// Adds the words of an item just stored.
    pub(super) fn learn(&mut self, text: &str) {
        add_words(Arc::make_mut(&mut self.vocabulary), text);
    }

    /// Every word (lower-cased) of the layers' items and the perceived lines.
    #[must_use]
    pub fn vocabulary(&self) -> Arc<HashSet<String>> {
        Arc::clone(&self.vocabulary)
    }
}

/// Adds the words of `text`, lower-cased, as the guard compares them.
pub(crate) fn add_words(words: &mut HashSet<String>, text: &str) {
    for token in tokens(text) {
        words.insert(token.to_lowercase());
    }
}

/// The words of `text` as the check compares them.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace().flat_map(|raw| {
        let word = trim_word(raw);
        let bare = word.strip_suffix("'s").unwrap_or(word);
        // "Sherlock-Holmes" and "Brixton," both count, whole and in parts.
        std::iter::once(bare)
            .chain(bare.split('-'))
            .filter(|w| !w.is_empty())
    })
}

pub(crate) fn trim_word(raw: &str) -> &str {
    raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
        .trim_matches(['\'', '-'])
}
