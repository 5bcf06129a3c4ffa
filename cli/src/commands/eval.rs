//! `dramatis eval probes`: KBF items from a scenario and a played run.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use dramatis_eval::ablation::resolve_scenario;
use dramatis_eval::kbf::Split;
use dramatis_eval::probes::{At, generate};
use dramatis_eval::walk::{Logged, Run, Walk};
use dramatis_llm::ModelRole;
use dramatis_runtime::client::{ClientOptions, world_client};
use dramatis_scenario::Scenario;

use crate::options::{ModelArgs, ServerArg};
use crate::stack::LocalStack;

#[derive(Debug, Args)]
pub struct ProbesArgs {
    /// Scenario file or shipped scenario name.
    pub scenario: String,
    /// Where items are asked: `scene` (facts at the end of the story; a line at the end
    /// of its scene, and to its perceivers also at the end of the scene before) or
    /// `line` (facts before the first turn; a line right after it, and one turn before).
    #[arg(long, value_enum, default_value_t = AtArg::Scene)]
    pub at: AtArg,
    /// Write the items here (JSONL) instead of to standard output.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Play the run on the built-in model instead of the scripted one. Its items can
    /// only be asked on a replay that logs the same lines.
    #[arg(long)]
    pub builtin_model: bool,
    /// Rewrite each item's question in other words with the language model (the
    /// endpoint, or a scripted fixture), so the question no longer shares its words
    /// with the memory that answers it. A rewrite that contains the answer, or is no
    /// question, is asked for once more and otherwise the item keeps its cloze form.
    #[arg(long)]
    pub paraphrase: bool,
    /// Make the items from the log of world WORLD on a running world service (see
    /// `--server`), a story played there on any model, instead of playing a run. Ask
    /// them with `eval kbf --from-log WORLD`, which replays that log line by line.
    #[arg(long, value_name = "WORLD")]
    pub from_log: Option<String>,
    /// The service holding the `--from-log` world.
    #[command(flatten)]
    pub server: ServerArg,
    /// The model the run is played with (default: the scripted model, which replays
    /// identically, so `eval kbf` can stop the story at every item's position).
    #[command(flatten)]
    pub model: ModelArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AtArg {
    Scene,
    Line,
}

/// `played_with` of a run on `model`.
fn played_with(model: &ModelArgs) -> String {
    match &model.scripted {
        Some(fixture) => format!("scripted:{fixture}"),
        None => format!("model:{}", model.endpoint.llm_model),
    }
}

pub async fn probes(args: &ProbesArgs) -> anyhow::Result<()> {
    let scenario_path = resolve_scenario(&args.scenario)?;
    let scenario = Scenario::load(&scenario_path)?;
    let (run, with) = match &args.from_log {
        Some(world) => {
            let logged = read_log(&args.server, world, &scenario).await?;
            (logged.run(), logged.played_with())
        }
        None => play(args, &scenario_path).await?,
    };
    let at = match args.at {
        AtArg::Scene => At::Scene,
        AtArg::Line => At::Line,
    };
    let mut items = generate(&scenario, &run, at, &with);
    let rewritten = if args.paraphrase {
        let models = crate::models::role_models(&args.model)?;
        let model = models.get(ModelRole::Answer);
        let bar = indicatif::ProgressBar::new(items.len() as u64).with_style(
            indicatif::ProgressStyle::with_template("rewriting {pos}/{len} items {bar:30}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let rewritten = dramatis_eval::paraphrase::paraphrase(&mut items, model.as_ref(), |done| {
            bar.set_position(done as u64);
        })
        .await?;
        bar.finish_and_clear();
        Some(rewritten)
    } else {
        None
    };
    let mut out: Box<dyn std::io::Write> = match &args.out {
        Some(path) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot write {}", path.display()))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    for item in &items {
        writeln!(out, "{}", serde_json::to_string(item)?)?;
    }
    out.flush()?;
    let count = |split, line: bool| {
        items
            .iter()
            .filter(|p| p.split == split && p.line.is_some() == line)
            .count()
    };
    if let Some(r) = &rewritten {
        eprintln!(
            "rewritten in other words: {} of {} items ({} model calls); {} kept their cloze form",
            r.rewritten,
            items.len(),
            r.calls,
            r.kept.len()
        );
        for (id, why) in r.kept.iter().take(5) {
            eprintln!("  kept {id}: {why}");
        }
    }
    eprintln!(
        "{} items from {} turns on {with}: facts {} KRf + {} KR, lines {} KRf + {} KR{}",
        items.len(),
        run.turns,
        count(Split::Krf, false),
        count(Split::Kr, false),
        count(Split::Krf, true),
        count(Split::Kr, true),
        args.out
            .as_ref()
            .map(|p| format!(", written to {}", p.display()))
            .unwrap_or_default()
    );
    Ok(())
}

/// Plays the scenario once on `args`' model (the scripted one by default): the run and
/// its `played_with`.
async fn play(args: &ProbesArgs, scenario_path: &std::path::Path) -> anyhow::Result<(Run, String)> {
    let mut model = args.model.clone();
    if model.endpoint.llm_endpoint.is_none() && model.scripted.is_none() && !args.builtin_model {
        model.scripted = Some("builtin".into());
    }
    let with = played_with(&model);
    let stack = LocalStack::for_scenario(model, scenario_path).await?;
    let mut walk = Walk::start(
        world_client(&ClientOptions::local(&stack.server_url)).await?,
        scenario_path,
    )
    .await?;
    let bar = indicatif::ProgressBar::new_spinner();
    while !walk.run.finished {
        let next = walk.run.turns + 1;
        walk.advance_to(Some(next)).await?;
        bar.set_message(format!("played {} turns", walk.run.turns));
        bar.tick();
    }
    bar.finish_and_clear();
    stack.stop(Some(&walk.world)).await;
    Ok((walk.run, with))
}

/// World `world`'s log on the service `server` names, checked to be a run of `scenario`.
pub async fn read_log(
    server: &ServerArg,
    world: &str,
    scenario: &Scenario,
) -> anyhow::Result<Logged> {
    let mut client = world_client(&server.client_options()).await?;
    let logged = Logged::read(&mut client, world).await?;
    if logged.scenario != scenario.name {
        anyhow::bail!(
            "world {world} played scenario {:?}, not {:?}: give the scenario it played",
            logged.scenario,
            scenario.name
        );
    }
    Ok(logged)
}
