//! `dramatis bench ingest`: the deterministic ingest path on a long book made from the
//! test book, repeated with its places renamed in each copy, on the agents' real
//! embedder. Prints words per second, time per stage and peak memory.

use std::time::Instant;

use clap::Args;
use dramatis_embed::OnnxEmbedder;
use dramatis_ingest::book::{Options, Past, Quiet, ingest_analysed};
use serde::Serialize;

/// The test book (`ingest/tests/books/wrayhaven/`): our own text, written for the tests.
const BOOK: &str = include_str!("../../../ingest/tests/books/wrayhaven/book.txt");
const CHARACTERS: &str = include_str!("../../../ingest/tests/books/wrayhaven/characters.txt");

/// The places each copy renames.
const PLACES: [&str; 7] = [
    "Wrayhaven",
    "Gull Point",
    "Saltcombe",
    "Exeter",
    "St Brendan's",
    "Chapel Lane",
    "the Shards",
];

#[derive(Debug, Args)]
#[command(
    after_help = "Whether cost grows with length alone: `dramatis bench ingest --book \
../shared/books/dracula.txt --characters eval/answers/dracula/characters.txt --times 1,2,4` \
ingests the book, the book twice over and four times over, and prints each stage's seconds \
side by side, with seconds per 100,000 words."
)]
pub struct IngestBenchArgs {
    /// Words in the generated book (the test book repeated until it has this many).
    #[arg(long, default_value_t = 100_000)]
    pub words: usize,
    /// A book of your own instead of the generated one (with `--characters`).
    #[arg(long, requires = "characters")]
    pub book: Option<std::path::PathBuf>,
    /// The character list for `--book`.
    #[arg(long, requires = "book")]
    pub characters: Option<std::path::PathBuf>,
    /// With `--book`: ingest it this many times over, each a run of its own.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
    pub times: Vec<usize>,
    #[command(flatten)]
    pub output: super::bench::JsonArg,
}

#[derive(Debug, Serialize)]
struct Figures {
    words: usize,
    scenes: usize,
    seconds: f64,
    words_per_second: f64,
    stage_seconds: Vec<(String, f64)>,
    peak_rss_mb: f64,
    facts: usize,
    summaries: usize,
}

/// A copy's name for a place: the place and a made-up suffix, different per copy.
fn renamed(place: &str, copy: usize) -> String {
    const SYLLABLES: [&str; 8] = ["Ash", "Bel", "Cor", "Dun", "Elm", "Fal", "Gar", "Hol"];
    if copy == 0 {
        return place.to_owned();
    }
    let a = SYLLABLES[copy % SYLLABLES.len()];
    let b = SYLLABLES[(copy / SYLLABLES.len()) % SYLLABLES.len()].to_lowercase();
    format!("{place} {a}{b}ton")
}

/// The test book repeated (its front matter once) until it has `words` words.
#[must_use]
pub fn long_book(words: usize) -> String {
    let body_start = BOOK.find("CHAPTER ONE").unwrap_or(0);
    let (front, body) = BOOK.split_at(body_start);
    let per_copy = body.split_whitespace().count().max(1);
    let mut out = front.to_owned();
    for copy in 0..words.div_ceil(per_copy) {
        let mut text = body.to_owned();
        for place in PLACES {
            text = text.replace(place, &renamed(place, copy));
        }
        out.push_str(&text);
        out.push('\n');
    }
    out
}

/// One ingest of `book` (already written) on the deterministic path: the figures.
async fn run_once(
    book: &std::path::Path,
    characters: &std::path::Path,
    out: &std::path::Path,
    embedder: &OnnxEmbedder,
) -> anyhow::Result<Figures> {
    let options = Options {
        past: Past::Half,
        patterns: None,
        stop_after: None,
        chapters: None,
    };
    let started = Instant::now();
    let done = ingest_analysed(book, characters, out, embedder, None, &options, &Quiet)
        .await?
        .done;
    let seconds = started.elapsed().as_secs_f64();
    let summaries: usize = done.layers.iter().map(|r| r.memories).sum();
    let graph: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("layers/graph.json"))?)?;
    Ok(Figures {
        words: done.words,
        scenes: done.scenes,
        seconds,
        words_per_second: done.words as f64 / seconds,
        stage_seconds: done
            .stages
            .iter()
            .map(|(s, c)| (s.clone(), c.seconds))
            .collect(),
        peak_rss_mb: dramatis_runtime::memory_use::peak_rss_mb(),
        facts: graph["facts"].as_array().map_or(0, Vec::len),
        summaries,
    })
}

