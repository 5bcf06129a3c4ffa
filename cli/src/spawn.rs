//! Child processes of the `dramatis` binary: the built-in model server and agent
//! services. Each child prints `DRAMATIS_READY <addr>` on stdout once it listens; its
//! log goes to a file under the data directory.
//!
//! Children die with their parent: each child's stdin is a pipe from the parent (its
//! lifeline), and a child started with [`LIFELINE`] set exits when that pipe closes,
//! which the kernel does when the parent dies, even by `kill -9`. Agents also hold a
//! lock file in their shard directory while they run, so a restarted service can find
//! agents an earlier one left behind and end them (`locks.rs`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, bail};
use async_trait::async_trait;
use dramatis_runtime::pki::DeploymentPki;
use dramatis_world::WorldError;
use dramatis_world::agent_clients::{AgentDirectory, Loss};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::options::{LayoutArg, LayoutArgs, ModelArgs};

/// The line a child prints when it is ready.
pub const READY: &str = "DRAMATIS_READY";

/// Prints the ready line for a parent to read.
pub fn announce(addr: SocketAddr) {
    println!("{READY} {addr}");
}

/// Set in a child's environment: exit when stdin (the lifeline) closes.
pub const LIFELINE: &str = "DRAMATIS_LIFELINE";

/// A running child and the address it listens on.
#[derive(Debug)]
pub struct Spawned {
    pub child: Child,
    pub addr: SocketAddr,
    /// The write end of the child's lifeline; the child exits when it closes.
    _lifeline: Option<tokio::process::ChildStdin>,
}

/// In a child started by [`spawn_self`]: exits the process when the parent's end of the
/// lifeline closes. Does nothing in a process started any other way.
pub fn watch_lifeline() {
    if std::env::var_os(LIFELINE).is_none() {
        return;
    }
    std::thread::spawn(|| {
        let mut sink = [0_u8; 64];
        let mut stdin = std::io::stdin().lock();
        // Read until end of file (the parent died or let go) or an error.
        while matches!(std::io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
        eprintln!("dramatis: the parent process is gone; exiting");
        std::process::exit(0);
    });
}

/// Starts `dramatis <args>` with `env` added to its environment and waits (up to
/// `wait`) for its ready line.
pub async fn spawn_self(
    args: &[String],
    env: &[(&str, String)],
    log_file: &Path,
    wait: Duration,
) -> anyhow::Result<Spawned> {
    let exe = std::env::current_exe().context("cannot find the dramatis executable")?;
    if let Some(dir) = log_file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    // Appended to, so a restarted agent's log keeps what its predecessor said.
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_file)
        .with_context(|| format!("open {}", log_file.display()))?;
    let mut child = Command::new(exe)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env(LIFELINE, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start dramatis {}", args.join(" ")))?;
    let lifeline = child.stdin.take();
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(wait, async {
        while let Some(line) = lines.next_line().await? {
            if let Some(addr) = line.strip_prefix(READY) {
                return Ok::<_, std::io::Error>(Some(addr.trim().to_owned()));
            }
        }
        Ok(None)
    })
    .await;
    let addr = match ready {
        Ok(Ok(Some(addr))) => addr
            .parse()
            .with_context(|| format!("child announced a bad address {addr:?}"))?,
        Ok(Ok(None) | Err(_)) | Err(_) => {
            // The child failed to start; the error below tells why, whatever the kill did.
            let _ = child.start_kill();
            let tail = std::fs::read_to_string(log_file).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "dramatis {} did not become ready (log: {}):\n{}",
                args.first().map_or("", String::as_str),
                log_file.display(),
                tail.join("\n")
            );
        }
    };
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Spawned {
        child,
        addr,
        _lifeline: lifeline,
    })
}

/// Starts the built-in model server; returns it with its `/v1` endpoint.
pub async fn start_builtin_llm(logs: &Path) -> anyhow::Result<(Spawned, String)> {
    let model = dramatis_runtime::models::model_path(dramatis_runtime::models::DEFAULT_LLM_FILE);
    if !model.is_file() {
        bail!("{}", dramatis_runtime::models::missing_message(&model));
    }
    let args = vec![
        "llm".to_owned(),
        "--listen".to_owned(),
        "127.0.0.1:0".to_owned(),
        "--model-file".to_owned(),
        model.to_string_lossy().into_owned(),
    ];
    let spawned = spawn_self(&args, &[], &logs.join("llm.log"), Duration::from_secs(120)).await?;
    let endpoint = format!("http://{}/v1", spawned.addr);
    Ok((spawned, endpoint))
}

