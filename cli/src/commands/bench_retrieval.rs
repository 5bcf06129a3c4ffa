//! `dramatis bench retrieval`: Vis-Retrieve latency over a semantic layer of 1k, 10k and
//! 100k facts with 384-dimensional vectors (clustered around 256 topics, as sentence
//! embeddings are), half of them invisible to the asker. Past the index's threshold the
//! search goes through its HNSW graph; the time to add the facts (graph included) is
//! printed beside it, with the slowest single addition (a line's memory waits for it).
//! At 10k, an episodic layer of the same vectors times the rewrite of one memory in
//! place (a scene's model rewrite replacing its digest).

use std::collections::BTreeSet;
use std::time::Instant;

use dramatis_memory::synthetic::{exact_top, recall, vector};
use dramatis_memory::{
    ANN_THRESHOLD, EpisodicLayer, EpisodicMemory, Fact, SemanticLayer, VisibilityRoute,
};

const DIMENSION: usize = 384;
const QUERIES: usize = 50;

pub fn bench_retrieval(output: &super::bench::JsonArg) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for size in [1_000usize, 10_000, 100_000] {
        let mut layer = SemanticLayer::default();
        let vectors: Vec<Vec<f32>> = (0..size).map(|i| vector(i as u64, DIMENSION)).collect();
        let adding = Instant::now();
        let mut slowest_add = std::time::Duration::ZERO;
        for (i, v) in vectors.iter().enumerate() {
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
            let one = Instant::now();
            layer.add(fact, v);
            slowest_add = slowest_add.max(one.elapsed());
        }
        let added = adding.elapsed();
        let slowest_add_ms = slowest_add.as_secs_f64() * 1e3;
        let rewrite_ms = (size == 10_000).then(|| rewrite_ms(&vectors));
        let queries: Vec<Vec<f32>> = (0..QUERIES)
            .map(|q| vector(1_000_000 + q as u64, DIMENSION))
            .collect();
        // Warm: the first search builds the asker's visibility bits (`sight`).
        let warming = Instant::now();
        let _warm = layer.vis_retrieve_at("watson", &queries[..1], 8);
        let warm_ms = warming.elapsed().as_secs_f64() * 1e3;
        let started = Instant::now();
        let mut found: Vec<Vec<usize>> = Vec::with_capacity(QUERIES);
        for query in &queries {
            let hits = layer.vis_retrieve_at("watson", std::slice::from_ref(query), 8);
            found.push(hits.into_iter().map(|(position, _)| position).collect());
        }
        let per_query = started.elapsed().as_secs_f64() * 1e6 / QUERIES as f64;
        // Recall@8: the share of the exact filtered top 8 that the search returned.
        let exact_started = Instant::now();
        let exact: Vec<Vec<usize>> = queries
            .iter()
            .map(|q| exact_top(&vectors, q, 8, |i| i % 2 == 0))
            .collect();
        let exact_per_query = exact_started.elapsed().as_secs_f64() * 1e6 / QUERIES as f64;
        let recall = recall(&found, &exact);
        let leaked = found.iter().flatten().filter(|p| *p % 2 == 1).count();
        anyhow::ensure!(leaked == 0, "{leaked} invisible facts returned");
        let how = if size >= ANN_THRESHOLD {
            "HNSW graph, filter inside"
        } else {
            "exact scan"
        };
        println!(
            "{size:>7} facts: {per_query:>8.0} µs per Vis-Retrieve ({how}), recall@8 {recall:.3}; exact filtered scan {exact_per_query:>8.0} µs; adding the facts took {:.1} s (the slowest one {slowest_add_ms:.1} ms), the first search {warm_ms:.0} ms{}",
            added.as_secs_f64(),
            rewrite_ms.map_or(String::new(), |ms| format!(
                "; rewriting a memory in place {ms:.2} ms"
            ))
        );
        rows.push(serde_json::json!({
            "facts": size,
            "us_per_query": per_query,
            "recall_at_8": recall,
            "exact_us_per_query": exact_per_query,
            "search": if size >= ANN_THRESHOLD { "hnsw" } else { "exact" },
            "add_seconds": added.as_secs_f64(),
            "first_search_ms": warm_ms,
            "slowest_add_ms": slowest_add_ms,
            "rewrite_ms": rewrite_ms,
        }));
    }
    super::bench::print_json(output, "retrieval", &serde_json::json!({ "sizes": rows }))
}

/// An episodic layer of `vectors`, then one memory rewritten in place with another's
/// vector: milliseconds for the rewrite (the median of five).
fn rewrite_ms(vectors: &[Vec<f32>]) -> f64 {
    let memory = |i: usize| EpisodicMemory {
        id: format!("m{i}"),
        scene_id: format!("s{i}"),
        text: String::new(),
    };
    let mut layer = EpisodicLayer::default();
    for (i, v) in vectors.iter().enumerate() {
        layer.add(memory(i), v);
    }
    let mut times: Vec<f64> = (0..5)
        .map(|round| {
            let target = 100 + round * 997;
            let started = Instant::now();
            layer.upsert(memory(target), &vectors[vectors.len() - 1 - target]);
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
