//! Nearest-neighbour search by cosine similarity over L2-normalised vectors. Below
//! [`ANN_THRESHOLD`] vectors a search is an exact scan (about 0.2 ms for one query at
//! 10k x 384 on AVX-512, through [`crate::vector::run`]);
//! past it, an HNSW graph ([`crate::hnsw`]) finds candidates and their exact scores
//! rank them. The graph is linked a few vectors per insertion from [`ANN_LINK_FROM`]
//! on, so that it is whole when the index reaches the threshold and no one insertion
//! links thousands; it is saved with the vectors.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::hnsw::{Graph, Vectors};
use crate::vector::{Kernel, Simd, dot, dot_in};

/// Vectors from which searches go through the HNSW graph.
pub const ANN_THRESHOLD: usize = 8192;

/// Vectors from which the graph is linked: each insertion past this links two, so the
/// graph takes in every vector by [`ANN_THRESHOLD`]. Built all at once there, it held
/// up the insertion that crossed it for as long as 8,192 insertions take (2.5 s or
/// more), and that insertion is a line's memory, on the line's path.
pub const ANN_LINK_FROM: usize = ANN_THRESHOLD / 2;

/// The most vectors one insertion links: its own share and some of a backlog (a saved
/// index that crossed [`ANN_LINK_FROM`] before the graph was linked this way). Until
/// the graph holds every vector, searches scan.
const LINKS_PER_PUSH: usize = 4;

/// Candidates a graph search keeps (its `ef`): one per 800 vectors, between 64 and 128.
/// With the visibility filter inside the walk these are all admitted. At 10k, 64 keep
/// recall@8 at 0.99; at 100k, 125 keep it at 0.96 (`bench retrieval`; `scripts/ann-compare`
/// for the sweep and the crates beside it), where a fixed 128 would cost a 10k search
/// more than it gains.
fn ann_ef(vectors: usize) -> usize {
    (vectors / 800).clamp(64, 128)
}

/// One search result: the position of the item and its similarity to the query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub position: usize,
    pub score: f32,
}

/// Rows of a flat vector buffer.
struct Rows<'a> {
    data: &'a [f32],
    dimension: usize,
}

impl Vectors for Rows<'_> {
    fn row(&self, node: usize) -> &[f32] {
        &self.data[node * self.dimension..(node + 1) * self.dimension]
    }
}

/// Vectors kept in insertion order; positions are stable. The graph holds the first
/// [`VectorIndex::linked`] of them, all of them from [`ANN_THRESHOLD`] on.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct VectorIndex {
    dimension: usize,
    data: Vec<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    graph: Option<Graph>,
}

impl PartialEq for VectorIndex {
    /// Equal vectors make equal indexes (the graph is derived from them).
    fn eq(&self, other: &Self) -> bool {
        self.dimension == other.dimension && self.data == other.data
    }
}

