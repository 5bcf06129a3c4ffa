//! Who sees which fact, kept as one bit per fact for each character recently asked about.
//!
//! Vis-Retrieve admits a fact when the asker is in its visibility set. Asking each
//! candidate's `BTreeSet<String>` costs three dependent loads (the fact, the set's node,
//! the name's bytes) per node a graph search visits. A shard is almost always asked on
//! behalf of its own character, so the answer for that character is kept as a bitset:
//! built once on first ask (one pass), extended as facts are added, a single load per
//! candidate after that.

use std::sync::{Arc, PoisonError, RwLock};

/// How many askers' bitsets are kept; the oldest is dropped past it. A shard's own
/// character is nearly always the only one.
const KEPT: usize = 4;

/// One bit per fact, in fact order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl FromIterator<bool> for Bits {
    fn from_iter<I: IntoIterator<Item = bool>>(bits: I) -> Self {
        let mut out = Self::default();
        for on in bits {
            out.push(on);
        }
        out
    }
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
    /// Which facts `character` can see: from the cache, or made by `build` (one pass
    /// over the facts) and kept.
    pub(crate) fn of(&self, character: &str, build: impl FnOnce() -> Bits) -> Arc<Bits> {
        {
            let kept = self.kept.read().unwrap_or_else(PoisonError::into_inner);
            if let Some((_, bits)) = kept.iter().find(|(who, _)| who == character) {
                return Arc::clone(bits);
            }
        }
        let bits = Arc::new(build());
        let mut kept = self.kept.write().unwrap_or_else(PoisonError::into_inner);
        // Another reader may have kept this asker's bits meanwhile: one entry each.
        if let Some((_, theirs)) = kept.iter().find(|(who, _)| who == character) {
            return Arc::clone(theirs);
        }
        if kept.len() >= KEPT {
            kept.remove(0);
        }
        kept.push((character.to_owned(), Arc::clone(&bits)));
        bits
    }

    /// Extends every kept bitset by the fact just added, which `sees` tells who can see.
    pub(crate) fn push(&mut self, sees: impl Fn(&str) -> bool) {
        let kept = self.kept.get_mut().unwrap_or_else(PoisonError::into_inner);
        for (who, bits) in kept.iter_mut() {
            Arc::make_mut(bits).push(sees(who));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fact `i` is seen by "ann" when `i` is a multiple of 3, by "bo" otherwise.
    fn sees(i: usize, who: &str) -> bool {
        (who == "ann") == i.is_multiple_of(3)
    }

    #[test]
    fn bits_follow_visibility_across_words_and_later_additions() {
        let mut sight = Sight::default();
        let ann = sight.of("ann", || (0..130).map(|i| sees(i, "ann")).collect());
        for i in 0..130 {
            assert_eq!(ann.get(i), i % 3 == 0, "fact {i}");
        }
        assert!(!ann.get(130));
        // A fact added later reaches the kept bitset; a reader's old copy is unchanged.
        sight.push(|_| true);
        assert!(!ann.get(130));
        let again = sight.of("ann", || panic!("kept, not built again"));
        assert!(again.get(130) && again.get(129) && !again.get(128));
    }

    #[test]
    fn an_asker_kept_by_another_reader_while_building_is_kept_once() {
        let sight = Sight::default();
        // The other reader asks, and keeps its bits, while this one is still building.
        let bits = sight.of("ann", || {
            let _ = sight.of("ann", || [true].into_iter().collect());
            [false].into_iter().collect()
        });
        assert!(bits.get(0), "the bits already kept are the ones returned");
        assert_eq!(sight.kept.read().expect("no writer panicked").len(), 1);
    }

    #[test]
    fn only_the_latest_askers_are_kept() {
        let sight = Sight::default();
        for who in ["a", "b", "c", "d", "e"] {
            let _ = sight.of(who, || [who == "e"].into_iter().collect());
        }
        let kept = sight.kept.read().expect("no writer panicked");
        let names: Vec<&str> = kept.iter().map(|(who, _)| who.as_str()).collect();
        assert_eq!(names, ["b", "c", "d", "e"]);
        assert!(kept[3].1.get(0) && !kept[0].1.get(0));
    }
}
