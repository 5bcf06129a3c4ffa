//! `dramatis run`: everything in one command — model, world service, agents — then the
//! story, printed live.

use crate::options::ModelArgs;
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, anyhow};
use dramatis_proto::v1::{GetAuditRequest, WorldInfo, create_world_request};
use dramatis_runtime::Shutdown;
use serde_json::json;

use crate::printer::Printer;
use crate::stack::{LocalStack, folder_of};
use dramatis_runtime::client::{
    ClientOptions, WorldRpc, advance_to_end, create_and_watch, describe, world_client,
};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A shipped scenario name (see `dramatis scenarios`) or a scenario file path.
    pub scenario: String,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub layout: crate::options::LayoutArgs,
    /// Where the event log and process logs go (default: a temporary directory).
    #[arg(long, env = "DRAMATIS_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    /// Write every prompt each character's agent sent to its language model, with the
    /// memory items (and layers) it contained, to DIR/<character>.jsonl.
    #[arg(long)]
    pub audit_dir: Option<PathBuf>,
    /// Plain output without colours.
    #[arg(long, env = "NO_COLOR", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_color: bool,
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let source = scenario_source(&args.scenario)?;
    play_locally(args, source).await
}

/// Starts a local stack and plays `source` on it.
async fn play_locally(args: RunArgs, source: create_world_request::Source) -> anyhow::Result<()> {
    let started = Instant::now();
    let shutdown = Shutdown::new();
    shutdown.trigger_on_signals();
    let file = match &source {
        create_world_request::Source::ScenarioPath(path) => Some(PathBuf::from(path)),
        _ => None,
    };
    let stack = LocalStack::start(
        args.model.clone(),
        args.data_dir.clone(),
        crate::spawn::Layout::from(&args.layout),
        args.scenarios_dir.clone(),
        file.as_deref().map(folder_of).unwrap_or_default(),
        shutdown.clone(),
    )
    .await?;
    let outcome = tokio::select! {
        result = play(&args, &stack.server_url, source) => result,
        () = shutdown.wait() => Err(anyhow!("interrupted")),
    };
    let (data_dir, logs) = (stack.data_dir.clone(), stack.logs.clone());
    stack
        .stop(outcome.as_ref().ok().map(|p| p.world.world_id.as_str()))
        .await;
    match &outcome {
        Ok(played) => {
            summary(played, started.elapsed().as_secs_f64());
            if args.data_dir.is_some() {
                eprintln!("event log and process logs kept in {}", data_dir.display());
            }
        }
        Err(_) => eprintln!("process logs: {}", logs.display()),
    }
    let failed = outcome?.failed;
    if !failed.is_empty() {
        let scenes: Vec<String> = failed.iter().map(u32::to_string).collect();
        let where_logs = if args.data_dir.is_some() {
            format!("process logs: {}", logs.display())
        } else {
            "rerun with --data-dir DIR to keep the process logs".to_owned()
        };
        anyhow::bail!(
            "every turn of scene {} fell back to an in-character line because the language model failed each time; the story ran to its end, but check the model ({where_logs})",
            scenes.join(", "),
        );
    }
    Ok(())
}

/// Scenes (1-based) with at least one turn where every turn fell back because no call
/// to the model answered. A line the echo guard gave up also falls back, but its calls
/// were answered: the model works, it only repeated itself.
fn scenes_that_failed(events: &[dramatis_proto::v1::Event]) -> Vec<u32> {
    let mut turns: std::collections::BTreeMap<u32, (usize, usize)> = Default::default();
    for event in events.iter().filter(|e| e.turn > 0) {
        let (all, fell_back) = turns.entry(event.scene_index).or_default();
        *all += 1;
        let unanswered = event.usage.as_ref().is_none_or(|u| u.llm_calls == 0);
        *fell_back += usize::from(event.fallback && unanswered);
    }
    turns
        .into_iter()
        .filter(|(_, (all, fell_back))| all == fell_back)
        .map(|(scene, _)| scene)
        .collect()
}

/// `dramatis sandbox`: `run` for open stories; refuses a scripted scenario.
pub async fn sandbox(args: RunArgs) -> anyhow::Result<()> {
    let spec = if let Some(file) = dramatis_scenario::local_file(&args.scenario)? {
        dramatis_scenario::Scenario::load(&file)?
    } else {
        let catalog = dramatis_scenario::ScenarioCatalog::new(
            args.scenarios_dir
                .clone()
                .unwrap_or_else(dramatis_runtime::models::scenarios_dir),
        );
        catalog.load(&args.scenario).with_context(|| {
            format!(
                "no sandbox spec file or shipped sandbox named {:?}",
                args.scenario
            )
        })??
    };
    if spec.open.is_none() {
        anyhow::bail!(
            "{} is a scripted scenario (it has [[scenes]]); play it with `dramatis run`, or give a sandbox spec with an [open] section",
            spec.source.display()
        );
    }
    // Sent inline, as any client would send a sandbox spec.
    let inline =
        dramatis_scenario::sandbox::scenario_to_spec(&spec).context("not an open story")?;
    play_locally(args, create_world_request::Source::Sandbox(inline)).await
}

