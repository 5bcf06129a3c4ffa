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
    /// Play the story this many times: each tenth's figure and the last/first ratio are
    /// then the median over the runs (one run is noisy on a shared machine).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
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
    let embedder: Arc<dyn dramatis_embed::Embedder> = Arc::new(embedder);
    let setup = StorySetup {
        spec,
        scenarios_dir,
        plain_agents: args.plain_agents,
    };
    let mut reports = Vec::new();
    for run in 1..=args.runs {
        if args.runs > 1 {
            eprintln!("run {run} of {}…", args.runs);
        }
        let report = story(&setup, Arc::clone(&embedder)).await?;
        eprintln!(
            "run {run}: last tenth / first tenth {:.2}",
            report.last_over_first
        );
        reports.push(report);
    }
    let tenths = median_tenths(&reports);
    let ratios: Vec<f64> = reports.iter().map(|r| r.last_over_first).collect();
    let ratio = median(&ratios);
    let rises = tenths.windows(2).filter(|w| w[1] > w[0]).count();
    let slope = slope_per_tenth(&tenths);
    let report = reports.pop().context("no run")?;
    println!(
        "story {} · {} characters · {} rounds · {} lines · {} events · {:.1} s · {} run(s)",
        args.sandbox,
        report.characters,
        report.rounds,
        report.lines,
        report.events,
        report.wall_seconds,
        args.runs
    );
    println!("{:<8} {:>12}", "tenth", "ms per line");
    for (i, ms) in tenths.iter().enumerate() {
        println!("{:<8} {ms:>12.2}", i + 1);
    }
    println!(
        "last tenth / first tenth: {ratio:.2} (median of {}: {}); tenths rising over the one before: {rises} of {}; trend {:+.1}% of the mean per tenth",
        ratios.len(),
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" "),
        tenths.len().saturating_sub(1),
        slope * 100.0
    );
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
        object.insert("ms_per_line_by_tenth".into(), tenths.clone().into());
        object.insert("last_over_first".into(), ratio.into());
        object.insert("last_over_first_runs".into(), ratios.into());
        object.insert("rising_tenths".into(), rises.into());
        object.insert("trend_per_tenth".into(), slope.into());
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

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]),
    }
}

/// Each tenth's ms per line, the median over the runs.
fn median_tenths(reports: &[dramatis_eval::bench::StoryReport]) -> Vec<f64> {
    let tenths = reports
        .iter()
        .map(|r| r.ms_per_line_by_tenth.len())
        .min()
        .unwrap_or(0);
    (0..tenths)
        .map(|t| {
            let at: Vec<f64> = reports.iter().map(|r| r.ms_per_line_by_tenth[t]).collect();
            median(&at)
        })
        .collect()
}

/// The least-squares slope of `tenths` over their index, as a share of their mean: how
/// much a line's cost grows from one tenth of the story to the next.
fn slope_per_tenth(tenths: &[f64]) -> f64 {
    let n = tenths.len() as f64;
    if tenths.len() < 2 {
        return 0.0;
    }
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = tenths.iter().sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (i, y) in tenths.iter().enumerate() {
        let dx = i as f64 - mean_x;
        num += dx * (y - mean_y);
        den += dx * dx;
    }
    if den == 0.0 || mean_y == 0.0 {
        0.0
    } else {
        num / den / mean_y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_and_the_trend_are_those_counted_by_hand() {
        assert!((median(&[3.0, 1.0, 2.0]) - 2.0).abs() < 1e-12);
        assert!((median(&[4.0, 1.0, 2.0, 3.0]) - 2.5).abs() < 1e-12);
        // 10, 11, 12: slope 1 over a mean of 11.
        assert!((slope_per_tenth(&[10.0, 11.0, 12.0]) - 1.0 / 11.0).abs() < 1e-12);
        assert!(slope_per_tenth(&[5.0, 5.0, 5.0]).abs() < 1e-12);
    }
}