/// How spawned agent processes host characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// This many processes, shared by every world; a character goes to the one its
    /// world and id hash to.
    Pool(usize),
    /// One process per world.
    PerWorld,
    /// One process per character.
    PerCharacter,
}

impl From<&LayoutArgs> for Layout {
    /// The layout these flags ask for.
    fn from(args: &LayoutArgs) -> Self {
        match (args.shared_agent, args.agents) {
            (true, _) | (false, LayoutArg::World) => Self::PerWorld,
            (false, LayoutArg::Character) => Self::PerCharacter,
            (false, LayoutArg::Pool) => Self::Pool(args.agent_pool.map_or_else(
                || std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get),
                |n| n as usize,
            )),
        }
    }
}

impl Layout {
    /// The group of processes that hosts `character_id` of `world_id`: the pool slot,
    /// or the world. In the per-character layout, the world's processes (one each).
    fn group(self, world_id: &str, character_id: &str) -> String {
        match self {
            Self::Pool(size) => {
                let mut hasher = fnv::FnvHasher::default();
                std::hash::Hash::hash(&(world_id, character_id), &mut hasher);
                let slot = std::hash::Hasher::finish(&hasher) % size.max(1) as u64;
                format!("{POOL}{slot}")
            }
            Self::PerWorld | Self::PerCharacter => world_id.to_owned(),
        }
    }
}

/// The group name of pool slots (`pool-0`, `pool-1`, …), which no world id can take:
/// world ids have no `~`.
const POOL: &str = "~pool-";

/// Starts agent processes as worlds need them, in a [`Layout`]. A background task reaps
/// agents that exit and logs it; a world that finds its agent gone asks for a new one
/// ([`AgentDirectory::recover`]).
#[derive(Debug)]
pub struct SpawnedAgents {
    model: ModelArgs,
    logs: PathBuf,
    shards: PathBuf,
    layout: Layout,
    running: Arc<Mutex<Running>>,
    /// One start at a time per group, so two characters of one group never start two
    /// processes.
    starting: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// This deployment's certificates: the agents' half is in `tls_dir`.
    pki: DeploymentPki,
    tls_dir: PathBuf,
}

/// Agent processes by group (a world, or a pool slot).
type Running = HashMap<String, Vec<Agent>>;

/// One agent process.
#[derive(Debug)]
struct Agent {
    spawned: Spawned,
    endpoint: String,
    /// How it exited, once it has (it is reaped then).
    exit: Option<String>,
    /// How many reaping rounds in a row have found it stopped.
    stopped: u32,
}

impl Agent {
    /// One reaping round: logs an exit the first time it is seen; kills the process
    /// once it has been found stopped [`STOPPED_ROUNDS`] rounds in a row.
    fn watch(&mut self, group: &str) {
        let seen = self.exit.is_some();
        if let Some(status) = self.poll_exit().map(str::to_owned) {
            if !seen {
                tracing::warn!(%group, endpoint = %self.endpoint, %status, "agent process exited");
            }
            return;
        }
        let stopped = self
            .spawned
            .child
            .id()
            .and_then(process_state)
            .is_some_and(|state| matches!(state, 'T' | 't'));
        self.stopped = if stopped { self.stopped + 1 } else { 0 };
        if self.stopped == STOPPED_ROUNDS && self.spawned.child.start_kill().is_ok() {
            tracing::warn!(%group, endpoint = %self.endpoint,
                "agent process is frozen (stopped by a signal or a debugger); killed it, \
                 and its characters move to a new one from their shards");
        }
    }

    /// Its exit status, reaping it if it has just exited.
    fn poll_exit(&mut self) -> Option<&str> {
        if self.exit.is_none() {
            self.exit = match self.spawned.child.try_wait() {
                Ok(None) => None,
                Ok(Some(status)) => Some(status.to_string()),
                Err(error) => Some(format!("unknown ({error})")),
            };
        }
        self.exit.as_deref()
    }
}

