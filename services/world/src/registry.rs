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
use crate::cluster::{Cluster, Holder, Place};
use crate::log::{SharedLog, WorldRecord};
use crate::unrestored::{RETRY_EVERY, Unrestored};
use crate::world::{Shared, World};
use dramatis_scenario::{Scenario, ScenarioCatalog};

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
    pool: AgentPool,
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
                cluster: options.cluster.clone(),
                creating: std::sync::Mutex::default(),
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
    /// agent re-attached and sent again only what its character perceived. In a
    /// cluster nothing is rebuilt here: a world is taken over by the first replica a
    /// call for it reaches once its owner's lease has run out.
    pub async fn restore(&self) -> Result<usize, WorldError> {
        if self.inner.cluster.is_some() {
            return Ok(0);
        }
        let mut restored = 0;
        for record in self.inner.log.worlds().await? {
            match self.revive(&record).await {
                Ok(world) => {
                    self.inner.worlds.insert(record.world_id, world);
                    self.count_worlds();
                    restored += 1;
                }
                Err(error) => {
                    tracing::error!(world_id = %record.world_id, %error,
                        "cannot restore world; it is shown as failed until rebuilt or deleted");
                    self.inner.agents.release(&record.world_id).await;
                    let info = self.what_is_known(&record).await;
                    self.inner.unrestored.insert(
                        record.world_id.clone(),
                        Arc::new(Unrestored::new(record, info, &error)),
                    );
                }
            }
        }
        Ok(restored)
    }

    /// What can be read of a recorded world that could not be rebuilt: its scenario and
    /// where its log left the story, as far as each reads.
    async fn what_is_known(&self, record: &WorldRecord) -> pb::WorldInfo {
        let (Ok(scenario), Ok(history)) = (
            self.recorded_scenario(record).await,
            self.inner.log.read(&record.world_id, 1).await,
        ) else {
            return pb::WorldInfo::default();
        };
        let mut state = dramatis_story::state::WorldState::initial(&scenario);
        for event in &history {
            state.apply(&scenario, event);
        }
        let next_seq = history.last().map_or(1, |e| e.seq + 1);
        crate::convert::world_info(
            &record.world_id,
            &scenario,
            &state,
            pb::WorldStatus::Failed,
            next_seq,
        )
    }

    /// A world a restart could not rebuild, tried again unless it was tried within
    /// [`RETRY_EVERY`] (or is being tried or deleted right now): the world once it is
    /// rebuilt, `None` when `world_id` is no such world, and the reason it still cannot
    /// be rebuilt otherwise.
    async fn retry_unrestored(&self, world_id: &str) -> Result<Option<Arc<World>>, WorldError> {
        let Some(failed) = self.unrestored_entry(world_id) else {
            return Ok(None);
        };
        let Ok(mut tried) = failed.tried.try_lock() else {
            return Err(failed.error());
        };
        if !self.inner.unrestored.contains_key(world_id) {
            // Deleted while this call looked it up.
            return Err(WorldError::WorldNotFound(world_id.to_owned()));
        }
        if tried.elapsed() < RETRY_EVERY {
            return Err(failed.error());
        }
        let revived = self.revive(&failed.record).await;
        *tried = std::time::Instant::now();
        match revived {
            Ok(world) => {
                // Into the table before out of this one: a deletion waiting on `tried`
                // then finds it there.
                self.inner
                    .worlds
                    .insert(world_id.to_owned(), Arc::clone(&world));
                self.inner.unrestored.remove(world_id);
                self.count_worlds();
                tracing::info!(world_id, "a world that could not be restored is rebuilt");
                Ok(Some(world))
            }
            Err(error) => {
                tracing::warn!(world_id, %error, "the world still cannot be rebuilt");
                self.inner.agents.release(world_id).await;
                failed.failed_again(&error);
                Err(failed.error())
            }
        }
    }

    /// The entry of `world_id` if a restart could not rebuild it.
    fn unrestored_entry(&self, world_id: &str) -> Option<Arc<Unrestored>> {
        self.inner
            .unrestored
            .get(world_id)
            .map(|f| Arc::clone(f.value()))
    }

    /// Worlds a restart could not rebuild, as clients see them.
    #[must_use]
    pub fn unrestored(&self) -> Vec<pb::WorldInfo> {
        self.inner.unrestored.iter().map(|f| f.info()).collect()
    }

    /// `world_id` as clients see it, if it is a world a restart could not rebuild.
    #[must_use]
    pub fn unrestored_info(&self, world_id: &str) -> Option<pb::WorldInfo> {
        self.unrestored_entry(world_id).map(|f| f.info())
    }

    /// Deletes a world a restart could not rebuild: its log and kept spec, then its
    /// characters' shards, each removed by the agent that would host it (attached or
    /// not). The characters are its scenario's, or, with the scenario unreadable, every
    /// one its log shows acting or perceiving.
    async fn delete_unrestored(&self, world_id: &str) -> Result<(), WorldError> {
        let Some(failed) = self.unrestored_entry(world_id) else {
            return Err(WorldError::WorldNotFound(world_id.to_owned()));
        };
        let tried = failed.tried.lock().await;
        if !self.inner.unrestored.contains_key(world_id) {
            drop(tried);
            // Rebuilt meanwhile (or deleted by another call).
            return if self.inner.worlds.contains_key(world_id) {
                Box::pin(self.delete(world_id)).await
            } else {
                Err(WorldError::WorldNotFound(world_id.to_owned()))
            };
        }
        let characters: Vec<String> = match self.recorded_scenario(&failed.record).await {
            Ok(scenario) => scenario.characters.iter().map(|c| c.id.clone()).collect(),
            Err(_) => {
                let history = self.inner.log.read(world_id, 1).await?;
                let mut seen = std::collections::BTreeSet::new();
                for event in history {
                    seen.extend(event.perceivers);
                    seen.insert(event.speaker);
                }
                seen.remove("");
                seen.into_iter().collect()
            }
        };
        self.inner.log.delete_world(world_id).await?;
        self.forget_sandbox(world_id);
        self.inner.unrestored.remove(world_id);
        for character in characters {
            let request = pb::DetachRequest {
                character: Some(pb::CharacterRef {
                    world_id: world_id.to_owned(),
                    character_id: character.clone(),
                }),
                keep_shard: false,
            };
            let removed = async {
                let endpoint = self.inner.agents.endpoint_for(world_id, &character).await?;
                let mut client = self.inner.pool.client(&endpoint, &character)?;
                client
                    .detach(request)
                    .await
                    .map_err(|s| WorldError::agent(&character, &s))
            };
            if let Err(error) = removed.await {
                tracing::warn!(world_id, character, %error, "cannot remove the shard");
            }
        }
        self.inner.agents.release(world_id).await;
        tracing::info!(world_id, "a world that could not be restored is deleted");
        Ok(())
    }

    /// A recorded world rebuilt from its log.
    async fn revive(&self, record: &WorldRecord) -> Result<Arc<World>, WorldError> {
        let scenario = self.recorded_scenario(record).await?;
        let history = self.inner.log.read(&record.world_id, 1).await?;
        let world = self
            .start(record.world_id.clone(), scenario, history)
            .await?;
        // A shard that ends early (rebuilt after its store was found corrupt) gets its
        // story now, not at the next line; if that fails, the next line retries first.
        if let Err(error) = world.catch_up().await {
            tracing::warn!(world_id = %record.world_id, %error,
                "a character's shard is behind the log; it is sent the rest before the next line");
        }
        Ok(Arc::new(world))
    }

    /// The scenario a recorded world was created from. An inline spec travels in the
    /// record (any replica can rebuild it) and is kept as a file here too.
    async fn recorded_scenario(&self, record: &WorldRecord) -> Result<Arc<Scenario>, WorldError> {
        let path = match &record.sandbox_toml {
            Some(text) => {
                let file = self
                    .inner
                    .sandboxes
                    .join(format!("{}.toml", record.world_id));
                std::fs::create_dir_all(&self.inner.sandboxes)
                    .and_then(|()| std::fs::write(&file, text))
                    .map_err(|e| {
                        WorldError::Log(format!("cannot keep sandbox {}: {e}", file.display()))
                    })?;
                file
            }
            None => PathBuf::from(&record.scenario_path),
        };
        Ok(Arc::new(
            read_off_runtime(move || Ok(Scenario::load(&path)?)).await?,
        ))
    }

    /// The scenario of a world recorded in the log, wherever it is served (for a
    /// watcher served from the log).
    pub async fn scenario_of(&self, world_id: &str) -> Result<Arc<Scenario>, WorldError> {
        if let Some(world) = self.local(world_id) {
            return Ok(world.scenario_arc());
        }
        let record = self
            .inner
            .log
            .world(world_id)
            .await?
            .ok_or_else(|| WorldError::WorldNotFound(world_id.to_owned()))?;
        self.recorded_scenario(&record).await
    }

    /// Where `world_id` is served: here, or at its owner. In a cluster, a world whose
    /// owner's lease has run out (or that nobody holds) is taken over: its lease taken
    /// and the world rebuilt from its log. A call another replica `forwarded` is never
    /// sent on: if the world moved meanwhile, the caller is told to try again.
    pub async fn place(&self, world_id: &str, forwarded: bool) -> Result<Place, WorldError> {
        if let Some(world) = self.local(world_id) {
            return Ok(Place::Here(world));
        }
        if let Some(world) = self.retry_unrestored(world_id).await? {
            return Ok(Place::Here(world));
        }
        let Some(cluster) = &self.inner.cluster else {
            return Err(WorldError::WorldNotFound(world_id.to_owned()));
        };
        // The common case, a world another replica owns, without waiting on a take-over
        // under way here.
        if !forwarded
            && let Holder::Other { endpoint, .. } = cluster.leases.holder(world_id).await?
        {
            return Ok(Place::Owner(endpoint));
        }
        let _taking = cluster.taking.lock().await;
        if let Some(world) = self.local(world_id) {
            return Ok(Place::Here(world));
        }
        loop {
            let revision = match cluster.leases.holder(world_id).await? {
                Holder::Other { endpoint, .. } if !forwarded => return Ok(Place::Owner(endpoint)),
                Holder::Other { .. } => {
                    return Err(WorldError::Moved(world_id.to_owned()));
                }
                Holder::Me { revision } => Some(revision),
                Holder::Free { revision } => revision,
            };
            let Some(record) = self.inner.log.world(world_id).await? else {
                return Err(WorldError::WorldNotFound(world_id.to_owned()));
            };
            let Some(revision) = cluster.leases.take(world_id, revision).await? else {
                continue; // another replica took it first: ask again who
            };
            cluster.owned.insert(world_id.to_owned(), revision);
            let started = std::time::Instant::now();
            match self.revive(&record).await {
                Ok(world) => {
                    self.inner
                        .worlds
                        .insert(world_id.to_owned(), Arc::clone(&world));
                    crate::metrics::LEASE_CHANGES
                        .with_label_values(&["taken"])
                        .inc();
                    self.count_worlds();
                    tracing::info!(
                        world_id,
                        ms = started.elapsed().as_millis(),
                        "world taken over"
                    );
                    return Ok(Place::Here(world));
                }
                Err(error) => {
                    cluster.owned.remove(world_id);
                    let _ = cluster.leases.release(world_id).await;
                    return Err(error);
                }
            }
        }
    }

    /// The world if this replica serves it (and still owns it).
    fn local(&self, world_id: &str) -> Option<Arc<World>> {
        let world = self
            .inner
            .worlds
            .get(world_id)
            .map(|w| Arc::clone(w.value()))?;
        if world.is_abandoned() {
            self.inner.worlds.remove(world_id);
            self.count_worlds();
            return None;
        }
        Some(world)
    }

    /// After the owner at `endpoint` did not answer: waits (at most one lease) for its
    /// lease on `world_id` to run out, unless the owner is alive after all.
    pub async fn wait_out_owner(&self, world_id: &str, endpoint: &str) {
        let Some(cluster) = &self.inner.cluster else {
            return;
        };
        if cluster.peers.alive(endpoint).await {
            return;
        }
        cluster.peers.forget(endpoint);
        let deadline = tokio::time::Instant::now() + cluster.leases.ttl();
        while tokio::time::Instant::now() < deadline {
            match cluster.leases.holder(world_id).await {
                Ok(Holder::Other {
                    endpoint: now,
                    expires_ms,
                }) if now == endpoint => {
                    let left = u64::try_from(expires_ms - dramatis_runtime::now_ms()).unwrap_or(0);
                    tokio::time::sleep(std::time::Duration::from_millis(left.clamp(10, 200))).await;
                }
                _ => return,
            }
        }
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

    /// Renews this replica's leases every third of a lease until `shutdown`; a world
    /// whose lease another replica took (this one was paused or cut off) is given up.
    pub fn renew_leases(&self, shutdown: dramatis_runtime::Shutdown) {
        let Some(cluster) = self.inner.cluster.clone() else {
            return;
        };
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(cluster.renew_every());
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = shutdown.wait() => break,
                }
                let Some(inner) = inner.upgrade() else { break };
                let owned: Vec<(String, u64)> = cluster
                    .owned
                    .iter()
                    .map(|e| (e.key().clone(), *e.value()))
                    .collect();
                for (world_id, revision) in owned {
                    match cluster.leases.take(&world_id, Some(revision)).await {
                        Ok(Some(next)) => {
                            cluster.owned.insert(world_id, next);
                        }
                        Ok(None) => {
                            tracing::warn!(%world_id, "lease taken by another replica; giving the world up");
                            cluster.owned.remove(&world_id);
                            crate::metrics::LEASE_CHANGES
                                .with_label_values(&["lost"])
                                .inc();
                            if let Some((_, world)) = inner.worlds.remove(&world_id) {
                                world.abandon();
                            }
                            crate::metrics::WORLDS
                                .set(i64::try_from(inner.worlds.len()).unwrap_or(i64::MAX));
                        }
                        Err(error) => {
                            tracing::warn!(%world_id, %error, "cannot renew the lease");
                        }
                    }
                }
            }
        });
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
                let asked = path.clone();
                let path = self.confined(path)?;
                // Errors name the file as the client gave it, not as it resolved.
                read_off_runtime(move || Ok(Scenario::load(&path).map_err(|e| e.shown_as(asked))?))
                    .await?
            }
            ScenarioSource::Sandbox(spec) => {
                self.inner.limits.check_spec(spec)?;
                // Validation is linear, but a megabyte of spec is still work: not on a
                // thread that serves every other call.
                let spec = spec.clone();
                read_off_runtime(move || Ok(dramatis_scenario::sandbox::parse_spec(&spec)?)).await?
            }
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
        // The id and a place under the limit are held from here until the world is in
        // the table (or its creation failed): of concurrent creations, only as many as
        // the limit allows go on, and only one per id.
        let _creating = {
            let mut creating = dramatis_runtime::lock(&self.inner.creating);
            if self.inner.worlds.contains_key(&id) || creating.contains(&id) {
                return Err(WorldError::WorldExists(id));
            }
            if self.inner.worlds.len() + self.inner.unrestored.len() + creating.len()
                >= limits.max_worlds
            {
                return Err(WorldError::Full(format!(
                    "this service holds {} worlds, its limit (serve --max-worlds); delete one \
                     first",
                    limits.max_worlds
                )));
            }
            creating.insert(id.clone());
            Creating {
                inner: &self.inner,
                id: id.clone(),
            }
        };
        if self.inner.log.world(&id).await?.is_some() {
            return Err(WorldError::WorldExists(id));
        }
        // An inline spec is kept as a scenario file beside the log, so the world can be
        // restored after a restart like any other.
        let mut scenario = scenario;
        if let ScenarioSource::Sandbox(spec) = &source {
            let file = self.inner.sandboxes.join(format!("{id}.toml"));
            std::fs::create_dir_all(&self.inner.sandboxes)
                .and_then(|()| {
                    std::fs::write(&file, dramatis_scenario::sandbox::spec_to_toml(spec))
                })
                .map_err(|e| {
                    WorldError::Log(format!("cannot keep sandbox {}: {e}", file.display()))
                })?;
            scenario.source = file;
        }
        let source_path =
            std::fs::canonicalize(&scenario.source).unwrap_or_else(|_| scenario.source.clone());
        // In a cluster the new world's lease comes first: of two replicas creating the
        // same id, one wins it.
        if let Some(cluster) = &self.inner.cluster {
            let revision = match cluster.leases.holder(&id).await? {
                Holder::Other { .. } => None,
                Holder::Me { revision } => cluster.leases.take(&id, Some(revision)).await?,
                Holder::Free { revision } => cluster.leases.take(&id, revision).await?,
            };
            let Some(revision) = revision else {
                return Err(WorldError::WorldExists(id));
            };
            cluster.owned.insert(id.clone(), revision);
            crate::metrics::LEASE_CHANGES
                .with_label_values(&["taken"])
                .inc();
        }
        let world = match self.start(id.clone(), Arc::new(scenario), Vec::new()).await {
            Ok(world) => Arc::new(world),
            Err(error) => {
                self.inner.agents.release(&id).await;
                self.give_up_lease(&id).await;
                self.forget_sandbox(&id);
                return Err(error);
            }
        };
        match self.inner.worlds.entry(id.clone()) {
            dashmap::Entry::Occupied(_) => return Err(WorldError::WorldExists(id)),
            dashmap::Entry::Vacant(slot) => {
                slot.insert(Arc::clone(&world));
            }
        }
        self.count_worlds();
        self.inner
            .log
            .put_world(WorldRecord {
                world_id: id.clone(),
                scenario_path: source_path.to_string_lossy().into_owned(),
                created_ms: dramatis_runtime::now_ms(),
                sandbox_toml: match &source {
                    ScenarioSource::Sandbox(spec) => {
                        Some(dramatis_scenario::sandbox::spec_to_toml(spec))
                    }
                    _ => None,
                },
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

    /// Releases this replica's lease on `world_id`, if it is in a cluster.
    async fn give_up_lease(&self, world_id: &str) {
        if let Some(cluster) = &self.inner.cluster {
            cluster.owned.remove(world_id);
            crate::metrics::LEASE_CHANGES
                .with_label_values(&["released"])
                .inc();
            if let Err(error) = cluster.leases.release(world_id).await {
                tracing::warn!(world_id, %error, "cannot release the lease");
            }
        }
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
