//! `dramatis ingest`: a book and its focus characters as a scenario folder (the stages
//! live in `dramatis-ingest`'s `book.rs`). Progress bars per stage, then the cost per
//! stage, the layer-size table, and any refinement the model could not make.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;
use dramatis_embed::OnnxEmbedder;
use dramatis_ingest::book::output::Done;
use dramatis_ingest::book::{Options, Past, Progress, STAGES, ingest_analysed};
use dramatis_llm::LanguageModel;

use crate::spawn::{Spawned, start_builtin_llm};

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// The book: plain UTF-8 text, chapters headed `CHAPTER …` (or `Part …`, a bare
    /// number or Roman numeral, or `第N回` in Chinese), scenes separated by a line of
    /// `* * *`; or an EPUB (2 or 3), read as that text in its spine's order, notes and
    /// licence left out.
    pub book: PathBuf,
    /// The focus characters: one per line, `Canonical Name | alias, alias` (lowercase
    /// aliases such as `the widow` are descriptions: what strangers see).
    #[arg(long)]
    pub characters: PathBuf,
    /// The scenario folder to write (default: a folder named after the book's file).
    /// Its `.ingest/` keeps every stage's result and model answer, so a rerun resumes.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Deterministic stages only: no language model.
    #[arg(long, conflicts_with = "llm_endpoint")]
    pub no_model: bool,
    /// Where the book splits: scenes before it are the characters' past (their starting
    /// memories, facts, patterns and the names they know); the rest is the script.
    /// `half` (default), a number of scenes, or `all` (an open story after the end).
    #[arg(long, default_value = "half", value_parser = parse_past)]
    pub past: Past,
    /// Behaviour patterns per character (default: ⌈√scenes it speaks in⌉, at most 8).
    #[arg(long)]
    pub patterns: Option<usize>,
    /// Stop after this stage (scenes, episodic, graph, personality); rerun without it
    /// to continue from the caches.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(STAGES))]
    pub stop_after: Option<String>,
    /// Read only the book's first N chapters (a long book tried on its opening; an
    /// answer file for them). Offsets and anchors stay the whole book's.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub chapters: Option<u64>,
    /// The endpoint that refines each stage (default: the built-in model).
    #[command(flatten)]
    pub endpoint: crate::options::EndpointArgs,
    /// The scripted model answering from this JSON fixture (tests).
    #[arg(long, conflicts_with_all = ["no_model", "llm_endpoint"])]
    pub scripted: Option<String>,
    /// Sentence-embedding model directory (default: the agents' embedder).
    #[arg(long, env = "DRAMATIS_EMBEDDER_DIR")]
    pub embedder_dir: Option<PathBuf>,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

fn parse_past(text: &str) -> Result<Past, String> {
    match text {
        "half" => Ok(Past::Half),
        "all" => Ok(Past::All),
        n => n
            .parse()
            .map(Past::Scenes)
            .map_err(|_| format!("expected `half`, `all` or a number of scenes, not `{n}`")),
    }
}

/// One indicatif bar per stage.
struct Bars {
    current: Mutex<Option<indicatif::ProgressBar>>,
}

impl Progress for Bars {
    fn start(&self, stage: &str, steps: u64) {
        let bar = indicatif::ProgressBar::new(steps);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{prefix:>11} [{bar:30}] {pos}/{len} {msg} (eta {eta})",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_prefix(stage.to_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        *self.lock() = Some(bar);
    }

    fn step(&self) {
        if let Some(bar) = self.lock().as_ref() {
            bar.inc(1);
        }
    }

    fn finish(&self, stage: &str, note: &str) {
        match self.lock().take() {
            Some(bar) => {
                bar.finish_and_clear();
                eprintln!("{stage:>11}: {note}");
            }
            None => eprintln!("{stage:>11}: {note} (cached)"),
        }
    }
}

