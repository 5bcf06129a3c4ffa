//! Filtered nearest-neighbour search, four indexes on one data set.
//!
//! The data is the project's own synthetic set (`dramatis_memory::synthetic`), the one
//! `dramatis bench retrieval` uses: N unit vectors of 384 dimensions, of which the even
//! positions are visible ("admitted"), and 50 queries. For each index this prints its
//! build time and, for each search `ef`, the mean latency of a top-8 filtered search and
//! its recall@8 against an exact scan of the admitted vectors.
//!
//! Every build and every search runs on one thread (rayon is held to one thread too), so
//! the figures compare the algorithms, not how many cores each library takes.
//!
//! Usage: `ann-compare [N]` (N defaults to 100000).

use std::time::Instant;

use dramatis_memory::VectorIndex;
use dramatis_memory::synthetic;

const DIMENSION: usize = 384;
const K: usize = 8;
const QUERIES: u64 = 50;
const EFS: [usize; 5] = [16, 32, 64, 128, 256];
/// Queries run untimed before each timed batch.
const WARM_UP: usize = 5;
/// Times the whole query set is run for each timed figure, at most: a slow setting
/// stops after the round that takes the timed total past `ROUND_BUDGET_S`.
const ROUNDS: usize = 5;
const ROUND_BUDGET_S: f64 = 2.0;
/// When one instant-distance build takes longer than this, only ef 64 and 128 are built.
const INSTANT_BUILD_BUDGET_S: f64 = 120.0;

fn admitted(position: usize) -> bool {
    position % 2 == 0
}

/// One measured setting.
struct Row {
    index: &'static str,
    build_s: f64,
    ef: usize,
    micros: f64,
    recall: f64,
}

