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

use crate::options::ModelArgs;
use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::anyhow;
use dramatis_embed::OnnxEmbedder;
use dramatis_eval::ablation::{Bench, measure_set, resolve_scenario};
use dramatis_eval::kbf::load_probes;
use dramatis_eval::long_run::{PLANTED, write_long_run};
use dramatis_memory::modules::ModuleSet;
use dramatis_memory::reverie::Layers;
use dramatis_runtime::Shutdown;
use dramatis_scenario::Scenario;

use crate::stack::{LocalStack, folder_of};

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
    /// ReverieMem layers to switch off one at a time (`episodic,semantic,personality`):
    /// after the --sets rows, one `reverie` row with all its layers and one without each
    /// listed layer (the paper's Table 2). `--layers` sets the layers of every row.
    #[arg(long, value_delimiter = ',')]
    pub without_layers: Vec<String>,
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

/// The module sets `--sets` names, and with `--without-layers` ReverieMem whole and
/// without each layer named: a label, the set and its layers.
fn module_sets(args: &AblateArgs) -> anyhow::Result<Vec<(String, ModuleSet, Layers)>> {
    let mut sets: Vec<(String, ModuleSet, Layers)> = args
        .sets
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| ModuleSet::parse(s).map(|set| (set.to_string(), set, args.model.layers)))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow!("--sets: {e}"))?;
    if !args.without_layers.is_empty() {
        let reverie = ModuleSet::parse("reverie").map_err(|e| anyhow!("{e}"))?;
        sets.push(("reverie (all layers)".to_owned(), reverie, Layers::ALL));
        for name in &args.without_layers {
            let layers = Layers::without(name.trim()).ok_or_else(|| {
                anyhow!(
                    "--without-layers: unknown layer {name:?}; expected {}",
                    Layers::NAMES.join(", ")
                )
            })?;
            sets.push((format!("reverie without {}", name.trim()), reverie, layers));
        }
    }
    Ok(sets)
}

/// The ablation's table: one row per module set, then BOOKMARKS' figures where it ran.
fn print_table(
    scenario: &str,
    probes: usize,
    rounds: Option<u32>,
    rows: &[dramatis_eval::ablation::Row],
) {
    println!(
        "Ablation on {} ({} KBF probes{}); memory answers by recall only, no answer call",
        scenario,
        probes,
        rounds
            .map(|rounds| format!(
                ", long run of {rounds} lines with {} planted facts",
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
    for r in rows {
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
    for r in rows {
        if let (Some(rate), Some(saved)) = (r.bookmark_hit_rate, r.bookmark_tokens_saved) {
            println!(
                "{}: BOOKMARKS hit rate {:.2}, {:.0} storyline tokens not re-read by syncing",
                r.modules, rate, saved
            );
        }
    }
}

pub async fn ablate(args: &AblateArgs) -> anyhow::Result<()> {
    let scenario_path = resolve_scenario(&args.scenario)?;
    let scenario = Scenario::load(&scenario_path)?;
    let probes = load_probes(&args.probes, &scenario)?;
    let sets = module_sets(args)?;
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(
        args.model.embedder_dir.as_deref(),
    ))?;
    let temp = tempfile::Builder::new()
        .prefix("dramatis-ablate-")
        .tempdir()?;
    let long = if args.rounds > 0 {
        Some(write_long_run(temp.path(), args.rounds)?)
    } else {
        None
    };
    let bench = Bench {
        scenario_path: &scenario_path,
        scenario: &scenario,
        probes: &probes,
        long_run: long.as_ref(),
        embedder: &embedder,
        threshold: args.threshold,
    };
    let mut model = args.model.clone();
    if model.endpoint.llm_endpoint.is_none() && model.scripted.is_none() && !args.builtin_model {
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
    for (label, set, layers) in &sets {
        bar.set_message(label.clone());
        let started = Instant::now();
        let mut model = model.clone();
        model.memory_modules = Some(*set);
        model.layers = *layers;
        let stack = LocalStack::start(
            model,
            None,
            crate::spawn::Layout::PerWorld,
            None,
            folder_of(&scenario_path)
                .into_iter()
                .chain([temp.path().to_path_buf()])
                .collect(),
            Shutdown::new(),
        )
        .await?;
        let mut row = measure_set(
            label.clone(),
            &stack.server_url,
            &stack.agent_links(),
            &bench,
        )
        .await?;
        stack.stop(None).await;
        row.seconds = started.elapsed().as_secs_f64();
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(());
    }
    print_table(
        &scenario.name,
        probes.len(),
        long.as_ref().map(|_| args.rounds),
        &rows,
    );
    Ok(())
}
