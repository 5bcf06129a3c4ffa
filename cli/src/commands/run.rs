//! `dramatis run`: everything in one command — model, world service, agents — then the
//! story, printed live.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, anyhow};
use dramatis_proto::v1::{
    AdvanceRequest, CreateWorldRequest, WatchRequest, WorldInfo, advance_request,
    create_world_request,
};
use dramatis_runtime::Shutdown;
use dramatis_world::agents::AgentDirectory;
use dramatis_world::{WorldServiceOptions, Worlds};

use super::client::{describe, world_client};
use crate::args::RunArgs;
use crate::printer::Printer;
use crate::spawn::{SpawnedAgents, start_builtin_llm};

pub async fn run(mut args: RunArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let (data_dir, _temp) = match &args.data_dir {
        Some(dir) => (dir.clone(), None),
        None => {
            let temp = tempfile::Builder::new()
                .prefix("dramatis-run-")
                .tempdir()
                .context("cannot create a temporary directory")?;
            (temp.path().to_path_buf(), Some(temp))
        }
    };
    let logs = data_dir.join("logs");
    let shutdown = Shutdown::new();
    shutdown.trigger_on_signals();

    let mut _llm = None;
    if args.model.llm_endpoint.is_none() && args.model.scripted.is_none() {
        eprintln!("starting the built-in model (SmolLM2-135M-Instruct on llama.cpp)…");
        let (spawned, endpoint) = start_builtin_llm(&logs).await?;
        args.model.llm_endpoint = Some(endpoint);
        _llm = Some(spawned);
    }
    let agents = Arc::new(SpawnedAgents::new(
        args.model.clone(),
        logs.clone(),
        args.shared_agent,
    ));
    let options = WorldServiceOptions {
        scenarios_dir: args
            .scenarios_dir
            .clone()
            .unwrap_or_else(dramatis_runtime::models::scenarios_dir),
        log_path: data_dir.join("events.redb"),
        agents: Arc::clone(&agents) as Arc<dyn AgentDirectory>,
    };
    let worlds = Worlds::open(&options)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(dramatis_world::serve_worlds(
        listener,
        worlds,
        shutdown.clone(),
        0,
    ));

    let server_url = format!("http://{addr}");
    let outcome = tokio::select! {
        result = play(&args, &server_url) => result,
        () = shutdown.wait() => Err(anyhow!("interrupted")),
    };
    shutdown.trigger();
    let _ = server.await;
    if let Ok((world, printed)) = &outcome {
        agents.release(&world.world_id).await;
        summary(world, *printed, started.elapsed().as_secs_f64());
        if args.data_dir.is_some() {
            eprintln!("event log and process logs kept in {}", data_dir.display());
        }
    } else {
        eprintln!("process logs: {}", logs.display());
    }
    outcome.map(|_| ())
}

/// Creates the world, follows its transcript and advances it to the end of the script.
async fn play(args: &RunArgs, server: &str) -> anyhow::Result<(WorldInfo, u64)> {
    let mut client = world_client(server).await?;
    let source = if Path::new(&args.scenario).is_file() {
        let path =
            std::fs::canonicalize(&args.scenario).unwrap_or_else(|_| PathBuf::from(&args.scenario));
        create_world_request::Source::ScenarioPath(path.to_string_lossy().into_owned())
    } else {
        create_world_request::Source::ScenarioName(args.scenario.clone())
    };
    let world = client
        .create_world(CreateWorldRequest {
            source: Some(source),
            world_id: String::new(),
        })
        .await
        .map_err(|s| anyhow!("cannot create the world: {}", describe(&s)))?
        .into_inner();
    eprintln!(
        "{} — {} characters, {} scenes (world {})",
        world.title,
        world.characters.len(),
        world.total_scenes,
        world.world_id
    );
    let mut stream = client
        .watch(WatchRequest {
            world_id: world.world_id.clone(),
            from_seq: 1,
            no_follow: false,
        })
        .await
        .map_err(|s| anyhow!("cannot watch: {}", describe(&s)))?
        .into_inner();
    let (last_tx, mut last_rx) = tokio::sync::watch::channel(u64::MAX);
    let no_color = args.no_color;
    let printer = tokio::spawn(async move {
        let mut printer = Printer::new(no_color);
        loop {
            if printer.last_seq >= *last_rx.borrow() {
                break;
            }
            tokio::select! {
                message = stream.message() => match message {
                    Ok(Some(item)) => printer.item(item),
                    Ok(None) | Err(_) => break,
                },
                changed = last_rx.changed() => if changed.is_err() { break },
            }
        }
        printer.last_seq
    });
    let advanced = client
        .advance(AdvanceRequest {
            world_id: world.world_id.clone(),
            until: Some(advance_request::Until::ScriptEnd(true)),
        })
        .await
        .map_err(|s| anyhow!("the story stopped: {}", describe(&s)))?
        .into_inner();
    let info = advanced.world.context("advance returned no world state")?;
    let _ = last_tx.send(info.next_seq.saturating_sub(1));
    let printed = printer.await.unwrap_or(0);
    Ok((info, printed))
}

fn summary(world: &WorldInfo, printed: u64, seconds: f64) {
    let usage = world.usage.unwrap_or_default();
    let turns = f64::from(world.total_turns.max(1));
    println!(
        "\n{} turns in {} scenes, {printed} events · {} LLM calls ({:.2}/turn) · {} prompt + {} \
         completion tokens ({:.0} + {:.0}/turn) · {seconds:.1} s wall ({:.2} s/turn)",
        world.total_turns,
        world.total_scenes,
        usage.llm_calls,
        f64::from(usage.llm_calls) / turns,
        usage.prompt_tokens,
        usage.completion_tokens,
        f64::from(usage.prompt_tokens) / turns,
        f64::from(usage.completion_tokens) / turns,
        seconds / turns,
    );
}
