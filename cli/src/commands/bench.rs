//! `dramatis bench turns`: the turn benchmark (harness in `dramatis-eval`), printed;
//! and what every bench shares: `--json`, one JSON object on the last line.

use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;

use dramatis_character::MemoryWrites;
use dramatis_embed::OnnxEmbedder;
use dramatis_eval::bench::{TurnsSetup, turns};

use crate::options::MemoryWritesArg;

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Scenario to play (shipped name or path).
    #[arg(default_value = "study-in-scarlet")]
    pub scenario: String,
    /// How many times to play it.
    #[arg(long, default_value_t = 5)]
    pub runs: u32,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    /// Who writes scene memories during the benchmark (the scripted model answers
    /// instantly, so `model` measures the calls and prompt tokens a capable model costs).
    #[arg(long, value_enum, default_value_t = MemoryWritesArg::Digest)]
    pub memory_writes: MemoryWritesArg,
    /// Run the world → agent hop in plain HTTP/2 instead of mutual TLS (what every
    /// deployment uses), to see what TLS costs.
    #[arg(long)]
    pub plain_agents: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

/// Every bench's `--json`.
#[derive(Debug, Args)]
pub struct JsonArg {
    /// After the table, print the figures as one JSON object on the last line.
    #[arg(long)]
    pub json: bool,
}

/// With `--json`, prints `figures` (an object) with `"bench": name` added, on one line.
pub fn print_json(
    output: &JsonArg,
    name: &str,
    figures: &impl serde::Serialize,
) -> anyhow::Result<()> {
    if !output.json {
        return Ok(());
    }
    let mut value = serde_json::to_value(figures)?;
    let object = value
        .as_object_mut()
        .ok_or_else(|| anyhow::anyhow!("bench figures must be an object"))?;
    object.insert("bench".to_owned(), name.into());
    println!("{}", serde_json::to_string(&value)?);
    Ok(())
}

pub async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(None))?;
    let setup = TurnsSetup {
        scenario: args.scenario.clone(),
        runs: args.runs,
        scenarios_dir: args
            .scenarios_dir
            .clone()
            .unwrap_or_else(dramatis_runtime::models::scenarios_dir),
        memory_writes: match args.memory_writes {
            MemoryWritesArg::Model => MemoryWrites::Model,
            MemoryWritesArg::Digest | MemoryWritesArg::Auto => MemoryWrites::Digest,
        },
        plain_agents: args.plain_agents,
    };
    // Clears what an earlier run in this process left.
    let _ = dramatis_eval::bench::stages::take();
    let report = turns(&setup, Arc::new(embedder)).await?;
    let stages = dramatis_eval::bench::stages::take();
    let per_turn_us = &report.per_turn_us;
    let median = per_turn_us[per_turn_us.len() / 2];
    let mean = per_turn_us.iter().sum::<f64>() / per_turn_us.len() as f64;
    println!(
        "scenario {} · {} runs · {} turns · {} events · agent hop {}",
        args.scenario,
        report.runs,
        report.turns,
        report.events,
        if args.plain_agents {
            "plain"
        } else {
            "mutual TLS"
        }
    );
    println!(
        "orchestration per turn: median {median:.0} µs, mean {mean:.0} µs, best {:.0} µs, worst {:.0} µs",
        per_turn_us[0],
        per_turn_us[per_turn_us.len() - 1]
    );
    let turns = report.turns as f64;
    println!(
        "per transcript line, turns only (world usage): {:.2} LLM calls, {:.0} prompt tokens",
        report.turn_calls as f64 / turns,
        report.turn_prompt_tokens as f64 / turns
    );
    println!(
        "per transcript line, everything the agents sent (turns, Self-Probe, memory writes \
         [{:?}]): {:.2} LLM calls, {:.0} prompt tokens (scripted model, estimated tokens)",
        args.memory_writes,
        report.all_calls as f64 / turns,
        report.all_prompt_tokens as f64 / turns
    );
    println!(
        "echoes (a line repeating most of one just before it): {} of {} lines, {:.1} per 100",
        report.echoes,
        report.lines,
        100.0 * report.echoes as f64 / report.lines.max(1) as f64
    );
    let latency = &report.token_latency_us;
    if !latency.is_empty() {
        let at = |q: f64| latency[((latency.len() - 1) as f64 * q).round() as usize];
        println!(
            "first word of a line, model → watcher (agent stream, world hub, Watch): median {:.0} µs, p90 {:.0} µs, worst {:.0} µs over {} lines",
            at(0.5),
            at(0.9),
            at(1.0),
            latency.len()
        );
    }
    println!(
        "wall: {:.2} s including world creation and deletion",
        report.wall_seconds
    );
    let per_line = print_stages(&stages, report.turns);
    let at = |values: &[f64], q: f64| {
        (!values.is_empty()).then(|| values[((values.len() - 1) as f64 * q).round() as usize])
    };
    print_json(
        &args.output,
        "turns",
        &serde_json::json!({
            "scenario": args.scenario,
            "runs": report.runs,
            "turns": report.turns,
            "events": report.events,
            "agent_hop": if args.plain_agents { "plain" } else { "mutual_tls" },
            "median_us_per_turn": median,
            "mean_us_per_turn": mean,
            "llm_calls_per_line": report.all_calls as f64 / turns,
            "prompt_tokens_per_line": report.all_prompt_tokens as f64 / turns,
            "echoes_per_100_lines": 100.0 * report.echoes as f64 / report.lines.max(1) as f64,
            "first_word_median_us": at(&report.token_latency_us, 0.5),
            "first_word_p90_us": at(&report.token_latency_us, 0.9),
            "wall_seconds": report.wall_seconds,
            "stage_ms_per_line": per_line,
        }),
    )
}