/// Warms up, then times `search` over every query, `ROUNDS` times or until
/// `ROUND_BUDGET_S` has passed (one round at least); recall comes from the first round.
fn measure(
    index: &'static str,
    build_s: f64,
    ef: usize,
    queries: &[Vec<f32>],
    exact: &[Vec<usize>],
    mut search: impl FnMut(&[f32]) -> Vec<usize>,
) -> Row {
    for query in queries.iter().cycle().take(WARM_UP) {
        std::hint::black_box(search(query));
    }
    let mut found = Vec::with_capacity(queries.len());
    let start = Instant::now();
    let mut rounds = 0;
    while rounds < ROUNDS && (rounds == 0 || start.elapsed().as_secs_f64() < ROUND_BUDGET_S) {
        for query in queries {
            let hits = std::hint::black_box(search(query));
            if rounds == 0 {
                found.push(hits);
            }
        }
        rounds += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    #[allow(clippy::cast_precision_loss)]
    let micros = elapsed * 1e6 / (rounds * queries.len()) as f64;
    let row = Row {
        index,
        build_s,
        ef,
        micros,
        recall: synthetic::recall(&found, exact),
    };
    eprintln!(
        "  {:<17} ef {:>3}: {:>9.1} µs/query, recall@8 {:.3}",
        row.index, row.ef, row.micros, row.recall
    );
    row
}

fn ours(vectors: &[Vec<f32>], queries: &[Vec<f32>], exact: &[Vec<usize>]) -> Vec<Row> {
    let start = Instant::now();
    let mut index = VectorIndex::new(DIMENSION);
    for vector in vectors {
        index.push(vector);
    }
    let build_s = start.elapsed().as_secs_f64();
    eprintln!("ours: built in {build_s:.1} s");
    let rows = EFS
        .iter()
        .map(|&ef| {
            measure("ours (VectorIndex)", build_s, ef, queries, exact, |query| {
                index
                    .search_with_ef(query, K, ef, admitted)
                    .into_iter()
                    .map(|hit| hit.position)
                    .collect()
            })
        })
        .collect();
    rows
}

fn hnsw_rs(vectors: &[Vec<f32>], queries: &[Vec<f32>], exact: &[Vec<usize>]) -> Vec<Row> {
    use hnsw_rs::prelude::{DistDot, Hnsw};
    const MAX_NB_CONNECTION: usize = 16;
    const MAX_LAYER: usize = 16;
    const EF_CONSTRUCTION: usize = 200;
    let start = Instant::now();
    let index: Hnsw<f32, DistDot> = Hnsw::new(
        MAX_NB_CONNECTION,
        vectors.len(),
        MAX_LAYER,
        EF_CONSTRUCTION,
        DistDot {},
    );
    for (position, vector) in vectors.iter().enumerate() {
        index.insert_slice((vector, position));
    }
    let build_s = start.elapsed().as_secs_f64();
    eprintln!("hnsw_rs: built in {build_s:.1} s");
    let filter = |id: &usize| admitted(*id);
    EFS.iter()
        .map(|&ef| {
            measure("hnsw_rs", build_s, ef, queries, exact, |query| {
                index
                    .search_filter(query, K, ef, Some(&filter))
                    .into_iter()
                    .map(|n| n.d_id)
                    .collect()
            })
        })
        .collect()
}

/// A vector for instant-distance, compared by cosine distance (1 - dot: unit vectors).
#[derive(Clone)]
struct Unit(Vec<f32>);

impl instant_distance::Point for Unit {
    fn distance(&self, other: &Self) -> f32 {
        1.0 - dramatis_memory::vector::dot(&self.0, &other.0)
    }
}

/// instant-distance has neither filtered search nor insertion after the build, and its
/// search `ef` is fixed at build time: one build per `ef`, over the admitted vectors only.
fn instant(vectors: &[Vec<f32>], queries: &[Vec<f32>], exact: &[Vec<usize>]) -> Vec<Row> {
    const EF_CONSTRUCTION: usize = 100;
    let (points, positions): (Vec<Unit>, Vec<usize>) = vectors
        .iter()
        .enumerate()
        .filter(|(position, _)| admitted(*position))
        .map(|(position, vector)| (Unit(vector.clone()), position))
        .unzip();
    let mut rows = Vec::new();
    let mut order = vec![64, 128, 16, 32, 256];
    let mut i = 0;
    while i < order.len() {
        let ef = order[i];
        let start = Instant::now();
        let map = instant_distance::Builder::default()
            .ef_construction(EF_CONSTRUCTION)
            .ef_search(ef)
            .seed(7)
            .build(points.clone(), positions.clone());
        let build_s = start.elapsed().as_secs_f64();
        eprintln!("instant-distance (ef {ef}): built in {build_s:.1} s");
        let mut search = instant_distance::Search::default();
        rows.push(measure(
            "instant-distance",
            build_s,
            ef,
            queries,
            exact,
            |query| {
                map.search(&Unit(query.to_vec()), &mut search)
                    .take(K)
                    .map(|item| *item.value)
                    .collect()
            },
        ));
        if build_s > INSTANT_BUILD_BUDGET_S && order.len() > 2 {
            eprintln!(
                "instant-distance: a build took over {INSTANT_BUILD_BUDGET_S} s; measuring ef 64 and 128 only"
            );
            order.truncate(2);
        }
        i += 1;
    }
    rows.sort_by_key(|row| row.ef);
    rows
}

fn usearch(vectors: &[Vec<f32>], queries: &[Vec<f32>], exact: &[Vec<usize>]) -> Vec<Row> {
    use usearch::{Index, IndexOptions, MetricKind, ScalarKind};
    let options = IndexOptions {
        dimensions: DIMENSION,
        metric: MetricKind::Cos,
        quantization: ScalarKind::F32,
        connectivity: 16,
        expansion_add: 128,
        expansion_search: 64,
        multi: false,
    };
    let start = Instant::now();
    let index = Index::new(&options).expect("usearch index");
    index.reserve(vectors.len()).expect("usearch reserve");
    for (position, vector) in vectors.iter().enumerate() {
        index
            .add(position as u64, vector.as_slice())
            .expect("usearch add");
    }
    let build_s = start.elapsed().as_secs_f64();
    eprintln!("usearch: built in {build_s:.1} s");
    EFS.iter()
        .map(|&ef| {
            index.change_expansion_search(ef);
            measure("usearch", build_s, ef, queries, exact, |query| {
                index
                    .filtered_search(query, K, |key| key % 2 == 0)
                    .expect("usearch search")
                    .keys
                    .into_iter()
                    .map(|key| usize::try_from(key).expect("key fits usize"))
                    .collect()
            })
        })
        .collect()
}

fn main() {
    let n: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().expect("N must be a whole number"),
        None => 100_000,
    };
    // SAFETY: first thing in main, before any other thread exists. One rayon thread
    // keeps instant-distance's build (and hnsw_rs, were it to use rayon) single-threaded
    // like the other builds.
    unsafe { std::env::set_var("RAYON_NUM_THREADS", "1") };

    eprintln!("generating {n} vectors of {DIMENSION} (admitted: even positions)");
    let vectors: Vec<Vec<f32>> = (0..n as u64)
        .map(|seed| synthetic::vector(seed, DIMENSION))
        .collect();
    let queries: Vec<Vec<f32>> = (0..QUERIES)
        .map(|q| synthetic::vector(1_000_000 + q, DIMENSION))
        .collect();
    let exact: Vec<Vec<usize>> = queries
        .iter()
        .map(|query| synthetic::exact_top(&vectors, query, K, admitted))
        .collect();

    // The exact scan itself, as the reference every index should beat ("ef" 0: no parameter).
    let mut rows = vec![measure("exact scan", 0.0, 0, &queries, &exact, |query| {
        synthetic::exact_top(&vectors, query, K, admitted)
    })];

    let only = std::env::var("ANN_COMPARE_ONLY").unwrap_or_default();
    let wanted = |name: &str| only.is_empty() || only.split(',').any(|o| o == name);
    if wanted("ours") {
        rows.extend(ours(&vectors, &queries, &exact));
    }
    if wanted("hnsw_rs") {
        rows.extend(hnsw_rs(&vectors, &queries, &exact));
    }
    if wanted("instant-distance") {
        rows.extend(instant(&vectors, &queries, &exact));
    }
    if wanted("usearch") {
        rows.extend(usearch(&vectors, &queries, &exact));
    }
    report(n, &rows);
}

