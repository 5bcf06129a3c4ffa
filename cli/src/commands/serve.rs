use std::sync::Arc;

use crate::options::{LimitArgs, ModelArgs};
use anyhow::Context as _;
use clap::Args;
use dramatis_character::CharacterAgents;
use dramatis_llm::ModelRole;
use dramatis_runtime::Shutdown;
use dramatis_runtime::auth::{Access, Tokens};
use dramatis_runtime::grpc::Security;
use dramatis_world::WorldServiceOptions;
use dramatis_world::agent_clients::{AgentDirectory, DnsAgents, StaticAgents};
use dramatis_world::cluster::{Cluster, Peers, Replica};
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::models::{agent_options, role_models};
use crate::options::MemoryWritesArg;
use crate::spawn::{SpawnedAgents, start_builtin_llm};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "DRAMATIS_LISTEN", default_value = "127.0.0.1:7070")]
    pub listen: SocketAddr,
    /// Agent service endpoints (http://host:port) to place characters on, or one
    /// dns://HOST:PORT (dns+https:// for TLS) whose every address is an agent (a
    /// Kubernetes headless service), looked up again as agents come and go. Each
    /// character goes to the endpoint that ranks first for it by rendezvous hashing,
    /// so every replica places it alike.
    /// When none is given, agent processes are started as worlds need them.
    #[arg(
        long = "agent-endpoint",
        env = "DRAMATIS_AGENT_ENDPOINTS",
        value_delimiter = ','
    )]
    pub agent_endpoints: Vec<String>,
    #[command(flatten)]
    pub layout: crate::options::LayoutArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Where the event log (and process logs) live.
    #[arg(long, env = "DRAMATIS_DATA_DIR", default_value = "dramatis-data")]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub log: LogArgs,
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
    #[command(flatten)]
    pub security: ServeSecurityArgs,
    #[command(flatten)]
    pub metrics: crate::options::MetricsArgs,
}

/// Where the event log is: the embedded file under --data-dir, or a NATS JetStream
/// cluster shared by several world-service replicas.
#[derive(Debug, Args)]
#[command(next_help_heading = "Event log")]
pub struct LogArgs {
    /// `redb` (default): one embedded file, events.redb under --data-dir, for one
    /// service. `nats://HOST:PORT[,nats://HOST:PORT…]`: a replicated JetStream stream
    /// (one subject per world) and key-value buckets on that cluster, which several
    /// `serve` replicas share; put credentials in the address
    /// (`nats://user:password@host:4222`) when the cluster asks for them.
    #[arg(
        long = "log",
        env = "DRAMATIS_LOG_URL",
        default_value = "redb",
        value_name = "redb|nats://…"
    )]
    pub url: String,
    /// Copies of each event the JetStream stream keeps (at most the cluster's size).
    #[arg(long, env = "DRAMATIS_LOG_REPLICAS", default_value_t = 3)]
    pub log_replicas: usize,
    /// Prefix of the JetStream stream, subjects and buckets, so several deployments
    /// can share one cluster.
    #[arg(long, env = "DRAMATIS_LOG_PREFIX", default_value = "dramatis")]
    pub log_prefix: String,
    /// With a JetStream log: this replica's name among the replicas sharing it (the
    /// pod's name; default: the host name and a random suffix).
    #[arg(long, env = "DRAMATIS_REPLICA_ID")]
    pub replica_id: Option<String>,
    /// With a JetStream log: where the other replicas reach this one to forward calls
    /// for the worlds it owns (http://host:port, or https:// when this replica serves
    /// TLS with --tls-cert, whose certificate must name that host; default: the
    /// address listened on, when --listen names a specific one).
    #[arg(long, env = "DRAMATIS_ADVERTISE", value_name = "URL")]
    pub advertise: Option<String>,
    /// With a JetStream log and replicas serving TLS: the CA certificate (PEM) that
    /// signed the other replicas' --tls-cert, trusted besides the system's roots when
    /// a call is forwarded to its world's owner.
    #[arg(long, env = "DRAMATIS_PEER_CA", value_name = "FILE")]
    pub peer_ca: Option<PathBuf>,
    /// With a JetStream log: how long a replica's ownership of a world lasts without
    /// renewal (renewed every third of it). A dead owner's worlds are taken over after
    /// at most this long.
    #[arg(long, env = "DRAMATIS_LEASE_MS", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(300..=600_000))]
    pub lease_ms: u64,
}

