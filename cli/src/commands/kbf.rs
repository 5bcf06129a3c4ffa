//! `dramatis eval kbf`: an answerer scored on KBF items, each asked at its story
//! position.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, bail};
use clap::Args;
use dramatis_embed::OnnxEmbedder;
use dramatis_eval::answerers::{
    AgentAnswerer, Asked, ModelAnswerer, Pool, PoolAnswerer, RecallAnswerer, Via, ask_via,
};
use dramatis_eval::kbf::{self, Probe, Score, Split, load_probes};
use dramatis_eval::walk::{Logged, Walk};
use dramatis_llm::ModelRole;
use dramatis_proto::v1::Usage;
use dramatis_runtime::client::{ClientOptions, world_client};
use dramatis_scenario::Scenario;
use serde_json::json;

use crate::options::ModelArgs;
use crate::spawn::{Spawned, start_builtin_llm};
use crate::stack::LocalStack;

#[derive(Debug, Args)]
pub struct KbfArgs {
    /// Probe file (JSONL; see scenarios/README.md).
    pub probes: PathBuf,
    /// Scenario the probes belong to (default: scenario.toml beside the probe file).
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Answerer::Retrieval)]
    pub answerer: Answerer,
    /// Support (cosine) an option needs before a retrieval answerer commits to it.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f32,
    /// Play an open story this many rounds instead of its scenario's `rounds`, and ask
    /// every item at its end, with the gold re-derived there: whether refusal holds as
    /// memories pile up over a long story.
    #[arg(long)]
    pub rounds: Option<u32>,
    /// How an item reaches its position: `replay` walks the story forward and asks each
    /// item where it stands; `ask` plays the story to its end first and asks each item
    /// `--as-of` its position on the finished world (the product's own path). The two
    /// must give the same letters.
    #[arg(long, value_enum, default_value_t = ViaArg::Replay)]
    pub via: ViaArg,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Replay the log of world WORLD on a running world service (see `--server`), a
    /// story played there on any model, instead of playing the story again: each turn
    /// is the logged line, so items made from that log (`eval probes --from-log WORLD`)
    /// are asked at their positions. The replay stops with an error where it would
    /// leave the log. Memory steps run on the model given, or the scripted one.
    #[arg(long, value_name = "WORLD", conflicts_with = "rounds")]
    pub from_log: Option<String>,
    /// The service holding the `--from-log` world.
    #[command(flatten)]
    pub server: crate::options::ServerArg,
    /// The language model that answers for `agent`, `direct-llm` and `naive-rag-llm`
    /// (the built-in one when none is given); answers are greedy (temperature 0). The
    /// story's turns replay on the model the probes were made with.
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `--via`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ViaArg {
    Replay,
    Ask,
}

/// Who answers the probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Answerer {
    /// The full character agent, asked through `World.Ask` (its shard, its model).
    Agent,
    /// The agent's recall only (`Ask` with recall_only): the option best supported by
    /// what comes to the character's mind; no language model.
    Retrieval,
    /// Baseline: retrieval over the character's profile only; no language model.
    Direct,
    /// Baseline: retrieval over one index of everything anyone knows so far.
    NaiveRag,
    /// Baseline: the language model with the character's profile only.
    DirectLlm,
    /// Baseline: the language model with the profile and the five nearest items of one
    /// index over everything anyone knows so far.
    NaiveRagLlm,
}

impl Answerer {
    fn uses_model(self) -> bool {
        matches!(self, Self::Agent | Self::DirectLlm | Self::NaiveRagLlm)
    }
}

/// The scripted fixture the probes' run was played with (`None`: a model; hand-written
/// probes without a run replay on the scripted model).
fn turns_fixture(probes: &[Probe]) -> anyhow::Result<Option<String>> {
    let mut with: Vec<&str> = probes
        .iter()
        .filter_map(|p| p.played_with.as_deref())
        .collect();
    with.sort_unstable();
    with.dedup();
    match with.as_slice() {
        [] => Ok(Some("builtin".to_owned())),
        [one] if one.starts_with("log:") => bail!(
            "the probes were made from the log of world {}: ask them with --from-log {0}",
            &one["log:".len()..]
        ),
        [one] => Ok(one.strip_prefix("scripted:").map(str::to_owned)),
        many => bail!("the probes come from runs on different models: {many:?}"),
    }
}