impl VectorIndex {
    #[must_use]
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension,
            data: Vec::new(),
            graph: None,
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
        self.link_some();
        position
    }

    /// Vectors the graph holds (searches go through it once it holds them all, from
    /// [`ANN_THRESHOLD`] on).
    #[must_use]
    pub fn linked(&self) -> usize {
        self.graph.as_ref().map_or(0, Graph::len)
    }

    /// Links what this many vectors are due: two per insertion past [`ANN_LINK_FROM`],
    /// every one from [`ANN_THRESHOLD`] on, at most [`LINKS_PER_PUSH`] at a time.
    fn link_some(&mut self) {
        let len = self.len();
        if len <= ANN_LINK_FROM {
            return;
        }
        let due = (2 * (len - ANN_LINK_FROM)).min(len);
        let rows = Rows {
            data: &self.data,
            dimension: self.dimension,
        };
        let graph = self.graph.get_or_insert_with(Graph::default);
        let target = due.min(graph.len() + LINKS_PER_PUSH);
        while graph.len() < target {
            // Each insertion reads the rows up to and including its own.
            graph.insert(&rows);
        }
    }

    /// The graph, when it holds every vector.
    fn whole_graph(&self) -> Option<&Graph> {
        self.graph
            .as_ref()
            .filter(|graph| graph.len() == self.len())
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
            // The graph linked the old vector: this node's links are chosen again. (One
            // not linked yet is linked with its new vector when its turn comes.)
            if let Some(graph) = &mut self.graph {
                let rows = Rows {
                    data: &self.data,
                    dimension,
                };
                graph.relink(&rows, position);
            }
        }
    }

    /// The vector at `position`.
    #[must_use]
    pub fn vector(&self, position: usize) -> Option<&[f32]> {
        let start = position.checked_mul(self.dimension)?;
        self.data.get(start..start + self.dimension)
    }

    /// The `k` best positions for `query` among those `admit` accepts, best first:
    /// exact below [`ANN_THRESHOLD`], through the graph above it.
    pub fn search(&self, query: &[f32], k: usize, admit: impl Fn(usize) -> bool) -> Vec<Hit> {
        self.search_with_ef(query, k, ann_ef(self.len()), admit)
    }

    /// [`Self::search`] keeping `ef` candidates in a graph search (at least `k`): more
    /// finds the exact answer more often and costs more.
    pub fn search_with_ef(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        admit: impl Fn(usize) -> bool,
    ) -> Vec<Hit> {
        if k == 0 || self.dimension == 0 {
            return Vec::new();
        }
        if let Some(hits) = self.search_graph(query, k, ef.max(k), &admit) {
            return hits;
        }
        self.search_exact(query, k, admit)
    }

    /// The `k` best positions for each of `queries` (best first, as [`Self::search`]
    /// gives them). Below [`ANN_THRESHOLD`] it is one pass over the vectors: each is
    /// admitted once and read once for every query while it is in cache, and each query
    /// keeps only its `k` best, so the cost is one scan, not one per query.
    pub fn search_many(
        &self,
        queries: &[Vec<f32>],
        k: usize,
        admit: impl Fn(usize) -> bool,
    ) -> Vec<Vec<Hit>> {
        if k == 0 || self.dimension == 0 {
            return vec![Vec::new(); queries.len()];
        }
        if self.whole_graph().is_some() {
            return queries
                .iter()
                .map(|query| self.search(query, k, &admit))
                .collect();
        }
        crate::vector::run(ScanMany {
            data: &self.data,
            dimension: self.dimension,
            queries,
            k,
            admit,
        })
    }

    /// Exact search: every admitted vector is scored.
    pub fn search_exact(&self, query: &[f32], k: usize, admit: impl Fn(usize) -> bool) -> Vec<Hit> {
        if k == 0 || self.dimension == 0 {
            return Vec::new();
        }
        let queries = std::slice::from_ref(&query);
        let mut found = crate::vector::run(ScanMany {
            data: &self.data,
            dimension: self.dimension,
            queries,
            k,
            admit,
        });
        found.pop().unwrap_or_default()
    }

    /// Graph search: `ef` candidates, filtered, scored exactly. `None` without a graph
    /// or when the filter left fewer than `k` candidates (the caller scans instead).
    fn search_graph(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        admit: &impl Fn(usize) -> bool,
    ) -> Option<Vec<Hit>> {
        let graph = self.whole_graph()?;
        let mut query = query.to_vec();
        query.resize(self.dimension, 0.0);
        let rows = Rows {
            data: &self.data,
            dimension: self.dimension,
        };
        let neighbours = graph.search(&rows, &query, ef, admit);
        let mut hits: Vec<Hit> = neighbours
            .into_iter()
            .map(|position| Hit {
                position,
                score: dot(rows.row(position), &query),
            })
            .collect();
        if hits.len() < k {
            return None;
        }
        top(&mut hits, k);
        Some(hits)
    }
}

