//! `dramatis bench cluster`: the JetStream log beside the redb log (per-line cost and
//! lines per second, in one run), then failover: two `serve` replicas over a three-node
//! NATS cluster on loopback, the owner of a story killed (`kill -9`) mid-`Advance`, and
//! the time from the kill to the next event a watcher on the other replica receives.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use dramatis_embed::OnnxEmbedder;
use dramatis_eval::bench::nats::{NatsCluster, nats_server};
use dramatis_eval::bench::{LogBenchSetup, log_backends};
use dramatis_proto::v1::{create_world_request, watch_response};
use dramatis_runtime::client::{
    ClientOptions, WorldRpc, advance_to_end, create_world, watch_world, world_client,
};

use super::bench::{JsonArg, print_json};
use crate::spawn::{Spawned, spawn_self};

#[derive(Debug, Args)]
pub struct ClusterBenchArgs {
    /// Scenario played on each log (a shipped name).
    #[arg(default_value = "study-in-scarlet")]
    pub scenario: String,
    /// How many times it is played on each log (alternating).
    #[arg(long, default_value_t = 5)]
    pub runs: u32,
    /// How many times an owner is killed and its story taken over.
    #[arg(long, default_value_t = 3)]
    pub failovers: u32,
    /// The replicas' lease (`serve --lease-ms`): the longest a dead owner's worlds
    /// wait to be taken over.
    #[arg(long, default_value_t = 1500)]
    pub lease_ms: u64,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    #[command(flatten)]
    pub output: JsonArg,
}

#[derive(Debug, serde::Serialize)]
struct Figures {
    #[serde(flatten)]
    logs: dramatis_eval::bench::LogBenchReport,
    /// Median, kill to the next event at the other replica.
    failover_ms: f64,
    failover_runs_ms: Vec<f64>,
    /// Failovers that failed, with why (the others are still reported).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failover_failures: Vec<String>,
    lease_ms: u64,
}

pub async fn bench_cluster(args: &ClusterBenchArgs) -> anyhow::Result<()> {
    let program = nats_server().context(
        "nats-server is not installed: `bash scripts/setup.sh --nats` installs Debian's",
    )?;
    let scenarios_dir = args
        .scenarios_dir
        .clone()
        .unwrap_or_else(dramatis_runtime::models::scenarios_dir);
    let embedder = OnnxEmbedder::load(&crate::models::embedder_config(None))?;
    eprintln!(
        "playing {} {} times on each log (redb file; JetStream, 3 nodes, 3 replicas), shards \
         unsaved and saved (to disk; to JetStream)…",
        args.scenario, args.runs
    );
    let logs = log_backends(
        &LogBenchSetup {
            scenario: args.scenario.clone(),
            runs: args.runs,
            scenarios_dir,
            nats_server: program.clone(),
        },
        Arc::new(embedder),
    )
    .await?;
    eprintln!("killing a story's owner replica {} times…", args.failovers);
    let mut failover_runs_ms = Vec::new();
    let mut failover_failures = Vec::new();
    for run in 0..args.failovers.max(1) {
        // A failed failover is said and the bench goes on: the log figures above and
        // the other failovers are still printed.
        match failover(&program, args.lease_ms, run).await {
            Ok(ms) => failover_runs_ms.push(ms),
            Err(e) => {
                eprintln!("failover {}: failed: {e:#}", run + 1);
                failover_failures.push(format!("{e:#}"));
            }
        }
    }
    let mut sorted = failover_runs_ms.clone();
    sorted.sort_by(f64::total_cmp);
    let figures = Figures {
        failover_ms: sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN),
        failover_runs_ms,
        failover_failures,
        lease_ms: args.lease_ms,
        logs,
    };
    print_table(&figures);
    print_json(&args.output, "cluster", &figures)
}

fn print_table(f: &Figures) {
    let l = &f.logs;
    println!(
        "log         ms/line (median of {})   lines/s   runs (ms/line)",
        l.runs
    );
    let runs = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "redb        {:>8.2}                 {:>8.1}   {}",
        l.redb_ms_per_line,
        l.redb_lines_per_s,
        runs(&l.redb_runs)
    );
    println!(
        "jetstream   {:>8.2}                 {:>8.1}   {}",
        l.jetstream_ms_per_line,
        l.jetstream_lines_per_s,
        runs(&l.jetstream_runs)
    );
    println!(
        "jetstream / redb per line: {:.2} ({} lines a run)",
        l.ratio, l.lines_per_run
    );
    println!(
        "with every shard saved:\nredb + disk  {:>8.2}                 {:>8.1}   {}",
        l.redb_disk_shards_ms_per_line,
        1000.0 / l.redb_disk_shards_ms_per_line,
        runs(&l.redb_disk_shards_runs)
    );
    println!(
        "jetstream×2  {:>8.2}                 {:>8.1}   {}",
        l.jetstream_shards_ms_per_line,
        1000.0 / l.jetstream_shards_ms_per_line,
        runs(&l.jetstream_shards_runs)
    );
    println!(
        "jetstream log and shards / redb log and disk shards per line: {:.2}",
        l.shards_ratio
    );
    println!(
        "failover (kill -9 of the owner to the next event elsewhere, lease {} ms): median {:.0} ms; runs {}",
        f.lease_ms,
        f.failover_ms,
        runs(&f.failover_runs_ms)
    );
    if !f.failover_failures.is_empty() {
        println!("failovers that failed: {}", f.failover_failures.len());
    }
}

