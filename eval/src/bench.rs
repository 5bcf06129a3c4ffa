//! The turn benchmark's harness: a world service and one agent service in process on
//! loopback ports, the scripted model (so the figures are the orchestration's own, not
//! a model's), a scenario played to its end a number of times, with a watcher timing
//! the first word of each line from the model to the client.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, anyhow};
use dramatis_character::{AgentOptions, CharacterAgents, MemoryWrites};
use dramatis_embed::Embedder;
use dramatis_llm::{
    Completion, CompletionRequest, LanguageModel, LlmError, RoleModels, ScriptedModel, TokenSink,
};
use dramatis_proto::v1::{
    AdvanceRequest, CreateWorldRequest, DeleteWorldRequest, WatchRequest, advance_request,
    create_world_request, watch_response,
};
use dramatis_runtime::Shutdown;
use dramatis_runtime::auth::Access;
use dramatis_runtime::client::{ClientOptions, describe, world_client};
use dramatis_runtime::grpc::Security;
use dramatis_runtime::pki::DeploymentPki;
use dramatis_world::WorldServiceOptions;
use dramatis_world::agent_clients::StaticAgents;

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
    /// Model → watcher latency of each line's first word, in µs, sorted.
    pub token_latency_us: Vec<f64>,
    pub wall_seconds: f64,
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

/// Plays `setup`'s scenario `setup.runs` times and measures it.
pub async fn turns(setup: &TurnsSetup, embedder: Arc<dyn Embedder>) -> anyhow::Result<TurnsReport> {
    let shutdown = Shutdown::new();
    let data = tempfile::tempdir().context("temporary directory")?;
    let scripted = ScriptedModel::default().without_recording();
    let model = StampedModel {
        inner: scripted.clone(),
        first_visible: Arc::default(),
    };
    let mut options = AgentOptions::new(RoleModels::uniform(Arc::new(model.clone())), embedder);
    options.memory_writes = setup.memory_writes;
    let agents = CharacterAgents::new(options);
    let agent_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let agent_addr = agent_listener.local_addr()?;
    let (security, agent_tls, scheme) = if setup.plain_agents {
        (Security::open(), None, "http")
    } else {
        let pki = DeploymentPki::generate(&[], std::time::Duration::from_secs(86_400))?;
        let dir = data.path().join("pki");
        pki.write_agent_half(&dir)?;
        let security = Security {
            tls: Some(dramatis_runtime::pki::agent_server_tls(&dir)?),
            access: Access::PeerCertificate,
        };
        (security, Some(pki.world_client_tls()), "https")
    };
    tokio::spawn(dramatis_character::run(
        agent_listener,
        agents,
        security,
        shutdown.clone(),
    ));
    let options = WorldServiceOptions {
        scenarios_dir: setup.scenarios_dir.clone(),
        scenario_roots: std::path::Path::new(&setup.scenario)
            .canonicalize()
            .ok()
            .and_then(|f| f.parent().map(std::path::Path::to_path_buf))
            .into_iter()
            .collect(),
        log_path: data.path().join("events.redb"),
        agents: Arc::new(StaticAgents::new(vec![format!("{scheme}://{agent_addr}")])?),
        narrator: Some(Arc::new(scripted.clone())),
        viewer_dir: None,
        limits: dramatis_world::Limits::default(),
        tls: None,
        tokens: None,
        agent_tls,
    };
    let world_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let world_addr = world_listener.local_addr()?;
    tokio::spawn(dramatis_world::run(
        world_listener,
        options,
        shutdown.clone(),
    ));
    let mut client = world_client(&ClientOptions::local(&format!("http://{world_addr}"))).await?;
    let source = if std::path::Path::new(&setup.scenario).is_file() {
        create_world_request::Source::ScenarioPath(setup.scenario.clone())
    } else {
        create_world_request::Source::ScenarioName(setup.scenario.clone())
    };
    let mut per_turn_us = Vec::new();
    let mut token_latency_us: Vec<f64> = Vec::new();
    let (mut turns, mut events, mut calls, mut prompt_tokens) = (0u64, 0u64, 0u64, 0u64);
    let total = Instant::now();
    for _ in 0..setup.runs.max(1) {
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
        token_latency_us,
        wall_seconds: total.elapsed().as_secs_f64(),
    })
}
