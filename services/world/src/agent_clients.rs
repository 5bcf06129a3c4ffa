//! How the world service reaches character agents: an [`AgentDirectory`] says which
//! agent endpoint hosts a character; the [`AgentPool`] keeps one gRPC channel per
//! endpoint. The world knows agents only through `agent.proto`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use dashmap::DashMap;
use dramatis_proto::v1::agent_client::AgentClient;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use crate::WorldError;

/// A client of one agent service, carrying trace context on every call.
pub type AgentRpc = AgentClient<
    InterceptedService<
        Channel,
        fn(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status>,
    >,
>;

/// Decides which agent endpoint hosts each character.
#[async_trait]
pub trait AgentDirectory: Send + Sync + std::fmt::Debug {
    /// The endpoint (`http://host:port`) of the agent for `character` in `world`.
    async fn endpoint_for(&self, world_id: &str, character_id: &str) -> Result<String, WorldError>;

    /// A call to the agent at `endpoint` (hosting `character_id` of `world_id`) failed
    /// at the transport level. Returns the endpoint to use from now on (a restarted
    /// agent, or the same one once it is back), or `None` when the agent is known to
    /// be alive, so the failure was its own answer and retrying would not help.
    async fn recover(
        &self,
        world_id: &str,
        character_id: &str,
        endpoint: &str,
    ) -> Result<Option<String>, WorldError> {
        // An agent started elsewhere is restarted by whatever runs it (systemd,
        // Kubernetes): give it a moment, then try the same address again.
        let _ = (world_id, character_id);
        tokio::time::sleep(RECONNECT_PAUSE).await;
        Ok(Some(endpoint.to_owned()))
    }

    /// The world is gone; agents started for it may stop.
    async fn release(&self, _world_id: &str) {}
}

/// How long the world waits before calling an agent started elsewhere again.
pub const RECONNECT_PAUSE: Duration = Duration::from_millis(500);

/// A fixed set of agent endpoints, characters spread over them in turn.
#[derive(Debug)]
pub struct StaticAgents {
    endpoints: Vec<String>,
    next: AtomicUsize,
}

impl StaticAgents {
    pub fn new(endpoints: Vec<String>) -> Result<Self, WorldError> {
        if endpoints.is_empty() {
            return Err(WorldError::InvalidArgument(
                "at least one agent endpoint is needed".into(),
            ));
        }
        Ok(Self {
            endpoints,
            next: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl AgentDirectory for StaticAgents {
    async fn endpoint_for(&self, _world: &str, _character: &str) -> Result<String, WorldError> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.endpoints.len();
        Ok(self.endpoints[i].clone())
    }
}

/// One channel per agent endpoint, shared by every character hosted there.
#[derive(Debug, Clone, Default)]
pub struct AgentPool {
    channels: Arc<DashMap<String, Channel>>,
    /// For `https://` endpoints: the deployment's CA and the world's certificate.
    tls: Option<ClientTlsConfig>,
}

impl AgentPool {
    #[must_use]
    pub fn new(tls: Option<ClientTlsConfig>) -> Self {
        Self {
            channels: Arc::default(),
            tls,
        }
    }

    /// Drops the channel to `endpoint` (its agent is gone).
    pub fn forget(&self, endpoint: &str) {
        self.channels.remove(endpoint);
    }

    /// A client for `endpoint`, connecting lazily.
    pub fn client(&self, endpoint: &str, character: &str) -> Result<AgentRpc, WorldError> {
        let channel = match self.channels.get(endpoint) {
            Some(channel) => channel.clone(),
            None => {
                let bad = |message: String| WorldError::Agent {
                    character: character.to_owned(),
                    kind: dramatis_proto::ErrorKind::InvalidArgument,
                    message,
                };
                let mut target = Endpoint::from_shared(endpoint.to_owned())
                    .map_err(|e| bad(format!("bad agent endpoint {endpoint:?}: {e}")))?
                    .connect_timeout(Duration::from_secs(5))
                    .tcp_nodelay(true);
                if endpoint.starts_with("https://") {
                    let tls = self.tls.clone().ok_or_else(|| {
                        bad(format!(
                            "agent endpoint {endpoint:?} is https, but no agent certificates \
                             are configured (serve --agent-tls DIR)"
                        ))
                    })?;
                    target = target
                        .tls_config(tls)
                        .map_err(|e| bad(format!("agent TLS for {endpoint:?}: {e}")))?;
                }
                let channel = target.connect_lazy();
                self.channels
                    .entry(endpoint.to_owned())
                    .or_insert(channel)
                    .clone()
            }
        };
        let interceptor: fn(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> =
            dramatis_runtime::telemetry::inject_trace_context;
        Ok(AgentClient::with_interceptor(channel, interceptor))
    }
}

/// What a world needs to reach its agents and to recover them when one dies.
#[derive(Debug, Clone)]
pub struct AgentLinks {
    pub directory: Arc<dyn AgentDirectory>,
    pub pool: AgentPool,
}
