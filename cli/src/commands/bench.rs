//! `dramatis bench`: orchestration overhead per turn. Real gRPC over loopback between an
//! in-process world service and an in-process agent service, with the scripted model
//! (zero model latency), so what is measured is everything except the model.

use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, anyhow};
use dramatis_character::{AgentOptions, CharacterAgents, MemoryWrites};
use dramatis_embed::OnnxEmbedder;
use dramatis_llm::{
    Completion, CompletionRequest, LanguageModel, LlmError, RoleModels, ScriptedModel, TokenSink,
};
use dramatis_proto::v1::{
    AdvanceRequest, CreateWorldRequest, DeleteWorldRequest, WatchRequest, advance_request,
    create_world_request, watch_response,
};
use dramatis_runtime::Shutdown;
use dramatis_world::WorldServiceOptions;
use dramatis_world::agent_clients::StaticAgents;

use super::client::{describe, world_client};
use crate::args::MemoryWritesArg;

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
}

/// The scripted model, passing its streamed pieces on and noting when it hands over the
/// first piece of each action's visible line: the start of the model → watcher token
/// latency.
#[derive(Debug, Clone)]
struct StampedModel {
    inner: ScriptedModel,
    first_visible: Arc<std::sync::Mutex<Vec<Instant>>>,
}

#[async_trait::async_trait]
impl LanguageModel for StampedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        tokens: Option<&TokenSink>,
    ) -> Result<Completion, LlmError> {
        let Some(sink) = tokens else {
            return self.inner.complete(request, None).await;
        };
        // The scripted model's own pieces, passed on with the moment the line starts.
        let (pieces_tx, mut pieces) = tokio::sync::mpsc::unbounded_channel();
        let completion = self.inner.complete(request, Some(&pieces_tx)).await?;
        let mut sent = String::new();
        let mut stamped = false;
        while let Ok(piece) = pieces.try_recv() {
            sent.push_str(&piece);
            if !stamped && sent.contains("\"text\":\"") {
                stamped = true;
                dramatis_runtime::lock(&self.first_visible).push(Instant::now());
            }
            let _ = sink.send(piece);
        }
        Ok(completion)
    }
}

