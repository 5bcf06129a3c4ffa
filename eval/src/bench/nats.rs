//! A three-node NATS JetStream cluster on loopback ports, each node with its own store
//! directory, started from Debian's `nats-server` (installed by `scripts/setup.sh
//! --nats`), for `bench cluster` and the tests. Nodes can be killed and started again
//! to see what the log survives.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use dramatis_world::log::{JetStreamLog, JetStreamOptions};

/// The `nats-server` program: `DRAMATIS_NATS_SERVER`, else on `PATH`, else where
/// Debian's package puts it.
#[must_use]
pub fn nats_server() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("DRAMATIS_NATS_SERVER") {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("nats-server"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| Some(PathBuf::from("/usr/sbin/nats-server")).filter(|p| p.is_file()))
}

/// `n` distinct free loopback ports: all bound at once, so none repeats (one bound and
/// released at a time may be handed out again), then released for the servers to take.
fn free_ports(n: usize) -> anyhow::Result<Vec<u16>> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .context("free loopback ports")?;
    listeners
        .iter()
        .map(|l| Ok(l.local_addr().context("a free loopback port")?.port()))
        .collect()
}

/// One node: its ports, store and process.
#[derive(Debug)]
struct Node {
    config: PathBuf,
    client_port: u16,
    child: Option<Child>,
}

/// A running three-node cluster; dropped, it kills its nodes.
#[derive(Debug)]
pub struct NatsCluster {
    program: PathBuf,
    nodes: Vec<Node>,
    _dir: tempfile::TempDir,
}

impl NatsCluster {
    /// Starts three clustered JetStream nodes from `program` and waits until the
    /// cluster can create a replicated stream. A port chosen free can be taken by
    /// another process before a node binds it; a node that dies at start-up is seen, and
    /// the cluster is started again on new ports (three tries).
    pub async fn start(program: &Path) -> anyhow::Result<Self> {
        let mut last = None;
        for _ in 0..3 {
            let mut cluster = Self::launch(program)?;
            match cluster.ready().await {
                Ok(()) => return Ok(cluster),
                Err(error) => last = Some(error),
            }
        }
        Err(last.unwrap_or_else(|| anyhow!("the JetStream cluster never started")))
    }

    /// Writes three nodes' configurations on fresh ports and starts them.
    fn launch(program: &Path) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("dramatis-nats-")
            .tempdir()
            .context("temporary directory")?;
        let ports = free_ports(6)?;
        let (cluster_ports, client_ports) = ports.split_at(3);
        let routes: Vec<String> = cluster_ports
            .iter()
            .map(|p| format!("\"nats-route://127.0.0.1:{p}\""))
            .collect();
        let mut nodes = Vec::new();
        for (i, (cluster_port, client_port)) in cluster_ports.iter().zip(client_ports).enumerate() {
            let client_port = *client_port;
            let store = dir.path().join(format!("n{i}"));
            let config = dir.path().join(format!("n{i}.conf"));
            std::fs::write(
                &config,
                format!(
                    "server_name: n{i}\nlisten: \"127.0.0.1:{client_port}\"\n\
                     jetstream {{ store_dir: {store:?} }}\n\
                     cluster {{\n  name: dramatis-local\n  listen: \"127.0.0.1:{cluster_port}\"\n  \
                     routes: [{}]\n}}\n",
                    routes.join(", ")
                ),
            )
            .with_context(|| format!("write {}", config.display()))?;
            nodes.push(Node {
                config,
                client_port,
                child: None,
            });
        }
        let mut cluster = Self {
            program: program.to_path_buf(),
            nodes,
            _dir: dir,
        };
        for i in 0..3 {
            cluster.start_node(i)?;
        }
        Ok(cluster)
    }

    /// Waits until the cluster can create a replicated stream; an error at once when a
    /// node has died (its port was taken), or after 30 s.
    async fn ready(&mut self) -> anyhow::Result<()> {
        let options = self.options("ready");
        let nodes = &mut self.nodes;
        let connected = connect_patiently(&options, || {
            for (i, node) in nodes.iter_mut().enumerate() {
                if let Some(child) = &mut node.child
                    && let Ok(Some(status)) = child.try_wait()
                {
                    return Err(anyhow!("NATS node {i} exited at start-up ({status})"));
                }
            }
            Ok(())
        })
        .await;
        connected
            .map(drop)
            .map_err(|e| anyhow!("{e}\n{}", self.logs()))
    }

    /// Starts node `i` (again), with its store as it was left.
    pub fn start_node(&mut self, i: usize) -> anyhow::Result<()> {
        let node = &mut self.nodes[i];
        let log = node.config.with_extension("log");
        let child = Command::new(&self.program)
            .arg("-c")
            .arg(&node.config)
            .arg("-l")
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("start {}", self.program.display()))?;
        node.child = Some(child);
        Ok(())
    }

    /// Kills node `i` (SIGKILL) and waits for it to be gone.
    pub fn kill_node(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].child.take() {
            // Already dead, or never started: either way it is gone.
            let _ = child.kill();
            // Already dead, or never started: either way it is gone.
            let _ = child.wait();
        }
    }

    /// Every node's client address, comma-separated, as `--log` takes them.
    #[must_use]
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("nats://127.0.0.1:{}", n.client_port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Node `i`'s client address.
    #[must_use]
    pub fn node_url(&self, i: usize) -> String {
        format!("nats://127.0.0.1:{}", self.nodes[i].client_port)
    }

    /// Options for a log on this cluster under `prefix` (three replicas).
    #[must_use]
    pub fn options(&self, prefix: &str) -> JetStreamOptions {
        let mut options = JetStreamOptions::new(self.url());
        options.prefix = prefix.to_owned();
        options
    }

    /// A log on this cluster, retried while the cluster elects its leaders.
    pub async fn log(&self, prefix: &str) -> anyhow::Result<JetStreamLog> {
        self.log_with(self.options(prefix)).await
    }

    /// A log on this cluster with `options`, retried while the cluster elects its
    /// leaders.
    pub async fn log_with(&self, options: JetStreamOptions) -> anyhow::Result<JetStreamLog> {
        connect_patiently(&options, || Ok(()))
            .await
            .map_err(|e| anyhow!("{e}\n{}", self.logs()))
    }

    /// The tail of every node's log file (for a failing test's message).
    #[must_use]
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let text =
                std::fs::read_to_string(node.config.with_extension("log")).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            dramatis_runtime::push!(out, "--- node {i}\n");
            for line in &lines[lines.len().saturating_sub(25)..] {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

/// A log with `options`, tried every 500 ms for 30 s while the cluster elects its
/// leaders; `check` runs before each try, and its error ends the wait.
async fn connect_patiently(
    options: &JetStreamOptions,
    mut check: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<JetStreamLog> {
    let mut last = None;
    for _ in 0..60 {
        check()?;
        match JetStreamLog::connect(options.clone()).await {
            Ok(log) => return Ok(log),
            Err(error) => last = Some(error),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(anyhow!(
        "the JetStream cluster never became ready: {}",
        last.map_or_else(String::new, |e| e.to_string())
    ))
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill_node(i);
        }
    }
}
