//! Test harness: a real world service and real agent services on loopback ports, one
//! agent per character, each with its own scripted model so tests can read exactly
//! what each character's agent sent to its language model.

mod calls;
pub mod nats;
mod rules;

pub use calls::{advance, assert_refused, replay_as, world_info};
pub use rules::holmes_in_the_lab_says;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use dramatis_character::{AgentOptions, CharacterAgents};
use dramatis_embed::{Embedder, FakeEmbedder, OnnxEmbedder, OnnxEmbedderConfig};
use dramatis_llm::{RoleModels, ScriptRule, ScriptedModel};
use dramatis_proto::v1::agent_client::AgentClient;
use dramatis_proto::v1::world_client::WorldClient;
use dramatis_runtime::Shutdown;
use dramatis_runtime::auth::{Access, Tokens};
use dramatis_runtime::grpc::Security;
use dramatis_runtime::pki::DeploymentPki;
use dramatis_world::agent_clients::AgentDirectory;
use dramatis_world::{WorldError, WorldServiceOptions};
use tonic::transport::{Channel, ClientTlsConfig};

/// The repository root.
#[must_use]
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// Shipped scenarios.
#[must_use]
pub fn scenarios_dir() -> PathBuf {
    repo_root().join("scenarios")
}

/// Places each character on its own agent endpoint.
#[derive(Debug)]
struct MappedAgents(BTreeMap<String, String>);

#[async_trait]
impl AgentDirectory for MappedAgents {
    async fn endpoint_for(&self, _world: &str, character: &str) -> Result<String, WorldError> {
        self.0
            .get(character)
            .cloned()
            .ok_or_else(|| WorldError::InvalidArgument(format!("no agent for {character}")))
    }
}

/// One agent service of the cluster.
#[derive(Debug, Clone)]
pub struct TestAgent {
    pub endpoint: String,
    pub model: ScriptedModel,
    /// In a secured cluster: the world's certificate, which the agent accepts.
    tls: Option<ClientTlsConfig>,
}

impl TestAgent {
    /// A client as the world service connects (with its certificate when secured).
    pub async fn client(&self) -> AgentClient<Channel> {
        AgentClient::new(channel(&self.endpoint, self.tls.clone()).await)
    }
}

/// A connected channel to `endpoint`, over TLS when `tls` is given.
pub async fn channel(endpoint: &str, tls: Option<ClientTlsConfig>) -> Channel {
    let mut target = Channel::from_shared(endpoint.to_owned()).expect("endpoint");
    if let Some(tls) = tls {
        target = target.tls_config(tls).expect("tls config");
    }
    target.connect().await.expect("reachable")
}

/// A secured cluster's credentials: the deployment's certificates (agents take only
/// the world's; clients reach the world over TLS trusting its CA) and the tokens the
/// world service takes.
#[derive(Debug, Clone)]
pub struct Secured {
    pub pki: DeploymentPki,
    pub tokens: Arc<Tokens>,
}

impl Secured {
    /// A client TLS configuration trusting the deployment's CA, with no certificate.
    #[must_use]
    pub fn client_tls(&self) -> ClientTlsConfig {
        ClientTlsConfig::new().ca_certificate(tonic::transport::Certificate::from_pem(&self.pki.ca))
    }
}

/// A running world service with one agent service per character.
#[derive(Debug)]
pub struct Cluster {
    pub world_endpoint: String,
    pub agents: BTreeMap<String, TestAgent>,
    /// The narrator of open stories (answers from the same rules).
    pub narrator: ScriptedModel,
    pub shutdown: Shutdown,
    pub data: tempfile::TempDir,
    world_shutdown: Shutdown,
    /// The world service's limits (defaults unless set by [`Cluster::start_limited`]).
    pub limits: dramatis_world::Limits,
    world_task: Option<tokio::task::JoinHandle<Result<(), dramatis_world::ServeError>>>,
    /// Set by [`Cluster::start_secured`].
    pub secured: Option<Secured>,
    /// The world service's log when it is shared (set by [`Cluster::start_on_log`]);
    /// else a redb file in `data`.
    shared_log: Option<dramatis_world::log::SharedLog>,
}

/// The embedder test agents use: the real ONNX model when set-up has fetched it, else
/// the deterministic fake (with a note on stderr).
#[must_use]
pub fn test_embedder() -> Arc<dyn Embedder> {
    use dramatis_runtime::models::{DEFAULT_EMBEDDER_DIR, ONNX_RUNTIME_LIBRARY};
    let models = repo_root().join("models");
    let config = OnnxEmbedderConfig::new(
        models.join(DEFAULT_EMBEDDER_DIR),
        models.join(ONNX_RUNTIME_LIBRARY),
    );
    match OnnxEmbedder::load(&config) {
        Ok(embedder) => Arc::new(embedder),
        Err(e) => {
            eprintln!("using the fake embedder: {e}");
            Arc::new(FakeEmbedder::new(64))
        }
    }
}