/// The stack the story replays on, the model that answers, and what keeps it running.
struct Setup {
    stack: LocalStack,
    answer_model: ModelArgs,
    _llm: Option<Spawned>,
    _logs: tempfile::TempDir,
}

/// The scripted fixture the story's turns and memory steps run on (`None`: the model
/// given, or the built-in one). A replayed log needs a model for memory steps only: the
/// one given, else the scripted one.
fn turns_model(args: &KbfArgs, probes: &[Probe]) -> anyhow::Result<Option<String>> {
    if args.from_log.is_none() {
        return turns_fixture(probes);
    }
    let given = args.model.endpoint.llm_endpoint.is_some() || args.model.scripted.is_some();
    Ok((!given).then(|| "builtin".to_owned()))
}

async fn setup(
    args: &KbfArgs,
    probes: &[Probe],
    scenario_path: &std::path::Path,
) -> anyhow::Result<Setup> {
    let logs = tempfile::Builder::new().prefix("dramatis-kbf-").tempdir()?;
    let fixture = turns_model(args, probes)?;
    let mut answer = args.model.clone();
    answer.answer_temperature = 0.0;
    let needs_model = args.answerer.uses_model() || fixture.is_none();
    let mut llm = None;
    if needs_model && answer.endpoint.llm_endpoint.is_none() && answer.scripted.is_none() {
        eprintln!("starting the built-in model (SmolLM2-135M-Instruct on llama.cpp)…");
        let (spawned, endpoint) = start_builtin_llm(logs.path()).await?;
        answer.endpoint.llm_endpoint = Some(endpoint);
        llm = Some(spawned);
    }
    let mut turns = answer.clone();
    if let Some(fixture) = fixture {
        // The story replays on the scripted model it was made with; only interview
        // answers go to the evaluated model.
        turns.scripted = Some(fixture);
        turns.endpoint.llm_endpoint = None;
        if args.answerer.uses_model() {
            turns.answer_endpoint = answer.endpoint.llm_endpoint.clone();
            turns.answer_model = answer
                .endpoint
                .llm_endpoint
                .as_ref()
                .map(|_| answer.endpoint.llm_model.clone());
            turns.answer_scripted = answer.scripted.clone();
        }
    }
    let stack = LocalStack::for_scenario(turns, scenario_path).await?;
    Ok(Setup {
        stack,
        answer_model: answer,
        _llm: llm,
        _logs: logs,
    })
}

/// A copy of the open story at `path` that runs `rounds` rounds, written into a new
/// temporary folder (returned with the copy's path, and removed when dropped).
fn longer_story(
    path: &std::path::Path,
    rounds: u32,
) -> anyhow::Result<(tempfile::TempDir, PathBuf)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut table: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not TOML", path.display()))?;
    let Some(open) = table.get_mut("open").and_then(toml::Value::as_table_mut) else {
        bail!(
            "--rounds needs an open story; {} is a script (it has no [open] table)",
            path.display()
        );
    };
    open.insert("rounds".into(), toml::Value::Integer(i64::from(rounds)));
    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
    let copy = dir.path().join("scenario.toml");
    std::fs::write(&copy, toml::to_string(&table)?)
        .with_context(|| format!("cannot write {}", copy.display()))?;
    Ok((dir, copy))
}

