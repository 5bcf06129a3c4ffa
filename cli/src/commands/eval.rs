//! `dramatis eval kbf`: scores an answerer on a probe file, per character and overall.

use crate::args::ModelArgs;
use clap::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, anyhow};
use dramatis_embed::OnnxEmbedder;
use dramatis_proto::v1::{AskRequest, Usage};
use dramatis_runtime::Shutdown;
use dramatis_world::scenario::Scenario;
use serde_json::json;

use crate::kbf::{Pool, Probe, Score, Split, load_probes, match_letter, retrieval_answers, score};
use crate::stack::LocalStack;

#[derive(Debug, Args)]
pub struct KbfArgs {
    /// Probe file (JSONL; see scenarios/README.md).
    pub probes: PathBuf,
    /// Scenario the probes belong to (default: scenario.toml beside the probe file).
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Answerer::Retrieval)]
    pub answerer: Answerer,
    /// Support (cosine) an option needs before a retrieval answerer commits to it.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f32,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The language model of the agent answerer (the built-in one when none is given).
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Who answers the probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Answerer {
    /// The full character agent, asked through `World.Ask` (its shard, its model).
    Agent,
    /// Retrieval over the character's own visible facts; no language model.
    Retrieval,
    /// Baseline: retrieval over the character's profile only.
    Direct,
    /// Baseline: one index over every character's facts (the leak).
    NaiveRag,
}

/// Asks every probe through the world service; returns the matched letters (None when
/// an answer matched no option) and the language-model usage.
async fn agent_answers(
    args: &KbfArgs,
    scenario_path: &std::path::Path,
    probes: &[Probe],
) -> anyhow::Result<(Vec<Option<char>>, Usage)> {
    let stack = LocalStack::start(args.model.clone(), None, true, None, Shutdown::new()).await?;
    let mut client = super::client::world_client(&stack.server_url).await?;
    let world_id = super::client::create_world_from_file(&mut client, scenario_path).await?;
    let mut letters = Vec::with_capacity(probes.len());
    let mut usage = Usage::default();
    for probe in probes {
        let mut question = format!("{}\nOptions:", probe.question);
        for (letter, text) in &probe.options {
            question.push_str(&format!("\n{letter}) {text}"));
        }
        question.push_str("\nReply with the letter of your answer.");
        let answer = client
            .ask(AskRequest {
                world_id: world_id.clone(),
                character: probe.character.clone(),
                question,
                recall_only: false,
            })
            .await
            .map_err(|s| anyhow!("ask failed: {}", super::client::describe(&s)))?
            .into_inner();
        if let Some(u) = answer.usage {
            usage.add_calls_and_tokens(&u);
        }
        letters.push(match_letter(&answer.answer, &probe.options));
    }
    stack.stop(Some(&world_id)).await;
    Ok((letters, usage))
}

pub async fn kbf(args: &KbfArgs) -> anyhow::Result<()> {
    let scenario_path = match &args.scenario {
        Some(path) => path.clone(),
        None => args
            .probes
            .parent()
            .map(|dir| dir.join("scenario.toml"))
            .context("give --scenario: the probe file has no folder")?,
    };
    let scenario = Scenario::load(&scenario_path)?;
    let probes = load_probes(&args.probes, &scenario)?;
    let (answers, usage) = if args.answerer == Answerer::Agent {
        agent_answers(args, &scenario_path, &probes).await?
    } else {
        let embedder = OnnxEmbedder::load(&crate::models::embedder_config(None))?;
        let pool = match args.answerer {
            Answerer::Direct => Pool::Profile,
            Answerer::NaiveRag => Pool::Everyone,
            Answerer::Retrieval | Answerer::Agent => Pool::Visible,
        };
        let letters =
            retrieval_answers(&probes, &scenario, &embedder, pool, args.threshold).await?;
        (letters.into_iter().map(Some).collect(), Usage::default())
    };
    let mut by_character: BTreeMap<String, Vec<(Split, bool)>> = BTreeMap::new();
    let mut all = Vec::new();
    for (probe, answer) in probes.iter().zip(&answers) {
        let outcome = (probe.split, *answer == Some(probe.gold));
        by_character
            .entry(probe.character.clone())
            .or_default()
            .push(outcome);
        all.push(outcome);
    }
    let overall = score(&all);
    let per: BTreeMap<&String, Score> = by_character.iter().map(|(c, o)| (c, score(o))).collect();
    let name = clap::ValueEnum::to_possible_value(&args.answerer)
        .map_or_else(|| "?".to_owned(), |v| v.get_name().to_owned());
    let unmatched = answers.iter().filter(|a| a.is_none()).count();
    if args.json {
        println!(
            "{}",
            json!({
                "answerer": name,
                "scenario": scenario.name,
                "kbf": overall.kbf, "krf_acc": overall.krf_acc, "kr_acc": overall.kr_acc,
                "n_krf": overall.n_krf, "n_kr": overall.n_kr,
                "characters": per,
                "unmatched_answers": unmatched,
                "llm_calls": usage.llm_calls,
                "prompt_tokens": usage.prompt_tokens,
            })
        );
        return Ok(());
    }
    println!(
        "KBF on {} ({} probes), answerer {name}",
        scenario.name,
        probes.len()
    );
    println!(
        "{:<12} {:>5} {:>8} {:>5} {:>8} {:>7}",
        "character", "n_KRf", "KRf acc", "n_KR", "KR acc", "KBF"
    );
    let row = |who: &str, s: &Score| {
        println!(
            "{who:<12} {:>5} {:>8.3} {:>5} {:>8.3} {:>7.3}",
            s.n_krf, s.krf_acc, s.n_kr, s.kr_acc, s.kbf
        );
    };
    for (character, s) in &per {
        row(character, s);
    }
    row("overall", &overall);
    if args.answerer == Answerer::Agent {
        println!(
            "{} LLM calls, {} prompt tokens; {unmatched} answers matched no option (scored wrong)",
            usage.llm_calls, usage.prompt_tokens
        );
    }
    Ok(())
}
