//! `dramatis bench soak`: stories played while `serve` and its agents are killed with
//! SIGKILL at random points, each compared with the same story played once without a
//! kill. With the scripted model a story is a function of its scenario, so a crash may
//! change nothing: the bench counts the steps lost, duplicated and diverged (0, 0, 0
//! is the only passing figure) and the seq gaps.
//!
//! Each `serve` is a child of this process on its own data directory and loopback port;
//! a killed one is started again on the same directory, as an operator's supervisor
//! would. A killed agent is left to the service, which replaces it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use dramatis_eval::bench::tellings::{Difference, compare, seq_gaps, told};
use dramatis_proto::v1::{
    Event, GetWorldRequest, WatchRequest, WorldStatus, create_world_request, watch_response,
};
use dramatis_runtime::client::{
    ClientOptions, WorldRpc, advance_to_end, create_world, world_client,
};
use serde::Serialize;

use super::bench::{JsonArg, print_json};
use crate::spawn::{Spawned, spawn_self};

#[derive(Debug, Args)]
pub struct SoakBenchArgs {
    /// How long to keep playing killed stories, in minutes (a story under way is
    /// finished).
    #[arg(long, default_value_t = 5.0)]
    pub minutes: f64,
    /// Stories to play in turn, comma-separated (shipped scenario names: scripted or
    /// open).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "lamplighters-ledger,study-in-scarlet"
    )]
    pub scenarios: Vec<String>,
    /// Kills per story.
    #[arg(long, default_value_t = 10)]
    pub kills: u32,
    /// Of the kills, the share that hits one agent process instead of `serve`.
    #[arg(long, default_value_t = 0.5)]
    pub agent_share: f64,
    /// Seed of the kill points (default: from the clock; printed either way).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

/// One killed story.
#[derive(Debug, Clone, Serialize)]
struct Story {
    scenario: String,
    events: usize,
    calm_events: usize,
    serve_kills: u32,
    agent_kills: u32,
    #[serde(flatten)]
    difference: Difference,
    seq_gaps: usize,
    seconds: f64,
}

/// A small deterministic generator (xorshift), so a run can be replayed from its seed.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }

    fn chance(&mut self, share: f64) -> bool {
        (self.below(1_000_000) as f64) < share.clamp(0.0, 1.0) * 1_000_000.0
    }
}

/// A `dramatis serve` child on `data_dir` (scripted model, loopback), and a client.
async fn serve(
    data_dir: &Path,
    scenarios_dir: Option<&Path>,
) -> anyhow::Result<(Spawned, WorldRpc)> {
    let mut args: Vec<String> = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--scripted",
        "builtin",
        "--no-viewer",
        "--data-dir",
    ]
    .map(str::to_owned)
    .into();
    args.push(data_dir.display().to_string());
    if let Some(dir) = scenarios_dir {
        args.extend(["--scenarios-dir".to_owned(), dir.display().to_string()]);
    }
    let child = spawn_self(
        &args,
        &[],
        &data_dir.join("serve.log"),
        Duration::from_secs(60),
    )
    .await?;
    let client = world_client(&ClientOptions::local(&format!("http://{}", child.addr))).await?;
    Ok((child, client))
}

/// Every event of world `id`, in seq order.
async fn events(client: &mut WorldRpc, id: &str) -> anyhow::Result<Vec<Event>> {
    let mut stream = client
        .watch(WatchRequest {
            world_id: id.to_owned(),
            from_seq: 1,
            no_follow: true,
            pov: String::new(),
        })
        .await
        .context("read the world's events")?
        .into_inner();
    let mut out = Vec::new();
    while let Some(item) = stream.message().await.context("read the world's events")? {
        if let Some(watch_response::Item::Event(e)) = item.item {
            out.push(e);
        }
    }
    Ok(out)
}

async fn finished(client: &mut WorldRpc, id: &str) -> anyhow::Result<bool> {
    let info = client
        .get_world(GetWorldRequest {
            world_id: id.to_owned(),
        })
        .await
        .context("look up the world")?
        .into_inner();
    Ok(info.status == WorldStatus::Finished as i32)
}

const WORLD: &str = "soak";

/// Plays `scenario` to its end on a service never killed.
async fn calm(scenario: &str, scenarios_dir: Option<&Path>) -> anyhow::Result<Vec<Event>> {
    let data = tempfile::tempdir().context("a temporary data directory")?;
    let (child, mut client) = serve(data.path(), scenarios_dir).await?;
    let source = create_world_request::Source::ScenarioName(scenario.to_owned());
    create_world(&mut client, source, WORLD).await?;
    let mut calls = 0;
    while !finished(&mut client, WORLD).await? {
        calls += 1;
        anyhow::ensure!(calls <= 100, "{scenario} does not end");
        advance_to_end(&mut client, WORLD).await?;
    }
    let told = events(&mut client, WORLD).await?;
    drop(child);
    Ok(told)
}

