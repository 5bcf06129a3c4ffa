//! `dramatis eval judge`: BookWorld's five-dimension pairwise judge over two sets of
//! stories (world logs, exported files, or runs it plays), and the plays it shares
//! with `eval style`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Parser};
use dramatis_eval::export::transcript;
use dramatis_eval::judge::{JudgeOptions, Judged, Mode, judge};
use dramatis_eval::walk::Logged;
use dramatis_runtime::client::{
    ClientOptions, advance_to_end, create_world, describe, world_client,
};

use crate::options::{EndpointArgs, ModelArgs, ServerArg};
use crate::stack::LocalStack;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    /// Stories played from a script: the fifth dimension is storyline quality.
    Script,
    /// Open stories: the fifth dimension is creativity.
    Free,
}

#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// A and B: each a story file (an export or any text), a folder of them (paired
    /// with the other side's in name order), or a world id on `--server`. With `--runs`,
    /// one scenario to play instead.
    #[arg(required = true, num_args = 1..=2, value_name = "A B | SCENARIO")]
    pub stories: Vec<String>,
    /// Play SCENARIO this many times with each of `--a` and `--b`, and judge run i of
    /// one against run i of the other.
    #[arg(long, value_name = "N", requires_all = ["a", "b"])]
    pub runs: Option<usize>,
    /// The flags of configuration A for `--runs`, as `dramatis run` takes them (for
    /// example "--memory-modules reverie").
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub a: Option<String>,
    /// The flags of configuration B for `--runs` (for example the Direct baseline,
    /// "--memory-modules none").
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub b: Option<String>,
    /// Script or free mode (default: script, or what the played scenario is).
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// The judge: an OpenAI-compatible endpoint. The built-in model is far too small to
    /// judge, so there is no default.
    #[arg(
        long,
        env = "DRAMATIS_JUDGE_ENDPOINT",
        required_unless_present = "judge_scripted"
    )]
    pub judge_endpoint: Option<String>,
    /// The judge's model name.
    #[arg(long, env = "DRAMATIS_JUDGE_MODEL", default_value = "gpt-4o")]
    pub judge_model: String,
    /// The judge endpoint's bearer token.
    #[arg(long, env = "DRAMATIS_JUDGE_API_KEY", hide_env_values = true)]
    pub judge_api_key: Option<String>,
    /// A scripted judge answering from this JSON fixture (tests, dry runs).
    #[arg(long, conflicts_with = "judge_endpoint")]
    pub judge_scripted: Option<String>,
    /// Characters of each story the judge reads at most (a longer story is cut at a
    /// line's end, and says so).
    #[arg(long, default_value_t = dramatis_eval::judge::DEFAULT_MAX_CHARS)]
    pub max_chars: usize,
    /// Every judge prompt and answer, one JSON object a line.
    #[arg(long, default_value = "judge-audit.jsonl")]
    pub audit: PathBuf,
    /// Where world ids are read from.
    #[command(flatten)]
    pub server: ServerArg,
    #[command(flatten)]
    pub output: crate::commands::bench::JsonArg,
}

/// A configuration's flags, as `dramatis run` takes them.
#[derive(Debug, Parser)]
#[command(name = "configuration", no_binary_name = true)]
struct Configuration {
    #[command(flatten)]
    model: ModelArgs,
}

/// `flags` read as a model configuration; a wrong flag is named with the side it is on.
fn configuration(side: &str, flags: &str) -> anyhow::Result<ModelArgs> {
    let words =
        shlex::split(flags).ok_or_else(|| anyhow!("--{side}: unbalanced quotes in {flags:?}"))?;
    Configuration::try_parse_from(words)
        .map(|c| c.model)
        .map_err(|e| anyhow!("--{side}: {}", e.to_string().trim()))
}

/// Plays `scenario` `runs` times on one local stack with `model`, and reads each world.
pub(crate) async fn play_runs(
    scenario: &str,
    model: ModelArgs,
    runs: usize,
    label: &str,
) -> anyhow::Result<Vec<Logged>> {
    let path = dramatis_eval::ablation::resolve_scenario(scenario)?;
    let stack = LocalStack::for_scenario(model, &path).await?;
    let mut client = world_client(&ClientOptions::local(&stack.server_url)).await?;
    let mut logs = Vec::with_capacity(runs);
    let mut outcome = Ok(());
    for run in 1..=runs {
        eprintln!("{label}: playing run {run} of {runs}…");
        let played = async {
            let world = create_world(&mut client, dramatis_eval::file_source(&path), "")
                .await
                .map_err(|e| anyhow!("cannot create the world: {}", describe(&e.status)))?;
            advance_to_end(&mut client, &world.world_id)
                .await
                .map_err(|e| anyhow!("the story stopped: {}", describe(&e.status)))?;
            Logged::read(&mut client, &world.world_id).await
        }
        .await;
        match played {
            Ok(logged) => logs.push(logged),
            Err(error) => {
                outcome = Err(error);
                break;
            }
        }
    }
    stack.stop(None).await;
    outcome.map(|()| logs)
}

/// The stories one side names: a file, a folder's files in name order, or a world.
async fn stories_of(side: &str, server: &ServerArg) -> anyhow::Result<Vec<String>> {
    let path = Path::new(side);
    if path.is_file() {
        return Ok(vec![read_story(path)?]);
    }
    if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot list {}", path.display()))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        if files.is_empty() {
            bail!("{} holds no story file", path.display());
        }
        return files.iter().map(|f| read_story(f)).collect();
    }
    let (_, logged) = crate::commands::export::read_world(server, side)
        .await
        .with_context(|| {
            format!(
                "{side:?} is no file or folder, and no world on {}",
                server.server
            )
        })?;
    Ok(vec![transcript(&logged.events)])
}

