//! `dramatis eval ablate`: the memory modules switched on and off, each set measured the
//! same way.
//!
//! For every module set, a fresh stack (agents started with `--memory-modules SET`):
//!
//! 1. **Story**: the scenario is played to the end. LLM calls and prompt tokens per turn
//!    are counted from the agents' prompt audit (every prompt sent: turns, Self-Probe,
//!    memory writes, module steps), tokens estimated at four characters each.
//! 2. **KBF**: every probe is put to its character as a recall-only ask; the option best
//!    supported by what comes to mind is the answer (the refusal when nothing supports
//!    one). No answer call, so the score is the memory's, not a model's.
//! 3. **Memory kept**: items in each character's shard outside the perceived transcript.
//! 4. **Long run** (`--rounds`, default 600 lines): a generated two-character story in
//!    which five facts are told early (narration) and asked at the end: ZH-4O-style probe
//!    QA (four options) and RoleMemo-style Recall@10 (is the planted fact among the first
//!    ten items recalled).

use crate::args::ModelArgs;
use clap::Args;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, anyhow};
use dramatis_embed::{Embedder, OnnxEmbedder};
use dramatis_memory::modules::ModuleSet;
use dramatis_proto::v1::agent_client::AgentClient;
use dramatis_proto::v1::{
    AdvanceRequest, AskRequest, CharacterRef, GetAuditRequest, GetWorldRequest, SnapshotRequest,
    advance_request,
};
use dramatis_runtime::Shutdown;
use dramatis_world::agent_clients::AgentDirectory as _;
use dramatis_world::scenario::Scenario;
use serde::Serialize;

use crate::kbf::{Probe, Split, best_supported, load_probes, score};
use crate::stack::LocalStack;

#[derive(Debug, Args)]
pub struct AblateArgs {
    /// Scenario file or shipped scenario name.
    pub scenario: String,
    /// KBF probe file (JSONL) for the scenario.
    pub probes: PathBuf,
    /// Module sets to compare, separated by `;` (each a comma list as --memory-modules).
    #[arg(
        long,
        default_value = "none;reverie;dualmem;moom;bookmarks;reverie,dualmem;reverie,moom;reverie,bookmarks;all"
    )]
    pub sets: String,
    /// Lines of the long generated run (0: skip it).
    #[arg(long, default_value_t = 600)]
    pub rounds: u32,
    /// Support (cosine) an option needs from what was recalled.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f32,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Run on the built-in model instead of the scripted one (slow: minutes per set).
    #[arg(long)]
    pub builtin_model: bool,
    /// The language model (default: the scripted model, so every module step takes its
    /// deterministic fallback unless --memory-writes model).
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Items recalled that count for Recall@10.
const RECALL_AT: usize = 10;

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
struct Row {
    modules: String,
    kbf: f64,
    krf_acc: f64,
    kr_acc: f64,
    calls_per_turn: f64,
    prompt_tokens_per_turn: f64,
    items_kept: usize,
    items_by_store: BTreeMap<String, usize>,
    long_run_lines: u32,
    long_run_items: Option<usize>,
    /// BOOKMARKS over the long run: proposals matched to a bookmark, and storyline
    /// tokens syncing did not re-read.
    bookmark_hit_rate: Option<f64>,
    bookmark_tokens_saved: Option<f64>,
    probe_qa: Option<f64>,
    recall_at_10: Option<f64>,
    seconds: f64,
}

/// What one played world yields.
struct Played {
    calls_per_turn: f64,
    tokens_per_turn: f64,
    items: BTreeMap<String, usize>,
    /// Module counters summed over the characters.
    stats: BTreeMap<String, f64>,
    turns: u32,
    /// Per probe: the answer letter and the texts recalled, in order.
    answers: Vec<(char, Vec<String>)>,
}

