//! The episodic layer: one first-person memory per scene the character was present for.

use serde::{Deserialize, Serialize};

use crate::index::{Indexed, Keyed};

/// A scene as the character remembers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodicMemory {
    pub id: String,
    pub scene_id: String,
    /// In the character's own voice: what it did, felt, perceived, inferred.
    pub text: String,
}

impl Keyed for EpisodicMemory {
    fn key(&self) -> &str {
        &self.id
    }
}

/// The layer and its index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EpisodicLayer {
    memories: Indexed<EpisodicMemory>,
}

impl EpisodicLayer {
    pub fn add(&mut self, memory: EpisodicMemory, vector: &[f32]) {
        self.memories.push(memory, vector);
    }

    #[must_use]
    pub fn items(&self) -> &[EpisodicMemory] {
        self.memories.items()
    }

    /// Replaces the memory with the same id (a rewrite of the same scene); adds it when
    /// there is none. Returns its position.
    pub fn upsert(&mut self, memory: EpisodicMemory, vector: &[f32]) -> usize {
        self.memories.upsert(memory, vector)
    }

    /// The layer with only the memories `keep` accepts (by position), in order.
    #[must_use]
    pub fn retained(&self, keep: impl FnMut(usize, &EpisodicMemory) -> bool) -> Self {
        Self {
            memories: self.memories.retained(keep),
        }
    }

    /// The stored embedding of the memory at `position`.
    #[must_use]
    pub fn vector_at(&self, position: usize) -> Option<&[f32]> {
        self.memories.vector_at(position)
    }

    /// The stored embedding of the memory `id`.
    #[must_use]
    pub fn vector_of(&self, id: &str) -> Option<&[f32]> {
        self.memories.vector_of(id)
    }

    /// `Anchor(q, c)`: the `k` scene memories nearest the query, best first.
    #[must_use]
    pub fn anchor(&self, query: &[f32], k: usize) -> Vec<(&EpisodicMemory, f32)> {
        self.memories.search(query, k, |_| true)
    }
}
