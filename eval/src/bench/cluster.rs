//! The log backends side by side: the same scenario played to its end on a world
//! service over the embedded redb log and on one over a three-node JetStream cluster
//! (replicated stream, ownership lease), runs alternated so that the machine's noise
//! falls on both.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dramatis_character::MemoryWrites;
use dramatis_embed::Embedder;
use dramatis_proto::v1::create_world_request;
use dramatis_world::cluster::{Cluster as Replicas, Peers, Replica};

use super::nats::NatsCluster;
use super::{Cluster, ClusterSetup};

/// What to play, and on which NATS server program.
pub struct LogBenchSetup {
    /// A shipped scenario's name.
    pub scenario: String,
    pub runs: u32,
    pub scenarios_dir: PathBuf,
    pub nats_server: PathBuf,
}

/// Per line (event) of each backend: milliseconds of wall time of the whole story
/// (orchestration, agents, log), median over the runs, and lines per second.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LogBenchReport {
    pub runs: u32,
    pub lines_per_run: u64,
    pub redb_ms_per_line: f64,
    pub jetstream_ms_per_line: f64,
    /// jetstream / redb.
    pub ratio: f64,
    pub redb_lines_per_s: f64,
    pub jetstream_lines_per_s: f64,
    /// Every run's ms per line, in run order.
    pub redb_runs: Vec<f64>,
    pub jetstream_runs: Vec<f64>,
}

/// Plays `setup.scenario` `setup.runs` times on each backend, alternating.
pub async fn log_backends(
    setup: &LogBenchSetup,
    embedder: Arc<dyn Embedder>,
) -> anyhow::Result<LogBenchReport> {
    let nats = NatsCluster::start(&setup.nats_server).await?;
    let log = nats.log("bench").await?;
    let leases = log
        .leases(
            Replica {
                id: "bench".into(),
                endpoint: "http://127.0.0.1:9".into(),
            },
            Duration::from_secs(10),
        )
        .await?;
    let base = |shared| ClusterSetup {
        scenarios_dir: setup.scenarios_dir.clone(),
        scenario_roots: Vec::new(),
        memory_writes: MemoryWrites::Digest,
        plain_agents: false,
        save_shards: false,
        shared,
    };
    let redb = Cluster::start(&base(None), Arc::clone(&embedder)).await?;
    let jetstream = Cluster::start(
        &base(Some((
            Arc::new(log) as dramatis_world::log::SharedLog,
            Replicas::new(leases, Peers::default()),
        ))),
        embedder,
    )
    .await?;
    let source = create_world_request::Source::ScenarioName(setup.scenario.clone());
    let (mut redb_runs, mut jetstream_runs, mut lines) = (Vec::new(), Vec::new(), 0);
    for _ in 0..setup.runs.max(1) {
        for (cluster, runs) in [(&redb, &mut redb_runs), (&jetstream, &mut jetstream_runs)] {
            let (ms, events) = play(cluster, source.clone()).await?;
            runs.push(ms);
            lines = events;
        }
    }
    let redb_ms = median(&redb_runs);
    let jetstream_ms = median(&jetstream_runs);
    Ok(LogBenchReport {
        runs: setup.runs.max(1),
        lines_per_run: lines,
        redb_ms_per_line: redb_ms,
        jetstream_ms_per_line: jetstream_ms,
        ratio: jetstream_ms / redb_ms,
        redb_lines_per_s: 1000.0 / redb_ms,
        jetstream_lines_per_s: 1000.0 / jetstream_ms,
        redb_runs,
        jetstream_runs,
    })
}

/// One world played to its end: ms per line, and its lines.
async fn play(
    cluster: &Cluster,
    source: create_world_request::Source,
) -> anyhow::Result<(f64, u64)> {
    let (world, _watching) = cluster.create_and_watch(source).await?;
    let (advanced, elapsed) = cluster.play_to_end(world.world_id).await?;
    let lines = advanced.events.len().max(1) as u64;
    Ok((elapsed.as_secs_f64() * 1000.0 / lines as f64, lines))
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}