pub async fn kbf(args: &KbfArgs) -> anyhow::Result<()> {
    let scenario_path = match &args.scenario {
        Some(path) => dramatis_scenario::local_file(&path.to_string_lossy())?
            .with_context(|| format!("no scenario file or folder {}", path.display()))?,
        None => args
            .probes
            .parent()
            .map(|dir| dir.join("scenario.toml"))
            .context("give --scenario: the probe file has no folder")?,
    };
    // A longer copy of an open story, in a folder kept until the run ends.
    let longer = args
        .rounds
        .map(|rounds| longer_story(&scenario_path, rounds))
        .transpose()?;
    let scenario_path = longer
        .as_ref()
        .map_or(scenario_path, |(_, path)| path.clone());
    let scenario = Scenario::load(&scenario_path)?;
    let mut probes = load_probes(&args.probes, &scenario)?;
    if longer.is_some() {
        for probe in &mut probes {
            probe.at = None;
        }
    }
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(
        args.model.embedder_dir.as_deref(),
    ))?;
    let logged = match &args.from_log {
        Some(world) => Some(from_log(args, world, &scenario, &probes).await?),
        None => None,
    };
    let setup = setup(args, &probes, &scenario_path).await?;
    let client = world_client(&ClientOptions::local(&setup.stack.server_url)).await?;
    let mut walk = match logged {
        Some(logged) => Walk::replay(client, &scenario_path, logged).await?,
        None => Walk::start(client, &scenario_path).await?,
    };
    let answer_model = || -> anyhow::Result<_> {
        Ok(std::sync::Arc::clone(
            crate::models::role_models(&setup.answer_model)?.get(ModelRole::Character),
        ))
    };
    let mut answerer: Box<dyn dramatis_eval::answerers::Answerer + '_> = match args.answerer {
        Answerer::Agent => Box::new(AgentAnswerer::default()),
        Answerer::Retrieval => Box::new(RecallAnswerer {
            embedder: &embedder,
            threshold: args.threshold,
            recalled: Vec::new(),
            usage: Usage::default(),
        }),
        Answerer::Direct | Answerer::NaiveRag => Box::new(PoolAnswerer::new(
            &scenario,
            &embedder,
            pool_of(args.answerer),
            args.threshold,
        )),
        Answerer::DirectLlm | Answerer::NaiveRagLlm => Box::new(ModelAnswerer::new(
            &scenario,
            &embedder,
            answer_model()?,
            pool_of(args.answerer),
        )),
    };
    let bar = indicatif::ProgressBar::new(probes.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} asking [{bar:30}] {pos}/{len} items")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let via = match args.via {
        ViaArg::Replay => Via::Replay,
        ViaArg::Ask => Via::Ask,
    };
    let asked = ask_via(
        &mut walk,
        &scenario,
        &probes,
        answerer.as_mut(),
        (via, &|| bar.inc(1)),
    )
    .await;
    bar.finish_and_clear();
    let usage = answerer.usage();
    // What each item's answer rested on, by item (they were asked in `order`).
    let recalled: Option<Vec<Vec<String>>> = asked.as_ref().ok().and_then(|asked| {
        let by_turn = answerer.recalled();
        (!by_turn.is_empty()).then(|| {
            let mut by_item = vec![Vec::new(); asked.probes.len()];
            for (i, texts) in asked.order.iter().zip(by_turn) {
                by_item[*i].clone_from(texts);
            }
            by_item
        })
    });
    drop(answerer);
    let world = walk.world.clone();
    setup.stack.stop(Some(&world)).await;
    let asked = asked?;
    report(args, &scenario, &asked, recalled.as_deref(), usage);
    Ok(())
}

/// World `world`'s log, which the probes must have been made from (or from no run).
async fn from_log(
    args: &KbfArgs,
    world: &str,
    scenario: &Scenario,
    probes: &[Probe],
) -> anyhow::Result<Logged> {
    let logged = crate::commands::eval::read_log(&args.server, world, scenario).await?;
    let with = logged.played_with();
    if let Some(other) = probes
        .iter()
        .filter_map(|p| p.played_with.as_deref())
        .find(|p| *p != with)
    {
        bail!(
            "the probes were made from a run on {other}, not from world {world}'s log; \
             make them with `eval probes --from-log {world}`"
        );
    }
    Ok(logged)
}

fn pool_of(answerer: Answerer) -> Pool {
    match answerer {
        Answerer::Direct | Answerer::DirectLlm => Pool::Profile,
        _ => Pool::Everyone,
    }
}

/// Accuracy by kind of question, a line each.
fn print_kinds(kinds: &BTreeMap<String, (usize, f64)>) {
    for (kind, (n, accuracy)) in kinds {
        println!("kind {kind:<16} {n:>5} items, accuracy {accuracy:.3}");
    }
}