impl Bars {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<indicatif::ProgressBar>> {
        self.current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

pub async fn ingest(args: &IngestArgs) -> anyhow::Result<()> {
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = args
            .book
            .file_stem()
            .map_or_else(|| "book".into(), |s| s.to_string_lossy().into_owned());
        PathBuf::from(dramatis_ingest::file::id_from(&stem, "book"))
    });
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(
        args.embedder_dir.as_deref(),
    ))?;
    let logs = tempfile::Builder::new()
        .prefix("dramatis-ingest-")
        .tempdir()?;
    let mut _llm: Option<Spawned> = None;
    let model: Option<Arc<dyn LanguageModel>> = if args.no_model {
        None
    } else if let Some(fixture) = &args.scripted {
        Some(Arc::new(crate::models::scripted(fixture)?))
    } else {
        let endpoint = match &args.endpoint.llm_endpoint {
            Some(endpoint) => endpoint.clone(),
            None => {
                eprintln!("starting the built-in model (SmolLM2-135M-Instruct on llama.cpp)…");
                let (spawned, endpoint) = start_builtin_llm(logs.path()).await?;
                _llm = Some(spawned);
                endpoint
            }
        };
        Some(crate::models::openai_client(
            endpoint,
            &args.endpoint.llm_model,
            &args.endpoint,
        )?)
    };
    let options = Options {
        past: args.past,
        patterns: args.patterns,
        stop_after: args.stop_after.clone(),
        chapters: args.chapters.and_then(|n| usize::try_from(n).ok()),
    };
    let bars = Bars {
        current: Mutex::new(None),
    };
    let done = ingest_analysed(
        &args.book,
        &args.characters,
        &out,
        &embedder,
        model,
        &options,
        &bars,
    )
    .await?
    .done;
    warn(&done);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&done)?);
    } else {
        print_report(&done);
    }
    Ok(())
}

/// What a user should fix or know about the book and the list, on stderr whatever the
/// output format.
fn warn(done: &Done) {
    if !done.unnamed.is_empty() {
        eprintln!(
            "warning: the book never names {} (by name or alias): no agent, no knowledge; \
             check the list against the text",
            done.unnamed.join(", ")
        );
    }
    if done.quoted_lines == 0 {
        eprintln!(
            "warning: no quoted speech in the book (dialogue in \"…\" or “…”): no line has a \
             speaker and no character has speech patterns"
        );
    }
}

fn print_report(done: &Done) {
    println!(
        "{} words, {} chapters, {} scenes ({} as the characters' past, {} as the script), {:.1} s",
        done.words, done.chapters, done.scenes, done.past, done.script, done.seconds
    );
    for (name, members) in &done.organisations {
        println!("organisation {name}: {}", members.join(", "));
    }
    if !done.interview_only.is_empty() {
        println!(
            "never on stage, interview only (asked, never cast): {}",
            done.interview_only.join(", ")
        );
    }
    if !done.offstage.is_empty() {
        println!(
            "never on stage, knowing nothing the book shows (no agent): {}",
            done.offstage.join(", ")
        );
    }
    println!();
    println!(
        "{:<12} {:>6} {:>7} {:>14} {:>18} {:>9} {:>9} {:>8}",
        "stage",
        "calls",
        "cached",
        "prompt tokens",
        "completion tokens",
        "accepted",
        "rejected",
        "seconds"
    );
    for (stage, c) in &done.stages {
        println!(
            "{:<12} {:>6} {:>7} {:>14} {:>18} {:>9} {:>9} {:>8.2}{}",
            stage,
            c.calls,
            c.cached_calls,
            c.prompt_tokens,
            c.completion_tokens,
            c.accepted,
            c.rejected,
            c.seconds,
            if c.from_cache { "  (stage cached)" } else { "" }
        );
    }
    println!();
    // Ids are whole names: the column is as wide as the longest.
    let width = done
        .layers
        .iter()
        .map(|r| r.character.chars().count())
        .max()
        .unwrap_or(0)
        .max("character".len());
    println!(
        "{:<width$} {:>7} {:>9} {:>6} {:>9}   starting shard: {:>9} {:>6} {:>9}",
        "character", "scenes", "memories", "facts", "patterns", "memories", "facts", "patterns"
    );
    for r in &done.layers {
        println!(
            "{:<width$} {:>7} {:>9} {:>6} {:>9}                   {:>9} {:>6} {:>9}",
            r.character,
            r.scenes,
            r.memories,
            r.facts,
            r.patterns,
            r.shard_memories,
            r.shard_facts,
            r.shard_patterns
        );
    }
    if !done.rejections.is_empty() {
        println!();
        println!(
            "{} refinements rejected after a retry; the deterministic result was kept:",
            done.rejections.len()
        );
        for r in done.rejections.iter().take(10) {
            println!("  {} · {}: {}", r.stage, r.chunk, r.reason);
        }
        if done.rejections.len() > 10 {
            println!("  … all of them are in ingest-report.json");
        }
    }
    println!();
    match (&done.scenario, &done.stopped_after) {
        (Some(path), _) => println!(
            "wrote {} — run it with `dramatis {} {}`",
            path.display(),
            if done.script > 0 { "run" } else { "sandbox" },
            path.display()
        ),
        (None, Some(stage)) => println!(
            "stopped after {stage}; rerun without --stop-after to continue from the caches"
        ),
        (None, None) => {}
    }
}
