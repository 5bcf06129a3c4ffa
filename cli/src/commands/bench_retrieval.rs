//! `dramatis bench retrieval`: Vis-Retrieve latency over a semantic layer of 1k, 10k and
//! 100k facts with 384-dimensional vectors (clustered around 256 topics, as sentence
//! embeddings are), half of them invisible to the asker. Past the index's threshold the
//! search goes through its HNSW graph; the time to add the facts (graph included) is
//! printed beside it.

use std::collections::BTreeSet;
use std::time::Instant;

use dramatis_memory::{ANN_THRESHOLD, Fact, SemanticLayer, VisibilityRoute};

const DIMENSION: usize = 384;
const QUERIES: usize = 50;

/// Deterministic pseudo-random numbers in [-1, 1) (xorshift), so runs are comparable.
fn noise(seed: u64) -> impl FnMut() -> f32 {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 2000) as f32 / 1000.0 - 1.0
    }
}

/// A unit vector near topic `seed % 256`.
fn vector(seed: u64) -> Vec<f32> {
    let mut centre = noise(1 + seed % 256);
    let mut jitter = noise(1_000_003 + seed);
    let mut v: Vec<f32> = (0..DIMENSION).map(|_| centre() + 0.5 * jitter()).collect();
    dramatis_embed::normalise(&mut v);
    v
}

pub fn bench_retrieval(output: &super::bench::JsonArg) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for size in [1_000usize, 10_000, 100_000] {
        let mut layer = SemanticLayer::default();
        let adding = Instant::now();
        for i in 0..size {
            let visibility: BTreeSet<String> =
                [if i % 2 == 0 { "watson" } else { "holmes" }.to_owned()].into();
            let fact = Fact {
                id: format!("f{i}"),
                subject: "s".into(),
                predicate: "p".into(),
                object: "o".into(),
                cause: String::new(),
                visibility,
                route: VisibilityRoute::Observation,
                text: String::new(),
            };
            layer.add(fact, &vector(i as u64));
        }
        let added = adding.elapsed();
        let queries: Vec<Vec<f32>> = (0..QUERIES).map(|q| vector(1_000_000 + q as u64)).collect();
        let started = Instant::now();
        let mut found = 0;
        for query in &queries {
            found += layer
                .vis_retrieve("watson", std::slice::from_ref(query), 8)
                .len();
        }
        let per_query = started.elapsed().as_secs_f64() * 1e6 / QUERIES as f64;
        let how = if size >= ANN_THRESHOLD {
            "HNSW graph"
        } else {
            "exact scan"
        };
        println!(
            "{size:>7} facts: {per_query:>8.0} µs per Vis-Retrieve ({how}; top 8 of the visible half, {} hits/query); adding the facts took {:.1} s",
            found / QUERIES,
            added.as_secs_f64()
        );
        rows.push(serde_json::json!({
            "facts": size,
            "us_per_query": per_query,
            "search": if size >= ANN_THRESHOLD { "hnsw" } else { "exact" },
            "add_seconds": added.as_secs_f64(),
        }));
    }
    super::bench::print_json(output, "retrieval", &serde_json::json!({ "sizes": rows }))
}