impl LogArgs {
    /// The shared log to open and this replica's part in the cluster over it, or
    /// `None` for the embedded file.
    pub async fn open(
        &self,
        listen: SocketAddr,
        serves_tls: bool,
    ) -> anyhow::Result<Option<(dramatis_world::log::SharedLog, Arc<Cluster>)>> {
        if self.url == "redb" {
            return Ok(None);
        }
        if !self.url.starts_with("nats://") && !self.url.starts_with("tls://") {
            anyhow::bail!(
                "--log {:?}: give `redb` or a NATS address (nats://host:4222)",
                dramatis_nats::redacted(&self.url)
                    .chars()
                    .take(80)
                    .collect::<String>()
            );
        }
        anyhow::ensure!(
            (1..=5).contains(&self.log_replicas),
            "--log-replicas {}: JetStream keeps 1 to 5 copies",
            self.log_replicas
        );
        let mut options = dramatis_world::log::JetStreamOptions::new(&self.url);
        options.replicas = self.log_replicas;
        options.prefix.clone_from(&self.log_prefix);
        let log = dramatis_world::log::JetStreamLog::connect(options).await?;
        let scheme = if serves_tls { "https" } else { "http" };
        let endpoint = match &self.advertise {
            Some(url) if !url.starts_with(&format!("{scheme}://")) => anyhow::bail!(
                "--advertise {:?}: this replica serves {scheme} (TLS {}), so the other \
                 replicas reach it at {scheme}://HOST:PORT",
                url.chars().take(80).collect::<String>(),
                if serves_tls { "with --tls-cert" } else { "off" }
            ),
            Some(url) => url.clone(),
            None if !listen.ip().is_unspecified() => format!("{scheme}://{listen}"),
            None => anyhow::bail!(
                "--listen {listen} does not say where other replicas reach this one: give \
                 --advertise {scheme}://HOST:PORT (in Kubernetes, the pod's address)"
            ),
        };
        let peer_tls = dramatis_runtime::pki::client_tls(self.peer_ca.as_deref())?;
        let id = self.replica_id.clone().unwrap_or_else(|| {
            let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "replica".into());
            format!("{host}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
        });
        let leases = dramatis_world::cluster::Leases::open(
            &log,
            Replica { id, endpoint },
            std::time::Duration::from_millis(self.lease_ms),
        )
        .await?;
        let cluster = Cluster::new(leases, Peers::new(Some(peer_tls)));
        Ok(Some((Arc::new(log), cluster)))
    }
}

/// Who may call the world service, and how its agents are reached.
#[derive(Debug, Args)]
#[command(next_help_heading = "Security")]
pub struct ServeSecurityArgs {
    /// Bearer tokens clients must send: a file of lines `ROLE TOKEN [NAME]`, ROLE one
    /// of viewer (list, get, watch), player (also play seats and interview), operator
    /// (also create, advance, delete, read the prompt audit). The environment variable
    /// DRAMATIS_AUTH_TOKENS may hold the list itself instead (entries separated by
    /// newlines or commas). Required when --listen is not a loopback address; with no
    /// tokens, a loopback service lets every caller in.
    #[arg(long, env = "DRAMATIS_AUTH_TOKENS_FILE", value_name = "FILE")]
    pub auth_tokens: Option<PathBuf>,
    /// Serve TLS to clients with this certificate (PEM, chain first)...
    #[arg(
        long,
        env = "DRAMATIS_TLS_CERT",
        requires = "tls_key",
        value_name = "FILE"
    )]
    pub tls_cert: Option<PathBuf>,
    /// ...and this private key (PEM).
    #[arg(
        long,
        env = "DRAMATIS_TLS_KEY",
        requires = "tls_cert",
        value_name = "FILE"
    )]
    pub tls_key: Option<PathBuf>,
    /// Serve plain HTTP/2 on a non-loopback --listen (e.g. behind a proxy that
    /// terminates TLS). Tokens then cross the network in the clear.
    #[arg(long)]
    pub allow_plaintext: bool,
    /// The deployment's certificates for agents started elsewhere (the folder
    /// `dramatis certs` wrote: ca.pem, world.pem, world.key); their endpoints are
    /// https://. Agents this service starts itself get certificates of their own.
    #[arg(long, env = "DRAMATIS_AGENT_TLS", value_name = "DIR")]
    pub agent_tls: Option<PathBuf>,
}

