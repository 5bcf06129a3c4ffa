//! The registry of worlds in one world service: create (from a shipped scenario or a
//! path), look up, list, delete, and rebuild from the event log after a restart.

mod create;
mod fork;
mod paths;
mod place;
mod restore;

pub use place::Place;

use std::path::PathBuf;
use std::sync::Arc;

use dashmap::DashMap;
use dramatis_proto::v1 as pb;
use tokio_util::task::TaskTracker;

use crate::agent_clients::{AgentDirectory, AgentPool, AgentPorts};
use crate::cluster::Cluster;
use crate::error::WorldError;
use crate::limits::Limits;
use crate::log::SharedLog;
use crate::unrestored::Unrestored;
use crate::world::World;
use dramatis_scenario::ScenarioCatalog;

/// Settings of a world service.
#[derive(Debug, Clone)]
pub struct WorldServiceOptions {
    /// Directory of shipped scenarios.
    pub scenarios_dir: PathBuf,
    /// Other directories whose scenario files `CreateWorld` may read by path (the
    /// shipped directory always counts). A path outside all of them is refused
    /// without being looked at.
    pub scenario_roots: Vec<PathBuf>,
    /// The event-log file (the embedded backend), and the directory beside which inline
    /// sandbox specs are kept.
    pub log_path: PathBuf,
    /// A shared log to use instead of the file (`serve --log nats://…`).
    pub shared_log: Option<SharedLog>,
    /// This replica's part in a cluster of replicas over the shared log (leases and
    /// the other replicas); `None`: the only world service of its log.
    pub cluster: Option<Arc<Cluster>>,
    /// Where character agents are.
    pub agents: Arc<dyn AgentDirectory>,
    /// The narrator of open stories; without one, open scenes end at their turn limit
    /// and nothing is proposed.
    pub narrator: Option<Arc<dyn dramatis_llm::LanguageModel>>,
    /// The web viewer's files (`web/` of the repository, with its `node_modules`);
    /// `None`: no viewer is served.
    pub viewer_dir: Option<PathBuf>,
    /// Input limits and idle detach.
    pub limits: Limits,
    /// TLS for clients (`serve --tls-cert/--tls-key`).
    pub tls: Option<tonic::transport::ServerTlsConfig>,
    /// Bearer tokens clients must present; `None`: every caller is let in (a loopback
    /// service).
    pub tokens: Option<Arc<dramatis_runtime::auth::Tokens>>,
    /// How to reach `https://` agent endpoints: the deployment's CA and the world's
    /// client certificate.
    pub agent_tls: Option<tonic::transport::ClientTlsConfig>,
}

impl WorldServiceOptions {
    /// A service of one machine: scenarios from `scenarios_dir`, its log in the file
    /// `log_path`, characters at `agents`; no narrator, viewer, TLS or tokens, and the
    /// default limits. Set the other fields as needed.
    #[must_use]
    pub fn new(scenarios_dir: PathBuf, log_path: PathBuf, agents: Arc<dyn AgentDirectory>) -> Self {
        Self {
            scenarios_dir,
            scenario_roots: Vec::new(),
            log_path,
            shared_log: None,
            cluster: None,
            agents,
            narrator: None,
            viewer_dir: None,
            limits: Limits::default(),
            tls: None,
            tokens: None,
            agent_tls: None,
        }
    }
}

/// Where a new world's scenario comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ScenarioSource {
    Name(String),
    Path(PathBuf),
    /// An inline open story.
    Sandbox(Box<pb::SandboxSpec>),
}

/// All worlds of this service. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Worlds {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    worlds: DashMap<String, Arc<World>>,
    /// Worlds of the log that a restart could not rebuild (one replica of its log).
    unrestored: DashMap<String, Arc<Unrestored>>,
    catalog: ScenarioCatalog,
    log: SharedLog,
    agents: Arc<dyn AgentDirectory>,
    pool: Arc<dyn AgentPorts>,
    narrator: Option<Arc<dyn dramatis_llm::LanguageModel>>,
    /// Where inline sandbox specs are kept (beside the log).
    sandboxes: PathBuf,
    /// Directories `CreateWorld` may read scenario files from, canonical.
    roots: Vec<PathBuf>,
    viewer_dir: Option<PathBuf>,
    limits: Arc<Limits>,
    security: dramatis_runtime::grpc::Security,
    cluster: Option<Arc<Cluster>>,
    /// Ids of worlds being created: they count against `--max-worlds`, and a second
    /// creation of one waits for nothing (it is refused as existing).
    creating: std::sync::Mutex<std::collections::BTreeSet<String>>,
    /// The service's own tasks: each call's work, lease renewal, the idle sweep.
    /// Shutdown waits for them ([`Worlds::finish`]).
    tasks: TaskTracker,
}

/// A world id held while its world is created; let go when dropped.
struct Creating<'a> {
    inner: &'a Inner,
    id: String,
}

impl Drop for Creating<'_> {
    fn drop(&mut self) {
        dramatis_runtime::lock(&self.inner.creating).remove(&self.id);
    }
}

