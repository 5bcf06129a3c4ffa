//! The three-node NATS JetStream cluster of `dramatis bench cluster`
//! (`dramatis_eval::bench::nats`), for tests: absent `nats-server`, a test is skipped
//! with a note, except under CI, which installs it (`scripts/setup.sh --nats`).

pub use dramatis_eval::bench::nats::nats_server;
use dramatis_llm::ScriptRule;
use dramatis_world::log::JetStreamLog;

/// A running cluster; dropped, it kills its nodes.
#[derive(Debug)]
pub struct NatsCluster(dramatis_eval::bench::nats::NatsCluster);

impl NatsCluster {
    /// Starts three clustered JetStream nodes; `None` (with a note on stderr) when
    /// `nats-server` is not installed, unless `CI` is set.
    pub async fn start() -> Option<Self> {
        let Some(program) = nats_server() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "nats-server is not installed: run `bash scripts/setup.sh --nats`"
            );
            eprintln!("SKIPPED: nats-server is absent; run `bash scripts/setup.sh --nats`");
            return None;
        };
        let cluster = dramatis_eval::bench::nats::NatsCluster::start(&program)
            .await
            .expect("a three-node NATS cluster starts");
        Some(Self(cluster))
    }

    /// A log on this cluster under `prefix`.
    pub async fn log(&self, prefix: &str) -> JetStreamLog {
        self.0.log(prefix).await.expect("a JetStream log")
    }

    /// A log on this cluster under `prefix` whose connection goes to node `i` (the
    /// client may move to another node when `i` dies).
    pub async fn log_on(&self, prefix: &str, i: usize) -> JetStreamLog {
        let mut options = self.0.options(prefix);
        options.servers = self.0.node_url(i);
        self.0.log_with(options).await.expect("a JetStream log")
    }

    /// Node `i`'s client address.
    #[must_use]
    pub fn node_url(&self, i: usize) -> String {
        self.0.node_url(i)
    }

    /// Kills node `i` (SIGKILL).
    pub fn kill_node(&mut self, i: usize) {
        self.0.kill_node(i);
    }

    /// Starts node `i` again with its store.
    pub fn start_node(&mut self, i: usize) {
        self.0.start_node(i).expect("the node starts again");
    }

    /// Every node's client address, comma-separated.
    #[must_use]
    pub fn url(&self) -> String {
        self.0.url()
    }

    /// The tail of every node's log file.
    #[must_use]
    pub fn logs(&self) -> String {
        self.0.logs()
    }
}

impl crate::Cluster {
    /// Like [`Cluster::start`], the world service logging to `log` (a JetStream log).
    pub async fn start_on_log(
        characters: &[&str],
        rules: &[ScriptRule],
        log: dramatis_world::log::SharedLog,
    ) -> Self {
        let mut cluster = Self::start(characters, rules).await;
        cluster.shared_log = Some(log);
        cluster.restart_world().await;
        cluster
    }
}
