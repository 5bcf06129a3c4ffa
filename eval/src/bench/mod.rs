//! The benchmarks' harness: a world service and one agent service in process on
//! loopback ports (the agent hop on mutual TLS unless asked otherwise), driven as a
//! client would drive them, with the scripted model so that the figures are the
//! orchestration's own, not a model's.
//!
//! - [`turns`]: a scenario played to its end a number of times, with a watcher timing
//!   the first word of each line from the model to the client.
//! - [`story`]: one long open story, timed line by line, with the shards saved to disk:
//!   how the cost of a line changes as the story grows.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, anyhow};
use dramatis_character::{AgentOptions, CharacterAgents, MemoryWrites};
use dramatis_embed::Embedder;
use dramatis_llm::{
    Completion, CompletionRequest, LanguageModel, LlmError, RoleModels, ScriptedModel, TokenSink,
};
use dramatis_proto::v1::{WatchResponse, WorldInfo, create_world_request};
use dramatis_runtime::Shutdown;
use dramatis_runtime::auth::Access;
use dramatis_runtime::client::{
    ClientOptions, WorldRpc, advance_to_end, create_and_watch, describe, world_client,
};
use dramatis_runtime::grpc::Security;
use dramatis_runtime::pki::DeploymentPki;
use dramatis_world::WorldServiceOptions;
use dramatis_world::agent_clients::StaticAgents;
use dramatis_world::log::SharedLog;

mod cluster;
pub mod nats;
pub mod stages;
mod story;
pub mod tellings;
mod turns;

pub use cluster::{LogBenchReport, LogBenchSetup, log_backends};
pub use story::{StoryReport, StorySetup, story, story_spec};
pub use turns::{TurnsReport, TurnsSetup, turns};

/// The scripted model, passing its streamed pieces on and noting when it hands over the
/// first piece of each action's visible line: the start of the model → watcher token
/// latency.
#[derive(Debug, Clone)]
struct StampedModel {
    inner: ScriptedModel,
    first_visible: Arc<std::sync::Mutex<Vec<Instant>>>,
}

#[async_trait::async_trait]
impl LanguageModel for StampedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        tokens: Option<&dyn TokenSink>,
    ) -> Result<Completion, LlmError> {
        let Some(sink) = tokens else {
            return self.inner.complete(request, None).await;
        };
        // The scripted model's own pieces, passed on with the moment the line starts.
        let stamping = Stamping {
            sink,
            sent: std::sync::Mutex::default(),
            first_visible: &self.first_visible,
        };
        self.inner.complete(request, Some(&stamping)).await
    }
}

/// A sink that notes when the first piece of an action's visible line goes by.
struct Stamping<'a> {
    sink: &'a dyn TokenSink,
    /// What went by so far, and whether the line's start was noted.
    sent: std::sync::Mutex<(String, bool)>,
    first_visible: &'a std::sync::Mutex<Vec<Instant>>,
}

impl TokenSink for Stamping<'_> {
    fn token(&self, piece: &str) {
        {
            let mut sent = dramatis_runtime::lock(&self.sent);
            sent.0.push_str(piece);
            if !sent.1 && sent.0.contains("\"text\":\"") {
                sent.1 = true;
                dramatis_runtime::lock(self.first_visible).push(Instant::now());
            }
        }
        self.sink.token(piece);
    }
}

/// How the in-process services are set up.
struct ClusterSetup {
    scenarios_dir: PathBuf,
    /// Folders (beside the shipped scenarios) the world service may read scenarios from.
    scenario_roots: Vec<PathBuf>,
    memory_writes: MemoryWrites,
    /// The world → agent hop in plain HTTP/2 instead of mutual TLS.
    plain_agents: bool,
    /// Whether the agent saves its shards (to the cluster's temporary directory, or to
    /// `shard_stream` when given).
    save_shards: bool,
    /// Where the agent saves its shards instead of the disk.
    shard_stream: Option<dramatis_character::shard::ShardStream>,
    /// A shared log (and this service's part in a cluster over it) instead of the
    /// embedded redb file.
    shared: Option<(SharedLog, Arc<dramatis_world::cluster::Cluster>)>,
    /// The scripted lines numbered at a fixed width, so a long story does not embed
    /// more tokens per line as its counter gains digits
    /// ([`ScriptedModel::with_fixed_width_lines`]).
    fixed_width_lines: bool,
}

/// A world service and an agent service running in this process.
struct Cluster {
    client: WorldRpc,
    model: StampedModel,
    scripted: ScriptedModel,
    data: tempfile::TempDir,
    shutdown: Shutdown,
}

