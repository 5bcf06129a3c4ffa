//! A small HNSW graph (Malkov & Yashunin, 2018) over the vectors of one index, for
//! cosine similarity of unit vectors. Written here because the crates on offer did not
//! fit: `hnsw` 0.11 searches its bottom layer depth-first without a stopping rule (recall
//! near 0.3 at ef 150 on clustered data) and panics when a search finds fewer candidates
//! than asked; `instant-distance` cannot insert after building; `hnswlib-rs` brings some
//! fifty crates. This one inserts incrementally, is deterministic (levels come from a
//! fixed-seed generator), and leaves filtering and exact re-scoring to the caller.
//!
//! Node ids are positions in the owning index; vectors are read from the caller's
//! flat buffer, never copied.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Nodes a search has reached: one bit each (a hash set cost more than the distances).
struct Seen(Vec<u64>);

impl Seen {
    fn new(nodes: usize) -> Self {
        Self(vec![0; nodes.div_ceil(64)])
    }

    /// Marks `node`; false when it was marked already.
    fn insert(&mut self, node: u32) -> bool {
        let (word, bit) = (node as usize / 64, 1u64 << (node % 64));
        match self.0.get_mut(word) {
            Some(w) if *w & bit == 0 => {
                *w |= bit;
                true
            }
            _ => false,
        }
    }
}

/// Links per node above the bottom layer; the bottom layer keeps twice as many.
const M: usize = 12;
const M0: usize = 2 * M;
/// Candidate list size while inserting. 96 rather than the 64 this began with: at 100k
/// clustered vectors the better-linked graph reaches recall@8 0.96 at a search `ef` of
/// about 125 instead of 250, for a quarter again the insertion time (`bench retrieval`).
const EF_CONSTRUCTION: usize = 96;

/// A distance with a total order (smaller is nearer).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Near {
    distance: f32,
    node: u32,
}

impl Eq for Near {}

impl Ord for Near {
    fn cmp(&self, other: &Self) -> Ordering {
        self.distance
            .total_cmp(&other.distance)
            .then(self.node.cmp(&other.node))
    }
}

impl PartialOrd for Near {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The graph: for each layer, each node's neighbour list.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Graph {
    /// `links[level][node]`: neighbours of `node` at `level` (empty when the node does
    /// not reach that level).
    links: Vec<Vec<Vec<u32>>>,
    /// Top level of each node.
    levels: Vec<u8>,
    entry: Option<u32>,
    rng: u64,
}

/// Reads the vector of a node from the owning index.
pub trait Vectors {
    fn row(&self, node: usize) -> &[f32];
}

/// Cosine distance of unit vectors (smaller is nearer).
fn to(vectors: &impl Vectors, query: &[f32], node: u32) -> f32 {
    distance(query, vectors.row(node as usize))
}

fn distance(a: &[f32], b: &[f32]) -> f32 {
    1.0 - crate::vector::dot(a, b)
}

/// The neighbour-selection heuristic (the paper's Algorithm 4): from candidates sorted
/// nearest first, keep one only if it is nearer the new node than to every one kept so
/// far, so links reach out in different directions and clusters stay connected; then
/// fill up with the nearest of those passed over.
fn select(vectors: &impl Vectors, sorted: &[Near], cap: usize) -> Vec<u32> {
    let mut kept: Vec<u32> = Vec::with_capacity(cap);
    let mut passed: Vec<u32> = Vec::new();
    for candidate in sorted {
        if kept.len() == cap {
            break;
        }
        let row = vectors.row(candidate.node as usize);
        if kept
            .iter()
            .all(|&k| distance(row, vectors.row(k as usize)) > candidate.distance)
        {
            kept.push(candidate.node);
        } else {
            passed.push(candidate.node);
        }
    }
    for node in passed {
        if kept.len() == cap {
            break;
        }
        kept.push(node);
    }
    kept
}

impl Graph {
    #[must_use]
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// SplitMix64: a level for the next node, geometric with ratio 1/M.
    fn next_level(&mut self) -> usize {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        #[allow(clippy::cast_precision_loss)]
        let uniform = ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        #[allow(clippy::cast_precision_loss)]
        let scale = 1.0 / (M as f64).ln();
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let level = (-uniform.ln() * scale).floor() as usize;
        level.min(16)
    }

    /// Adds the next node (its vector must already be readable through `vectors`).
    pub fn insert(&mut self, vectors: &impl Vectors) {
        let node = self.len();
        let Ok(id) = u32::try_from(node) else {
            return;
        };
        let level = self.next_level();
        self.levels.push(u8::try_from(level).unwrap_or(u8::MAX));
        while self.links.len() <= level {
            self.links.push(Vec::new());
        }
        for layer in &mut self.links {
            layer.resize(node + 1, Vec::new());
        }
        let Some(entry) = self.entry else {
            self.entry = Some(id);
            return;
        };
        self.link(vectors, id, entry);
        if level > usize::from(self.levels[entry as usize]) {
            self.entry = Some(id);
        }
    }

    /// Links `node` again once its vector has changed: its own neighbours are chosen
    /// anew for the new vector, and each links back to it. What the rest of the graph
    /// holds is not rebuilt: links other nodes keep to it still lead near where it
    /// was, and their next prune judges them by the new vector. The cost of one
    /// insertion, where rebuilding the graph cost one per node.
    pub fn relink(&mut self, vectors: &impl Vectors, node: usize) {
        let (Some(entry), Ok(id)) = (self.entry, u32::try_from(node)) else {
            return;
        };
        if node < self.len() {
            self.link(vectors, id, entry);
        }
    }