fn report(
    args: &KbfArgs,
    scenario: &Scenario,
    asked: &Asked,
    recalled: Option<&[Vec<String>]>,
    usage: Usage,
) {
    let (probes, answers, changed) = (&asked.probes, &asked.letters, &asked.changed);
    let (overall, per) = kbf::scores(probes, answers);
    let kinds = kbf::kind_accuracy(probes, answers);
    let bands = kbf::band_scores(probes, answers, asked.story_turns);
    let name = clap::ValueEnum::to_possible_value(&args.answerer)
        .map_or_else(|| "?".to_owned(), |v| v.get_name().to_owned());
    let unmatched = answers.iter().filter(|a| a.is_none()).count();
    let refused = |split: Split| {
        let of: Vec<bool> = probes
            .iter()
            .zip(answers)
            .filter(|(p, _)| p.split == split)
            .map(|(_, a)| *a == Some(kbf::REFUSAL))
            .collect();
        of.iter().filter(|r| **r).count() as f64 / of.len().max(1) as f64
    };
    if args.json {
        println!(
            "{}",
            json!({
                "answerer": name,
                "scenario": scenario.name,
                "kbf": overall.kbf, "krf_acc": overall.krf_acc, "kr_acc": overall.kr_acc,
                "n_krf": overall.n_krf, "n_kr": overall.n_kr,
                "refusal_rate_kr": refused(Split::Kr),
                "refusal_rate_krf": refused(Split::Krf),
                "characters": per,
                "kinds": kinds.iter().map(|(k, (n, acc))| (k.clone(), json!({"n": n, "accuracy": acc}))).collect::<BTreeMap<_, _>>(),
                "story_turns": asked.story_turns,
                "bands": bands.iter().map(|(b, s)| (b.name(), s)).collect::<BTreeMap<_, _>>(),
                "unmatched_answers": unmatched,
                "gold_changed": changed,
                "gold_not_rederived": asked.underived,
                "items": probes.iter().zip(answers).enumerate().map(|(i, (p, a))| json!({
                    "id": p.id, "character": p.character, "at": p.at, "kind": p.kind,
                    "split": p.split, "gold": p.gold, "answer": a,
                    "recalled": recalled.and_then(|r| r.get(i)),
                })).collect::<Vec<_>>(),
                "llm_calls": usage.llm_calls,
                "prompt_tokens": usage.prompt_tokens,
            })
        );
        return;
    }
    println!(
        "KBF on {} ({} probes), answerer {name}",
        scenario.name,
        probes.len()
    );
    println!(
        "{:<12} {:>5} {:>8} {:>5} {:>8} {:>7}",
        "character", "n_KRf", "KRf acc", "n_KR", "KR acc", "KBF"
    );
    let row = |who: &str, s: &Score| {
        println!(
            "{who:<12} {:>5} {:>8.3} {:>5} {:>8.3} {:>7.3}",
            s.n_krf, s.krf_acc, s.n_kr, s.kr_acc, s.kbf
        );
    };
    for (character, s) in &per {
        row(character, s);
    }
    row("overall", &overall);
    println!(
        "{:<12} (thirds of the story's {} turns)",
        "position", asked.story_turns
    );
    for (band, s) in &bands {
        row(band.name(), s);
    }
    print_kinds(&kinds);
    println!(
        "refused {:.3} of KR items (should), {:.3} of KRf items (should not)",
        refused(Split::Kr),
        refused(Split::Krf)
    );
    if usage.llm_calls > 0 || args.answerer.uses_model() {
        println!(
            "{} LLM calls, {} prompt tokens; {unmatched} answers matched no option (scored wrong)",
            usage.llm_calls, usage.prompt_tokens
        );
    }
    for c in changed {
        println!(
            "gold re-derived: {} ({} at position {}): {} {:?} -> {} {:?}",
            c.id, c.character, c.at, c.was, c.was_text, c.now, c.now_text
        );
    }
    for u in &asked.underived {
        println!(
            "gold not re-derived: {} ({}): its true option is not known (no `truth`, and no \
             KRf item about {} has an option with the same text); scored on the file's gold",
            u.id,
            u.character,
            u.fact
                .as_deref()
                .map_or("its fact".to_owned(), |f| format!("fact {f:?}"))
        );
    }
}