impl Worlds {
    /// The service's limits.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Opens the log; worlds recorded in it are rebuilt by [`Worlds::restore`].
    pub fn open(options: &WorldServiceOptions) -> Result<Self, WorldError> {
        Ok(Self {
            inner: Arc::new(Inner {
                worlds: DashMap::new(),
                unrestored: DashMap::new(),
                catalog: ScenarioCatalog::new(&options.scenarios_dir),
                log: match &options.shared_log {
                    Some(log) => Arc::clone(log),
                    None => Arc::new(crate::log::RedbLog::open(&options.log_path)?),
                },
                agents: Arc::clone(&options.agents),
                pool: Arc::new(AgentPool::new(options.agent_tls.clone())),
                narrator: options.narrator.clone(),
                sandboxes: options
                    .log_path
                    .parent()
                    .map_or_else(|| PathBuf::from("sandboxes"), |d| d.join("sandboxes")),
                viewer_dir: options.viewer_dir.clone(),
                limits: Arc::new(options.limits.clone()),
                security: crate::policy::security(options.tls.clone(), options.tokens.as_ref()),
                cluster: options.cluster.clone(),
                creating: std::sync::Mutex::default(),
                tasks: TaskTracker::new(),
                roots: std::iter::once(&options.scenarios_dir)
                    .chain(&options.scenario_roots)
                    .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| paths::lexical(d)))
                    .collect(),
            }),
        })
    }

    /// The service's own tasks: spawn onto it what shutdown must wait for.
    pub(crate) fn tasks(&self) -> &TaskTracker {
        &self.inner.tasks
    }

    /// Stops taking tasks and waits, for at most `bound`, for those still running (a
    /// call's work goes on to its end even when its caller has gone). Returns how many
    /// were still running when the bound passed.
    pub async fn finish(&self, bound: std::time::Duration) -> usize {
        dramatis_runtime::shutdown::finish(&self.inner.tasks, bound).await
    }

    /// How clients reach this service (TLS) and who may call it.
    #[must_use]
    pub fn security(&self) -> &dramatis_runtime::grpc::Security {
        &self.inner.security
    }

    /// Where the web viewer's files are, if it is served.
    #[must_use]
    pub fn viewer_dir(&self) -> Option<&std::path::Path> {
        self.inner.viewer_dir.as_deref()
    }

    #[must_use]
    pub fn catalog(&self) -> &ScenarioCatalog {
        &self.inner.catalog
    }

    /// The cluster this replica belongs to, if any.
    #[must_use]
    pub fn cluster(&self) -> Option<&Arc<Cluster>> {
        self.inner.cluster.as_ref()
    }

    /// The shared log.
    #[must_use]
    pub fn log(&self) -> &SharedLog {
        &self.inner.log
    }

    /// The world with this id.
    pub fn get(&self, world_id: &str) -> Result<Arc<World>, WorldError> {
        self.inner
            .worlds
            .get(world_id)
            .map(|w| Arc::clone(w.value()))
            .ok_or_else(|| WorldError::WorldNotFound(world_id.to_owned()))
    }

    /// Every world, ordered by id.
    #[must_use]
    pub fn list(&self) -> Vec<Arc<World>> {
        let mut worlds: Vec<_> = self
            .inner
            .worlds
            .iter()
            .map(|w| Arc::clone(w.value()))
            .collect();
        worlds.sort_by(|a, b| a.id().cmp(b.id()));
        worlds
    }

    /// Stops a world, removes its log, then frees its agents. The log goes first: once
    /// the world is gone from this service it is gone from its log too, so a restart
    /// (even one that cut this deletion short) never brings it back; a deletion cut
    /// short before that leaves the world whole, to be deleted again.
    pub async fn delete(&self, world_id: &str) -> Result<(), WorldError> {
        let Some(world) = self
            .inner
            .worlds
            .get(world_id)
            .map(|w| Arc::clone(w.value()))
        else {
            return self.delete_unrestored(world_id).await;
        };
        world.stop().await;
        self.inner.log.delete_world(world_id).await?;
        self.forget_sandbox(world_id);
        if self.inner.worlds.remove(world_id).is_none() {
            // Another deletion of it got here first and does the rest.
            return Ok(());
        }
        self.count_worlds();
        world.shut().await;
        self.inner.agents.release(world_id).await;
        self.give_up_lease(world_id).await;
        tracing::info!(world_id, "world deleted");
        Ok(())
    }
}

impl Worlds {
    /// Publishes how many worlds this service holds.
    fn count_worlds(&self) {
        crate::metrics::WORLDS.set(i64::try_from(self.inner.worlds.len()).unwrap_or(i64::MAX));
    }

    /// Removes the scenario file kept for an inline sandbox spec of `world_id`, if any:
    /// a world deleted or never made leaves none behind.
    fn forget_sandbox(&self, world_id: &str) {
        let file = self.inner.sandboxes.join(format!("{world_id}.toml"));
        if let Err(error) = std::fs::remove_file(&file)
            && error.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(world_id, %error, "cannot remove the sandbox's scenario file");
        }
    }
}
