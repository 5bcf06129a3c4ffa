//! The episodic layer: one first-person memory per scene the character was present for.

use serde::{Deserialize, Serialize};

use crate::index::VectorIndex;

/// A scene as the character remembers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodicMemory {
    pub id: String,
    pub scene_id: String,
    /// In the character's own voice: what it did, felt, perceived, inferred.
    pub text: String,
}

/// The layer and its index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EpisodicLayer {
    items: Vec<EpisodicMemory>,
    index: VectorIndex,
}

impl EpisodicLayer {
    pub fn add(&mut self, memory: EpisodicMemory, vector: &[f32]) {
        self.index.push(vector);
        self.items.push(memory);
    }

    #[must_use]
    pub fn items(&self) -> &[EpisodicMemory] {
        &self.items
    }

    /// `Anchor(q, c)`: the `k` scene memories nearest the query, best first.
    #[must_use]
    pub fn anchor(&self, query: &[f32], k: usize) -> Vec<(&EpisodicMemory, f32)> {
        self.index
            .search(query, k, |_| true)
            .into_iter()
            .map(|hit| (&self.items[hit.position], hit.score))
            .collect()
    }
}
