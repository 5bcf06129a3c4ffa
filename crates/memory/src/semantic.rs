//! The semantic layer: SPOCV facts — subject, predicate, object, cause, visibility — each
//! with the route by which the character came to see it. Retrieval is bounded to the
//! character's visible subset F_c; nothing outside it can be surfaced however relevant.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::index::Indexed;

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

/// The layer and its index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SemanticLayer {
    facts: Indexed<Fact>,
}

impl SemanticLayer {
    pub fn add(&mut self, fact: Fact, vector: &[f32]) {
        self.facts.push(fact, vector);
    }

    #[must_use]
    pub fn facts(&self) -> &[Fact] {
        self.facts.items()
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
        let mut merged: Vec<(&Fact, f32)> = Vec::new();
        let found = self
            .facts
            .search_many(probes, k, |f| f.visibility.contains(character));
        for hits in found {
            for (fact, score) in hits {
                match merged
                    .iter_mut()
                    .find(|(seen, _)| std::ptr::eq(*seen, fact))
                {
                    Some((_, best)) => *best = best.max(score),
                    None => merged.push((fact, score)),
                }
            }
        }
        // Stable: equal scores keep the order the facts were first found in.
        merged.sort_by(|a, b| b.1.total_cmp(&a.1));
        merged
    }
}
