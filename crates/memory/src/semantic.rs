//! The semantic layer: SPOCV facts — subject, predicate, object, cause, visibility — each
//! with the route by which the character came to see it. Retrieval is bounded to the
//! character's visible subset F_c; nothing outside it can be surfaced however relevant.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::index::{Indexed, Keyed};
use crate::lexical::Lexical;
use crate::sight::Sight;

/// How a character came to see a fact (ReverieMem §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VisibilityRoute {
    DirectExperience,
    Observation,
    OrganisationMembership,
    CommonKnowledge,
}

/// A fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub id: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    /// The in-story cause, when one is explicit.
    #[serde(default)]
    pub cause: String,
    /// Characters who can see this fact.
    pub visibility: BTreeSet<String>,
    pub route: VisibilityRoute,
    /// The fact as a sentence (what is embedded and shown in prompts).
    pub text: String,
}

impl Keyed for Fact {
    fn key(&self) -> &str {
        &self.id
    }
}

/// The layer, its vector index and its word index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "Saved")]
pub struct SemanticLayer {
    facts: Indexed<Fact>,
    /// The facts' words by position, rebuilt when the layer is read back.
    #[serde(skip)]
    words: Lexical,
    /// Which facts the characters last asked about can see (a cache, never saved).
    #[serde(skip)]
    sight: Sight,
}

/// The layer as saved: its facts and their vectors.
#[derive(Deserialize)]
struct Saved {
    facts: Indexed<Fact>,
}

impl From<Saved> for SemanticLayer {
    fn from(saved: Saved) -> Self {
        let mut words = Lexical::default();
        for fact in saved.facts.items() {
            words.push(&fact.text);
        }
        Self {
            facts: saved.facts,
            words,
            sight: Sight::default(),
        }
    }
}

impl SemanticLayer {
    pub fn add(&mut self, fact: Fact, vector: &[f32]) {
        self.words.push(&fact.text);
        self.sight.push(|who| fact.visibility.contains(who));
        self.facts.push(fact, vector);
    }

    /// The layer with only the facts `keep` accepts (by position), in order: its word
    /// index and rarities as they were when only those facts were held.
    #[must_use]
    pub fn retained(&self, mut keep: impl FnMut(usize, &Fact) -> bool) -> Self {
        let mut kept = Self::default();
        for (position, fact) in self.facts.items().iter().enumerate() {
            if keep(position, fact) {
                kept.add(fact.clone(), self.vector_at(position).unwrap_or_default());
            }
        }
        kept
    }

    /// How rare a word stem is among the facts ([`Lexical::rarity`]).
    #[must_use]
    pub fn word_rarity(&self, stem: &str) -> f32 {
        self.words.rarity(stem)
    }

    /// How many facts hold `stem` (visible to anyone).
    #[must_use]
    pub fn word_holders(&self, stem: &str) -> usize {
        self.words.holders(stem)
    }

    /// The facts visible to `character` that share the rarest words with `text`: the
    /// `k` best by BM25, each with its position and score, best first.
    #[must_use]
    pub fn vis_search_words(&self, character: &str, text: &str, k: usize) -> Vec<(usize, f32)> {
        let seen = self.sight(character);
        self.words.search(text, k, |p| seen.get(p))
    }

    /// Which facts `character` can see, one bit each ([`Sight`]).
    fn sight(&self, character: &str) -> std::sync::Arc<crate::sight::Bits> {
        self.sight.of(character, || {
            self.facts
                .items()
                .iter()
                .map(|f| f.visibility.contains(character))
                .collect()
        })
    }

    #[must_use]
    pub fn facts(&self) -> &[Fact] {
        self.facts.items()
    }

    /// The stored embedding of the fact `id`.
    #[must_use]
    pub fn vector_of(&self, id: &str) -> Option<&[f32]> {
        self.facts.vector_of(id)
    }

    /// The stored embedding of the fact at `position`.
    #[must_use]
    pub fn vector_at(&self, position: usize) -> Option<&[f32]> {
        self.facts.vector_at(position)
    }

    /// `Vis-Retrieve(P, F_c)`: for each probe the `k` nearest facts visible to
    /// `character`, merged by best score (a fact found by several probes counts once).
    #[must_use]
    pub fn vis_retrieve(
        &self,
        character: &str,
        probes: &[Vec<f32>],
        k: usize,
    ) -> Vec<(&Fact, f32)> {
        let facts = self.facts.items();
        self.vis_retrieve_at(character, probes, k)
            .into_iter()
            .map(|(position, score)| (&facts[position], score))
            .collect()
    }

    /// [`SemanticLayer::vis_retrieve`] by position.
    #[must_use]
    pub fn vis_retrieve_at(
        &self,
        character: &str,
        probes: &[Vec<f32>],
        k: usize,
    ) -> Vec<(usize, f32)> {
        let mut merged: Vec<(usize, f32)> = Vec::new();
        let seen = self.sight(character);
        let found = self.facts.search_many_by(probes, k, |p| seen.get(p));
        for hits in found {
            for hit in hits {
                match merged.iter_mut().find(|(seen, _)| *seen == hit.position) {
                    Some((_, best)) => *best = best.max(hit.score),
                    None => merged.push((hit.position, hit.score)),
                }
            }
        }
        // Stable: equal scores keep the order the facts were first found in.
        merged.sort_by(|a, b| b.1.total_cmp(&a.1));
        merged
    }
}