/// A scripted agent in `data` (its log beside it, `data.log`).
async fn spawn_agent(data: &std::path::Path, wait: Duration) -> anyhow::Result<Spawned> {
    spawn_self(
        &args(&[
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--no-tls",
            "--scripted",
            "builtin",
        ])
        .chain(["--data-dir".into(), data.to_string_lossy().into_owned()])
        .collect::<Vec<_>>(),
        &[],
        &data.with_extension("log"),
        wait,
    )
    .await
}

/// Creates `id` through `client`: the shipped open story, 60 rounds long.
async fn create_open_story(client: &mut WorldRpc, id: &str) -> anyhow::Result<()> {
    let base = dramatis_scenario::Scenario::load(
        &dramatis_runtime::models::scenarios_dir().join("lamplighters-ledger/scenario.toml"),
    )?;
    let mut spec =
        dramatis_scenario::sandbox::scenario_to_spec(&base).context("the shipped open story")?;
    spec.rounds = 60;
    create_world(client, create_world_request::Source::Sandbox(spec), id).await?;
    Ok(())
}

/// One failover: a fresh NATS cluster, an agent and two replicas; a long open story
/// advanced through its owner, which is killed once a watcher on the other replica has
/// seen 40 events; the story then advanced through the other replica. Milliseconds from
/// the kill to the next event at the watcher.
async fn failover(program: &std::path::Path, lease_ms: u64, run: u32) -> anyhow::Result<f64> {
    let nats = NatsCluster::start(program).await?;
    let dir = tempfile::Builder::new()
        .prefix("dramatis-failover-")
        .tempdir()?;
    let wait = Duration::from_secs(60);
    let path = |name: &str| dir.path().join(name);
    let agent = spawn_agent(&path("agent"), wait).await?;
    let replica = |name: &'static str| {
        let data = path(name);
        let mut argv: Vec<String> = args(&[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--scripted",
            "builtin",
            "--no-viewer",
        ])
        .collect();
        argv.extend([
            "--agent-endpoint".into(),
            format!("http://{}", agent.addr),
            "--log".into(),
            nats.url(),
            "--lease-ms".into(),
            lease_ms.to_string(),
            "--replica-id".into(),
            name.into(),
            "--data-dir".into(),
            data.to_string_lossy().into_owned(),
        ]);
        let log = data.join("serve.log");
        async move { spawn_self(&argv, &[], &log, wait).await }
    };
    let mut owner: Spawned = replica("r1").await?;
    let other: Spawned = replica("r2").await?;
    let mut owner_client =
        world_client(&ClientOptions::local(&format!("http://{}", owner.addr))).await?;
    let other_client =
        world_client(&ClientOptions::local(&format!("http://{}", other.addr))).await?;
    let id = format!("failover-{run}");
    create_open_story(&mut owner_client, &id).await?;
    let mut watch = watch_world(&mut other_client.clone(), &id, 1).await?;
    let running = tokio::spawn(play_to_end(owner_client.clone(), id.clone()));
    let mut seen = 0;
    while seen < 40 {
        match watch.message().await? {
            Some(item) if matches!(item.item, Some(watch_response::Item::Event(_))) => seen += 1,
            Some(_) => {}
            None => anyhow::bail!("the story ended before the owner was killed"),
        }
    }
    let killed = Instant::now();
    owner.child.start_kill()?;
    // Killed on purpose: its exit status says nothing.
    let _ = owner.child.wait().await;
    // The advance through the killed owner fails on purpose.
    let _ = running.await;
    let finishing = tokio::spawn(play_to_end(other_client, id));
    let next = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match watch.message().await? {
                Some(item) if matches!(item.item, Some(watch_response::Item::Event(_))) => {
                    return Ok::<_, anyhow::Error>(killed.elapsed());
                }
                Some(_) => {}
                None => anyhow::bail!("the watch ended without another event"),
            }
        }
    })
    .await
    .context("no event within a minute of the kill")??;
    finishing
        .await?
        .context("advance through the other replica")?;
    drop(owner_client);
    Ok(next.as_secs_f64() * 1000.0)
}

async fn play_to_end(mut client: WorldRpc, id: String) -> anyhow::Result<()> {
    advance_to_end(&mut client, &id).await?;
    Ok(())
}

fn args<'a>(words: &'a [&'a str]) -> impl Iterator<Item = String> + 'a {
    words.iter().map(|w| (*w).to_owned())
}