/// glibc's allocator settings for agent processes (unless the environment sets them):
/// loading the embedder's model frees about 70 MB of graph-optimisation scratch at the
/// top of the heap, which glibc's default trim threshold (raised as large blocks come
/// and go) keeps mapped for the life of the process. A 1 MiB threshold gives it back:
/// an idle agent holds 140 MB instead of 207 MB (`dramatis bench cast`).
const AGENT_MALLOC: [(&str, &str); 1] = [("MALLOC_TRIM_THRESHOLD_", "1048576")];

/// How long the certificates of agents started here are valid: a deployment made by
/// `run` or `serve` lives as long as the process, but a service may run for months.
const CERTIFICATE_LIFETIME: Duration = Duration::from_secs(10 * 365 * 86_400);

/// How often exited agents are looked for, and stopped ones.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// How many rounds in a row an agent may be found stopped (SIGSTOP, a debugger)
/// before it is killed: its calls, and every world's calls waiting on its sockets,
/// then fail at once and its worlds move its characters to a new process. A process
/// wedged without being stopped is found by its calls instead (keepalive pings and the
/// TLS handshake's deadline, then the world's health probe).
const STOPPED_ROUNDS: u32 = 2;

/// The state letter of process `pid` (`R`, `S`, `T`, ...) from `/proc`; `None` where
/// there is no such file.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (command) state ...`: the command may hold spaces and parentheses.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

