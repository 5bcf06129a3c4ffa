//! `dramatis eval kbf`: scores an answerer on a probe file, per character and overall.

use crate::args::ModelArgs;
use clap::Args;
use std::path::PathBuf;

use anyhow::Context as _;
use dramatis_embed::OnnxEmbedder;
use dramatis_proto::v1::Usage;
use dramatis_runtime::Shutdown;
use dramatis_world::scenario::Scenario;
use serde_json::json;

use crate::stack::LocalStack;
use dramatis_eval::create_world_from_file;
use dramatis_eval::kbf::{self, Pool, Probe, Score, load_probes, retrieval_answers};
use dramatis_runtime::client::world_client;

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

/// Asks every probe through the world service, on a stack of its own.
async fn agent_answers(
    args: &KbfArgs,
    scenario_path: &std::path::Path,
    probes: &[Probe],
) -> anyhow::Result<(Vec<Option<char>>, Usage)> {
    let stack = LocalStack::start(args.model.clone(), None, true, None, Shutdown::new()).await?;
    let mut client = world_client(&stack.server_url).await?;
    let world_id = create_world_from_file(&mut client, scenario_path).await?;
    let answered = kbf::agent_answers(&mut client, &world_id, probes).await;
    stack.stop(Some(&world_id)).await;
    answered
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
    let (overall, per) = kbf::scores(&probes, &answers);
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
