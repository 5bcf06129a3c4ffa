//! A whole Dramatis on this machine for one command: the built-in model when no endpoint
//! is configured, agent processes as worlds need them, and the world service in process
//! on a loopback port. `run` and `eval kbf --answerer agent` use it.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use dramatis_llm::ModelRole;
use dramatis_runtime::Shutdown;
use dramatis_world::agent_clients::AgentDirectory;
use dramatis_world::{ServeError, WorldServiceOptions, Worlds};

use crate::options::{BoundaryGuardArg, MemoryWritesArg, ModelArgs};
use crate::spawn::{Spawned, SpawnedAgents, start_builtin_llm};

/// The running stack; dropping it stops everything it started.
pub struct LocalStack {
    /// `http://127.0.0.1:PORT` of the world service.
    pub server_url: String,
    pub agents: Arc<SpawnedAgents>,
    pub data_dir: PathBuf,
    pub logs: PathBuf,
    shutdown: Shutdown,
    server: Option<tokio::task::JoinHandle<Result<(), ServeError>>>,
    _llm: Option<Spawned>,
    _data_dir: crate::locks::DataDirLock,
    _temp: Option<tempfile::TempDir>,
}

impl LocalStack {
    /// How this process reaches the agents it started, as its world service does (for
    /// evaluations that read a shard directly).
    #[must_use]
    pub fn agent_links(&self) -> dramatis_world::agent_clients::AgentLinks {
        dramatis_world::agent_clients::AgentLinks {
            directory: Arc::clone(&self.agents) as Arc<dyn AgentDirectory>,
            pool: Arc::new(dramatis_world::agent_clients::AgentPool::new(Some(
                self.agents.agent_tls(),
            ))),
        }
    }

    /// Starts the stack. `data_dir` keeps the event log and process logs; without it
    /// they go to a temporary directory. `scenario_roots` are the folders this
    /// command's scenario files are in: the only ones, beside the shipped scenarios,
    /// that the service reads files from.
    pub async fn start(
        mut model: ModelArgs,
        data_dir: Option<PathBuf>,
        layout: crate::spawn::Layout,
        scenarios_dir: Option<PathBuf>,
        scenario_roots: Vec<PathBuf>,
        shutdown: Shutdown,
    ) -> anyhow::Result<Self> {
        let (data_dir, temp) = match data_dir {
            Some(dir) => (dir, None),
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("dramatis-")
                    .tempdir()
                    .context("cannot create a temporary directory")?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        let data_dir_lock = crate::locks::hold_data_dir(&data_dir)?;
        let logs = data_dir.join("logs");
        let mut llm = None;
        if model.endpoint.llm_endpoint.is_none() && model.scripted.is_none() {
            eprintln!("starting the built-in model (SmolLM2-135M-Instruct on llama.cpp)…");
            let (spawned, endpoint) = start_builtin_llm(&logs).await?;
            model.endpoint.llm_endpoint = Some(endpoint);
            // The built-in model copies what its prompt quotes unless told not to.
            model.endpoint.llm_dry.get_or_insert(true);
            if model.memory_writes == MemoryWritesArg::Auto {
                model.memory_writes = MemoryWritesArg::Digest;
            }
            if model.boundary_guard == BoundaryGuardArg::Auto {
                model.boundary_guard = BoundaryGuardArg::Flag;
            }
            llm = Some(spawned);
        }
        let model_for_narrator = model.clone();
        let agents = Arc::new(SpawnedAgents::open(model, logs.clone(), &data_dir, layout).await?);
        let options = WorldServiceOptions {
            scenarios_dir: scenarios_dir.unwrap_or_else(dramatis_runtime::models::scenarios_dir),
            scenario_roots,
            log_path: data_dir.join("events.redb"),
            shared_log: None,
            cluster: None,
            agents: Arc::clone(&agents) as Arc<dyn AgentDirectory>,
            narrator: Some(Arc::clone(
                crate::models::role_models(&model_for_narrator)?.get(ModelRole::Narrator),
            )),
            viewer_dir: None,
            // Only this process calls a local stack: the sizes of what it runs are its
            // user's choice (a bench of thousands of characters).
            limits: dramatis_world::Limits {
                max_characters: usize::MAX,
                max_locations: usize::MAX,
                max_paths: usize::MAX,
                max_facts: usize::MAX,
                ..dramatis_world::Limits::default()
            },
            tls: None,
            tokens: None,
            agent_tls: Some(agents.agent_tls()),
        };
        let worlds = Worlds::open(&options)?;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let server_url = format!("http://{}", listener.local_addr()?);
        let server = tokio::spawn(dramatis_world::serve_worlds(
            listener,
            worlds,
            shutdown.clone(),
            0,
        ));
        Ok(Self {
            server_url,
            agents,
            data_dir,
            logs,
            shutdown,
            server: Some(server),
            _llm: llm,
            _data_dir: data_dir_lock,
            _temp: temp,
        })
    }

    /// Stops the world service and the agents of `world` (if any).
    pub async fn stop(mut self, world: Option<&str>) {
        self.shutdown.trigger();
        if let Some(server) = self.server.take() {
            match server.await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => tracing::warn!(%error, "the world service stopped with an error"),
                Err(error) => tracing::warn!(%error, "the world service's task failed"),
            }
        }
        if let Some(world) = world {
            self.agents.release(world).await;
        }
    }
}

impl LocalStack {
    /// A stack an evaluation walks one scenario on: a temporary data directory, one
    /// agent process per world, the scenario's folder readable.
    pub async fn for_scenario(
        model: ModelArgs,
        scenario_path: &std::path::Path,
    ) -> anyhow::Result<Self> {
        Self::start(
            model,
            None,
            crate::spawn::Layout::PerWorld,
            None,
            folder_of(scenario_path),
            Shutdown::new(),
        )
        .await
    }
}

/// The folder of a scenario file, as a scenario root (none if it does not resolve).
#[must_use]
pub fn folder_of(file: &std::path::Path) -> Vec<PathBuf> {
    std::fs::canonicalize(file)
        .ok()
        .and_then(|f| f.parent().map(std::path::Path::to_path_buf))
        .into_iter()
        .collect()
}