impl SpawnedAgents {
    /// Agents for a service whose data directory is `data_dir` (shards in `shards/`).
    /// Agents an earlier service left running on that directory are ended first, so
    /// two never share a shard. A new CA is made for the agents started from here on
    /// (their half in `pki/`): they answer only this service.
    pub async fn open(
        model: ModelArgs,
        logs: PathBuf,
        data_dir: &Path,
        layout: Layout,
    ) -> anyhow::Result<Self> {
        let shards = data_dir.join("shards");
        let tls_dir = data_dir.join("pki");
        let pki = DeploymentPki::generate(&[], &[], CERTIFICATE_LIFETIME)?;
        pki.write_agent_half(&tls_dir)?;
        let ended = crate::locks::end_stale_agents(&shards).await;
        if ended > 0 {
            tracing::warn!(ended, shards = %shards.display(),
                "ended agents an earlier service left running on this data directory");
        }
        let running: Arc<Mutex<Running>> = Arc::default();
        let watched = Arc::downgrade(&running);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(REAP_EVERY);
            loop {
                tick.tick().await;
                let Some(running) = watched.upgrade() else {
                    break;
                };
                for (group, agents) in dramatis_runtime::lock(&running).iter_mut() {
                    for agent in agents {
                        agent.watch(group);
                    }
                }
            }
        });
        Ok(Self {
            model,
            logs,
            shards,
            layout,
            running,
            starting: Mutex::default(),
            pki,
            tls_dir,
        })
    }

    /// How the world service reaches these agents.
    #[must_use]
    pub fn agent_tls(&self) -> tonic::transport::ClientTlsConfig {
        self.pki.world_client_tls()
    }

    /// Process ids of the agents running now.
    #[must_use]
    pub fn pids(&self) -> Vec<u32> {
        let mut running = self.lock();
        running
            .values_mut()
            .flatten()
            .filter_map(|a| match a.poll_exit() {
                None => a.spawned.child.id(),
                Some(_) => None,
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Running> {
        dramatis_runtime::lock(&self.running)
    }

    /// The live agent of `group`, in the layouts where a group shares one.
    fn live(&self, group: &str) -> Option<String> {
        if self.layout == Layout::PerCharacter {
            return None;
        }
        let mut running = self.lock();
        running.get_mut(group).and_then(|agents| {
            agents
                .iter_mut()
                .find_map(|a| a.poll_exit().is_none().then(|| a.endpoint.clone()))
        })
    }

    /// Starts an agent process for `group` (its log named after `name`) and records it.
    async fn start_agent(
        &self,
        group: &str,
        name: &str,
        character_id: &str,
    ) -> Result<String, WorldError> {
        let mut args = vec![
            "agent".to_owned(),
            "--listen".to_owned(),
            "127.0.0.1:0".to_owned(),
            "--data-dir".to_owned(),
            self.shards.to_string_lossy().into_owned(),
            "--tls".to_owned(),
            self.tls_dir.to_string_lossy().into_owned(),
        ];
        args.extend(crate::models::child_args(&self.model));
        let log = self.logs.join(format!("{name}.log"));
        let mut env = crate::models::child_env(&self.model);
        env.extend(
            AGENT_MALLOC
                .iter()
                .filter(|(key, _)| std::env::var_os(key).is_none())
                .map(|(key, value)| (*key, (*value).to_owned())),
        );
        let spawned = spawn_self(&args, &env, &log, Duration::from_secs(30))
            .await
            .map_err(|e| WorldError::Agent {
                character: character_id.to_owned(),
                kind: dramatis_proto::ErrorKind::Unavailable,
                message: format!("{e:#}"),
            })?;
        let endpoint = format!("https://{}", spawned.addr);
        self.lock()
            .entry(group.to_owned())
            .or_default()
            .push(Agent {
                spawned,
                endpoint: endpoint.clone(),
                exit: None,
                stopped: 0,
            });
        Ok(endpoint)
    }

    /// Kills the agent of `group` at `endpoint` (it answers nothing); true if it ran.
    /// It is reaped, and forgotten, as any agent that exits.
    fn end_frozen(&self, group: &str, endpoint: &str) -> bool {
        let mut running = self.lock();
        let Some(agent) = running
            .get_mut(group)
            .and_then(|agents| agents.iter_mut().find(|a| a.endpoint == endpoint))
        else {
            return false;
        };
        agent.poll_exit().is_none() && agent.spawned.child.start_kill().is_ok()
    }

    /// The agent of `group` at `endpoint`: `Some(exit status)` once it has exited (it
    /// is then forgotten), `Some(None)` while it runs, `None` if it is not ours.
    fn take_if_exited(&self, group: &str, endpoint: &str) -> Option<Option<String>> {
        let mut running = self.lock();
        let agents = running.get_mut(group)?;
        let at = agents.iter().position(|a| a.endpoint == endpoint)?;
        let status = agents[at].poll_exit().map(str::to_owned);
        if status.is_some() {
            agents.remove(at);
        }
        Some(status)
    }
}

/// How long a recovering world waits for a failing agent to be seen dead.
const EXIT_WAIT: Duration = Duration::from_secs(2);

#[async_trait]
impl AgentDirectory for SpawnedAgents {
    async fn endpoint_for(&self, world_id: &str, character_id: &str) -> Result<String, WorldError> {
        let group = self.layout.group(world_id, character_id);
        let name = match self.layout {
            Layout::Pool(_) => group.trim_start_matches('~').to_owned(),
            Layout::PerWorld => format!("{world_id}-agent"),
            Layout::PerCharacter => format!("{world_id}-{character_id}"),
        };
        let gate = Arc::clone(
            dramatis_runtime::lock(&self.starting)
                .entry(group.clone())
                .or_default(),
        );
        let _one_start = gate.lock().await;
        if let Some(endpoint) = self.live(&group) {
            return Ok(endpoint);
        }
        self.start_agent(&group, &name, character_id).await
    }

    async fn recover(
        &self,
        world_id: &str,
        character_id: &str,
        endpoint: &str,
        loss: Loss,
    ) -> Result<Option<String>, WorldError> {
        let group = self.layout.group(world_id, character_id);
        if loss == Loss::Frozen && self.end_frozen(&group, endpoint) {
            tracing::warn!(world_id, character_id, %endpoint,
                "agent process is frozen; killed it to start a new one");
        }
        // A killed process's sockets close a moment before it can be reaped: poll.
        let started = tokio::time::Instant::now();
        let status = loop {
            match self.take_if_exited(&group, endpoint) {
                // Already forgotten (an earlier recovery's restart failed, or another
                // character of the group found it gone first): use or start one.
                None => break "gone".to_owned(),
                Some(Some(status)) => break status,
                Some(None) if started.elapsed() >= EXIT_WAIT => return Ok(None),
                Some(None) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        tracing::warn!(world_id, character_id, %endpoint, %status,
            "agent process is gone; starting a new one");
        self.endpoint_for(world_id, character_id).await.map(Some)
    }

    async fn release(&self, world_id: &str) {
        // Pool processes serve every world: the world has detached its characters.
        if matches!(self.layout, Layout::Pool(_)) {
            return;
        }
        let agents = self.lock().remove(world_id).unwrap_or_default();
        dramatis_runtime::lock(&self.starting).remove(world_id);
        for mut agent in agents {
            // An agent already gone needs no kill.
            let _ = agent.spawned.child.kill().await;
        }
    }
}
