//! The memory-module ablation's measurement of one module set on a running stack:
//! the scenario played to the end with its KBF probes put as recall-only asks, each at
//! its story position (the option best supported by what came to mind is the answer; no
//! answer call, so the score is the memory's), the memory each shard kept, and the
//! modules' counters.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use dramatis_embed::Embedder;
use dramatis_proto::v1::{CharacterRef, GetAuditRequest, GetWorldRequest, SnapshotRequest, Usage};
use dramatis_runtime::client::{ClientOptions, describe, world_client};
use dramatis_scenario::Scenario;
use dramatis_world::agent_clients::AgentLinks;
use serde::Serialize;

use crate::answerers::{Answerer, RecallAnswerer, ask_at_positions};
use crate::kbf::{Probe, REFUSAL, Split, score};
use crate::long_run::long_run_scores;
use crate::walk::Walk;

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub modules: String,
    pub kbf: f64,
    pub krf_acc: f64,
    pub kr_acc: f64,
    pub calls_per_turn: f64,
    pub prompt_tokens_per_turn: f64,
    pub items_kept: usize,
    pub items_by_store: BTreeMap<String, usize>,
    pub long_run_lines: u32,
    pub long_run_items: Option<usize>,
    /// BOOKMARKS over the long run: proposals matched to a bookmark, and storyline
    /// tokens syncing did not re-read.
    pub bookmark_hit_rate: Option<f64>,
    pub bookmark_tokens_saved: Option<f64>,
    pub probe_qa: Option<f64>,
    pub recall_at_10: Option<f64>,
    pub seconds: f64,
}

/// What one played world yields.
pub struct Played {
    pub calls_per_turn: f64,
    pub tokens_per_turn: f64,
    pub items: BTreeMap<String, usize>,
    /// Module counters summed over the characters.
    pub stats: BTreeMap<String, f64>,
    pub turns: u32,
    /// Per probe: the answer letter and the texts recalled, in order.
    pub answers: Vec<(char, Vec<String>)>,
    /// The probes with their gold as derived at their positions.
    pub scored: Vec<Probe>,
}

/// Plays `scenario` on the world service at `server`, putting each probe to its
/// character's recall at the probe's position, then to the end of the story.
pub async fn play_and_probe(
    server: &str,
    agents: &AgentLinks,
    scenario_path: &Path,
    scenario: &Scenario,
    probes: &[Probe],
    embedder: &dyn Embedder,
    threshold: f32,
) -> anyhow::Result<Played> {
    let mut walk = Walk::start(
        world_client(&ClientOptions::local(server)).await?,
        scenario_path,
    )
    .await?;
    let mut answerer = RecallAnswerer {
        embedder,
        threshold,
        recalled: Vec::new(),
        usage: Usage::default(),
    };
    let asked = ask_at_positions(&mut walk, scenario, probes, &mut answerer, &|| {}).await?;
    walk.play_to_end().await?;
    let world = walk.world.clone();
    let client = &mut walk.client;
    let info = client
        .get_world(GetWorldRequest {
            world_id: world.clone(),
        })
        .await
        .map_err(|s| anyhow!("get world: {}", describe(&s)))?
        .into_inner();
    let audits = dramatis_proto::audit::read_all_pages(|page_token| {
        let mut client = client.clone();
        let request = GetAuditRequest {
            world_id: world.clone(),
            page_token,
            ..GetAuditRequest::default()
        };
        async move { client.get_audit(request).await.map(|r| r.into_inner()) }
    })
    .await
    .map_err(|s| anyhow!("audit: {}", describe(&s)))?;
    let prompts: Vec<&str> = audits
        .iter()
        .flat_map(|a| a.prompts.iter().map(|p| p.prompt.as_str()))
        .collect();
    let turns = info.total_turns.max(1);
    // The audit also holds the probes' Self-Probe prompts; the story's cost leaves them
    // out (the scripted model counts tokens the way this does).
    let tokens: usize = prompts.iter().map(|p| p.chars().count().div_ceil(4)).sum();
    let asked_usage = Answerer::usage(&answerer);
    let calls = prompts.len().saturating_sub(asked_usage.llm_calls as usize);
    let tokens = tokens.saturating_sub(asked_usage.prompt_tokens as usize);

    // Recalled texts come in order of asking; put them back in probe order.
    let mut recalled = vec![Vec::new(); probes.len()];
    for (i, texts) in asked.order.iter().zip(answerer.recalled) {
        recalled[*i] = texts;
    }
    let answers = asked
        .letters
        .iter()
        .zip(recalled)
        .map(|(letter, texts)| (letter.unwrap_or(REFUSAL), texts))
        .collect();

    let mut items: BTreeMap<String, usize> = BTreeMap::new();
    let mut stats: BTreeMap<String, f64> = BTreeMap::new();
    for character in &scenario.characters {
        // The snapshot is read as the world reads it: its certificate, its pool.
        let endpoint = agents
            .directory
            .endpoint_for(&world, &character.id)
            .await
            .map_err(|e| anyhow!("{e}"))?;
        let agent = agents
            .pool
            .port(&endpoint, &character.id)
            .map_err(|e| anyhow!("{e}"))?;
        let snapshot = agent
            .snapshot(SnapshotRequest {
                character: Some(CharacterRef {
                    world_id: world.clone(),
                    character_id: character.id.clone(),
                }),
                ..Default::default()
            })
            .await
            .map_err(|s| anyhow!("snapshot: {}", describe(&s)))?;
        for (name, value) in snapshot.module_stats {
            *stats.entry(name).or_default() += value;
        }
        for item in snapshot.memory {
            if item.source != "perceived" && item.source != "modules.storyline" {
                *items.entry(item.source).or_default() += 1;
            }
        }
    }
    Ok(Played {
        calls_per_turn: calls as f64 / f64::from(turns),
        tokens_per_turn: tokens as f64 / f64::from(turns),
        items,
        stats,
        turns: info.total_turns,
        answers,
        scored: asked.probes,
    })
}

