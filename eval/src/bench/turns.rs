//! The turn benchmark: a scenario played to its end a number of times, with a watcher
//! timing the first word of each line from the model to the client.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use dramatis_character::MemoryWrites;
use dramatis_embed::Embedder;
use dramatis_proto::v1::{create_world_request, watch_response};

use super::{Cluster, ClusterSetup};

/// What to play.
pub struct TurnsSetup {
    /// A scenario file, or a shipped scenario's name.
    pub scenario: String,
    pub runs: u32,
    pub scenarios_dir: PathBuf,
    /// Who writes scene memories (the scripted model answers instantly, so `Model`
    /// measures the calls and prompt tokens a capable model costs).
    pub memory_writes: MemoryWrites,
    /// The world → agent hop in plain HTTP/2 instead of mutual TLS (the default of
    /// every deployment), to see what TLS costs.
    pub plain_agents: bool,
}

/// What the runs measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TurnsReport {
    pub runs: usize,
    pub turns: u64,
    pub events: u64,
    /// Wall time per turn of each run, in µs, sorted.
    pub per_turn_us: Vec<f64>,
    /// The world's usage (turns only).
    pub turn_calls: u64,
    pub turn_prompt_tokens: u64,
    /// Everything the agents sent (turns, Self-Probe, memory writes).
    pub all_calls: u64,
    pub all_prompt_tokens: u64,
    /// Lines that echo one of the lines just before them (`echo::count_echoes`, per
    /// run), and the lines counted.
    pub echoes: u64,
    pub lines: u64,
    /// Model → watcher latency of each line's first word, in µs, sorted.
    pub token_latency_us: Vec<f64>,
    pub wall_seconds: f64,
}

/// Plays `setup`'s scenario `setup.runs` times and measures it.
pub async fn turns(setup: &TurnsSetup, embedder: Arc<dyn Embedder>) -> anyhow::Result<TurnsReport> {
    let cluster = Cluster::start(
        &ClusterSetup {
            scenarios_dir: setup.scenarios_dir.clone(),
            scenario_roots: std::path::Path::new(&setup.scenario)
                .canonicalize()
                .ok()
                .and_then(|f| f.parent().map(std::path::Path::to_path_buf))
                .into_iter()
                .collect(),
            memory_writes: setup.memory_writes,
            plain_agents: setup.plain_agents,
            save_shards: false,
            shard_stream: None,
            shared: None,
            fixed_width_lines: false,
        },
        embedder,
    )
    .await?;
    let (model, scripted) = (cluster.model.clone(), cluster.scripted.clone());
    let source = if std::path::Path::new(&setup.scenario).is_file() {
        create_world_request::Source::ScenarioPath(setup.scenario.clone())
    } else {
        create_world_request::Source::ScenarioName(setup.scenario.clone())
    };
    let mut per_turn_us = Vec::new();
    let mut token_latency_us: Vec<f64> = Vec::new();
    let (mut turns, mut events, mut calls, mut prompt_tokens) = (0u64, 0u64, 0u64, 0u64);
    let (mut echoes, mut lines) = (0u64, 0u64);
    let total = Instant::now();
    for _ in 0..setup.runs.max(1) {
        // A watcher notes when the first word of each line reaches it.
        let (world, mut watching) = cluster.create_and_watch(source.clone()).await?;
        let watcher = tokio::spawn(async move {
            let mut first: Vec<(u64, Instant)> = Vec::new();
            while let Ok(Some(message)) = watching.message().await {
                if let Some(watch_response::Item::Token(token)) = message.item
                    && first.last().is_none_or(|(seq, _)| *seq != token.seq)
                {
                    first.push((token.seq, Instant::now()));
                }
            }
            first
        });
        let (advanced, elapsed) = cluster.play_to_end(world.world_id).await?;
        let info = advanced.world.context("no world state")?;
        let usage = info.usage.unwrap_or_default();
        let run_turns = u64::from(info.total_turns.max(1));
        per_turn_us.push(elapsed.as_secs_f64() * 1e6 / run_turns as f64);
        turns += run_turns;
        events += advanced.events.len() as u64;
        let said: Vec<&str> = advanced
            .events
            .iter()
            .filter(|e| e.turn > 0 && !e.fallback)
            .map(|e| e.text.as_str())
            .collect();
        echoes += dramatis_memory::echo::count_echoes(&said) as u64;
        lines += said.len() as u64;
        calls += u64::from(usage.llm_calls);
        prompt_tokens += u64::from(usage.prompt_tokens);
        let received = watcher.await.unwrap_or_default();
        let sent: Vec<Instant> = std::mem::take(&mut *dramatis_runtime::lock(&model.first_visible));
        token_latency_us.extend(
            sent.iter()
                .zip(&received)
                .map(|(s, (_, r))| r.saturating_duration_since(*s).as_secs_f64() * 1e6),
        );
    }
    drop(cluster);
    per_turn_us.sort_by(f64::total_cmp);
    token_latency_us.sort_by(f64::total_cmp);
    Ok(TurnsReport {
        runs: per_turn_us.len(),
        turns,
        events,
        per_turn_us,
        turn_calls: calls,
        turn_prompt_tokens: prompt_tokens,
        all_calls: scripted.calls(),
        all_prompt_tokens: scripted.prompt_tokens(),
        echoes,
        lines,
        token_latency_us,
        wall_seconds: total.elapsed().as_secs_f64(),
    })
}
