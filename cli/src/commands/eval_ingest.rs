//! `dramatis eval ingest`: an ingested folder against an answer file a reader wrote
//! (`eval/answers/README.md`): narrator binding, speaker attribution, rosters, who may
//! know each key fact, and leaks.

use std::path::PathBuf;

use clap::Args;
use dramatis_ingest::answers::Answers;
use dramatis_ingest::book::text::prefix;
use dramatis_ingest::scoring::{Ingested, Score, score};
use serde_json::json;

#[derive(Debug, Args)]
#[command(
    after_help = "Several books in one call: give their folders and answers in the same \
order, e.g. `dramatis eval ingest out/ti out/dracula --answers eval/answers/treasure-island \
--answers eval/answers/dracula --books ../shared/books`; one row per book."
)]
pub struct IngestEvalArgs {
    /// The folders `dramatis ingest` wrote, one per book.
    #[arg(required = true)]
    pub folders: Vec<PathBuf>,
    /// The answers: a folder with `answers.toml` and `characters.txt` (the character
    /// list the ingest was given), once per folder, in the same order.
    #[arg(long, required = true)]
    pub answers: Vec<PathBuf>,
    /// Where the books named in the `answers.toml` files are (default: each answers
    /// folder).
    #[arg(long)]
    pub books: Option<PathBuf>,
    /// Print one JSON object per book, one per line, instead of the table.
    #[arg(long)]
    pub json: bool,
    /// List every quote of the answers that is not among the ingested lines.
    #[arg(long)]
    pub missing: bool,
    /// List every line given a wrong speaker: the quote, whom the ingest gave it and
    /// whom the answers do.
    #[arg(long)]
    pub wrong: bool,
}

pub fn eval_ingest(args: &IngestEvalArgs) -> anyhow::Result<()> {
    if args.folders.len() != args.answers.len() {
        anyhow::bail!(
            "{} folders but {} --answers: give one answers folder per ingested folder, in \
             the same order",
            args.folders.len(),
            args.answers.len()
        );
    }
    let mut scores = Vec::new();
    for (folder, answers) in args.folders.iter().zip(&args.answers) {
        let books = args.books.as_deref().unwrap_or(answers);
        let (answers, _) = Answers::load(answers, books)?;
        let ingested = Ingested::load(folder)?;
        scores.push(score(&answers, &ingested));
    }
    if args.json {
        for score in &scores {
            println!("{}", to_json(score));
        }
        return Ok(());
    }
    if let [one] = &scores[..] {
        print_table(one);
    } else {
        print_rows(&scores);
    }
    for score in scores.iter().filter(|_| args.missing) {
        for quote in &score.missing_quotes {
            println!(
                "{}: quote not among the lines: \"{}\"",
                score.book,
                prefix(quote, 80)
            );
        }
    }
    for score in scores.iter().filter(|_| args.wrong) {
        for w in &score.wrong_speakers {
            println!(
                "{}: \"{}\" given to {}, said by {}",
                score.book,
                prefix(&w.quote, 60),
                w.ours,
                w.theirs.as_deref().unwrap_or("someone off the list")
            );
        }
    }
    Ok(())
}

fn to_json(score: &Score) -> serde_json::Value {
    json!({
        "book": score.book,
        "narrators_bound": score.narrators_bound,
        "narrated_chapters": score.narrated_chapters,
        "documents": score.documents,
        "documents_bound": score.documents_bound,
        "lines": score.lines,
        "speakers_right": score.speakers_right,
        "speakers_wrong": score.speakers_wrong,
        "speakers_unknown": score.speakers_unknown,
        "lines_missing": score.lines_missing,
        "missing_quotes": score.missing_quotes,
        "wrong_speakers": score.wrong_speakers,
        "speaker_accuracy": score.speaker_accuracy(),
        "speaker_precision": score.speaker_precision(),
        "speaker_coverage": score.speaker_coverage(),
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

/// One row per book: the figures issue 59's targets name.
fn print_rows(scores: &[Score]) {
    println!(
        "{:<36} {:>7} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11} {:>6} {:>9}",
        "book",
        "narr.",
        "spk P",
        "spk cov",
        "unfound",
        "docs",
        "roster P/R",
        "known P/R",
        "leaks",
        "scenes"
    );
    for s in scores {
        println!(
            "{:<36} {:>7} {:>9.2} {:>9.2} {:>9} {:>9} {:>11} {:>11} {:>6} {:>9}",
            prefix(&s.book, 36),
            format!("{}/{}", s.narrators_bound, s.narrated_chapters),
            s.speaker_precision(),
            s.speaker_coverage(),
            format!("{}/{}", s.lines_missing, s.lines),
            format!("{}/{}", s.documents_bound, s.documents),
            format!("{:.2}/{:.2}", s.roster.precision(), s.roster.recall()),
            format!("{:.2}/{:.2}", s.known_by.precision(), s.known_by.recall()),
            s.leaks.len(),
            format!("{}/{}", s.ingested_scenes, s.scenes),
        );
    }
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
    row(
        "  speaker precision",
        format!(
            "{}/{} {:.2}",
            score.speakers_right,
            score.speakers_right + score.speakers_wrong,
            score.speaker_precision()
        ),
    );
    row(
        "  speaker coverage",
        format!("{:.2}", score.speaker_coverage()),
    );
    row("  found, no speaker", score.speakers_unknown.to_string());
    row("  quotes not found", score.lines_missing.to_string());
    if score.documents > 0 {
        row(
            "documents by their writer",
            format!("{}/{}", score.documents_bound, score.documents),
        );
    }
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
