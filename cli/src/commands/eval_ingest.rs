//! `dramatis eval ingest`: an ingested folder against an answer file a reader wrote
//! (`eval/answers/README.md`): narrator binding, speaker attribution, rosters, who may
//! know each key fact, and leaks.

use std::path::PathBuf;

use clap::Args;
use dramatis_ingest::answers::Answers;
use dramatis_ingest::scoring::{Ingested, Score, score};
use serde_json::json;

#[derive(Debug, Args)]
pub struct IngestEvalArgs {
    /// The folder `dramatis ingest` wrote.
    pub folder: PathBuf,
    /// The answers: a folder with `answers.toml` and `characters.txt` (the character
    /// list the ingest was given).
    #[arg(long)]
    pub answers: PathBuf,
    /// Where the book named in `answers.toml` is (default: the answers folder).
    #[arg(long)]
    pub books: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn eval_ingest(args: &IngestEvalArgs) -> anyhow::Result<()> {
    let books = args.books.as_deref().unwrap_or(&args.answers);
    let (answers, _) = Answers::load(&args.answers, books)?;
    let ingested = Ingested::load(&args.folder)?;
    let score = score(&answers, &ingested);
    if args.json {
        println!("{}", to_json(&score));
    } else {
        print_table(&score);
    }
    Ok(())
}

fn to_json(score: &Score) -> serde_json::Value {
    json!({
        "book": score.book,
        "narrators_bound": score.narrators_bound,
        "narrated_chapters": score.narrated_chapters,
        "lines": score.lines,
        "speakers_right": score.speakers_right,
        "lines_missing": score.lines_missing,
        "speaker_accuracy": score.speaker_accuracy(),
        "scenes": score.scenes,
        "roster_precision": score.roster.precision(),
        "roster_recall": score.roster.recall(),
        "facts": score.facts,
        "facts_missing": score.facts_missing,
        "known_by_precision": score.known_by.precision(),
        "known_by_recall": score.known_by.recall(),
        "leaks": score.leaks.len(),
        "leaked": score.leaks.iter().map(|(f, c)| format!("{f} -> {c}")).collect::<Vec<_>>(),
        "ingested_scenes": score.ingested_scenes,
        "ingested_facts": score.ingested_facts,
    })
}

fn print_table(score: &Score) {
    println!("{} against its answers", score.book);
    println!("{:<28} {:>14}", "metric", "value");
    let row = |name: &str, value: String| println!("{name:<28} {value:>14}");
    row(
        "narrator bound",
        format!("{}/{}", score.narrators_bound, score.narrated_chapters),
    );
    row(
        "speaker attribution",
        format!(
            "{}/{} {:.2}",
            score.speakers_right,
            score.lines,
            score.speaker_accuracy()
        ),
    );
    row("  quotes not found", score.lines_missing.to_string());
    row(
        "roster precision",
        format!("{:.2}", score.roster.precision()),
    );
    row("roster recall", format!("{:.2}", score.roster.recall()));
    row(
        "known_by precision",
        format!("{:.2}", score.known_by.precision()),
    );
    row("known_by recall", format!("{:.2}", score.known_by.recall()));
    row("leaks", score.leaks.len().to_string());
    row(
        "key facts not expressed",
        format!("{}/{}", score.facts_missing, score.facts),
    );
    row(
        "scenes (ingested/answers)",
        format!("{}/{}", score.ingested_scenes, score.scenes),
    );
    for (fact, character) in &score.leaks {
        println!("leak: {fact} reached {character}");
    }
}
