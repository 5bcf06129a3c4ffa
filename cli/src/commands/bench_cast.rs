//! `dramatis bench cast`: open stories of growing casts on real agent processes, in each
//! layout: how long the world takes to start, lines per second, and what the agent
//! processes hold in memory per character, while the story runs and once it is idle;
//! and the shards' disk per character, before anyone speaks and at the end.

use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

use dramatis_eval::bench::story_spec;
use dramatis_proto::v1::{DeleteWorldRequest, create_world_request};
use dramatis_runtime::Shutdown;
use dramatis_runtime::client::{ClientOptions, advance_to_end, create_world, world_client};
use dramatis_runtime::memory_use::{peak_rss_mb_of, private_mb, rss_mb};
use serde::Serialize;

use super::bench::{JsonArg, print_json};
use crate::options::{LayoutArg, LayoutArgs, ModelArgs};
use crate::spawn::Layout;
use crate::stack::LocalStack;

#[derive(Debug, Args)]
pub struct CastBenchArgs {
    /// Cast sizes to run, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,100,1000")]
    pub characters: Vec<usize>,
    /// Layouts to run each size in, comma-separated (`pool`, `world`, `character`).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "pool,world,character"
    )]
    pub layouts: Vec<LayoutArg>,
    /// Processes in the pool (default: one per CPU core).
    #[arg(long, value_name = "N")]
    pub agent_pool: Option<u32>,
    /// Rounds each story runs.
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
    /// The open story to grow (a shipped sandbox's name).
    #[arg(long, default_value = "lamplighters-ledger")]
    pub sandbox: String,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    /// A run is skipped when its agents would need more than this share of the memory
    /// available now, judged from the smaller runs of the same layout: by the memory
    /// per process when each character has its own, otherwise by the last peak plus
    /// the cost per added character between the last two sizes.
    #[arg(long, default_value_t = 0.6)]
    pub memory_share: f64,
    /// Put everyone at the story's opening place (one crowd), instead of spreading the
    /// cast over districts.
    #[arg(long)]
    pub one_place: bool,
    /// Attention limits to run each size with, comma-separated: the most others a turn
    /// and each perceived line name (0: unbounded, every one present, as before bounded
    /// attention) [12].
    #[arg(long, value_delimiter = ',', default_value = "12")]
    pub attention: Vec<u32>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// One story in one layout.
#[derive(Debug, Clone, Default, Serialize)]
struct Run {
    layout: String,
    characters: usize,
    /// The attention limit (0: unbounded).
    attention: u32,
    /// Prompt tokens of the turns' calls, per line.
    prompt_tokens_per_turn: f64,
    /// CreateWorld: every character attached (agent processes started as needed).
    startup_s: f64,
    lines: usize,
    lines_per_s: f64,
    processes: usize,
    /// The agent processes' peak resident memory, summed.
    peak_rss_mb: f64,
    peak_rss_mb_per_character: f64,
    /// Their resident memory once the story has ended (every character still attached,
    /// idle).
    idle_rss_mb_per_character: f64,
    /// Of that, what the agents hold alone (private pages), per character: what each
    /// more agent process costs the machine. The rest of VmRSS is code and data files
    /// every agent maps and the machine holds once (ONNX Runtime, the executable, the
    /// embedder's weights file).
    idle_private_mb_per_character: f64,
    /// The shards on disk per character once the world is created, before anyone
    /// speaks: the blocks the file system gave them (`du`), in KB, and their lengths
    /// (`ls -l`; redb lays a new file out as 1 MiB with holes).
    empty_disk_kb_per_character: f64,
    empty_apparent_kb_per_character: f64,
    /// The same once the story has ended.
    end_disk_kb_per_character: f64,
    /// Why the run was skipped, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<String>,
}

fn layout_name(layout: LayoutArg) -> &'static str {
    match layout {
        LayoutArg::Pool => "pool",
        LayoutArg::World => "world",
        LayoutArg::Character => "character",
    }
}

/// Memory available now, in MB (`MemAvailable`).
fn available_mb() -> f64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(f64::INFINITY, |kb| kb / 1024.0)
}