/// Prints the stage table (ms per line: each stage's time over the run's lines) and
/// returns it by stage. Stages overlap: `act` holds the agent's `recall` … `guard`;
/// `deliver` holds the perceivers' `perceive_store` … `perceive_save`, which run side
/// by side, one per perceiver.
pub fn print_stages(
    stages: &[(&'static str, dramatis_eval::bench::stages::StageTime)],
    lines: u64,
) -> serde_json::Map<String, serde_json::Value> {
    print_stage_columns(&["this run"], &[stages.to_vec()], &[lines])
        .pop()
        .unwrap_or_default()
}

/// Prints a stage table with a column per part of a run (ms per line: each stage's time
/// over that part's lines) and returns each column by stage.
pub fn print_stage_columns(
    titles: &[&str],
    columns: &[Vec<(&'static str, dramatis_eval::bench::stages::StageTime)>],
    lines: &[u64],
) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let mut out = vec![serde_json::Map::new(); columns.len()];
    let Some(names) = columns.first() else {
        return out;
    };
    if names.is_empty() {
        return out;
    }
    let mut header = format!("{:<16}", "ms per line");
    for title in titles {
        header.push_str(&format!(" {title:>12}"));
    }
    println!("{header}  (nested stages indented)");
    for (name, _) in names {
        let mut row = format!("{:<16}", format!("{}{name}", stage_indent(name)));
        for ((column, lines), map) in columns.iter().zip(lines).zip(&mut out) {
            let time = column
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.total_us);
            let ms = time.unwrap_or(0.0) / 1e3 / (*lines).max(1) as f64;
            row.push_str(&format!(" {ms:>12.3}"));
            map.insert((*name).to_owned(), ms.into());
        }
        println!("{row}");
    }
    out
}

fn stage_indent(name: &str) -> &'static str {
    match name {
        "act" | "log_append" | "deliver" | "embed_wait" | "embed_run" => "",
        "embed_query" | "anchor" | "retrieve" => "    ",
        _ => "  ",
    }
}
