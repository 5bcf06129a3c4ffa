use std::sync::Arc;

use crate::args::{LimitArgs, ModelArgs};
use anyhow::Context as _;
use clap::Args;
use dramatis_character::CharacterAgents;
use dramatis_llm::ModelRole;
use dramatis_runtime::Shutdown;
use dramatis_world::WorldServiceOptions;
use dramatis_world::agent_clients::{AgentDirectory, StaticAgents};
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::args::MemoryWritesArg;
use crate::models::{agent_options, role_models};
use crate::spawn::{SpawnedAgents, start_builtin_llm};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "DRAMATIS_LISTEN", default_value = "127.0.0.1:7070")]
    pub listen: SocketAddr,
    /// Agent service endpoints (http://host:port) to place characters on, in turn.
    /// When none is given, agent processes are started as worlds need them.
    #[arg(
        long = "agent-endpoint",
        env = "DRAMATIS_AGENT_ENDPOINTS",
        value_delimiter = ','
    )]
    pub agent_endpoints: Vec<String>,
    /// When starting agents: one process per world instead of one per character.
    #[arg(long)]
    pub shared_agent: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Where the event log (and process logs) live.
    #[arg(long, env = "DRAMATIS_DATA_DIR", default_value = "dramatis-data")]
    pub data_dir: PathBuf,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    /// Another directory whose scenario files clients may name by path in CreateWorld
    /// (repeat for more). Paths outside these and --scenarios-dir are refused.
    #[arg(
        long = "scenario-root",
        env = "DRAMATIS_SCENARIO_ROOTS",
        value_delimiter = ','
    )]
    pub scenario_roots: Vec<PathBuf>,
    /// The web viewer's files (the repository's web/ directory, set up by
    /// scripts/setup.sh); the page is served at http://<listen>/viewer/.
    #[arg(long, env = "DRAMATIS_VIEWER_DIR")]
    pub viewer_dir: Option<PathBuf>,
    /// Serve no web viewer (gRPC and gRPC-Web only).
    #[arg(long, conflicts_with = "viewer_dir")]
    pub no_viewer: bool,
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Address to listen on; port 0 picks a free one (printed on stdout).
    #[arg(long, env = "DRAMATIS_AGENT_LISTEN", default_value = "127.0.0.1:7071")]
    pub listen: SocketAddr,
    /// Where character shards are saved (one JSON file per character per world) and read
    /// back when a character is attached again after a restart.
    #[arg(
        long,
        env = "DRAMATIS_AGENT_DATA_DIR",
        default_value = "dramatis-data/shards"
    )]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub model: ModelArgs,
}

pub async fn serve(mut args: ServeArgs) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    shutdown.trigger_on_signals();
    let logs = args.data_dir.join("logs");
    let mut _llm = None;
    let agents: Arc<dyn AgentDirectory> = if args.agent_endpoints.is_empty() {
        if args.model.endpoint.llm_endpoint.is_none() && args.model.scripted.is_none() {
            let (spawned, endpoint) = start_builtin_llm(&logs).await?;
            tracing::info!(%endpoint, "started the built-in model");
            args.model.endpoint.llm_endpoint = Some(endpoint);
            if args.model.memory_writes == MemoryWritesArg::Auto {
                args.model.memory_writes = MemoryWritesArg::Digest;
            }
            _llm = Some(spawned);
        }
        Arc::new(
            SpawnedAgents::open(
                args.model.clone(),
                logs,
                args.data_dir.join("shards"),
                args.shared_agent,
            )
            .await,
        )
    } else {
        Arc::new(StaticAgents::new(args.agent_endpoints.clone())?)
    };
    let options = WorldServiceOptions {
        scenarios_dir: args
            .scenarios_dir
            .unwrap_or_else(dramatis_runtime::models::scenarios_dir),
        scenario_roots: args.scenario_roots.clone(),
        log_path: args.data_dir.join("events.redb"),
        agents,
        narrator: Some(Arc::clone(
            role_models(&args.model)?.get(ModelRole::Narrator),
        )),
        viewer_dir: (!args.no_viewer).then(|| {
            args.viewer_dir
                .clone()
                .unwrap_or_else(dramatis_runtime::models::viewer_dir)
        }),
        limits: args.limits.limits(),
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    if let Some(dir) = &options.viewer_dir {
        eprintln!(
            "web viewer: http://{addr}/viewer/  (files from {})",
            dir.display()
        );
    }
    crate::spawn::announce(addr);
    dramatis_world::run(listener, options, shutdown).await?;
    Ok(())
}

pub async fn agent(args: AgentArgs) -> anyhow::Result<()> {
    let shutdown = Shutdown::new();
    shutdown.trigger_on_signals();
    // Held while this process runs: a restarted service finds it by this lock.
    let _lock = crate::spawn::hold_agent_lock(&args.data_dir)?;
    let agents = CharacterAgents::new(agent_options(&args.model, Some(args.data_dir.clone()))?);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    crate::spawn::announce(listener.local_addr()?);
    dramatis_character::run(listener, agents, shutdown).await?;
    Ok(())
}