/// The exact scan for several queries in one pass: each admitted vector is read once
/// and scored for every query while it is in cache; each query keeps its `k` best.
struct ScanMany<'a, Q, F> {
    data: &'a [f32],
    dimension: usize,
    queries: &'a [Q],
    k: usize,
    admit: F,
}

impl<Q: AsRef<[f32]>, F: Fn(usize) -> bool> Kernel for ScanMany<'_, Q, F> {
    type Output = Vec<Vec<Hit>>;

    // Plain loops, not iterator adapters: an adapter's closure is a function of its own,
    // compiled without the instruction set, and the arithmetic inlined into it becomes a
    // call per operation (a scan with `filter` and `map` ran ten times slower).
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> Vec<Vec<Hit>> {
        let k = self.k;
        let mut best: Vec<Vec<Hit>> = vec![Vec::with_capacity(k + 1); self.queries.len()];
        for (position, row) in self.data.chunks_exact(self.dimension).enumerate() {
            if !(self.admit)(position) {
                continue;
            }
            for (query, kept) in self.queries.iter().zip(&mut best) {
                let score = dot_in(simd, row, query.as_ref());
                // Positions come in order, so a tie never displaces an earlier hit.
                if kept.len() == k && kept[k - 1].score.total_cmp(&score).is_ge() {
                    continue;
                }
                let at = kept.partition_point(|h| h.score.total_cmp(&score).is_ge());
                kept.insert(at, Hit { position, score });
                kept.truncate(k);
            }
        }
        best
    }
}

/// Keeps the `k` best hits, best first (ties by position).
fn top(hits: &mut Vec<Hit>, k: usize) {
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
}

/// What an [`Indexed`] item is found by, besides its vector: its id.
pub trait Keyed {
    fn key(&self) -> &str;
}

/// Items with one vector each, searchable together: what every layer is made of. An
/// item is also found by its id without reading the others (the first item with an id
/// is the one found).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(
    from = "StoredItems<T>",
    bound(deserialize = "T: Deserialize<'de> + Keyed")
)]
pub struct Indexed<T> {
    items: Vec<T>,
    index: VectorIndex,
    /// Position of each id, rebuilt when the items are read back.
    #[serde(skip)]
    positions: HashMap<String, usize>,
}

/// [`Indexed`] as saved.
#[derive(Deserialize)]
struct StoredItems<T> {
    items: Vec<T>,
    index: VectorIndex,
}

impl<T: Keyed> From<StoredItems<T>> for Indexed<T> {
    fn from(stored: StoredItems<T>) -> Self {
        let mut positions = HashMap::with_capacity(stored.items.len());
        for (position, item) in stored.items.iter().enumerate() {
            positions.entry(item.key().to_owned()).or_insert(position);
        }
        Self {
            items: stored.items,
            index: stored.index,
            positions,
        }
    }
}

impl<T: PartialEq> PartialEq for Indexed<T> {
    /// Equal items and vectors (the positions are derived from the items).
    fn eq(&self, other: &Self) -> bool {
        self.items == other.items && self.index == other.index
    }
}

impl<T> Default for Indexed<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            index: VectorIndex::default(),
            positions: HashMap::new(),
        }
    }
}

impl<T: Keyed> Indexed<T> {
    pub fn push(&mut self, item: T, vector: &[f32]) {
        let position = self.items.len();
        self.positions
            .entry(item.key().to_owned())
            .or_insert(position);
        self.index.push(vector);
        self.items.push(item);
    }

    /// Replaces the item with `item`'s id, and its vector, or adds it when there is
    /// none. Returns its position.
    pub fn upsert(&mut self, item: T, vector: &[f32]) -> usize {
        match self.position_of(item.key()) {
            Some(position) => {
                self.items[position] = item;
                self.index.set(position, vector);
                position
            }
            None => {
                self.push(item, vector);
                self.items.len() - 1
            }
        }
    }

    /// The position of the item `id`.
    #[must_use]
    pub fn position_of(&self, id: &str) -> Option<usize> {
        self.positions.get(id).copied()
    }