    /// Chooses `id`'s neighbours on each of its layers by a search from `entry`, and
    /// links each of them back to it.
    fn link(&mut self, vectors: &impl Vectors, id: u32, entry: u32) {
        let node = id as usize;
        let level = usize::from(self.levels[node]);
        let query = vectors.row(node);
        let top = usize::from(self.levels[entry as usize]);
        let mut nearest = Near {
            distance: to(vectors, query, entry),
            node: entry,
        };
        for layer in (level + 1..=top).rev() {
            nearest = self.greedy(vectors, query, nearest, layer);
        }
        let mut entries = vec![nearest];
        for layer in (0..=level.min(top)).rev() {
            let mut found =
                self.search_layer(vectors, query, &entries, EF_CONSTRUCTION, layer, &|_| true);
            // A node linked before is found through the links others keep to it.
            found.retain(|n| n.node != id);
            let cap = if layer == 0 { M0 } else { M };
            let chosen = select(vectors, &found, cap);
            for &neighbour in &chosen {
                if !self.links[layer][neighbour as usize].contains(&id) {
                    self.links[layer][neighbour as usize].push(id);
                    self.prune(vectors, neighbour, layer, cap);
                }
            }
            self.links[layer][node] = chosen;
            if !found.is_empty() {
                entries = found;
            }
        }
    }

    /// Keeps the `cap` nearest links of `node` at `layer`.
    fn prune(&mut self, vectors: &impl Vectors, node: u32, layer: usize, cap: usize) {
        let list = &self.links[layer][node as usize];
        if list.len() <= cap {
            return;
        }
        let own = vectors.row(node as usize);
        let mut scored: Vec<Near> = list
            .iter()
            .map(|&n| Near {
                distance: distance(own, vectors.row(n as usize)),
                node: n,
            })
            .collect();
        scored.sort_unstable();
        self.links[layer][node as usize] = select(vectors, &scored, cap);
    }

    /// Walks to the node nearest `query` at `layer`, starting from `from`.
    fn greedy(&self, vectors: &impl Vectors, query: &[f32], from: Near, layer: usize) -> Near {
        let mut best = from;
        loop {
            let mut moved = false;
            for &n in &self.links[layer][best.node as usize] {
                let d = to(vectors, query, n);
                if d < best.distance {
                    best = Near {
                        distance: d,
                        node: n,
                    };
                    moved = true;
                }
            }
            if !moved {
                return best;
            }
        }
    }

    /// Best-first search of one layer that walks through every node but keeps only
    /// those `admit` accepts: up to `ef` of them, nearest first. The filter works
    /// inside the search, so a search for what one character may see finds `ef` of
    /// those, not `ef` of everyone's with the rest thrown away.
    fn search_layer(
        &self,
        vectors: &impl Vectors,
        query: &[f32],
        entries: &[Near],
        ef: usize,
        layer: usize,
        admit: &dyn Fn(usize) -> bool,
    ) -> Vec<Near> {
        let mut seen = Seen::new(self.len());
        for entry in entries {
            seen.insert(entry.node);
        }
        let mut candidates: BinaryHeap<Reverse<Near>> =
            entries.iter().copied().map(Reverse).collect();
        let mut results: BinaryHeap<Near> = entries
            .iter()
            .copied()
            .filter(|n| admit(n.node as usize))
            .collect();
        while let Some(Reverse(current)) = candidates.pop() {
            if results.len() >= ef
                && results
                    .peek()
                    .is_some_and(|worst| current.distance > worst.distance)
            {
                break;
            }
            // The unseen neighbours are gathered and their rows' first bytes read
            // before any is scored: the memory loads overlap instead of each waiting
            // for the one before (at 100k vectors the search waits on memory more than
            // it computes).
            let mut fresh = [0u32; M0];
            let mut count = 0;
            for &n in &self.links[layer][current.node as usize] {
                if count < M0 && seen.insert(n) {
                    fresh[count] = n;
                    count += 1;
                }
            }
            for &n in &fresh[..count] {
                std::hint::black_box(vectors.row(n as usize).first().copied());
            }
            for &n in &fresh[..count] {
                let d = to(vectors, query, n);
                let near = Near {
                    distance: d,
                    node: n,
                };
                if results.len() < ef || results.peek().is_some_and(|w| d < w.distance) {
                    candidates.push(Reverse(near));
                    if admit(n as usize) {
                        results.push(near);
                        if results.len() > ef {
                            results.pop();
                        }
                    }
                }
            }
        }
        results.into_sorted_vec()
    }

    /// Up to `ef` nodes nearest `query` among those `admit` accepts, nearest first.
    pub fn search(
        &self,
        vectors: &impl Vectors,
        query: &[f32],
        ef: usize,
        admit: &dyn Fn(usize) -> bool,
    ) -> Vec<usize> {
        let Some(entry) = self.entry else {
            return Vec::new();
        };
        let mut nearest = Near {
            distance: to(vectors, query, entry),
            node: entry,
        };
        for layer in (1..=usize::from(self.levels[entry as usize])).rev() {
            nearest = self.greedy(vectors, query, nearest, layer);
        }
        self.search_layer(vectors, query, &[nearest], ef, 0, admit)
            .into_iter()
            .map(|n| n.node as usize)
            .collect()
    }
}