/// Plays `scenario` with `kills` kills at random points, then compares it with `calm`.
async fn killed(
    args: &SoakBenchArgs,
    scenario: &str,
    calm: &[Event],
    dice: &mut Dice,
) -> anyhow::Result<Story> {
    let started = Instant::now();
    let data = tempfile::tempdir().context("a temporary data directory")?;
    let shards = data.path().join("shards");
    let scenarios_dir = args.scenarios_dir.as_deref();
    let (mut child, mut client) = serve(data.path(), scenarios_dir).await?;
    let source = create_world_request::Source::ScenarioName(scenario.to_owned());
    create_world(&mut client, source, WORLD).await?;
    let (mut serve_kills, mut agent_kills) = (0, 0);
    let mut calls = 0;
    while !finished(&mut client, WORLD).await? {
        calls += 1;
        anyhow::ensure!(calls <= 100 + args.kills, "{scenario} does not end");
        let mut caller = client.clone();
        let mut call = tokio::spawn(async move { advance_to_end(&mut caller, WORLD).await });
        // Kills while this call runs: an agent's leave the call going (the service
        // replaces the agent), a kill of `serve` ends it.
        loop {
            if serve_kills + agent_kills >= args.kills {
                call.await.context("the advance task")??;
                break;
            }
            // Somewhere in the next step or two: a model call, an append, a delivery.
            let pause = Duration::from_millis(5 + dice.below(150));
            if tokio::time::timeout(pause, &mut call).await.is_ok() {
                // The call ended before the kill: the story is over, or the call failed
                // with its agent and the next one goes on.
                break;
            }
            let agents = crate::locks::running_agents(&shards);
            if dice.chance(args.agent_share) && !agents.is_empty() {
                let pid = agents[usize::try_from(dice.below(agents.len() as u64)).unwrap_or(0)];
                kill9(pid);
                agent_kills += 1;
                continue;
            }
            if let Some(pid) = child.child.id() {
                kill9(i32::try_from(pid).unwrap_or(0));
            }
            // Killed just above: its exit status says only that.
            let _ = child.child.wait().await;
            serve_kills += 1;
            // The call was cut by the kill; its error is the point of the soak.
            let _ = call.await;
            // Its agents follow it down through their lifelines.
            let deadline = Instant::now() + Duration::from_secs(15);
            while !crate::locks::running_agents(&shards).is_empty() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            (child, client) = serve(data.path(), scenarios_dir).await?;
            break;
        }
    }
    let events = events(&mut client, WORLD).await?;
    drop(child);
    Ok(Story {
        scenario: scenario.to_owned(),
        events: events.len(),
        calm_events: calm.len(),
        serve_kills,
        agent_kills,
        difference: compare(&told(calm), &told(&events)),
        seq_gaps: seq_gaps(&events),
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn kill9(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        // A process that is gone already needs no signal.
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

pub async fn bench_soak(args: &SoakBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(!args.scenarios.is_empty(), "--scenarios names no story");
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(7, |d| d.as_nanos() as u64)
    });
    eprintln!("seed {seed} (--seed {seed} replays the kill points)");
    let mut dice = Dice(seed | 1);
    let mut reference = HashMap::new();
    for scenario in &args.scenarios {
        eprintln!("{scenario}: playing it once without a kill…");
        let told = calm(scenario, args.scenarios_dir.as_deref())
            .await
            .with_context(|| format!("the calm telling of {scenario}"))?;
        reference.insert(scenario.clone(), told);
    }
    let until = Instant::now() + Duration::from_secs_f64(args.minutes.max(0.0) * 60.0);
    let bar = indicatif::ProgressBar::new_spinner();
    let mut stories: Vec<Story> = Vec::new();
    println!(
        "{:<24} {:>7} {:>6} {:>6} {:>5} {:>5} {:>8} {:>5} {:>7}",
        "story", "events", "serve", "agent", "lost", "dup", "diverged", "gaps", "s"
    );
    while Instant::now() < until || stories.is_empty() {
        let scenario = &args.scenarios[stories.len() % args.scenarios.len()];
        bar.set_message(format!(
            "story {} ({scenario}) under kills",
            stories.len() + 1
        ));
        let story = killed(args, scenario, &reference[scenario], &mut dice).await?;
        bar.suspend(|| {
            println!(
                "{:<24} {:>7} {:>6} {:>6} {:>5} {:>5} {:>8} {:>5} {:>7.1}",
                story.scenario,
                format!("{}/{}", story.events, story.calm_events),
                story.serve_kills,
                story.agent_kills,
                story.difference.lost,
                story.difference.duplicated,
                story.difference.diverged,
                story.seq_gaps,
                story.seconds
            );
        });
        stories.push(story);
    }
    bar.finish_and_clear();
    let sum = |f: fn(&Story) -> usize| stories.iter().map(f).sum::<usize>();
    let (lost, duplicated, diverged, gaps) = (
        sum(|s| s.difference.lost),
        sum(|s| s.difference.duplicated),
        sum(|s| s.difference.diverged),
        sum(|s| s.seq_gaps),
    );
    let kills: u32 = stories.iter().map(|s| s.serve_kills + s.agent_kills).sum();
    println!(
        "{} stories, {kills} kills: lost {lost}, duplicated {duplicated}, diverged {diverged}, seq gaps {gaps} (0, 0, 0, 0 passes)",
        stories.len()
    );
    print_json(
        &args.output,
        "soak",
        &serde_json::json!({
            "seed": seed,
            "stories": stories,
            "kills": kills,
            "lost": lost,
            "duplicated": duplicated,
            "diverged": diverged,
            "seq_gaps": gaps,
        }),
    )?;
    anyhow::ensure!(
        lost + duplicated + diverged + gaps == 0,
        "a crash changed a story (seed {seed})"
    );
    Ok(())
}