/// `--book`: the book once, twice, four times over (`--times`), each stage's seconds
/// side by side; cost linear in length keeps seconds per 100,000 words level.
async fn bench_scaled(args: &IngestBenchArgs, book: &std::path::Path) -> anyhow::Result<()> {
    let characters = args.characters.as_deref().expect("clap requires it");
    let text = dramatis_ingest::book::text::read_book(book)?;
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(None))?;
    let dir = tempfile::Builder::new()
        .prefix("dramatis-bench-ingest-")
        .tempdir()?;
    let mut runs = Vec::new();
    for &times in &args.times {
        let copy = dir.path().join(format!("book-{times}.txt"));
        std::fs::write(&copy, vec![text.as_str(); times.max(1)].join("\n\n"))?;
        let out = dir.path().join(format!("out-{times}"));
        runs.push((times, run_once(&copy, characters, &out, &embedder).await?));
    }
    println!(
        "ingest, deterministic path, real embedder: {}",
        book.display()
    );
    print!("{:<14}", "stage");
    for (times, f) in &runs {
        print!(" {:>16}", format!("{times}x ({}k words)", f.words / 1000));
    }
    println!();
    let stages: Vec<String> = runs
        .first()
        .map(|(_, f)| f.stage_seconds.iter().map(|(s, _)| s.clone()).collect())
        .unwrap_or_default();
    for (i, stage) in stages.iter().enumerate() {
        print!("{stage:<14}");
        for (_, f) in &runs {
            print!(" {:>16.2}", f.stage_seconds.get(i).map_or(0.0, |(_, s)| *s));
        }
        println!();
    }
    print!("{:<14}", "total");
    for (_, f) in &runs {
        print!(" {:>16.2}", f.seconds);
    }
    println!();
    print!("{:<14}", "s / 100k words");
    for (_, f) in &runs {
        print!(" {:>16.2}", f.seconds * 100_000.0 / f.words.max(1) as f64);
    }
    println!();
    println!(
        "peak memory {:.0} MB (this process, the largest run and the embedder included)",
        dramatis_runtime::memory_use::peak_rss_mb()
    );
    let figures: Vec<&Figures> = runs.iter().map(|(_, f)| f).collect();
    super::bench::print_json(&args.output, "ingest", &figures)
}

pub async fn bench_ingest(args: &IngestBenchArgs) -> anyhow::Result<()> {
    if let Some(book) = &args.book {
        return bench_scaled(args, book).await;
    }
    let dir = tempfile::Builder::new()
        .prefix("dramatis-bench-ingest-")
        .tempdir()?;
    let book = dir.path().join("book.txt");
    let characters = dir.path().join("characters.txt");
    std::fs::write(&book, long_book(args.words))?;
    std::fs::write(&characters, CHARACTERS)?;
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(None))?;
    let figures = run_once(&book, &characters, &dir.path().join("out"), &embedder).await?;
    println!(
        "ingest, deterministic path, real embedder: {} words, {} scenes",
        figures.words, figures.scenes
    );
    println!("{:<14} {:>10}", "stage", "seconds");
    for (stage, s) in &figures.stage_seconds {
        println!("{stage:<14} {s:>10.2}");
    }
    println!("{:<14} {:>10.2}", "total", figures.seconds);
    println!(
        "{:.0} words/s · peak memory {:.0} MB (this process, embedder included) · {} facts, {} summaries",
        figures.words_per_second, figures.peak_rss_mb, figures.facts, figures.summaries
    );
    super::bench::print_json(&args.output, "ingest", &figures)
}
