//! Who sees which fact, kept as one bit per fact for each character recently asked about.
//!
//! Vis-Retrieve admits a fact when the asker is in its visibility set. Asking each
//! candidate's `BTreeSet<String>` costs three dependent loads (the fact, the set's node,
//! the name's bytes) per node a graph search visits. A shard is almost always asked on
//! behalf of its own character, so the answer for that character is kept as a bitset:
//! built once on first ask (one pass), extended as facts are added, a single load per
//! candidate after that.

use std::sync::{Arc, PoisonError, RwLock};

use crate::semantic::Fact;

/// How many askers' bitsets are kept; the oldest is dropped past it. A shard's own
/// character is nearly always the only one.
const KEPT: usize = 4;

/// One bit per fact, in fact order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    fn push(&mut self, on: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if on {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }

    /// Whether the bit at `position` is set (false past the end).
    #[must_use]
    pub(crate) fn get(&self, position: usize) -> bool {
        self.words
            .get(position / 64)
            .is_some_and(|word| word >> (position % 64) & 1 == 1)
    }
}

/// The bitsets of the characters most recently asked about. A cache: it is never saved,
/// compared or cloned with the layer (a clone starts empty and rebuilds on first ask).
#[derive(Debug, Default)]
pub(crate) struct Sight {
    kept: RwLock<Vec<(String, Arc<Bits>)>>,
}

impl Clone for Sight {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for Sight {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Sight {
    /// Which of `facts` `character` can see, from the cache or by one pass over them.
    pub(crate) fn of(&self, character: &str, facts: &[Fact]) -> Arc<Bits> {
        {
            let kept = self.kept.read().unwrap_or_else(PoisonError::into_inner);
            if let Some((_, bits)) = kept.iter().find(|(who, _)| who == character) {
                return Arc::clone(bits);
            }
        }
        let mut bits = Bits::default();
        for fact in facts {
            bits.push(fact.visibility.contains(character));
        }
        let bits = Arc::new(bits);
        let mut kept = self.kept.write().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push((character.to_owned(), Arc::clone(&bits)));
        bits
    }

    /// Extends every kept bitset by the fact just added.
    pub(crate) fn push(&mut self, fact: &Fact) {
        let kept = self.kept.get_mut().unwrap_or_else(PoisonError::into_inner);
        for (who, bits) in kept.iter_mut() {
            Arc::make_mut(bits).push(fact.visibility.contains(who.as_str()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::VisibilityRoute;

    fn fact(id: usize, seen_by: &[&str]) -> Fact {
        Fact {
            id: format!("f{id}"),
            subject: String::new(),
            predicate: String::new(),
            object: String::new(),
            cause: String::new(),
            visibility: seen_by.iter().map(|s| (*s).to_owned()).collect(),
            route: VisibilityRoute::Observation,
            text: String::new(),
        }
    }

    #[test]
    fn bits_follow_visibility_across_words_and_later_additions() {
        let facts: Vec<Fact> = (0..130)
            .map(|i| fact(i, if i % 3 == 0 { &["ann"] } else { &["bo"] }))
            .collect();
        let mut sight = Sight::default();
        let ann = sight.of("ann", &facts);
        for i in 0..130 {
            assert_eq!(ann.get(i), i % 3 == 0, "fact {i}");
        }
        assert!(!ann.get(130));
        // A fact added later reaches the kept bitset; a reader's old copy is unchanged.
        sight.push(&fact(130, &["ann", "bo"]));
        assert!(!ann.get(130));
        assert!(sight.of("ann", &facts).get(130));
    }

    #[test]
    fn only_the_latest_askers_are_kept() {
        let facts = vec![fact(0, &["a"]), fact(1, &["e"])];
        let sight = Sight::default();
        for who in ["a", "b", "c", "d", "e"] {
            let _ = sight.of(who, &facts);
        }
        let kept = sight.kept.read().expect("no writer panicked");
        let names: Vec<&str> = kept.iter().map(|(who, _)| who.as_str()).collect();
        assert_eq!(names, ["b", "c", "d", "e"]);
        assert!(kept[3].1.get(1));
    }
}
