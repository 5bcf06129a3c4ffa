//! `dramatis bench story`: one long open story with the shards saved to disk, timed by
//! tenth of its lines (harness in `dramatis-eval`).

use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use dramatis_embed::OnnxEmbedder;
use dramatis_eval::bench::{StorySetup, story, story_spec};
use dramatis_scenario::ScenarioCatalog;

use super::bench::{JsonArg, print_json};

#[derive(Debug, Args)]
pub struct StoryBenchArgs {
    /// Rounds the story runs (each round, a scene wherever people are).
    #[arg(long, default_value_t = 600)]
    pub rounds: u32,
    /// People in the story: the open story's own cast, then copies of it in further
    /// districts of the same map.
    #[arg(long, default_value_t = 4)]
    pub characters: usize,
    /// The open story to grow (a shipped sandbox's name).
    #[arg(long, default_value = "lamplighters-ledger")]
    pub sandbox: String,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    /// Run the world → agent hop in plain HTTP/2 instead of mutual TLS.
    #[arg(long)]
    pub plain_agents: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

/// The scenarios directory (given or shipped) and the shipped open story `sandbox` in it.
pub fn sandbox_base(
    scenarios_dir: Option<&std::path::Path>,
    sandbox: &str,
) -> anyhow::Result<(PathBuf, dramatis_scenario::Scenario)> {
    let dir = scenarios_dir.map_or_else(dramatis_runtime::models::scenarios_dir, PathBuf::from);
    let base = ScenarioCatalog::new(dir.clone())
        .load(sandbox)
        .with_context(|| format!("no shipped sandbox named {sandbox:?}"))??;
    Ok((dir, base))
}

pub async fn bench_story(args: &StoryBenchArgs) -> anyhow::Result<()> {
    let (scenarios_dir, base) = sandbox_base(args.scenarios_dir.as_deref(), &args.sandbox)?;
    let spec = story_spec(&base, args.characters, args.rounds)?;
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(None))?;
    eprintln!(
        "playing {} rounds of {} with {} characters (scripted model, real embedder, shards saved)…",
        args.rounds, args.sandbox, args.characters
    );
    let report = story(
        &StorySetup {
            spec,
            scenarios_dir,
            plain_agents: args.plain_agents,
        },
        Arc::new(embedder),
    )
    .await?;
    println!(
        "story {} · {} characters · {} rounds · {} lines · {} events · {:.1} s",
        args.sandbox,
        report.characters,
        report.rounds,
        report.lines,
        report.events,
        report.wall_seconds
    );
    println!("{:<8} {:>12}", "tenth", "ms per line");
    for (i, ms) in report.ms_per_line_by_tenth.iter().enumerate() {
        println!("{:<8} {ms:>12.2}", i + 1);
    }
    println!("last tenth / first tenth: {:.2}", report.last_over_first);
    println!(
        "shard bytes per character at the end: {} · peak memory {:.0} MB (this process: world, agent, embedder)",
        report.shard_bytes_per_character, report.peak_rss_mb
    );
    let columns = super::bench::print_stage_columns(
        &["whole story", "first tenth", "last tenth"],
        &report.stages,
        &report.stage_lines,
    );
    let mut figures = serde_json::to_value(&report)?;
    if let Some(object) = figures.as_object_mut() {
        for (key, column) in [
            "stage_ms_per_line",
            "stage_ms_per_line_first_tenth",
            "stage_ms_per_line_last_tenth",
        ]
        .into_iter()
        .zip(columns)
        {
            object.insert(key.into(), column.into());
        }
    }
    print_json(&args.output, "story", &figures)
}
