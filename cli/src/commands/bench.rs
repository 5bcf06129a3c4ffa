//! `dramatis bench`: orchestration overhead per turn. Real gRPC over loopback between an
//! in-process world service and an in-process agent service, with the scripted model
//! (zero model latency), so what is measured is everything except the model.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, anyhow};
use dramatis_character::{AgentOptions, CharacterAgents, MemoryWrites};
use dramatis_embed::OnnxEmbedder;
use dramatis_llm::{RoleModels, ScriptedModel};
use dramatis_proto::v1::{
    AdvanceRequest, CreateWorldRequest, DeleteWorldRequest, advance_request, create_world_request,
};
use dramatis_runtime::Shutdown;
use dramatis_world::WorldServiceOptions;
use dramatis_world::agents::StaticAgents;

use super::client::{describe, world_client};
use crate::args::{BenchArgs, MemoryWritesArg};

pub async fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    let data = tempfile::tempdir().context("temporary directory")?;
    let model = ScriptedModel::default().without_recording();
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
        narrator: Some(Arc::new(model.clone())),
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
        model.calls() as f64 / turns as f64,
        model.prompt_tokens() as f64 / turns as f64
    );
    println!(
        "wall: {:.2} s including world creation and deletion",
        total.elapsed().as_secs_f64()
    );
    Ok(())
}
