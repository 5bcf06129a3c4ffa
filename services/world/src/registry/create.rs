//! Creating a world: its scenario read (a shipped name, a confined path or an inline
//! spec), its id checked and held under the limit, its lease taken in a cluster, its
//! agents attached, and its record written to the log.

use std::collections::BTreeMap;
use std::sync::Arc;

use dramatis_proto::v1 as pb;
use dramatis_scenario::Scenario;

use super::paths::read_off_runtime;
use super::{Creating, ScenarioSource, Worlds};
use crate::agent_clients::AgentLinks;
use crate::cluster::Holder;
use crate::error::WorldError;
use crate::limits::Limits;
use crate::log::WorldRecord;
use crate::world::{Replay, Shared, World};

impl Worlds {
    pub(super) async fn start(
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
            pool: Arc::clone(&self.inner.pool),
        };
        let shared = Shared {
            log: Arc::clone(&self.inner.log),
            links,
            narrator: self.inner.narrator.clone(),
            limits: Arc::clone(&self.inner.limits),
        };
        World::start(id, scenario, endpoints, history, shared).await
    }

    /// Creates and starts a world; with `replay` (a logged run of the same script), one
    /// whose turns are played from that log (see [`Replay`]).
    pub async fn create(
        &self,
        source: ScenarioSource,
        world_id: Option<String>,
        replay: Vec<pb::Event>,
    ) -> Result<Arc<World>, WorldError> {
        let mut scenario = self.read_scenario(&source).await?;
        let replay = Replay::new(&scenario, replay)?;
        let limits = &self.inner.limits;
        if let Some(open) = &scenario.open {
            Limits::check_count(
                "open.rounds",
                u64::from(open.rounds),
                u64::from(limits.max_rounds),
                "--max-rounds",
            )?;
        }
        let id = checked_id(world_id, limits)?;
        // The id and a place under the limit are held from here until the world is in
        // the table (or its creation failed): of concurrent creations, only as many as
        // the limit allows go on, and only one per id.
        let _creating = self.hold(&id)?;
        if self.inner.log.world(&id).await?.is_some() {
            return Err(WorldError::WorldExists(id));
        }
        if let ScenarioSource::Sandbox(spec) = &source {
            scenario.source = self.keep_sandbox(&id, spec)?;
        }
        let source_path =
            std::fs::canonicalize(&scenario.source).unwrap_or_else(|_| scenario.source.clone());
        let record = WorldRecord {
            world_id: id.clone(),
            scenario_path: source_path.to_string_lossy().into_owned(),
            created_ms: dramatis_runtime::now_ms(),
            sandbox_toml: match &source {
                ScenarioSource::Sandbox(spec) => {
                    Some(dramatis_scenario::sandbox::spec_to_toml(spec))
                }
                _ => None,
            },
            forked_from: None,
            newcomers: Vec::new(),
        };
        self.launch(Arc::new(scenario), Vec::new(), record, replay)
            .await
    }

    /// Starts the world `record` names over `history` (its first events, logged here
    /// first), puts it in the table and writes its record, its characters' shards
    /// brought up to date with `history` first. On a failure, frees what it took: its
    /// lease, its characters, its kept sandbox file and its logged events.
    pub(super) async fn launch(
        &self,
        scenario: Arc<Scenario>,
        history: Vec<pb::Event>,
        record: WorldRecord,
        replay: Option<Replay>,
    ) -> Result<Arc<World>, WorldError> {
        let id = record.world_id.clone();
        self.take_new_lease(&id).await?;
        let logged = !history.is_empty();
        let started = async {
            if logged {
                self.inner.log.append(&id, 0, history.clone()).await?;
            }
            let world = Arc::new(
                self.start(id.clone(), scenario, history)
                    .await?
                    .replaying(replay)
                    .forked_from(record.forked_from.clone()),
            );
            if let Err(error) = world.catch_up().await {
                world.stop().await;
                world.shut().await;
                return Err(error);
            }
            Ok(world)
        }
        .await;
        let world = match started {
            Ok(world) => world,
            Err(error) => {
                self.inner.agents.release(&id).await;
                self.give_up_lease(&id).await;
                self.forget_sandbox(&id);
                if logged && let Err(undo) = self.inner.log.delete_world(&id).await {
                    tracing::warn!(world_id = %id, %undo, "cannot remove a failed world's events");
                }
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
        self.inner.log.put_world(record).await?;
        tracing::info!(world_id = %id, scenario = %world.scenario().name, "world created");
        Ok(world)
    }

    /// The scenario a new world plays, read and validated off the async runtime.
    async fn read_scenario(&self, source: &ScenarioSource) -> Result<Scenario, WorldError> {
        match source {
            ScenarioSource::Name(name) => {
                let (inner, key) = (Arc::clone(&self.inner), name.clone());
                read_off_runtime(move || {
                    inner
                        .catalog
                        .load(&key)
                        .ok_or_else(|| WorldError::ScenarioNotFound(key.clone()))?
                        .map_err(WorldError::from)
                })
                .await
            }
            ScenarioSource::Path(path) => {
                let asked = path.clone();
                let path = self.confined(path)?;
                // Errors name the file as the client gave it, not as it resolved.
                read_off_runtime(move || Ok(Scenario::load(&path).map_err(|e| e.shown_as(asked))?))
                    .await
            }
            ScenarioSource::Sandbox(spec) => {
                self.inner.limits.check_spec(spec)?;
                // Validation is linear, but a megabyte of spec is still work: not on a
                // thread that serves every other call.
                let spec = spec.clone();
                read_off_runtime(move || Ok(dramatis_scenario::sandbox::parse_spec(&spec)?)).await
            }
        }
    }

    /// Holds `id` and a place under `--max-worlds` until the guard is dropped.
    pub(super) fn hold(&self, id: &str) -> Result<Creating<'_>, WorldError> {
        let limits = &self.inner.limits;
        let mut creating = dramatis_runtime::lock(&self.inner.creating);
        if self.inner.worlds.contains_key(id) || creating.contains(id) {
            return Err(WorldError::WorldExists(id.to_owned()));
        }
        if self.inner.worlds.len() + self.inner.unrestored.len() + creating.len()
            >= limits.max_worlds
        {
            return Err(WorldError::Full(format!(
                "this service holds {} worlds, its limit (serve --max-worlds); delete one first",
                limits.max_worlds
            )));
        }
        creating.insert(id.to_owned());
        Ok(Creating {
            inner: &self.inner,
            id: id.to_owned(),
        })
    }

    /// Keeps an inline spec as a scenario file beside the log, so the world can be
    /// restored after a restart like any other; the file's path.
    fn keep_sandbox(
        &self,
        id: &str,
        spec: &pb::SandboxSpec,
    ) -> Result<std::path::PathBuf, WorldError> {
        self.keep_sandbox_toml(id, &dramatis_scenario::sandbox::spec_to_toml(spec))
    }

    /// Keeps a sandbox's scenario TOML as the file of world `id`; the file's path.
    pub(super) fn keep_sandbox_toml(
        &self,
        id: &str,
        toml: &str,
    ) -> Result<std::path::PathBuf, WorldError> {
        let file = self.inner.sandboxes.join(format!("{id}.toml"));
        std::fs::create_dir_all(&self.inner.sandboxes)
            .and_then(|()| std::fs::write(&file, toml))
            .map_err(|e| WorldError::Log(format!("cannot keep sandbox {}: {e}", file.display())))?;
        Ok(file)
    }

    /// In a cluster, the new world's lease comes first: of two replicas creating the
    /// same id, one wins it.
    async fn take_new_lease(&self, id: &str) -> Result<(), WorldError> {
        let Some(cluster) = &self.inner.cluster else {
            return Ok(());
        };
        let revision = match cluster.leases.holder(id).await? {
            Holder::Other { .. } => None,
            Holder::Me { revision } => cluster.leases.take(id, Some(revision)).await?,
            Holder::Free { revision } => cluster.leases.take(id, revision).await?,
        };
        let Some(revision) = revision else {
            return Err(WorldError::WorldExists(id.to_owned()));
        };
        cluster.owned.insert(id.to_owned(), revision);
        crate::metrics::LEASE_CHANGES
            .with_label_values(&["taken"])
            .inc();
        Ok(())
    }
}

/// A client's `world_id` checked (length, letters), or a fresh UUID when none is given.
pub(super) fn checked_id(world_id: Option<String>, limits: &Limits) -> Result<String, WorldError> {
    let Some(id) = world_id.filter(|w| !w.trim().is_empty()) else {
        return Ok(uuid::Uuid::new_v4().to_string());
    };
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
    Ok(id)
}
