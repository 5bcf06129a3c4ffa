//! Exact nearest-neighbour search by cosine similarity over L2-normalised vectors.
//! Brute force is the right tool at the sizes a character shard reaches (a scan of
//! 10k x 384 floats takes about a millisecond); an ANN index would pay off past that.

use serde::{Deserialize, Serialize};

/// One search result: the position of the item and its similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub position: usize,
    pub score: f32,
}

/// Vectors kept in insertion order; positions are stable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VectorIndex {
    dimension: usize,
    data: Vec<f32>,
}

impl VectorIndex {
    #[must_use]
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension,
            data: Vec::new(),
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dimension).unwrap_or(0)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    #[must_use]
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Appends a vector; returns its position. Panics never: a vector of the wrong length
    /// is padded or cut to the index's dimension.
    pub fn push(&mut self, vector: &[f32]) -> usize {
        if self.dimension == 0 {
            self.dimension = vector.len();
        }
        let position = self.len();
        let mut row = vector.to_vec();
        row.resize(self.dimension, 0.0);
        self.data.extend_from_slice(&row);
        position
    }

    /// Replaces the vector at `position` (ignored when out of range).
    pub fn set(&mut self, position: usize, vector: &[f32]) {
        let dimension = self.dimension;
        if let Some(row) = position
            .checked_mul(dimension)
            .and_then(|start| self.data.get_mut(start..start + dimension))
        {
            for (slot, value) in row
                .iter_mut()
                .zip(vector.iter().chain(std::iter::repeat(&0.0)))
            {
                *slot = *value;
            }
        }
    }

    /// The vector at `position`.
    #[must_use]
    pub fn vector(&self, position: usize) -> Option<&[f32]> {
        let start = position.checked_mul(self.dimension)?;
        self.data.get(start..start + self.dimension)
    }

    /// The `k` best positions for `query` among those `admit` accepts, best first.
    pub fn search(&self, query: &[f32], k: usize, admit: impl Fn(usize) -> bool) -> Vec<Hit> {
        if k == 0 || self.dimension == 0 {
            return Vec::new();
        }
        let mut hits: Vec<Hit> = self
            .data
            .chunks_exact(self.dimension)
            .enumerate()
            .filter(|(position, _)| admit(*position))
            .map(|(position, row)| Hit {
                position,
                score: row.iter().zip(query).map(|(a, b)| a * b).sum(),
            })
            .collect();
        let by_score = |a: &Hit, b: &Hit| {
            b.score
                .total_cmp(&a.score)
                .then(a.position.cmp(&b.position))
        };
        if hits.len() > k {
            hits.select_nth_unstable_by(k - 1, by_score);
            hits.truncate(k);
        }
        hits.sort_by(by_score);
        hits
    }
}

/// Items with one vector each, searchable together: what every layer is made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Indexed<T> {
    items: Vec<T>,
    index: VectorIndex,
}

impl<T> Default for Indexed<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            index: VectorIndex::default(),
        }
    }
}

impl<T> Indexed<T> {
    pub fn push(&mut self, item: T, vector: &[f32]) {
        self.index.push(vector);
        self.items.push(item);
    }

    #[must_use]
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// Replaces the first item `matches` accepts, and its vector; false when none does.
    pub fn replace(&mut self, matches: impl Fn(&T) -> bool, item: T, vector: &[f32]) -> bool {
        let Some(position) = self.items.iter().position(matches) else {
            return false;
        };
        self.items[position] = item;
        self.index.set(position, vector);
        true
    }

    /// The vector of the first item `matches` accepts.
    pub fn vector_of(&self, matches: impl Fn(&T) -> bool) -> Option<&[f32]> {
        let position = self.items.iter().position(matches)?;
        self.index.vector(position)
    }

    /// The `k` items nearest `query` among those `admit` accepts, best first.
    pub fn search(&self, query: &[f32], k: usize, admit: impl Fn(&T) -> bool) -> Vec<(&T, f32)> {
        self.index
            .search(query, k, |position| admit(&self.items[position]))
            .into_iter()
            .map(|hit| (&self.items[hit.position], hit.score))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_first_with_filter_and_stable_ties() {
        let mut index = VectorIndex::new(2);
        index.push(&[1.0, 0.0]); // 0
        index.push(&[0.0, 1.0]); // 1
        index.push(&[0.6, 0.8]); // 2
        index.push(&[1.0, 0.0]); // 3, ties with 0
        let hits = index.search(&[1.0, 0.0], 3, |_| true);
        let order: Vec<usize> = hits.iter().map(|h| h.position).collect();
        assert_eq!(order, [0, 3, 2]);
        let filtered = index.search(&[1.0, 0.0], 2, |p| p != 0);
        assert_eq!(
            filtered.iter().map(|h| h.position).collect::<Vec<_>>(),
            [3, 2]
        );
        assert!(index.search(&[1.0, 0.0], 0, |_| true).is_empty());
        assert_eq!(index.len(), 4);
    }
}
