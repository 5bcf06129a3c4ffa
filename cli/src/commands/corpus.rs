//! `dramatis eval corpus`: KBF on whole books. Each book is ingested (or its ingest
//! reused), its items asked where the story stands at each item's position, and one
//! table printed: the retrieval answerer, its two layer ablations and the two baselines,
//! per book and as the mean over books.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::Args;
use dramatis_embed::OnnxEmbedder;
use dramatis_eval::corpus::{
    ANSWERERS, Asker, BookScores, load_items, mean, run_book, scores, steps,
};
use dramatis_eval::kbf::Score;
use dramatis_ingest::book::{Options, Past, Quiet, ingest_analysed};
use dramatis_runtime::Shutdown;
use dramatis_runtime::client::{ClientOptions, world_client};

use crate::options::ModelArgs;
use crate::stack::LocalStack;

#[derive(Debug, Args)]
pub struct CorpusArgs {
    /// The books (plain UTF-8 text). Book `DIR/NAME.txt` takes its character list from
    /// `ANSWERS/NAME/characters.txt` and its items from `ITEMS/NAME.jsonl`.
    #[arg(required = true)]
    pub books: Vec<PathBuf>,
    /// Folder of the item files (see eval/corpus/README.md).
    #[arg(long, default_value = "eval/corpus")]
    pub items: PathBuf,
    /// Folder of the character lists, one folder per book.
    #[arg(long, default_value = "eval/answers")]
    pub answers: PathBuf,
    /// Where each book's ingest (and its caches) and the cut scenarios are kept, one
    /// folder per book; a second run reuses the ingest.
    #[arg(long, default_value = "dramatis-corpus")]
    pub work: PathBuf,
    /// Ask only the first N items of each book (a quick check of the pipeline).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Support (cosine) an option needs before a retrieval answerer commits to it.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f32,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The agents' models: items are asked before any turn, so only the embedder
    /// matters; turns (none) would run on the scripted model.
    #[command(flatten)]
    pub model: ModelArgs,
}

/// A book's name: its file's stem.
fn stem(book: &Path) -> anyhow::Result<String> {
    book.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .with_context(|| format!("{} names no file", book.display()))
}

pub async fn corpus(args: &CorpusArgs) -> anyhow::Result<()> {
    let mut plan = Vec::new();
    for book in &args.books {
        let name = stem(book)?;
        let characters = args.answers.join(&name).join("characters.txt");
        let items = args.items.join(format!("{name}.jsonl"));
        for needed in [book, &characters, &items] {
            if !needed.is_file() {
                bail!("{name}: no file {}", needed.display());
            }
        }
        plan.push((name, book.clone(), characters, items));
    }
    std::fs::create_dir_all(&args.work)
        .with_context(|| format!("cannot create {}", args.work.display()))?;
    let work = std::fs::canonicalize(&args.work)?;
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(
        args.model.embedder_dir.as_deref(),
    ))?;
    // Items are asked before any turn: the scripted model plays nothing, and one agent
    // process serves every cut, so a text is embedded once however many cuts hold it.
    let mut model = args.model.clone();
    model.scripted = Some("builtin".into());
    model.endpoint.llm_endpoint = None;
    let stack = LocalStack::start(
        model,
        None,
        crate::spawn::Layout::Pool(1),
        None,
        vec![work.clone()],
        Shutdown::new(),
    )
    .await?;
    let client = world_client(&ClientOptions::local(&stack.server_url)).await?;
    let mut books = Vec::new();
    for (name, book, characters, items_path) in &plan {
        let dir = work.join(name);
        eprintln!("{name}: ingesting (or reusing {})…", dir.display());
        let options = Options {
            past: Past::All,
            patterns: None,
            stop_after: None,
            chapters: None,
        };
        let started = std::time::Instant::now();
        let analysed =
            ingest_analysed(book, characters, &dir, &embedder, None, &options, &Quiet).await?;
        let ingest_seconds = started.elapsed().as_secs_f64();
        let (mut items, no_agent) = load_items(items_path, &analysed)?;
        if !no_agent.is_empty() {
            eprintln!(
                "{name}: {} items left out, their character has no agent (on stage nowhere \
                 in the ingest): {}",
                no_agent.len(),
                no_agent.join(" ")
            );
        }
        if let Some(limit) = args.limit {
            items.truncate(limit);
        }
        let bar = indicatif::ProgressBar::new(steps(items.len()));
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {msg} [{bar:30}] {pos}/{len} answers",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_message(name.clone());
        let mut asker = Asker {
            client: client.clone(),
            work: dir.join("cuts"),
            embedder: &embedder,
            threshold: args.threshold,
        };
        let run = run_book(&mut asker, name, &analysed, items, &|| bar.inc(1)).await;
        bar.finish_and_clear();
        books.push(BookScores {
            ingest_seconds,
            ..scores(&run?)
        });
    }
    stack.stop(None).await;
    let mean = mean(&books);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"books": books, "mean": mean}))?
        );
    } else {
        print_table(&books, &mean);
    }
    Ok(())
}

fn print_table(books: &[BookScores], mean: &std::collections::BTreeMap<String, Score>) {
    let row = |name: &str, items: String, s: &std::collections::BTreeMap<String, Score>| {
        let r = &s["retrieval"];
        let mut line = format!(
            "{name:<34} {items:>5} {:>5} {:>6.3} {:>4} {:>6.3} {:>6.3}",
            r.n_krf, r.krf_acc, r.n_kr, r.kr_acc, r.kbf
        );
        for a in &ANSWERERS[1..] {
            line.push_str(&format!(" {:>11.3}", s[*a].kbf));
        }
        line.push_str(&format!(" {:>+8.1}", (r.kbf - s["naive-rag"].kbf) * 100.0));
        line
    };
    println!(
        "{:<34} {:>5} {:>5} {:>6} {:>4} {:>6} {:>6} {:>11} {:>11} {:>11} {:>11} {:>8}",
        "book",
        "items",
        "n_KRf",
        "KRf",
        "n_KR",
        "KR",
        "KBF",
        "no-episodic",
        "no-semantic",
        "naive-rag",
        "direct",
        "pp/naive"
    );
    for b in books {
        let scores: std::collections::BTreeMap<String, Score> = b.scores.clone();
        println!("{}", row(&b.book, b.items.to_string(), &scores));
    }
    println!("{}", row("mean", String::new(), mean));
    println!("\nper kind (retrieval accuracy):");
    for b in books {
        let kinds: Vec<String> = b
            .kinds
            .iter()
            .map(|(k, (n, acc))| format!("{k} {acc:.2} of {n}"))
            .collect();
        println!("  {}: {}", b.book, kinds.join(", "));
    }
    println!("\nwhat the shards hold (evidence words), per book:");
    for b in books {
        println!(
            "  {}: {} KRf items with none in the shard ({}); {} KR items with one ({})",
            b.book,
            b.krf_not_in_shard.len(),
            b.krf_not_in_shard.join(" "),
            b.kr_in_shard.len(),
            b.kr_in_shard.join(" ")
        );
    }
    println!("\nspeed:");
    for b in books {
        println!(
            "  {}: ingest (or its reuse) {:.0} s; {} items × 5 answerers in {:.0} s, {:.2} \
             answers/s",
            b.book, b.ingest_seconds, b.items, b.seconds, b.items_per_second
        );
    }
}