    /// The vector of the item `id`.
    #[must_use]
    pub fn vector_of(&self, id: &str) -> Option<&[f32]> {
        self.index.vector(self.position_of(id)?)
    }
}

impl<T: Keyed + Clone> Indexed<T> {
    /// The items `keep` accepts (by position), in their order, with their vectors:
    /// the index as it would stand had only they been pushed.
    #[must_use]
    pub fn retained(&self, mut keep: impl FnMut(usize, &T) -> bool) -> Self {
        let mut kept = Self::default();
        for (position, item) in self.items.iter().enumerate() {
            if keep(position, item) {
                kept.push(
                    item.clone(),
                    self.index.vector(position).unwrap_or_default(),
                );
            }
        }
        kept
    }
}

impl<T> Indexed<T> {
    #[must_use]
    pub fn items(&self) -> &[T] {
        &self.items
    }

    /// The vector of the item at `position`.
    #[must_use]
    pub fn vector_at(&self, position: usize) -> Option<&[f32]> {
        self.index.vector(position)
    }

    /// The `k` items nearest each of `queries` among the positions `admit` accepts, best
    /// first, in one pass ([`VectorIndex::search_many`]).
    pub fn search_many_by(
        &self,
        queries: &[Vec<f32>],
        k: usize,
        admit: impl Fn(usize) -> bool,
    ) -> Vec<Vec<Hit>> {
        self.index.search_many(queries, k, admit)
    }

    /// [`Indexed::search_many_by`] admitting by item, with the items themselves.
    pub fn search_many(
        &self,
        queries: &[Vec<f32>],
        k: usize,
        admit: impl Fn(&T) -> bool,
    ) -> Vec<Vec<(&T, f32)>> {
        self.index
            .search_many(queries, k, |position| admit(&self.items[position]))
            .into_iter()
            .map(|hits| {
                hits.into_iter()
                    .map(|hit| (&self.items[hit.position], hit.score))
                    .collect()
            })
            .collect()
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

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Note {
        id: String,
        text: String,
    }

    impl Keyed for Note {
        fn key(&self) -> &str {
            &self.id
        }
    }

    fn note(id: &str, text: &str) -> Note {
        Note {
            id: id.into(),
            text: text.into(),
        }
    }

    #[test]
    fn items_are_found_by_id_after_reading_back_and_replaced_where_they_are() {
        let mut notes = Indexed::default();
        notes.push(note("a", "first"), &[1.0, 0.0]);
        notes.push(note("b", "second"), &[0.0, 1.0]);
        // A second item with an id already held: the first keeps the id.
        notes.push(note("a", "again"), &[0.6, 0.8]);
        assert_eq!(notes.position_of("b"), Some(1));
        assert_eq!(notes.position_of("a"), Some(0));
        assert_eq!(notes.vector_of("b"), Some(&[0.0, 1.0][..]));
        assert_eq!(notes.position_of("c"), None);

        let saved = serde_json::to_string(&notes).expect("saved");
        assert!(!saved.contains("positions"), "{saved}");
        let mut back: Indexed<Note> = serde_json::from_str(&saved).expect("read back");
        assert_eq!(back, notes);
        assert_eq!(back.position_of("a"), Some(0));
        assert_eq!(back.vector_of("b"), Some(&[0.0, 1.0][..]));

        assert_eq!(back.upsert(note("b", "rewritten"), &[1.0, 0.0]), 1);
        assert_eq!(back.items()[1].text, "rewritten");
        assert_eq!(back.vector_of("b"), Some(&[1.0, 0.0][..]));
        assert_eq!(back.upsert(note("c", "new"), &[0.0, 1.0]), 3);
        assert_eq!(back.position_of("c"), Some(3));
        assert_eq!(back.items().len(), 4);
    }

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

    #[test]
    fn one_pass_for_many_queries_finds_what_each_search_finds() {
        let vectors = clustered(900, 24, 11);
        let mut index = VectorIndex::new(24);
        for v in &vectors {
            index.push(v);
        }
        // Exact duplicates make ties, which must break by position as in `search`.
        index.push(&vectors[5]);
        index.push(&vectors[5]);
        let queries: Vec<Vec<f32>> = [5, 17, 300, 899]
            .iter()
            .map(|&i| vectors[i].clone())
            .collect();
        let admit = |p: usize| p % 7 != 3;
        for k in [1, 3, 10] {
            let many = index.search_many(&queries, k, admit);
            assert_eq!(many.len(), queries.len());
            for (query, hits) in queries.iter().zip(&many) {
                assert_eq!(hits, &index.search_exact(query, k, admit), "k = {k}");
            }
        }
        assert!(
            index
                .search_many(&queries, 0, admit)
                .iter()
                .all(Vec::is_empty)
        );
        assert!(index.search_many(&[], 3, admit).is_empty());
    }

    /// Clustered unit vectors, like sentence embeddings: 64 topics, noise around each.
    fn clustered(count: usize, dimension: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            #[allow(clippy::cast_precision_loss)]
            let unit = (state % 20_000) as f32 / 10_000.0 - 1.0;
            unit
        };
        let centres: Vec<Vec<f32>> = (0..64)
            .map(|_| (0..dimension).map(|_| next()).collect())
            .collect();
        (0..count)
            .map(|i| {
                let centre = &centres[i % centres.len()];
                let mut v: Vec<f32> = centre.iter().map(|c| c + 0.6 * next()).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter_mut().for_each(|x| *x /= norm);
                v
            })
            .collect()
    }