impl Cluster {
    /// Starts agents for `characters` (all answering from `rules`, embedding with the
    /// fake embedder) and a world service.
    pub async fn start(characters: &[&str], rules: &[ScriptRule]) -> Self {
        Self::start_with(characters, rules, Arc::new(FakeEmbedder::new(64))).await
    }

    /// Like [`Cluster::start`], with the given embedder in every agent.
    pub async fn start_with(
        characters: &[&str],
        rules: &[ScriptRule],
        embedder: Arc<dyn Embedder>,
    ) -> Self {
        Self::start_configured(characters, rules, embedder, |_| {}).await
    }

    /// Like [`Cluster::start_with`], with every agent's options adjusted by `configure`.
    pub async fn start_configured(
        characters: &[&str],
        rules: &[ScriptRule],
        embedder: Arc<dyn Embedder>,
        configure: impl Fn(&mut AgentOptions),
    ) -> Self {
        Self::launch(characters, rules, embedder, configure, None).await
    }

    /// Like [`Cluster::start_with`], with every character hosted by one agent service
    /// (one embedder, one model, every shard in one process), as the pool layout hosts
    /// them: [`Cluster::agent`] gives the same agent for each.
    pub async fn start_shared(
        characters: &[&str],
        rules: &[ScriptRule],
        embedder: Arc<dyn Embedder>,
    ) -> Self {
        Self::launch_hosted(characters, rules, embedder, |_| {}, None, true).await
    }

    /// Like [`Cluster::start`], secured as a deployment exposed to others: agents take
    /// only the world's certificate (mutual TLS with a CA made here), and the world
    /// service serves TLS and takes the bearer tokens in `tokens` (`ROLE TOKEN` lines).
    pub async fn start_secured(characters: &[&str], rules: &[ScriptRule], tokens: &str) -> Self {
        let secured = Secured {
            pki: DeploymentPki::generate(&[], &[], std::time::Duration::from_secs(3600))
                .expect("certificates"),
            tokens: Arc::new(Tokens::parse(tokens, "test tokens").expect("tokens")),
        };
        Self::launch(
            characters,
            rules,
            Arc::new(FakeEmbedder::new(64)),
            |_| {},
            Some(secured),
        )
        .await
    }

    async fn launch(
        characters: &[&str],
        rules: &[ScriptRule],
        embedder: Arc<dyn Embedder>,
        configure: impl Fn(&mut AgentOptions),
        secured: Option<Secured>,
    ) -> Self {
        Self::launch_hosted(characters, rules, embedder, configure, secured, false).await
    }

    /// Starts the agents (one service per character, or one for all when `shared`) and
    /// the world service.
    async fn launch_hosted(
        characters: &[&str],
        rules: &[ScriptRule],
        embedder: Arc<dyn Embedder>,
        configure: impl Fn(&mut AgentOptions),
        secured: Option<Secured>,
        shared: bool,
    ) -> Self {
        let shutdown = Shutdown::new();
        let mut agents = BTreeMap::new();
        let data = tempfile::tempdir().expect("tempdir");
        let pki_dir = data.path().join("pki");
        if let Some(secured) = &secured {
            secured.pki.write_all(&pki_dir).expect("write certificates");
        }
        for character in characters {
            if shared && let Some(host) = agents.values().next().cloned() {
                agents.insert((*character).to_owned(), host);
                continue;
            }
            let model = ScriptedModel::new(rules.to_vec());
            let mut options = AgentOptions::new(
                RoleModels::uniform(Arc::new(model.clone())),
                Arc::clone(&embedder),
            );
            let folder = if shared { "shared" } else { character };
            options.data_dir = Some(data.path().join("agents").join(folder));
            configure(&mut options);
            let service = CharacterAgents::new(options);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind agent");
            let addr = listener.local_addr().expect("agent addr");
            let (security, endpoint, tls) = match &secured {
                None => (Security::open(), format!("http://{addr}"), None),
                Some(secured) => (
                    Security {
                        tls: Some(
                            dramatis_runtime::pki::agent_server_tls(&pki_dir).expect("agent tls"),
                        ),
                        access: Access::PeerCertificate,
                    },
                    format!("https://{addr}"),
                    Some(secured.pki.world_client_tls()),
                ),
            };
            tokio::spawn(dramatis_character::run(
                listener,
                service,
                security,
                shutdown.clone(),
            ));
            agents.insert(
                (*character).to_owned(),
                TestAgent {
                    endpoint,
                    model,
                    tls,
                },
            );
        }
        let mut cluster = Self {
            world_endpoint: String::new(),
            agents,
            narrator: ScriptedModel::new(rules.to_vec()),
            shutdown,
            data,
            world_shutdown: Shutdown::new(),
            limits: dramatis_world::Limits::default(),
            world_task: None,
            secured,
            shared_log: None,
        };
        cluster.start_world().await;
        cluster
    }

    /// Like [`Cluster::start`], with the world service's limits set.
    pub async fn start_limited(
        characters: &[&str],
        rules: &[ScriptRule],
        limits: dramatis_world::Limits,
    ) -> Self {
        let mut cluster = Self::start(characters, rules).await;
        cluster.limits = limits;
        cluster.restart_world().await;
        cluster
    }

