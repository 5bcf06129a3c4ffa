//! The memory-module ablation's measurement of one module set on a running stack:
//! the scenario played to the end, its KBF probes put as recall-only asks (the option
//! best supported by what came to mind is the answer; no answer call, so the score is
//! the memory's), the memory each shard kept, and the modules' counters.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use dramatis_embed::Embedder;
use dramatis_proto::v1::agent_client::AgentClient;
use dramatis_proto::v1::{
    AdvanceRequest, AskRequest, CharacterRef, GetAuditRequest, GetWorldRequest, SnapshotRequest,
    advance_request,
};
use dramatis_runtime::client::{describe, world_client};
use dramatis_world::agent_clients::AgentDirectory;
use dramatis_world::scenario::Scenario;
use serde::Serialize;

use crate::kbf::{Probe, Split, best_supported, score};
use crate::long_run::long_run_scores;

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
}

/// Plays `scenario` to its end on the world service at `server` and probes it.
pub async fn play_and_probe(
    server: &str,
    agents: &dyn AgentDirectory,
    scenario_path: &Path,
    scenario: &Scenario,
    probes: &[Probe],
    embedder: &dyn Embedder,
    threshold: f32,
) -> anyhow::Result<Played> {
    let mut client = world_client(server).await?;
    let world = crate::create_world_from_file(&mut client, scenario_path).await?;
    client
        .advance(AdvanceRequest {
            world_id: world.clone(),
            until: Some(advance_request::Until::ScriptEnd(true)),
        })
        .await
        .map_err(|s| anyhow!("the story stopped: {}", describe(&s)))?;
    let info = client
        .get_world(GetWorldRequest {
            world_id: world.clone(),
        })
        .await
        .map_err(|s| anyhow!("get world: {}", describe(&s)))?
        .into_inner();
    let audits = client
        .get_audit(GetAuditRequest {
            world_id: world.clone(),
            character: String::new(),
        })
        .await
        .map_err(|s| anyhow!("audit: {}", describe(&s)))?
        .into_inner()
        .audits;
    let prompts: Vec<&str> = audits
        .iter()
        .flat_map(|a| a.prompts.iter().map(|p| p.prompt.as_str()))
        .collect();
    let turns = info.total_turns.max(1);
    let tokens: usize = prompts.iter().map(|p| p.chars().count().div_ceil(4)).sum();

    let mut answers = Vec::with_capacity(probes.len());
    for probe in probes {
        let recalled = client
            .ask(AskRequest {
                world_id: world.clone(),
                character: probe.character.clone(),
                question: probe.question.clone(),
                recall_only: true,
            })
            .await
            .map_err(|s| anyhow!("recall: {}", describe(&s)))?
            .into_inner()
            .recalled;
        let texts: Vec<String> = recalled.into_iter().map(|r| r.text).collect();
        let pool = if texts.is_empty() {
            Vec::new()
        } else {
            embedder.embed(&texts).await?
        };
        let letter = best_supported(probe, &pool, embedder, threshold).await?;
        answers.push((letter, texts));
    }

    let mut items: BTreeMap<String, usize> = BTreeMap::new();
    let mut stats: BTreeMap<String, f64> = BTreeMap::new();
    for character in &scenario.characters {
        let endpoint = agents
            .endpoint_for(&world, &character.id)
            .await
            .map_err(|e| anyhow!("{e}"))?;
        let mut agent = AgentClient::connect(endpoint).await?;
        let snapshot = agent
            .snapshot(SnapshotRequest {
                character: Some(CharacterRef {
                    world_id: world.clone(),
                    character_id: character.id.clone(),
                }),
            })
            .await
            .map_err(|s| anyhow!("snapshot: {}", describe(&s)))?
            .into_inner();
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
        calls_per_turn: prompts.len() as f64 / f64::from(turns),
        tokens_per_turn: tokens as f64 / f64::from(turns),
        items,
        stats,
        turns: info.total_turns,
        answers,
    })
}

/// A scenario path, or a shipped scenario's name.
pub fn resolve_scenario(scenario: &str) -> anyhow::Result<PathBuf> {
    let path = Path::new(scenario);
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    let shipped = dramatis_runtime::models::scenarios_dir()
        .join(scenario)
        .join("scenario.toml");
    if shipped.is_file() {
        Ok(shipped)
    } else {
        Err(anyhow!(
            "no scenario file or shipped scenario named {scenario:?}"
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
    agents: &dyn AgentDirectory,
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
    let outcomes: Vec<(Split, bool)> = bench
        .probes
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