async fn play_and_probe(
    stack: &LocalStack,
    scenario_path: &Path,
    scenario: &Scenario,
    probes: &[Probe],
    embedder: &dyn Embedder,
    threshold: f32,
) -> anyhow::Result<Played> {
    let mut client = super::client::world_client(&stack.server_url).await?;
    let world = super::client::create_world_from_file(&mut client, scenario_path).await?;
    client
        .advance(AdvanceRequest {
            world_id: world.clone(),
            until: Some(advance_request::Until::ScriptEnd(true)),
        })
        .await
        .map_err(|s| anyhow!("the story stopped: {}", super::client::describe(&s)))?;
    let info = client
        .get_world(GetWorldRequest {
            world_id: world.clone(),
        })
        .await
        .map_err(|s| anyhow!("get world: {}", super::client::describe(&s)))?
        .into_inner();
    let audits = client
        .get_audit(GetAuditRequest {
            world_id: world.clone(),
            character: String::new(),
        })
        .await
        .map_err(|s| anyhow!("audit: {}", super::client::describe(&s)))?
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
            .map_err(|s| anyhow!("recall: {}", super::client::describe(&s)))?
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
        let endpoint = stack
            .agents
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
            .map_err(|s| anyhow!("snapshot: {}", super::client::describe(&s)))?
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

/// A planted fact of the long run: told in the opening of an early scene, asked at the
/// end with four options (the first is right).
const PLANTED: [(&str, &str, [&str; 4]); 5] = [
    (
        "Ada slips the brass key into the flour tin beside the stove.",
        "Where did Ada hide the brass key?",
        [
            "In the flour tin beside the stove",
            "Under the loose floorboard",
            "Inside the clock case",
            "In the coal scuttle",
        ],
    ),
    (
        "A letter arrives for Tom, sealed with green wax and signed by his sister Maud.",
        "Who wrote the letter sealed with green wax?",
        [
            "Tom's sister Maud",
            "The landlord",
            "A solicitor from Leeds",
            "Ada's cousin",
        ],
    ),
    (
        "The baker's debt to the miller is settled: twelve shillings, paid in copper coins.",
        "How much was the debt to the miller?",
        [
            "Twelve shillings",
            "Two guineas",
            "Five pounds",
            "Nine pence",
        ],
    ),
    (
        "A grey cat with one white ear takes up residence on the bakery windowsill.",
        "What does the cat on the windowsill look like?",
        [
            "Grey with one white ear",
            "Black with a torn tail",
            "Ginger and very fat",
            "White with blue eyes",
        ],
    ),
    (
        "The night watchman reports that the bakery's back gate was found unlocked at midnight.",
        "What did the night watchman report?",
        [
            "The back gate was found unlocked at midnight",
            "A fire in the chimney",
            "A stranger asleep in the yard",
            "Nothing at all",
        ],
    ),
];

/// Openings of the other scenes: everyday events about the same kinds of things as the
/// planted facts (keys, letters, debts, cats, gates), so a memory must find the one
/// planted fact among many near misses.
const DISTRACTORS: [&str; 10] = [
    "Tom oils the iron key of the cellar door and hangs it on its nail.",
    "A letter from the flour merchant asks when the next order will be paid.",
    "The grocer still owes the bakery three shillings for last week's loaves.",
    "A black cat prowls along the yard wall and is gone by morning.",
    "The front gate creaks in the wind until Ada props it with a brick.",
    "Ada counts the copper coins in the till twice and frowns.",
    "A parcel tied with red string is left on the step for the landlord.",
    "The miller's boy brings two sacks of flour and a complaint about the road.",
    "Tom finds a silver button in the flour bin and pockets it.",
    "The chimney sweep leaves soot on the windowsill and a bill on the counter.",
];

/// Writes the long-run scenario (`lines` turns in scenes of six) and its probes.
fn long_run(dir: &Path, lines: u32) -> anyhow::Result<(PathBuf, Vec<Probe>)> {
    let scenes = lines.div_ceil(6).max(PLANTED.len() as u32 + 2);
    let mut toml = String::from(
        "version = 1\nname = \"long-run\"\ntitle = \"A long evening at the bakery\"\n\n\
         [[locations]]\nid = \"bakery\"\nname = \"the bakery\"\n\n\
         [[characters]]\nid = \"ada\"\nname = \"Ada\"\nprofile = \"A baker who keeps her own counsel.\"\nlocation = \"bakery\"\n\n\
         [[characters]]\nid = \"tom\"\nname = \"Tom\"\nprofile = \"Her apprentice, curious about everything.\"\nlocation = \"bakery\"\n",
    );
    for scene in 0..scenes {
        // Facts are told in scenes 2-6; every other scene opens on a near miss.
        let opening = match scene.checked_sub(1).and_then(|i| PLANTED.get(i as usize)) {
            Some((fact, _, _)) => (*fact).to_owned(),
            None => format!(
                "Evening {}. {}",
                scene + 1,
                DISTRACTORS[scene as usize % DISTRACTORS.len()]
            ),
        };
        let _ = write!(
            toml,
            "\n[[scenes]]\nid = \"evening-{n}\"\nlocation = \"bakery\"\ncast = [\"ada\", \"tom\"]\n\
             beat = \"An evening's work.\"\nmin_turns = 6\nmax_turns = 6\nopening = {opening:?}\n",
            n = scene + 1,
        );
    }
    let path = dir.join("long-run.toml");
    std::fs::write(&path, toml).with_context(|| format!("cannot write {}", path.display()))?;
    let probes = PLANTED
        .iter()
        .map(|(_, question, options)| Probe {
            character: "tom".into(),
            question: (*question).to_owned(),
            options: ['A', 'B', 'C', 'D', 'E']
                .into_iter()
                .zip(
                    options
                        .iter()
                        .map(|o| (*o).to_owned())
                        .chain(std::iter::once(
                            "I cannot answer this from my own knowledge".to_owned(),
                        )),
                )
                .collect(),
            gold: 'A',
            split: Split::Krf,
        })
        .collect();
    Ok((path, probes))
}

pub async fn ablate(args: &AblateArgs) -> anyhow::Result<()> {
    let scenario_path = resolve_scenario(&args.scenario)?;
    let scenario = Scenario::load(&scenario_path)?;
    let probes = load_probes(&args.probes, &scenario)?;
    let sets: Vec<ModuleSet> = args
        .sets
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(ModuleSet::parse)
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow!("--sets: {e}"))?;
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(
        args.model.embedder_dir.as_deref(),
    ))?;
    let temp = tempfile::Builder::new()
        .prefix("dramatis-ablate-")
        .tempdir()?;
    let long = if args.rounds > 0 {
        Some(long_run(temp.path(), args.rounds)?)
    } else {
        None
    };
    let mut model = args.model.clone();
    if model.llm_endpoint.is_none() && model.scripted.is_none() && !args.builtin_model {
        model.scripted = Some("builtin".into());
    }
    let bar = indicatif::ProgressBar::new(sets.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] {pos}/{len} sets, {elapsed}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let mut rows = Vec::new();
    for set in &sets {
        bar.set_message(set.to_string());
        let started = Instant::now();
        let mut model = model.clone();
        model.memory_modules = Some(*set);
        let stack = LocalStack::start(model, None, true, None, Shutdown::new()).await?;
        let played = play_and_probe(
            &stack,
            &scenario_path,
            &scenario,
            &probes,
            &embedder,
            args.threshold,
        )
        .await?;
        let outcomes: Vec<(Split, bool)> = probes
            .iter()
            .zip(&played.answers)
            .map(|(p, (letter, _))| (p.split, *letter == p.gold))
            .collect();
        let kbf = score(&outcomes);
        let (long_lines, long_items, long_stats, probe_qa, recall_at_10) = match &long {
            Some((path, long_probes)) => {
                let long_scenario = Scenario::load(path)?;
                let run = play_and_probe(
                    &stack,
                    path,
                    &long_scenario,
                    long_probes,
                    &embedder,
                    args.threshold,
                )
                .await?;
                let correct = run.answers.iter().filter(|(l, _)| *l == 'A').count();
                let hits = PLANTED
                    .iter()
                    .zip(&run.answers)
                    .filter(|((fact, _, _), (_, texts))| {
                        texts.iter().take(RECALL_AT).any(|t| planted_in(fact, t))
                    })
                    .count();
                let n = long_probes.len() as f64;
                (
                    run.turns,
                    Some(run.items.values().sum()),
                    run.stats,
                    Some(correct as f64 / n),
                    Some(hits as f64 / n),
                )
            }
            None => (0, None, played.stats.clone(), None, None),
        };
        stack.stop(None).await;
        rows.push(Row {
            modules: set.to_string(),
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
            seconds: started.elapsed().as_secs_f64(),
        });
        bar.inc(1);
    }
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    println!(
        "Ablation on {} ({} KBF probes{}); memory answers by recall only, no answer call",
        scenario.name,
        probes.len(),
        long.as_ref()
            .map(|_| format!(
                ", long run of {} lines with {} planted facts",
                args.rounds,
                PLANTED.len()
            ))
            .unwrap_or_default()
    );
    println!(
        "{:<34} {:>6} {:>6} {:>6} {:>10} {:>12} {:>6} {:>10} {:>9} {:>9} {:>7}",
        "modules",
        "KBF",
        "KRf",
        "KR",
        "calls/turn",
        "tokens/turn",
        "items",
        "items@long",
        "probe QA",
        "Recall@10",
        "time s"
    );
    let opt = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), |v| format!("{v:.2}"));
    for r in &rows {
        println!(
            "{:<34} {:>6.3} {:>6.3} {:>6.3} {:>10.2} {:>12.0} {:>6} {:>10} {:>9} {:>9} {:>7.1}",
            r.modules,
            r.kbf,
            r.krf_acc,
            r.kr_acc,
            r.calls_per_turn,
            r.prompt_tokens_per_turn,
            r.items_kept,
            r.long_run_items
                .map_or_else(|| "—".to_owned(), |n| n.to_string()),
            opt(r.probe_qa),
            opt(r.recall_at_10),
            r.seconds
        );
    }
    for r in &rows {
        if let (Some(rate), Some(saved)) = (r.bookmark_hit_rate, r.bookmark_tokens_saved) {
            println!(
                "{}: BOOKMARKS hit rate {:.2}, {:.0} storyline tokens not re-read by syncing",
                r.modules, rate, saved
            );
        }
    }
    Ok(())
}

/// Whether recalled text `t` carries the planted fact (its distinctive words).
fn planted_in(fact: &str, text: &str) -> bool {
    let words = dramatis_memory::modules::keywords(fact);
    let found = dramatis_memory::modules::keywords(text);
    let shared = words.iter().filter(|w| found.contains(*w)).count();
    shared * 3 >= words.len() * 2
}

/// A scenario path, or a shipped scenario's name.
fn resolve_scenario(scenario: &str) -> anyhow::Result<PathBuf> {
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