pub async fn bench_cast(mut args: CastBenchArgs) -> anyhow::Result<()> {
    if args.model.scripted.is_none() && args.model.endpoint.llm_endpoint.is_none() {
        args.model.scripted = Some("builtin".to_owned());
    }
    let (scenarios_dir, base) =
        super::bench_story::sandbox_base(args.scenarios_dir.as_deref(), &args.sandbox)?;
    let mut sizes = args.characters.clone();
    sizes.sort_unstable();
    let mut runs: Vec<Run> = Vec::new();
    for &layout in &args.layouts {
        // This layout's measured runs, to judge the next.
        let mut measured: Vec<Run> = Vec::new();
        for &characters in &sizes {
            for &attention in &args.attention {
                let case = Run {
                    layout: layout_name(layout).to_owned(),
                    characters,
                    attention,
                    ..Run::default()
                };
                let need = memory_needed(
                    &measured,
                    characters,
                    matches!(layout, LayoutArg::Character),
                );
                let room = available_mb() * args.memory_share;
                if need > room {
                    runs.push(skipped(
                        case,
                        format!("about {need:.0} MB needed, {room:.0} MB allowed"),
                    ));
                    continue;
                }
                let layout_args = LayoutArgs {
                    agents: layout,
                    agent_pool: args.agent_pool,
                    shared_agent: false,
                };
                eprintln!("{} × {characters}: running…", case.layout);
                let mut spec = story_spec(&base, characters, args.rounds)?;
                spec.attention = if attention == 0 { u32::MAX } else { attention };
                if args.one_place {
                    for c in &mut spec.characters {
                        c.location.clone_from(&spec.opening_location);
                    }
                }
                // A case that fails is reported and the rest still run: what was
                // measured before it is printed either way.
                match one(
                    &args.model,
                    Layout::from(&layout_args),
                    spec,
                    &scenarios_dir,
                )
                .await
                {
                    Ok(run) => {
                        measured.push(run.clone());
                        runs.push(run.with(&case));
                    }
                    Err(e) => runs.push(skipped(case, format!("failed: {e:#}"))),
                }
            }
        }
    }
    print_table(&runs);
    let column = |f: fn(&Run) -> serde_json::Value| runs.iter().map(f).collect::<Vec<_>>();
    print_json(
        &args.output,
        "cast",
        &serde_json::json!({
            "layout": column(|r| r.layout.clone().into()),
            "characters": column(|r| r.characters.into()),
            "attention": column(|r| r.attention.into()),
            "prompt_tokens_per_turn": column(|r| r.prompt_tokens_per_turn.into()),
            "rss_mb_per_character": column(|r| r.peak_rss_mb_per_character.into()),
            "idle_rss_mb_per_character": column(|r| r.idle_rss_mb_per_character.into()),
            "idle_private_mb_per_character": column(|r| r.idle_private_mb_per_character.into()),
            "lines_per_s": column(|r| r.lines_per_s.into()),
            "empty_disk_kb_per_character": column(|r| r.empty_disk_kb_per_character.into()),
            "end_disk_kb_per_character": column(|r| r.end_disk_kb_per_character.into()),
            "processes": column(|r| r.processes.into()),
            "startup_s": column(|r| r.startup_s.into()),
            "runs": runs,
        }),
    )
}

/// `case` skipped for `why`, said at once.
fn skipped(case: Run, why: String) -> Run {
    eprintln!("{} × {}: skipped ({why})", case.layout, case.characters);
    Run {
        skipped: Some(why),
        ..case
    }
}

/// Marginal MB per character assumed until two sizes of a layout have been measured
/// (the pool layout measured about 0.44 MB per idle character, several at its peak).
const GUESSED_MB_PER_CHARACTER: f64 = 4.0;

/// The agents' peak memory, in MB, a run of `characters` should need, judged from this
/// layout's runs so far (`measured`, smallest first): the last run's peak, scaled by
/// its process count when each character has its own process, plus the characters
/// added at the marginal cost between the last two runs (or a guess after one). A
/// layout with a few shared processes is not judged by its per-character average,
/// which is mostly those processes' fixed cost.
fn memory_needed(measured: &[Run], characters: usize, process_per_character: bool) -> f64 {
    let Some(last) = measured.last() else {
        return 0.0;
    };
    if process_per_character {
        let per_process = last.peak_rss_mb / last.processes.max(1) as f64;
        return per_process * characters as f64;
    }
    // The largest peak at a size: of its attention cases, the costliest.
    let peak_at = |size: usize| {
        measured
            .iter()
            .filter(|r| r.characters == size)
            .map(|r| r.peak_rss_mb)
            .fold(0.0, f64::max)
    };
    let size = last.characters;
    let marginal = measured.iter().rev().find(|r| r.characters < size).map_or(
        GUESSED_MB_PER_CHARACTER,
        |before| {
            ((peak_at(size) - peak_at(before.characters)) / (size - before.characters) as f64)
                .max(0.0)
        },
    );
    peak_at(size) + marginal * characters.saturating_sub(size) as f64
}

impl Run {
    /// This run's figures under `case`'s name.
    fn with(self, case: &Run) -> Self {
        Self {
            layout: case.layout.clone(),
            attention: case.attention,
            ..self
        }
    }
}

