//! The words a character has a source for in its shard, kept as items arrive: the
//! boundary guard checks a line against them without reading the whole shard. An
//! episode a model rewrite replaced leaves its words in: they were a source once.

use std::collections::HashSet;
use std::sync::Arc;

use super::Shard;
use crate::boundary::add_words;

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