/// A CreateWorld source: an existing file (or a folder holding `scenario.toml`) is a
/// path, anything else a shipped name.
pub fn scenario_source(scenario: &str) -> anyhow::Result<create_world_request::Source> {
    Ok(match dramatis_scenario::local_file(scenario)? {
        Some(file) => {
            let path = std::fs::canonicalize(&file).unwrap_or(file);
            create_world_request::Source::ScenarioPath(path.to_string_lossy().into_owned())
        }
        None => create_world_request::Source::ScenarioName(scenario.to_owned()),
    })
}

/// What a run played: the world at its end, the events printed, the scenes whose every
/// turn fell back, and its lines echoing a line just before them (`echo::count_echoes`)
/// out of how many lines.
struct Played {
    world: WorldInfo,
    printed: u64,
    failed: Vec<u32>,
    echoes: (usize, usize),
}

/// Creates the world, follows its transcript and advances it to the end of the script.
async fn play(
    args: &RunArgs,
    server: &str,
    source: create_world_request::Source,
) -> anyhow::Result<Played> {
    let mut client = world_client(&ClientOptions::local(server)).await?;
    let (world, mut stream) = create_and_watch(&mut client, source).await?;
    eprintln!(
        "{} — {} characters, {} scenes (world {})",
        world.title,
        world.characters.len(),
        world.total_scenes,
        world.world_id
    );
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
    let advanced = advance_to_end(&mut client, &world.world_id)
        .await
        .map_err(|e| anyhow!("the story stopped: {}", describe(&e.status)))?;
    let failed = scenes_that_failed(&advanced.events);
    // The model's lines: a fallback is the world's stock line, not the model's.
    let lines: Vec<&str> = advanced
        .events
        .iter()
        .filter(|e| e.turn > 0 && !e.fallback)
        .map(|e| e.text.as_str())
        .collect();
    let echoes = (dramatis_memory::echo::count_echoes(&lines), lines.len());
    let info = advanced.world.context("advance returned no world state")?;
    // The printer may have ended already (its stream closed).
    let _ = last_tx.send(info.next_seq.saturating_sub(1));
    let printed = printer.await.unwrap_or(0);
    if let Some(dir) = &args.audit_dir {
        write_audit(&mut client, &info.world_id, dir).await?;
    }
    Ok(Played {
        world: info,
        printed,
        failed,
        echoes,
    })
}

/// One JSONL file per character: every prompt its agent sent, with its memory items.
async fn write_audit(client: &mut WorldRpc, world_id: &str, dir: &Path) -> anyhow::Result<()> {
    let audits = dramatis_proto::audit::read_all_pages(|page_token| {
        let mut client = client.clone();
        let request = GetAuditRequest {
            world_id: world_id.to_owned(),
            page_token,
            ..GetAuditRequest::default()
        };
        async move { client.get_audit(request).await.map(|r| r.into_inner()) }
    })
    .await
    .map_err(|s| anyhow!("cannot read the audit: {}", describe(&s)))?;
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    for audit in audits {
        let lines: Vec<String> = audit
            .prompts
            .iter()
            .map(|p| {
                json!({
                    "character": p.character_id,
                    "purpose": p.purpose,
                    "timestamp_ms": p.timestamp_ms,
                    "items": p.items.iter().map(|i| json!({"id": i.id, "layer": i.layer})).collect::<Vec<_>>(),
                    "prompt": p.prompt,
                    "flagged": p.flagged,
                    "guard": p.guard,
                })
                .to_string()
            })
            .collect();
        let file = dir.join(format!("{}.jsonl", audit.character));
        std::fs::write(&file, lines.join("\n") + "\n")
            .with_context(|| format!("write {}", file.display()))?;
    }
    eprintln!("prompt audit written to {}", dir.display());
    Ok(())
}

fn summary(played: &Played, seconds: f64) {
    let Played {
        world,
        printed,
        echoes: (echoes, lines),
        ..
    } = played;
    let usage = world.usage.unwrap_or_default();
    let turns = f64::from(world.total_turns.max(1));
    #[allow(clippy::cast_precision_loss)] // line counts are far below 2^52
    let per_hundred = 100.0 * *echoes as f64 / (*lines).max(1) as f64;
    println!(
        "\n{} turns in {} scenes, {printed} events · {} LLM calls ({:.2}/turn) · {} prompt + {} \
         completion tokens ({:.0} + {:.0}/turn) · {echoes} echoes ({per_hundred:.1} per 100 \
         lines) · {seconds:.1} s wall ({:.2} s/turn)",
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