fn print_table(runs: &[Run]) {
    println!(
        "{:<10} {:>6} {:>6} {:>10} {:>7} {:>8} {:>9} {:>6} {:>10} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "layout",
        "chars",
        "attn",
        "startup s",
        "lines",
        "lines/s",
        "prompt/t",
        "procs",
        "peak MB",
        "peak MB/ch",
        "idle MB/ch",
        "own MB/ch",
        "empty KB/ch",
        "end KB/ch"
    );
    for run in runs {
        let attention = match run.attention {
            0 => "all".to_owned(),
            n => n.to_string(),
        };
        if let Some(why) = &run.skipped {
            println!(
                "{:<10} {:>6} {attention:>6} skipped: {why}",
                run.layout, run.characters
            );
            continue;
        }
        println!(
            "{:<10} {:>6} {attention:>6} {:>10.1} {:>7} {:>8.1} {:>9.0} {:>6} {:>10.0} {:>12.2} {:>12.2} {:>12.2} {:>12.1} {:>12.1}",
            run.layout,
            run.characters,
            run.startup_s,
            run.lines,
            run.lines_per_s,
            run.prompt_tokens_per_turn,
            run.processes,
            run.peak_rss_mb,
            run.peak_rss_mb_per_character,
            run.idle_rss_mb_per_character,
            run.idle_private_mb_per_character,
            run.empty_disk_kb_per_character,
            run.end_disk_kb_per_character
        );
    }
}

/// Plays one grown story in `layout` on a new local stack.
async fn one(
    model: &ModelArgs,
    layout: Layout,
    spec: dramatis_proto::v1::SandboxSpec,
    scenarios_dir: &std::path::Path,
) -> anyhow::Result<Run> {
    let characters = spec.characters.len();
    let stack = LocalStack::start(
        model.clone(),
        None,
        layout,
        Some(scenarios_dir.to_path_buf()),
        Vec::new(),
        Shutdown::new(),
    )
    .await?;
    let mut client = world_client(&ClientOptions::local(&stack.server_url)).await?;
    let started = Instant::now();
    let world = create_world(&mut client, create_world_request::Source::Sandbox(spec), "").await?;
    let startup_s = started.elapsed().as_secs_f64();
    let shards = stack.data_dir.join("shards");
    let empty = dramatis_eval::bench::disk_use(&shards);
    let playing = Instant::now();
    let advanced = advance_to_end(&mut client, &world.world_id).await?;
    let seconds = playing.elapsed().as_secs_f64();
    let turns: Vec<_> = advanced.events.iter().filter(|e| e.turn > 0).collect();
    let lines = turns.len();
    let prompt_tokens: u64 = turns
        .iter()
        .filter_map(|e| e.usage.as_ref())
        .map(|u| u64::from(u.prompt_tokens))
        .sum();
    let pids = stack.agents.pids();
    let peak: f64 = pids.iter().map(|p| peak_rss_mb_of(*p)).sum();
    let idle: f64 = pids.iter().map(|p| rss_mb(*p)).sum();
    let private: f64 = pids.iter().map(|p| private_mb(*p)).sum();
    let end = dramatis_eval::bench::disk_use(&shards);
    // The stack, and the world with it, is torn down next.
    let _ = client
        .delete_world(DeleteWorldRequest {
            world_id: world.world_id.clone(),
        })
        .await;
    stack.stop(Some(&world.world_id)).await;
    let n = characters.max(1) as f64;
    Ok(Run {
        layout: String::new(),
        characters,
        attention: 0,
        prompt_tokens_per_turn: prompt_tokens as f64 / lines.max(1) as f64,
        startup_s,
        lines,
        lines_per_s: lines as f64 / seconds.max(1e-9),
        processes: pids.len(),
        peak_rss_mb: peak,
        peak_rss_mb_per_character: peak / n,
        idle_rss_mb_per_character: idle / n,
        empty_disk_kb_per_character: empty.allocated as f64 / 1024.0 / n,
        empty_apparent_kb_per_character: empty.apparent as f64 / 1024.0 / n,
        end_disk_kb_per_character: end.allocated as f64 / 1024.0 / n,
        idle_private_mb_per_character: private / n,
        skipped: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(characters: usize, processes: usize, peak_rss_mb: f64) -> Run {
        Run {
            characters,
            processes,
            peak_rss_mb,
            ..Run::default()
        }
    }

    #[test]
    fn shared_processes_are_judged_by_their_marginal_cost_not_their_average() {
        // Before: 10 characters in 2 processes at 495 MB judged 1,000 at 49,500 MB.
        let small = [run(10, 2, 495.0)];
        assert!((memory_needed(&small, 1000, false) - (495.0 + 990.0 * 4.0)).abs() < 1e-9);
        // Two sizes measured (two attention cases at 100): the marginal between them.
        let two = [run(10, 2, 494.0), run(100, 2, 520.0), run(100, 2, 584.0)];
        assert!((memory_needed(&two, 1000, false) - (584.0 + 900.0 * 1.0)).abs() < 1e-9);
        // A process per character: the per-process figure times the characters.
        let own = [run(10, 10, 1400.0)];
        assert!((memory_needed(&own, 1000, true) - 140_000.0).abs() < 1e-9);
        assert!(memory_needed(&[], 1000, true).abs() < 1e-9);
    }
}