impl Cluster {
    async fn start(setup: &ClusterSetup, embedder: Arc<dyn Embedder>) -> anyhow::Result<Self> {
        let shutdown = Shutdown::new();
        let data = tempfile::Builder::new()
            .prefix("dramatis-bench-")
            .tempdir()
            .context("temporary directory")?;
        let mut scripted = ScriptedModel::default().without_recording();
        if setup.fixed_width_lines {
            scripted = scripted.with_fixed_width_lines();
        }
        let model = StampedModel {
            inner: scripted.clone(),
            first_visible: Arc::default(),
        };
        let mut options = AgentOptions::new(RoleModels::uniform(Arc::new(model.clone())), embedder);
        options.memory_writes = setup.memory_writes;
        if setup.save_shards {
            options.data_dir = Some(data.path().join("shards"));
            options.shard_stream.clone_from(&setup.shard_stream);
        }
        let agents = CharacterAgents::new(options);
        let agent_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let agent_addr = agent_listener.local_addr()?;
        let (security, agent_tls, scheme) = if setup.plain_agents {
            (Security::open(), None, "http")
        } else {
            let pki = DeploymentPki::generate(&[], &[], std::time::Duration::from_secs(86_400))?;
            let dir = data.path().join("pki");
            pki.write_agent_half(&dir)?;
            let security = Security {
                tls: Some(dramatis_runtime::pki::agent_server_tls(&dir)?),
                access: Access::PeerCertificate,
            };
            (security, Some(pki.world_client_tls()), "https")
        };
        tokio::spawn(dramatis_character::run(
            agent_listener,
            agents,
            security,
            shutdown.clone(),
        ));
        let agents = StaticAgents::new(vec![format!("{scheme}://{agent_addr}")])?;
        let options = WorldServiceOptions {
            scenario_roots: setup.scenario_roots.clone(),
            shared_log: setup.shared.as_ref().map(|(log, _)| Arc::clone(log)),
            cluster: setup
                .shared
                .as_ref()
                .map(|(_, cluster)| Arc::clone(cluster)),
            narrator: Some(Arc::new(scripted.clone())),
            agent_tls,
            ..WorldServiceOptions::new(
                setup.scenarios_dir.clone(),
                data.path().join("events.redb"),
                Arc::new(agents),
            )
        };
        let world_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let world_addr = world_listener.local_addr()?;
        tokio::spawn(dramatis_world::run(
            world_listener,
            options,
            shutdown.clone(),
        ));
        let client = world_client(&ClientOptions::local(&format!("http://{world_addr}")))
            .await
            .map_err(|e| anyhow!("cannot reach the in-process world service: {e:#}"))?;
        Ok(Self {
            client,
            model,
            scripted,
            data,
            shutdown,
        })
    }

    /// Creates a world from `source` and opens a watch of it from its first event.
    async fn create_and_watch(
        &self,
        source: create_world_request::Source,
    ) -> anyhow::Result<(WorldInfo, tonic::Streaming<WatchResponse>)> {
        Ok(create_and_watch(&mut self.client.clone(), source).await?)
    }

    /// Plays `world_id` to its end, then deletes it: the advance's answer and how
    /// long the advance took.
    async fn play_to_end(
        &self,
        world_id: String,
    ) -> anyhow::Result<(dramatis_proto::v1::AdvanceResponse, std::time::Duration)> {
        let mut client = self.client.clone();
        let started = Instant::now();
        let advanced = advance_to_end(&mut client, &world_id).await?;
        let elapsed = started.elapsed();
        client
            .delete_world(dramatis_proto::v1::DeleteWorldRequest { world_id })
            .await
            .map_err(|s| anyhow!("delete: {}", describe(&s)))?;
        Ok((advanced, elapsed))
    }

    /// Bytes of every file under the agent's shard folder.
    fn shard_bytes(&self) -> u64 {
        disk_use(&self.data.path().join("shards")).apparent
    }
}

/// What the files under a directory take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskUse {
    /// Their lengths, summed (what `ls -l` shows).
    pub apparent: u64,
    /// The blocks the file system gave them, summed (what `du` shows). Less than
    /// `apparent` for a file with holes: redb lays out a new file as 1 MiB and
    /// writes a few pages of it.
    pub allocated: u64,
    pub files: usize,
}

/// [`DiskUse`] of every file under `dir`, recursively (nothing when it does not exist).
#[must_use]
pub fn disk_use(dir: &std::path::Path) -> DiskUse {
    use std::os::unix::fs::MetadataExt as _;
    let mut total = DiskUse::default();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return total;
    };
    for entry in entries.flatten() {
        match entry.file_type() {
            Ok(t) if t.is_dir() => {
                let inner = disk_use(&entry.path());
                total.apparent += inner.apparent;
                total.allocated += inner.allocated;
                total.files += inner.files;
            }
            Ok(_) => {
                if let Ok(meta) = entry.metadata() {
                    total.apparent += meta.len();
                    total.allocated += meta.blocks() * 512;
                    total.files += 1;
                }
            }
            Err(_) => {}
        }
    }
    total
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown.trigger();
    }
}