pub async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    let data = tempfile::tempdir().context("temporary directory")?;
    let scripted = ScriptedModel::default().without_recording();
    let model = StampedModel {
        inner: scripted.clone(),
        first_visible: Arc::default(),
    };
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(None))?;
    let mut options = AgentOptions::new(
        RoleModels::uniform(Arc::new(model.clone())),
        Arc::new(embedder),
    );
    options.memory_writes = match args.memory_writes {
        MemoryWritesArg::Model => MemoryWrites::Model,
        MemoryWritesArg::Digest | MemoryWritesArg::Auto => MemoryWrites::Digest,
    };
    let agents = CharacterAgents::new(options);
    let agent_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let agent_addr = agent_listener.local_addr()?;
    tokio::spawn(dramatis_character::run(
        agent_listener,
        agents,
        shutdown.clone(),
    ));
    let options = WorldServiceOptions {
        scenarios_dir: args
            .scenarios_dir
            .unwrap_or_else(dramatis_runtime::models::scenarios_dir),
        log_path: data.path().join("events.redb"),
        agents: Arc::new(StaticAgents::new(vec![format!("http://{agent_addr}")])?),
        narrator: Some(Arc::new(scripted.clone())),
        viewer_dir: None,
    };
    let world_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let world_addr = world_listener.local_addr()?;
    tokio::spawn(dramatis_world::run(
        world_listener,
        options,
        shutdown.clone(),
    ));
    let mut client = world_client(&format!("http://{world_addr}")).await?;
    let source = if std::path::Path::new(&args.scenario).is_file() {
        create_world_request::Source::ScenarioPath(args.scenario.clone())
    } else {
        create_world_request::Source::ScenarioName(args.scenario.clone())
    };
    let mut per_turn_us = Vec::new();
    let mut token_latency_us: Vec<f64> = Vec::new();
    let (mut turns, mut events, mut calls, mut prompt_tokens) = (0u64, 0u64, 0u64, 0u64);
    let total = Instant::now();
    for _ in 0..args.runs.max(1) {
        let world = client
            .create_world(CreateWorldRequest {
                source: Some(source.clone()),
                world_id: String::new(),
            })
            .await
            .map_err(|s| anyhow!("create: {}", describe(&s)))?
            .into_inner();
        // A watcher notes when the first word of each line reaches it.
        let mut watching = client
            .watch(WatchRequest {
                world_id: world.world_id.clone(),
                from_seq: 1,
                no_follow: false,
                pov: String::new(),
            })
            .await
            .map_err(|s| anyhow!("watch: {}", describe(&s)))?
            .into_inner();
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
        let started = Instant::now();
        let advanced = client
            .advance(AdvanceRequest {
                world_id: world.world_id.clone(),
                until: Some(advance_request::Until::ScriptEnd(true)),
            })
            .await
            .map_err(|s| anyhow!("advance: {}", describe(&s)))?
            .into_inner();
        let elapsed = started.elapsed();
        let info = advanced.world.context("no world state")?;
        let usage = info.usage.unwrap_or_default();
        let run_turns = u64::from(info.total_turns.max(1));
        per_turn_us.push(elapsed.as_secs_f64() * 1e6 / run_turns as f64);
        turns += run_turns;
        events += advanced.events.len() as u64;
        calls += u64::from(usage.llm_calls);
        prompt_tokens += u64::from(usage.prompt_tokens);
        client
            .delete_world(DeleteWorldRequest {
                world_id: world.world_id,
            })
            .await
            .map_err(|s| anyhow!("delete: {}", describe(&s)))?;
        let received = watcher.await.unwrap_or_default();
        let sent: Vec<Instant> = std::mem::take(&mut *dramatis_runtime::lock(&model.first_visible));
        token_latency_us.extend(
            sent.iter()
                .zip(&received)
                .map(|(s, (_, r))| r.saturating_duration_since(*s).as_secs_f64() * 1e6),
        );
    }
    shutdown.trigger();
    per_turn_us.sort_by(f64::total_cmp);
    let median = per_turn_us[per_turn_us.len() / 2];
    let mean = per_turn_us.iter().sum::<f64>() / per_turn_us.len() as f64;
    println!(
        "scenario {} · {} runs · {turns} turns · {events} events",
        args.scenario,
        per_turn_us.len()
    );
    println!(
        "orchestration per turn: median {median:.0} µs, mean {mean:.0} µs, best {:.0} µs, worst {:.0} µs",
        per_turn_us[0],
        per_turn_us[per_turn_us.len() - 1]
    );
    println!(
        "per transcript line, turns only (world usage): {:.2} LLM calls, {:.0} prompt tokens",
        calls as f64 / turns as f64,
        prompt_tokens as f64 / turns as f64
    );
    println!(
        "per transcript line, everything the agents sent (turns, Self-Probe, memory writes \
         [{:?}]): {:.2} LLM calls, {:.0} prompt tokens (scripted model, estimated tokens)",
        args.memory_writes,
        scripted.calls() as f64 / turns as f64,
        scripted.prompt_tokens() as f64 / turns as f64
    );
    if !token_latency_us.is_empty() {
        token_latency_us.sort_by(f64::total_cmp);
        let at =
            |q: f64| token_latency_us[((token_latency_us.len() - 1) as f64 * q).round() as usize];
        println!(
            "first word of a line, model → watcher (agent stream, world hub, Watch): median {:.0} µs, p90 {:.0} µs, worst {:.0} µs over {} lines",
            at(0.5),
            at(0.9),
            at(1.0),
            token_latency_us.len()
        );
    }
    println!(
        "wall: {:.2} s including world creation and deletion",
        total.elapsed().as_secs_f64()
    );
    Ok(())
}