fn report(n: usize, rows: &[Row]) {
    println!(
        "N = {n}, dimension {DIMENSION}, {QUERIES} queries (up to {ROUNDS} timed rounds), top {K}, half admitted"
    );
    println!(
        "{:<18} {:>9} {:>5} {:>11} {:>9}",
        "index", "build s", "ef", "µs/query", "recall@8"
    );
    for row in rows {
        println!(
            "{:<18} {:>9.1} {:>5} {:>11.1} {:>9.3}",
            row.index, row.build_s, row.ef, row.micros, row.recall
        );
    }
    let json: Vec<String> = rows
        .iter()
        .map(|row| {
            format!(
                r#"{{"index":"{}","build_s":{:.3},"ef":{},"us_per_query":{:.2},"recall_at_8":{:.4}}}"#,
                row.index, row.build_s, row.ef, row.micros, row.recall
            )
        })
        .collect();
    println!(r#"{{"n":{n},"dimension":{DIMENSION},"k":{K},"rows":[{}]}}"#, json.join(","));

    println!("fastest setting with recall@8 >= 0.95:");
    let mut names: Vec<&str> = rows.iter().map(|row| row.index).collect();
    names.dedup();
    for name in names {
        let best = rows
            .iter()
            .filter(|row| row.index == name && row.recall >= 0.95)
            .min_by(|a, b| a.micros.total_cmp(&b.micros));
        match best {
            Some(row) => println!(
                "  {:<18} {:.1} µs/query (ef {}, recall@8 {:.3})",
                name, row.micros, row.ef, row.recall
            ),
            None => println!("  {name:<18} none reached 0.95"),
        }
    }
}
