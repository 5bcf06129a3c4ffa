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
/// (orchestration, agents, log), median over the runs, and lines per second. First
/// with agents that keep shards in memory only (the log alone), then with agents that
/// save every shard: to disk beside the redb log, to JetStream beside the JetStream
/// log (the layout in which characters move whole).
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
    /// redb log, shards saved to the agent's disk.
    pub redb_disk_shards_ms_per_line: f64,
    /// JetStream log, shards saved to JetStream.
    pub jetstream_shards_ms_per_line: f64,
    /// jetstream_shards / redb_disk_shards.
    pub shards_ratio: f64,
    /// Every run's ms per line, in run order.
    pub redb_runs: Vec<f64>,
    pub jetstream_runs: Vec<f64>,
    pub redb_disk_shards_runs: Vec<f64>,
    pub jetstream_shards_runs: Vec<f64>,
}

/// Plays `setup.scenario` `setup.runs` times on each backend, alternating.
pub async fn log_backends(
    setup: &LogBenchSetup,
    embedder: Arc<dyn Embedder>,
) -> anyhow::Result<LogBenchReport> {
    let nats = NatsCluster::start(&setup.nats_server).await?;
    let shared = |prefix: &'static str| {
        let nats = &nats;
        async move {
            let log = nats.log(prefix).await?;
            let leases = dramatis_world::cluster::Leases::open(
                &log,
                Replica {
                    id: prefix.into(),
                    endpoint: "http://127.0.0.1:9".into(),
                },
                Duration::from_secs(10),
            )
            .await?;
            anyhow::Ok((
                Arc::new(log) as dramatis_world::log::SharedLog,
                Replicas::new(leases, Peers::default()),
            ))
        }
    };
    let base = |shared, save_shards, shard_stream| ClusterSetup {
        scenarios_dir: setup.scenarios_dir.clone(),
        scenario_roots: Vec::new(),
        memory_writes: MemoryWrites::Digest,
        plain_agents: false,
        save_shards,
        shard_stream,
        shared,
        fixed_width_lines: false,
    };
    let stream = dramatis_character::shard::ShardStream::connect(&nats.options("bench"))
        .await
        .map_err(|e| anyhow::anyhow!("the shard stream: {e}"))?;
    let clusters = [
        Cluster::start(&base(None, false, None), Arc::clone(&embedder)).await?,
        Cluster::start(
            &base(Some(shared("bench").await?), false, None),
            Arc::clone(&embedder),
        )
        .await?,
        Cluster::start(&base(None, true, None), Arc::clone(&embedder)).await?,
        Cluster::start(
            &base(Some(shared("benchshards").await?), true, Some(stream)),
            embedder,
        )
        .await?,
    ];
    let source = create_world_request::Source::ScenarioName(setup.scenario.clone());
    let mut runs: [Vec<f64>; 4] = Default::default();
    let mut lines = 0;
    for _ in 0..setup.runs.max(1) {
        for (cluster, runs) in clusters.iter().zip(&mut runs) {
            let (ms, events) = play(cluster, source.clone()).await?;
            runs.push(ms);
            lines = events;
        }
    }
    let [
        redb_runs,
        jetstream_runs,
        redb_disk_shards_runs,
        jetstream_shards_runs,
    ] = runs;
    let redb_ms = median(&redb_runs);
    let jetstream_ms = median(&jetstream_runs);
    let disk_ms = median(&redb_disk_shards_runs);
    let shards_ms = median(&jetstream_shards_runs);
    Ok(LogBenchReport {
        runs: setup.runs.max(1),
        lines_per_run: lines,
        redb_ms_per_line: redb_ms,
        jetstream_ms_per_line: jetstream_ms,
        ratio: jetstream_ms / redb_ms,
        redb_lines_per_s: 1000.0 / redb_ms,
        jetstream_lines_per_s: 1000.0 / jetstream_ms,
        redb_disk_shards_ms_per_line: disk_ms,
        jetstream_shards_ms_per_line: shards_ms,
        shards_ratio: shards_ms / disk_ms,
        redb_runs,
        jetstream_runs,
        redb_disk_shards_runs,
        jetstream_shards_runs,
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