    #[test]
    fn the_graph_keeps_only_what_the_filter_admits_while_it_searches() {
        let dimension = 32;
        let mut index = VectorIndex::new(dimension);
        for v in &clustered(ANN_THRESHOLD + 100, dimension, 5) {
            index.push(v);
        }
        let graph = index.graph.as_ref().expect("a graph past the threshold");
        let rows = Rows {
            data: &index.data,
            dimension,
        };
        // One in twenty admitted: a filter after a top-10 would leave about none.
        let admit = |p: usize| p.is_multiple_of(20);
        let (mut agreed, mut total) = (0usize, 0usize);
        for seed in 0..10 {
            let query = clustered(1, dimension, 77 + seed).remove(0);
            let found = graph.search(&rows, &query, 10, &admit);
            assert_eq!(found.len(), 10);
            assert!(found.iter().all(|p| admit(*p)));
            let exact = index.search_exact(&query, 10, admit);
            agreed += exact.iter().filter(|h| found.contains(&h.position)).count();
            total += exact.len();
        }
        #[allow(clippy::cast_precision_loss)]
        let recall = agreed as f64 / total as f64;
        assert!(recall >= 0.9, "recall@10 {recall:.3}");
    }

    #[test]
    fn past_the_threshold_the_graph_finds_what_the_scan_finds() {
        let dimension = 48;
        let mut index = VectorIndex::new(dimension);
        let data = clustered(ANN_THRESHOLD + 500, dimension, 7);
        for v in &data {
            index.push(v);
        }
        // Queries near stored items, as questions about something remembered are.
        let jitter = clustered(40, dimension, 99);
        let queries: Vec<Vec<f32>> = jitter
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let mut q: Vec<f32> = data[i * 211]
                    .iter()
                    .zip(j)
                    .map(|(d, n)| d + 0.3 * n)
                    .collect();
                let norm = q.iter().map(|x| x * x).sum::<f32>().sqrt();
                q.iter_mut().for_each(|x| *x /= norm);
                q
            })
            .collect();
        let admit = |p: usize| !p.is_multiple_of(3);
        let (mut agreed, mut total) = (0usize, 0usize);
        for q in &queries {
            let exact: Vec<usize> = index
                .search_exact(q, 10, admit)
                .iter()
                .map(|h| h.position)
                .collect();
            let fast = index.search(q, 10, admit);
            assert!(fast.iter().all(|h| admit(h.position)), "the filter holds");
            assert!(
                fast.windows(2).all(|w| w[0].score >= w[1].score),
                "best first"
            );
            agreed += fast.iter().filter(|h| exact.contains(&h.position)).count();
            total += exact.len();
        }
        #[allow(clippy::cast_precision_loss)]
        let recall = agreed as f64 / total as f64;
        assert!(recall >= 0.9, "recall@10 {recall:.3}");
        // Growth after the graph exists goes into the graph: an exact copy is found.
        let fresh = clustered(1, dimension, 12_345).remove(0);
        let position = index.push(&fresh);
        assert_eq!(index.search(&fresh, 1, |_| true)[0].position, position);
        // The graph is saved with the vectors: a reloaded index answers the same.
        let saved = serde_json::to_string(&index).expect("saved");
        let loaded: VectorIndex = serde_json::from_str(&saved).expect("loaded");
        assert!(loaded.graph.is_some());
        assert_eq!(
            loaded.search(&queries[0], 10, admit),
            index.search(&queries[0], 10, admit)
        );
    }

    /// The graph is linked a few vectors per insertion, never thousands in one (it was
    /// built whole by the insertion that reached the threshold), is whole from the
    /// threshold on, and until then every search is the exact scan.
    #[test]
    fn the_graph_is_linked_a_few_vectors_per_insertion_and_whole_at_the_threshold() {
        let dimension = 16;
        let data = clustered(ANN_THRESHOLD + 20, dimension, 3);
        let mut index = VectorIndex::new(dimension);
        let mut most = 0;
        for (i, v) in data.iter().enumerate() {
            let before = index.linked();
            index.push(v);
            let len = i + 1;
            most = most.max(index.linked() - before);
            if len <= ANN_LINK_FROM {
                assert_eq!(index.linked(), 0, "nothing linked at {len}");
            }
            if len >= ANN_THRESHOLD {
                assert_eq!(index.linked(), len, "whole at {len}");
            }
            if len == ANN_THRESHOLD - 1 {
                assert!(index.linked() < len);
                let query = &data[17];
                assert_eq!(
                    index.search(query, 5, |p| p % 2 == 0),
                    index.search_exact(query, 5, |p| p % 2 == 0),
                    "a graph that lacks some vectors is not searched"
                );
            }
        }
        assert!(most <= LINKS_PER_PUSH, "one insertion linked {most}");
        // An index saved before it was linked this way catches up a few at a time.
        let mut saved = serde_json::to_value(&index).expect("saved");
        saved.as_object_mut().expect("fields").remove("graph");
        let mut loaded: VectorIndex = serde_json::from_value(saved).expect("loaded");
        assert_eq!(loaded.linked(), 0);
        let fresh = clustered(1, dimension, 4_242).remove(0);
        let position = loaded.push(&fresh);
        assert_eq!(loaded.linked(), LINKS_PER_PUSH);
        assert_eq!(loaded.search(&fresh, 1, |_| true)[0].position, position);
    }

    /// A vector replaced past the threshold is found where it now is, through the
    /// graph, without the graph being built again.
    #[test]
    fn a_replaced_vector_is_relinked_where_it_now_is() {
        let dimension = 24;
        let data = clustered(ANN_THRESHOLD + 200, dimension, 11);
        let mut index = VectorIndex::new(dimension);
        for v in &data {
            index.push(v);
        }
        let linked = index.linked();
        // Position 40 takes the vector of a far cluster, with a little noise.
        let moved: Vec<f32> = {
            let mut v: Vec<f32> = data[1_001]
                .iter()
                .zip(&clustered(1, dimension, 5_151)[0])
                .map(|(a, b)| a + 0.05 * b)
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        };
        index.set(40, &moved);
        assert_eq!(index.linked(), linked);
        assert_eq!(index.vector(40), Some(moved.as_slice()));
        let hits = index.search(&moved, 3, |_| true);
        assert_eq!(hits[0].position, 40, "{hits:?}");
    }
}
