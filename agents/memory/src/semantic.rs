//! The semantic layer: SPOCV facts — subject, predicate, object, cause, visibility — each
//! with the route by which the character came to see it. Retrieval is bounded to the
//! character's visible subset F_c; nothing outside it can be surfaced however relevant.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::index::VectorIndex;

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
    facts: Vec<Fact>,
    index: VectorIndex,
}

impl SemanticLayer {
    pub fn add(&mut self, fact: Fact, vector: &[f32]) {
        self.index.push(vector);
        self.facts.push(fact);
    }

    #[must_use]
    pub fn facts(&self) -> &[Fact] {
        &self.facts
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
        let mut best: HashMap<usize, f32> = HashMap::new();
        for probe in probes {
            let visible = |position: usize| self.facts[position].visibility.contains(character);
            for hit in self.index.search(probe, k, visible) {
                let score = best.entry(hit.position).or_insert(hit.score);
                *score = score.max(hit.score);
            }
        }
        let mut ranked: Vec<(usize, f32)> = best.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
            .into_iter()
            .map(|(position, score)| (&self.facts[position], score))
            .collect()
    }
}