/// The environment variable that may hold the token list itself.
const TOKENS_VAR: &str = "DRAMATIS_AUTH_TOKENS";

impl ServeSecurityArgs {
    /// The tokens configured, if any.
    fn tokens(&self) -> anyhow::Result<Option<Arc<Tokens>>> {
        let inline = std::env::var(TOKENS_VAR)
            .ok()
            .filter(|t| !t.trim().is_empty());
        let tokens = match (&self.auth_tokens, inline) {
            (Some(_), Some(_)) => anyhow::bail!(
                "tokens are given twice, by --auth-tokens and by {TOKENS_VAR}: keep one"
            ),
            (Some(file), None) => Tokens::load(file)?,
            (None, Some(text)) => Tokens::parse(&text, TOKENS_VAR)?,
            (None, None) => return Ok(None),
        };
        Ok(Some(Arc::new(tokens)))
    }

    /// Refuses a configuration that would expose the service unprotected.
    fn check_exposure(&self, listen: SocketAddr, tokens: Option<&Tokens>) -> anyhow::Result<()> {
        if listen.ip().is_loopback() {
            return Ok(());
        }
        if tokens.is_none() {
            anyhow::bail!(
                "--listen {listen} is reachable from other machines, and no tokens are \
                 configured: give --auth-tokens FILE (lines `ROLE TOKEN [NAME]`; see \
                 `dramatis serve --help`), or listen on 127.0.0.1"
            );
        }
        if self.tls_cert.is_none() && !self.allow_plaintext {
            anyhow::bail!(
                "--listen {listen} is reachable from other machines, and tokens would cross \
                 it in the clear: give --tls-cert and --tls-key, or --allow-plaintext when a \
                 proxy in front terminates TLS"
            );
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Address to listen on; port 0 picks a free one (printed on stdout).
    #[arg(long, env = "DRAMATIS_AGENT_LISTEN", default_value = "127.0.0.1:7071")]
    pub listen: SocketAddr,
    /// Where character shards are saved (one store file per character per world) and
    /// read back when a character is attached again after a restart.
    #[arg(
        long,
        env = "DRAMATIS_AGENT_DATA_DIR",
        default_value = "dramatis-data/shards"
    )]
    pub data_dir: PathBuf,
    /// The deployment's certificates (the folder `dramatis certs` wrote: ca.pem,
    /// agent.pem, agent.key). The agent serves TLS and answers only callers whose
    /// certificate that CA signed: the world service.
    #[arg(long, env = "DRAMATIS_AGENT_TLS", value_name = "DIR")]
    pub tls: Option<PathBuf>,
    /// Serve plain HTTP/2 and answer anyone who can connect. Only on a loopback
    /// --listen, on a machine whose users are all trusted.
    #[arg(long, conflicts_with = "tls")]
    pub no_tls: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub metrics: crate::options::MetricsArgs,
    /// Also answer gRPC health checks, and nothing else, in plain HTTP/2 on this
    /// address: for probes (a kubelet's) that cannot present the world service's
    /// certificate, which the agent's own port demands.
    #[arg(long, env = "DRAMATIS_HEALTH_LISTEN", value_name = "ADDR")]
    pub health_listen: Option<SocketAddr>,
    /// Keep shards in a replicated JetStream stream on this NATS cluster
    /// (`nats://HOST:PORT[,nats://HOST:PORT…]`) instead of --data-dir, one subject per
    /// character: when this agent dies, its characters go on, whole, on another
    /// agent. Give the world service every agent's endpoint.
    #[arg(long, env = "DRAMATIS_SHARDS_URL", value_name = "nats://…")]
    pub shards: Option<String>,
    /// Copies of each shard message the stream keeps (at most the cluster's size).
    #[arg(long, env = "DRAMATIS_SHARDS_REPLICAS", default_value_t = 3,
          value_parser = clap::value_parser!(u16).range(1..=5))]
    pub shards_replicas: u16,
    /// Prefix of the shard stream and its subjects (the world service's --log-prefix,
    /// when they share a cluster).
    #[arg(long, env = "DRAMATIS_SHARDS_PREFIX", default_value = "dramatis")]
    pub shards_prefix: String,
}