    async fn start_world(&mut self) {
        let directory = MappedAgents(
            self.agents
                .iter()
                .map(|(c, a)| (c.clone(), a.endpoint.clone()))
                .collect(),
        );
        let options = WorldServiceOptions {
            scenarios_dir: scenarios_dir(),
            // The tests create worlds from files anywhere in the repository.
            scenario_roots: vec![repo_root()],
            log_path: self.data.path().join("events.redb"),
            shared_log: self.shared_log.clone(),
            cluster: None,
            agents: Arc::new(directory),
            narrator: Some(Arc::new(self.narrator.clone())),
            viewer_dir: Some(repo_root().join("web")),
            limits: self.limits.clone(),
            tls: self.secured.as_ref().map(|_| {
                let dir = self.data.path().join("pki");
                dramatis_runtime::pki::server_tls(
                    &dir.join(dramatis_runtime::pki::WORLD_CERT_FILE),
                    &dir.join(dramatis_runtime::pki::WORLD_KEY_FILE),
                )
                .expect("world tls")
            }),
            tokens: self.secured.as_ref().map(|s| Arc::clone(&s.tokens)),
            agent_tls: self.secured.as_ref().map(|s| s.pki.world_client_tls()),
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind world");
        let scheme = if self.secured.is_some() {
            "https"
        } else {
            "http"
        };
        self.world_endpoint = format!("{scheme}://{}", listener.local_addr().expect("world addr"));
        self.world_shutdown = Shutdown::new();
        self.world_task = Some(tokio::spawn(dramatis_world::run(
            listener,
            options,
            self.world_shutdown.clone(),
        )));
    }

    /// Stops the world service (agents keep running) and starts a new one on the same
    /// event log, at a new address.
    pub async fn restart_world(&mut self) {
        self.world_shutdown.trigger();
        if let Some(task) = self.world_task.take() {
            task.await
                .expect("world task")
                .expect("world service stopped cleanly");
        }
        self.start_world().await;
    }

    /// What `character`'s agent holds for `world` (its shard and prompt record).
    pub async fn snapshot(
        &self,
        world: &str,
        character: &str,
    ) -> dramatis_proto::v1::SnapshotResponse {
        self.agent(character)
            .client()
            .await
            .snapshot(dramatis_proto::v1::SnapshotRequest {
                character: Some(dramatis_proto::v1::CharacterRef {
                    world_id: world.into(),
                    character_id: character.into(),
                }),
                ..Default::default()
            })
            .await
            .expect("snapshot")
            .into_inner()
    }

    /// The texts of everything `character`'s shard holds for `world`, one per line.
    pub async fn shard_text(&self, world: &str, character: &str) -> String {
        self.snapshot(world, character)
            .await
            .memory
            .iter()
            .map(|m| m.text.clone())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Asks `character` in `world`; with `recall_only`, only what comes to mind.
    pub async fn ask(
        &self,
        world: &str,
        character: &str,
        question: &str,
        recall_only: bool,
    ) -> dramatis_proto::v1::AskResponse {
        self.world()
            .await
            .ask(dramatis_proto::v1::AskRequest {
                world_id: world.into(),
                character: character.into(),
                question: question.into(),
                recall_only,
                options: Vec::new(),
                as_of: None,
            })
            .await
            .expect("ask")
            .into_inner()
    }

    /// The prompt audit of `character` (id, name or alias) in world `world`.
    pub async fn audit(
        &self,
        world: &str,
        character: &str,
    ) -> Vec<dramatis_proto::v1::CharacterAudit> {
        let client = self.world().await;
        dramatis_proto::audit::read_all_pages(|page_token| {
            let mut client = client.clone();
            let request = dramatis_proto::v1::GetAuditRequest {
                world_id: world.into(),
                character: character.into(),
                page_token,
                ..dramatis_proto::v1::GetAuditRequest::default()
            };
            async move { client.get_audit(request).await.map(|r| r.into_inner()) }
        })
        .await
        .expect("audit")
    }

    /// Creates a world of the shipped `scenario` with id `id`; returns its id.
    pub async fn create(&self, scenario: &str, id: &str) -> String {
        self.world()
            .await
            .create_world(dramatis_proto::v1::CreateWorldRequest {
                source: Some(
                    dramatis_proto::v1::create_world_request::Source::ScenarioName(scenario.into()),
                ),
                world_id: id.into(),
                ..Default::default()
            })
            .await
            .expect("world created")
            .into_inner()
            .world_id
    }

    /// A World client (over TLS trusting the deployment's CA when secured; it sends
    /// no token).
    pub async fn world(&self) -> WorldClient<Channel> {
        WorldClient::new(
            channel(
                &self.world_endpoint,
                self.secured.as_ref().map(Secured::client_tls),
            )
            .await,
        )
    }

    #[must_use]
    pub fn agent(&self, character: &str) -> &TestAgent {
        &self.agents[character]
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.world_shutdown.trigger();
        self.shutdown.trigger();
    }
}
