//! The registry of worlds in one world service: create (from a shipped scenario or a
//! path), look up, list, delete, and rebuild from the event log after a restart.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use dashmap::DashMap;
use dramatis_proto::v1 as pb;

use crate::Limits;
use crate::WorldError;
use crate::agent_clients::{AgentDirectory, AgentLinks, AgentPool};
use crate::log::{SharedLog, WorldRecord};
use crate::scenario::{Scenario, ScenarioCatalog};
use crate::world::{Shared, World};

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
    catalog: ScenarioCatalog,
    log: SharedLog,
    agents: Arc<dyn AgentDirectory>,
    pool: AgentPool,
    narrator: Option<Arc<dyn dramatis_llm::LanguageModel>>,
    /// Where inline sandbox specs are kept (beside the log).
    sandboxes: PathBuf,
    /// Directories `CreateWorld` may read scenario files from, canonical.
    roots: Vec<PathBuf>,
    viewer_dir: Option<PathBuf>,
    limits: Arc<Limits>,
    security: dramatis_runtime::grpc::Security,
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
                catalog: ScenarioCatalog::new(&options.scenarios_dir),
                log: match &options.shared_log {
                    Some(log) => Arc::clone(log),
                    None => Arc::new(crate::log::RedbLog::open(&options.log_path)?),
                },
                agents: Arc::clone(&options.agents),
                pool: AgentPool::new(options.agent_tls.clone()),
                narrator: options.narrator.clone(),
                sandboxes: options
                    .log_path
                    .parent()
                    .map_or_else(|| PathBuf::from("sandboxes"), |d| d.join("sandboxes")),
                viewer_dir: options.viewer_dir.clone(),
                limits: Arc::new(options.limits.clone()),
                security: dramatis_runtime::grpc::Security {
                    tls: options.tls.clone(),
                    access: options.tokens.as_ref().map_or(
                        dramatis_runtime::auth::Access::Open,
                        |tokens| dramatis_runtime::auth::Access::Tokens {
                            tokens: Arc::clone(tokens),
                            roles: crate::grpc::required_role,
                        },
                    ),
                },
                roots: std::iter::once(&options.scenarios_dir)
                    .chain(&options.scenario_roots)
                    .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| lexical(d)))
                    .collect(),
            }),
        })
    }

    /// The file a client's `scenario_path` names, if it lies inside one of the scenario
    /// directories. A path outside them is refused before the filesystem is touched, so
    /// the answer says nothing about what exists there; a symlink out is refused too.
    fn confined(&self, path: &Path) -> Result<PathBuf, WorldError> {
        let shown: String = path.to_string_lossy().chars().take(80).collect();
        let inside = |p: &Path| self.inner.roots.iter().any(|r| p.starts_with(r));
        let denied = || {
            WorldError::PathNotAllowed(format!(
                "scenario_path {shown:?} is outside the scenario directories this service reads \
                 (serve --scenarios-dir, --scenario-root); send a shipped name or an inline spec"
            ))
        };
        let absolute = lexical(path);
        if !inside(&absolute) {
            return Err(denied());
        }
        let canonical = std::fs::canonicalize(&absolute)
            .map_err(|_| WorldError::ScenarioFileNotFound(shown.clone()))?;
        if !inside(&canonical) {
            return Err(denied());
        }
        Ok(canonical)
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

    /// Rebuilds every world recorded in the log: state from its events, and each
    /// agent re-attached and sent again only what its character perceived.
    pub async fn restore(&self) -> Result<usize, WorldError> {
        let mut restored = 0;
        for record in self.inner.log.worlds().await? {
            let scenario = match Scenario::load(&PathBuf::from(&record.scenario_path)) {
                Ok(s) => Arc::new(s),
                Err(error) => {
                    tracing::warn!(world_id = %record.world_id, %error, "cannot restore world");
                    continue;
                }
            };
            let history = self.inner.log.read(&record.world_id, 1).await?;
            let world = self
                .start(record.world_id.clone(), scenario, history)
                .await?;
            self.inner.worlds.insert(record.world_id, Arc::new(world));
            restored += 1;
        }
        Ok(restored)
    }

    async fn start(
        &self,
        id: String,
        scenario: Arc<Scenario>,
        history: Vec<pb::Event>,
    ) -> Result<World, WorldError> {
        let mut endpoints = BTreeMap::new();
        for character in &scenario.characters {
            let endpoint = self.inner.agents.endpoint_for(&id, &character.id).await?;
            endpoints.insert(character.id.clone(), endpoint);
        }
        let links = AgentLinks {
            directory: Arc::clone(&self.inner.agents),
            pool: self.inner.pool.clone(),
        };
        let shared = Shared {
            log: Arc::clone(&self.inner.log),
            links,
            narrator: self.inner.narrator.clone(),
            limits: Arc::clone(&self.inner.limits),
        };
        World::start(id, scenario, endpoints, history, shared).await
    }

    /// Creates and starts a world.
    pub async fn create(
        &self,
        source: ScenarioSource,
        world_id: Option<String>,
    ) -> Result<Arc<World>, WorldError> {
        let scenario = match &source {
            ScenarioSource::Name(name) => {
                let (inner, key) = (Arc::clone(&self.inner), name.clone());
                read_off_runtime(move || {
                    inner
                        .catalog
                        .load(&key)
                        .ok_or_else(|| WorldError::ScenarioNotFound(key.clone()))?
                        .map_err(WorldError::from)
                })
                .await?
            }
            ScenarioSource::Path(path) => {
                let path = self.confined(path)?;
                read_off_runtime(move || Ok(Scenario::load(&path)?)).await?
            }
            ScenarioSource::Sandbox(spec) => crate::scenario::sandbox::parse_spec(spec)?,
        };
        let limits = &self.inner.limits;
        if let Some(open) = &scenario.open {
            Limits::check_count(
                "open.rounds",
                u64::from(open.rounds),
                u64::from(limits.max_rounds),
                "--max-rounds",
            )?;
        }
        let id = match world_id.filter(|w| !w.trim().is_empty()) {
            Some(id) => {
                Limits::check_chars("world_id", &id, limits.max_world_id_chars)?;
                if !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    return Err(WorldError::InvalidArgument(format!(
                        "world_id {} may hold only letters, digits, '-' and '_'",
                        crate::limits::quote(&id)
                    )));
                }
                id
            }
            None => uuid::Uuid::new_v4().to_string(),
        };
        if self.inner.worlds.contains_key(&id) {
            return Err(WorldError::WorldExists(id));
        }
        if self.inner.worlds.len() >= limits.max_worlds {
            return Err(WorldError::Full(format!(
                "this service holds {} worlds, its limit (serve --max-worlds); delete one first",
                limits.max_worlds
            )));
        }
        // An inline spec is kept as a scenario file beside the log, so the world can be
        // restored after a restart like any other.
        let mut scenario = scenario;
        if let ScenarioSource::Sandbox(spec) = &source {
            let file = self.inner.sandboxes.join(format!("{id}.toml"));
            std::fs::create_dir_all(&self.inner.sandboxes)
                .and_then(|()| std::fs::write(&file, crate::scenario::sandbox::spec_to_toml(spec)))
                .map_err(|e| {
                    WorldError::Log(format!("cannot keep sandbox {}: {e}", file.display()))
                })?;
            scenario.source = file;
        }
        let source_path =
            std::fs::canonicalize(&scenario.source).unwrap_or_else(|_| scenario.source.clone());
        let world = match self.start(id.clone(), Arc::new(scenario), Vec::new()).await {
            Ok(world) => Arc::new(world),
            Err(error) => {
                self.inner.agents.release(&id).await;
                return Err(error);
            }
        };
        match self.inner.worlds.entry(id.clone()) {
            dashmap::Entry::Occupied(_) => return Err(WorldError::WorldExists(id)),
            dashmap::Entry::Vacant(slot) => {
                slot.insert(Arc::clone(&world));
            }
        }
        self.inner
            .log
            .put_world(WorldRecord {
                world_id: id.clone(),
                scenario_path: source_path.to_string_lossy().into_owned(),
                created_ms: dramatis_runtime::now_ms(),
            })
            .await?;
        tracing::info!(world_id = %id, scenario = %world.scenario().name, "world created");
        Ok(world)
    }

    /// Every `idle / 4` (at most a minute), puts finished worlds that have been idle
    /// for `idle` to sleep ([`World::sleep_if_idle`]), until `shutdown`.
    pub fn watch_idle(&self, idle: std::time::Duration, shutdown: dramatis_runtime::Shutdown) {
        // Weak, so a stopped service's log closes without waiting for this task.
        let inner = Arc::downgrade(&self.inner);
        let every = (idle / 4).clamp(
            std::time::Duration::from_millis(100),
            std::time::Duration::from_secs(60),
        );
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = shutdown.wait() => break,
                }
                let Some(inner) = inner.upgrade() else {
                    break;
                };
                for world in (Self { inner }).list() {
                    world.sleep_if_idle(idle).await;
                }
            }
        });
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

    /// Stops a world, frees its agents and removes its log.
    pub async fn delete(&self, world_id: &str) -> Result<(), WorldError> {
        let (_, world) = self
            .inner
            .worlds
            .remove(world_id)
            .ok_or_else(|| WorldError::WorldNotFound(world_id.to_owned()))?;
        world.shut().await;
        self.inner.agents.release(world_id).await;
        self.inner.log.delete_world(world_id).await?;
        tracing::info!(world_id, "world deleted");
        Ok(())
    }
}

/// `path` made absolute (against the current directory) with `.` and `..` resolved by
/// name alone, without reading the filesystem.
fn lexical(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Runs a blocking file read on tokio's blocking pool, so a slow disk never holds up
/// the other RPCs.
async fn read_off_runtime<T: Send + 'static>(
    read: impl FnOnce() -> Result<T, WorldError> + Send + 'static,
) -> Result<T, WorldError> {
    tokio::task::spawn_blocking(read)
        .await
        .map_err(|e| WorldError::Log(format!("scenario read failed: {e}")))?
}