/// Prompts each character's audit keeps in a service when `--audit-keep` is unset: a
/// service runs for months, and each interview adds about 10 KB.
pub const SERVE_AUDIT_KEEP: u64 = 1_000;

/// How the world reaches `https://` agents: the deployment's certificates from
/// `--agent-tls`, required when any agent endpoint is https.
fn agent_tls(args: &ServeArgs) -> anyhow::Result<Option<tonic::transport::ClientTlsConfig>> {
    let agent_tls = match &args.security.agent_tls {
        Some(dir) => Some(dramatis_runtime::pki::world_client_tls(dir)?),
        None => None,
    };
    if let Some(plain) = args
        .agent_endpoints
        .iter()
        .find(|e| e.starts_with("https://") || e.starts_with("dns+https://"))
        .filter(|_| agent_tls.is_none())
    {
        anyhow::bail!(
            "agent endpoint {plain} is https, so the world needs the deployment's \
             certificates: give --agent-tls DIR (see `dramatis certs`)"
        );
    }
    Ok(agent_tls)
}

pub async fn serve(mut args: ServeArgs) -> anyhow::Result<()> {
    args.model.audit_keep.get_or_insert(SERVE_AUDIT_KEEP);
    let tokens = args.security.tokens()?;
    args.security
        .check_exposure(args.listen, tokens.as_deref())?;
    let tls = match (&args.security.tls_cert, &args.security.tls_key) {
        (Some(cert), Some(key)) => Some(dramatis_runtime::pki::server_tls(cert, key)?),
        _ => None,
    };
    let mut agent_tls = agent_tls(&args)?;
    let shutdown = Shutdown::new();
    shutdown.trigger_on_signals();
    args.metrics.start(&shutdown).await?;
    // Before anything in the data directory is touched: one service per directory.
    let _data_dir = crate::locks::hold_data_dir(&args.data_dir)?;
    let logs = args.data_dir.join("logs");
    let mut _llm = None;
    let agents: Arc<dyn AgentDirectory> = if args.agent_endpoints.is_empty() {
        if args.model.endpoint.llm_endpoint.is_none() && args.model.scripted.is_none() {
            let (spawned, endpoint) = start_builtin_llm(&logs).await?;
            tracing::info!(%endpoint, "started the built-in model");
            args.model.endpoint.llm_endpoint = Some(endpoint);
            args.model.endpoint.llm_dry.get_or_insert(true);
            if args.model.memory_writes == MemoryWritesArg::Auto {
                args.model.memory_writes = MemoryWritesArg::Digest;
            }
            _llm = Some(spawned);
        }
        let spawned = SpawnedAgents::open(
            args.model.clone(),
            logs,
            &args.data_dir,
            crate::spawn::Layout::from(&args.layout),
        )
        .await?;
        agent_tls = Some(spawned.agent_tls());
        Arc::new(spawned)
    } else if let Some(found) = args
        .agent_endpoints
        .iter()
        .find_map(|e| DnsAgents::parse(e))
    {
        let dns = found?;
        anyhow::ensure!(
            args.agent_endpoints.len() == 1,
            "a dns:// agent endpoint finds every agent itself: give it alone"
        );
        if dns.host().parse::<std::net::IpAddr>().is_err() {
            // Agents are reached at their pods' addresses; their certificate names
            // the service.
            agent_tls = agent_tls.map(|tls| tls.domain_name(dns.host()));
        }
        Arc::new(dns)
    } else {
        Arc::new(StaticAgents::new(args.agent_endpoints.clone())?)
    };
    // Bound first, so a replica advertises the port it got (with --listen …:0).
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    let shared = args.log.open(addr, tls.is_some()).await?;
    let options = WorldServiceOptions {
        scenarios_dir: args
            .scenarios_dir
            .unwrap_or_else(dramatis_runtime::models::scenarios_dir),
        scenario_roots: args.scenario_roots.clone(),
        log_path: args.data_dir.join("events.redb"),
        // The file is opened (and checked) before the service says it is ready: a
        // damaged log stops the start with its way out, not the first call.
        shared_log: Some(match &shared {
            Some((log, _)) => Arc::clone(log),
            None => Arc::new(dramatis_world::log::RedbLog::open(
                &args.data_dir.join("events.redb"),
            )?),
        }),
        cluster: shared.map(|(_, cluster)| cluster),
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
        tls,
        tokens,
        agent_tls,
    };
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
    // Shards are characters' private memory.
    crate::locks::private_files();
    let shutdown = Shutdown::new();
    shutdown.trigger_on_signals();
    args.metrics.start(&shutdown).await?;
    let security = match (&args.tls, args.no_tls) {
        (Some(dir), _) => Security {
            tls: Some(dramatis_runtime::pki::agent_server_tls(dir)?),
            access: Access::PeerCertificate,
        },
        (None, true) if args.listen.ip().is_loopback() => Security::open(),
        (None, true) => anyhow::bail!(
            "--no-tls is for a loopback --listen only; {} is reachable from other machines: \
             give --tls DIR (see `dramatis certs`)",
            args.listen
        ),
        (None, false) => anyhow::bail!(
            "an agent answers only its world service: give --tls DIR with the deployment's \
             certificates (`dramatis certs` writes them), or --no-tls on a loopback address \
             of a machine whose users are all trusted"
        ),
    };
    if let Some(addr) = args.health_listen {
        dramatis_runtime::grpc::serve_health(addr, "dramatis.v1.Agent", shutdown.clone())
            .await
            .with_context(|| format!("cannot serve health checks on {addr}"))?;
    }
    // Held while this process runs: a restarted service finds it by this lock.
    let _lock = crate::locks::hold_agent_lock(&args.data_dir)?;
    let mut options = agent_options(&args.model, Some(args.data_dir.clone()))?;
    if let Some(url) = &args.shards {
        anyhow::ensure!(
            url.starts_with("nats://") || url.starts_with("tls://"),
            "--shards {:?}: give a NATS address (nats://host:4222)",
            dramatis_nats::redacted(url)
                .chars()
                .take(80)
                .collect::<String>()
        );
        let mut nats = dramatis_nats::NatsOptions::new(url);
        nats.replicas = usize::from(args.shards_replicas);
        nats.prefix.clone_from(&args.shards_prefix);
        let stream = dramatis_character::shard::ShardStream::connect(&nats).await?;
        tracing::info!(?stream, "shards are kept in JetStream");
        options.shard_stream = Some(stream);
    }
    let agents = CharacterAgents::new(options);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    crate::spawn::announce(listener.local_addr()?);
    dramatis_character::run(listener, agents, security, shutdown).await?;
    Ok(())
}