/// A scenario file, a folder holding one, or a shipped scenario's name.
pub fn resolve_scenario(scenario: &str) -> anyhow::Result<PathBuf> {
    if let Some(file) = dramatis_scenario::local_file(scenario)? {
        return Ok(file);
    }
    let shipped = dramatis_runtime::models::scenarios_dir()
        .join(scenario)
        .join("scenario.toml");
    if shipped.is_file() {
        Ok(shipped)
    } else {
        Err(anyhow!(
            "no scenario file, scenario folder or shipped scenario named {scenario:?}"
        ))
    }
}

/// What one module set is measured on.
pub struct Bench<'a> {
    pub scenario_path: &'a Path,
    pub scenario: &'a Scenario,
    pub probes: &'a [Probe],
    /// The long run's scenario file and probes, when it runs.
    pub long_run: Option<&'a (PathBuf, Vec<Probe>)>,
    pub embedder: &'a dyn Embedder,
    pub threshold: f32,
}

/// Measures one module set (`modules`, its display) on the stack at `server`, whose
/// agents run that set; `seconds` is filled in by the caller.
pub async fn measure_set(
    modules: String,
    server: &str,
    agents: &AgentLinks,
    bench: &Bench<'_>,
) -> anyhow::Result<Row> {
    let played = play_and_probe(
        server,
        agents,
        bench.scenario_path,
        bench.scenario,
        bench.probes,
        bench.embedder,
        bench.threshold,
    )
    .await?;
    let outcomes: Vec<(Split, bool)> = played
        .scored
        .iter()
        .zip(&played.answers)
        .map(|(p, (letter, _))| (p.split, *letter == p.gold))
        .collect();
    let kbf = score(&outcomes);
    let (long_lines, long_items, long_stats, probe_qa, recall_at_10) = match bench.long_run {
        Some((path, long_probes)) => {
            let long_scenario = Scenario::load(path)?;
            let run = play_and_probe(
                server,
                agents,
                path,
                &long_scenario,
                long_probes,
                bench.embedder,
                bench.threshold,
            )
            .await?;
            let (qa, recall) = long_run_scores(&run.answers);
            (
                run.turns,
                Some(run.items.values().sum()),
                run.stats,
                Some(qa),
                Some(recall),
            )
        }
        None => (0, None, played.stats.clone(), None, None),
    };
    Ok(Row {
        modules,
        kbf: kbf.kbf,
        krf_acc: kbf.krf_acc,
        kr_acc: kbf.kr_acc,
        calls_per_turn: played.calls_per_turn,
        prompt_tokens_per_turn: played.tokens_per_turn,
        items_kept: played.items.values().sum(),
        items_by_store: played.items,
        long_run_lines: long_lines,
        long_run_items: long_items,
        bookmark_hit_rate: long_stats
            .get("bookmarks.proposals")
            .filter(|p| **p > 0.0)
            .map(|p| long_stats.get("bookmarks.hits").copied().unwrap_or(0.0) / p),
        bookmark_tokens_saved: long_stats.get("bookmarks.tokens_saved").copied(),
        probe_qa,
        recall_at_10,
        seconds: 0.0,
    })
}