fn read_story(path: &Path) -> anyhow::Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if text.trim().is_empty() {
        bail!("{} is empty", path.display());
    }
    Ok(text)
}

/// The judge model the flags name.
fn judge_model(
    args: &JudgeArgs,
) -> anyhow::Result<std::sync::Arc<dyn dramatis_llm::LanguageModel>> {
    if let Some(fixture) = &args.judge_scripted {
        return Ok(std::sync::Arc::new(crate::models::scripted(fixture)?));
    }
    let endpoint = args
        .judge_endpoint
        .clone()
        .context("the judge needs --judge-endpoint (an OpenAI-compatible endpoint)")?;
    let flags = EndpointArgs {
        llm_endpoint: Some(endpoint.clone()),
        llm_model: args.judge_model.clone(),
        llm_api_key: args.judge_api_key.clone(),
        llm_timeout: 300,
        llm_deadline: 900,
        llm_dry: None,
    };
    crate::models::openai_client(endpoint, &args.judge_model, &flags)
}

/// The pairs to judge, and the mode the stories were played in when this knows it.
async fn pairs(args: &JudgeArgs) -> anyhow::Result<(Vec<(String, String)>, Option<Mode>)> {
    if let Some(runs) = args.runs {
        let [scenario] = args.stories.as_slice() else {
            bail!(
                "with --runs, give one scenario, not {} stories",
                args.stories.len()
            );
        };
        let a = configuration("a", args.a.as_deref().unwrap_or_default())?;
        let b = configuration("b", args.b.as_deref().unwrap_or_default())?;
        let path = dramatis_eval::ablation::resolve_scenario(scenario)?;
        let open = dramatis_scenario::Scenario::load(&path)?.open.is_some();
        let a = play_runs(scenario, a, runs, "A").await?;
        let b = play_runs(scenario, b, runs, "B").await?;
        let story = |l: &Logged| transcript(&l.events);
        let pairs = a.iter().map(story).zip(b.iter().map(story)).collect();
        return Ok((pairs, Some(if open { Mode::Free } else { Mode::Script })));
    }
    let [a, b] = args.stories.as_slice() else {
        bail!("give two stories, A and B (or one scenario with --runs N --a FLAGS --b FLAGS)");
    };
    let a = stories_of(a, &args.server).await?;
    let b = stories_of(b, &args.server).await?;
    if a.len() != b.len() {
        bail!(
            "A holds {} stories and B {}: they are judged in pairs",
            a.len(),
            b.len()
        );
    }
    Ok((a.into_iter().zip(b).collect(), None))
}

pub async fn judge_command(args: &JudgeArgs) -> anyhow::Result<()> {
    let model = judge_model(args)?;
    let (pairs, played_mode) = pairs(args).await?;
    let mode = match args.mode {
        Some(ModeArg::Script) => Mode::Script,
        Some(ModeArg::Free) => Mode::Free,
        None => played_mode.unwrap_or(Mode::Script),
    };
    let options = JudgeOptions {
        max_chars: args.max_chars,
        ..JudgeOptions::new(mode)
    };
    let bar = indicatif::ProgressBar::new(pairs.len() as u64).with_style(
        indicatif::ProgressStyle::with_template("judging pair {pos}/{len} (both orders) {bar:30}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let judged = judge(model.as_ref(), &pairs, options, |done| {
        bar.set_position(done as u64)
    })
    .await;
    bar.finish_and_clear();
    write_audit(&args.audit, &judged)?;
    print_table(&judged);
    eprintln!("judge prompts and answers: {}", args.audit.display());
    crate::commands::bench::print_json(&args.output, "judge", &judged)
}

fn write_audit(path: &Path, judged: &Judged) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("cannot write {}", path.display()))?,
    );
    for asked in &judged.audit {
        writeln!(out, "{}", serde_json::to_string(asked)?)?;
    }
    out.flush()?;
    Ok(())
}

fn print_table(judged: &Judged) {
    let judged_pairs = judged.pairs - judged.unjudged();
    println!(
        "{:<20} {:>6} {:>5} {:>6}  {:>10}  95% interval",
        "dimension", "A wins", "ties", "B wins", "A win rate"
    );
    for t in &judged.tally {
        if judged_pairs == 0 {
            println!(
                "{:<20} {:>6} {:>5} {:>6}  {:>10}  —",
                t.dimension, 0, 0, 0, "—"
            );
            continue;
        }
        println!(
            "{:<20} {:>6} {:>5} {:>6}  {:>9.1}%  [{:.1}%, {:.1}%]",
            t.dimension,
            t.a_wins,
            t.ties,
            t.b_wins,
            100.0 * t.a_win_rate,
            100.0 * t.interval.0,
            100.0 * t.interval.1
        );
    }
    println!(
        "{judged_pairs} pairs judged in both orders ({} judge calls); ties count half; a split verdict is a tie",
        judged.calls
    );
    if judged.unjudged() > 0 {
        println!(
            "{} pairs unjudged: in one order the judge gave no verdict (a malformed answer or a failed call) after one more ask; see the audit",
            judged.unjudged()
        );
    }
}
