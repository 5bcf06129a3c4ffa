//! How the world service reaches character agents: an [`AgentDirectory`] says which
//! agent endpoint hosts a character; the [`AgentPool`] keeps one gRPC channel per
//! endpoint. The world knows agents only through `agent.proto`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use dramatis_proto::v1::agent_client::AgentClient;
use dramatis_proto::v1::{self as pb, act_response};
use tonic::Status;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, ClientTlsConfig};

use crate::channels::Channels;
use crate::error::WorldError;

/// A client of one agent service, carrying trace context on every call.
pub type AgentRpc = AgentClient<
    InterceptedService<
        Channel,
        fn(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status>,
    >,
>;

/// The items of one `Act` call, in order: tokens as the character says them, then its
/// action.
pub type ActItems = futures::stream::BoxStream<'static, Result<act_response::Item, Status>>;

/// What a world asks of the agent hosting one of its characters: the six calls of
/// `agent.proto`, so the orchestrator runs alike over the tonic client and over a
/// double in its tests. Errors are gRPC statuses, classified by supervision
/// (`world/agents.rs`): a transport failure is recovered, an answer is the caller's.
#[async_trait]
pub trait AgentPort: Send + Sync + std::fmt::Debug {
    /// Hosts the character (from its saved shard, if any); returns where its shard ends.
    async fn attach(&self, request: pb::AttachRequest) -> Result<pb::AttachResponse, Status>;
    /// Lets the character go, keeping or deleting its shard.
    async fn detach(&self, request: pb::DetachRequest) -> Result<(), Status>;
    /// Events the character perceived, in order.
    async fn perceive(&self, request: pb::PerceiveRequest) -> Result<(), Status>;
    /// The character's turn: its tokens, then its action.
    async fn act(&self, request: pb::ActRequest) -> Result<ActItems, Status>;
    /// An interview question, answered from the character's own shard.
    async fn answer(&self, request: pb::AnswerRequest) -> Result<pb::AnswerResponse, Status>;
    /// The character's shard, or a page of its prompt audit.
    async fn snapshot(&self, request: pb::SnapshotRequest) -> Result<pb::SnapshotResponse, Status>;
}

/// Where a world's [`AgentPort`]s come from: one per endpoint and character, a health
/// probe of an endpoint, and the end of an endpoint whose agent is gone.
#[async_trait]
pub trait AgentPorts: Send + Sync + std::fmt::Debug {
    /// A port to `character`'s agent at `endpoint`, connecting lazily.
    fn port(&self, endpoint: &str, character: &str) -> Result<Arc<dyn AgentPort>, WorldError>;
    /// Whether the agent at `endpoint` answers a health check in time: `Some(false)`
    /// when it refuses, `None` when no answer came (a frozen process).
    async fn probe(&self, endpoint: &str) -> Option<bool>;
    /// Drops what is kept for `endpoint` (its agent is gone).
    fn forget(&self, endpoint: &str);
}

/// The tonic client as an [`AgentPort`].
#[derive(Debug, Clone)]
pub struct TonicAgent(AgentRpc);

#[async_trait]
impl AgentPort for TonicAgent {
    async fn attach(&self, request: pb::AttachRequest) -> Result<pb::AttachResponse, Status> {
        Ok(self.0.clone().attach(request).await?.into_inner())
    }

    async fn detach(&self, request: pb::DetachRequest) -> Result<(), Status> {
        self.0.clone().detach(request).await.map(drop)
    }

    async fn perceive(&self, request: pb::PerceiveRequest) -> Result<(), Status> {
        self.0.clone().perceive(request).await.map(drop)
    }

    async fn act(&self, request: pb::ActRequest) -> Result<ActItems, Status> {
        use futures::StreamExt as _;
        let stream = self.0.clone().act(request).await?.into_inner();
        // A message with no item carries nothing: it is skipped, not a stream's end.
        Ok(stream
            .filter_map(|message| std::future::ready(message.map(|m| m.item).transpose()))
            .boxed())
    }

    async fn answer(&self, request: pb::AnswerRequest) -> Result<pb::AnswerResponse, Status> {
        Ok(self.0.clone().answer(request).await?.into_inner())
    }

    async fn snapshot(&self, request: pb::SnapshotRequest) -> Result<pb::SnapshotResponse, Status> {
        Ok(self.0.clone().snapshot(request).await?.into_inner())
    }
}

/// Decides which agent endpoint hosts each character.
#[async_trait]
pub trait AgentDirectory: Send + Sync + std::fmt::Debug {
    /// The endpoint (`http://host:port`) of the agent for `character` in `world`.
    async fn endpoint_for(&self, world_id: &str, character_id: &str) -> Result<String, WorldError>;

    /// A call to the agent at `endpoint` (hosting `character_id` of `world_id`) failed
    /// at the transport level, in the way `loss` says. Returns the endpoint to use from
    /// now on (a restarted agent, or the same one once it is back), or `None` when the
    /// agent is known to be alive, so the failure was its own answer and retrying would
    /// not help.
    async fn recover(
        &self,
        world_id: &str,
        character_id: &str,
        endpoint: &str,
        loss: Loss,
    ) -> Result<Option<String>, WorldError> {
        // An agent started elsewhere is restarted by whatever runs it (systemd,
        // Kubernetes): give it a moment, then try the same address again.
        let _ = (world_id, character_id, loss);
        tokio::time::sleep(RECONNECT_PAUSE).await;
        Ok(Some(endpoint.to_owned()))
    }

    /// The world is gone; agents started for it may stop.
    async fn release(&self, _world_id: &str) {}
}

/// How a call to an agent was lost at the transport level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// The connection broke or was refused: the agent died or restarts, or answered
    /// UNAVAILABLE itself (its model is down).
    Broken,
    /// The agent holds its socket but answers nothing, not even a health check within
    /// [`PROBE_DEADLINE`]: its process is stopped or wedged. Waiting will not help.
    Frozen,
}

/// How long a health check of an agent whose call failed may take before the agent is
/// called frozen.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(5);

/// The backstop on any one call to an agent: longer than a turn on the slowest model
/// (whose own calls have deadlines in the agent), so only a wedged agent reaches it.
/// A frozen process is found much sooner, by keepalive pings.
pub const AGENT_CALL_DEADLINE: Duration = Duration::from_secs(600);

/// The largest answer the world reads from an agent.
pub const AGENT_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How long the world waits before calling an agent started elsewhere again.
pub const RECONNECT_PAUSE: Duration = Duration::from_millis(500);

/// A fixed set of agent endpoints. Each character goes to the endpoint that ranks
/// first for it by rendezvous hashing (the highest hash of world, character and
/// endpoint), so every world-service replica, and the same replica after a restart,
/// places it on the same agent, and a change to the set moves only the characters of
/// the endpoints added or removed.
#[derive(Debug)]
pub struct StaticAgents {
    endpoints: Vec<String>,
}

impl StaticAgents {
    pub fn new(endpoints: Vec<String>) -> Result<Self, WorldError> {
        if endpoints.is_empty() {
            return Err(WorldError::InvalidArgument(
                "at least one agent endpoint is needed".into(),
            ));
        }
        Ok(Self { endpoints })
    }

    /// The endpoints in rendezvous order for `character` of `world`: best first.
    #[must_use]
    pub fn ranked(&self, world: &str, character: &str) -> Vec<&str> {
        let mut ranked: Vec<(u64, &str)> = self
            .endpoints
            .iter()
            .map(|endpoint| {
                (
                    rendezvous_weight(world, character, endpoint),
                    endpoint.as_str(),
                )
            })
            .collect();
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        ranked.into_iter().map(|(_, endpoint)| endpoint).collect()
    }
}

/// A stable 64-bit weight of (world, character, endpoint): the same in every process
/// and release (FNV-1a over the three, each ended by a zero byte).
#[must_use]
pub fn rendezvous_weight(world: &str, character: &str, endpoint: &str) -> u64 {
    use std::hash::Hasher as _;
    let mut hasher = fnv::FnvHasher::default();
    for part in [world, character, endpoint] {
        hasher.write(part.as_bytes());
        hasher.write_u8(0);
    }
    hasher.finish()
}

#[async_trait]
impl AgentDirectory for StaticAgents {
    async fn endpoint_for(&self, world: &str, character: &str) -> Result<String, WorldError> {
        Ok(self.ranked(world, character)[0].to_owned())
    }

    /// The same agent once it takes connections again (restarted where it ran), else
    /// the next in the character's rendezvous order that takes them: its characters
    /// move there (whole, when the agents keep shards in JetStream; otherwise the
    /// world sends them their story again). A frozen agent still takes connections, so
    /// its characters move at once. The same one when none answers.
    async fn recover(
        &self,
        world_id: &str,
        character_id: &str,
        endpoint: &str,
        loss: Loss,
    ) -> Result<Option<String>, WorldError> {
        tokio::time::sleep(RECONNECT_PAUSE).await;
        if loss == Loss::Broken && accepts_connections(endpoint).await {
            return Ok(Some(endpoint.to_owned()));
        }
        for candidate in self.ranked(world_id, character_id) {
            if candidate != endpoint && accepts_connections(candidate).await {
                tracing::warn!(
                    world_id,
                    character = character_id,
                    dead = endpoint,
                    fresh = candidate,
                    "agent does not answer; its character moves"
                );
                return Ok(Some(candidate.to_owned()));
            }
        }
        Ok(Some(endpoint.to_owned()))
    }
}

/// Whether something listens at `endpoint`'s host and port (within a second): a
/// killed agent's port refuses at once.
async fn accepts_connections(endpoint: &str) -> bool {
    let Ok(uri) = endpoint.parse::<tonic::codegen::http::Uri>() else {
        return false;
    };
    let Some(host) = uri.host() else {
        return false;
    };
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    let host = host.trim_start_matches('[').trim_end_matches(']');
    matches!(
        tokio::time::timeout(
            Duration::from_secs(1),
            tokio::net::TcpStream::connect((host, port))
        )
        .await,
        Ok(Ok(_))
    )
}

/// Agents found by DNS: every address a name resolves to (a Kubernetes headless
/// service lists its ready pods), looked up again at most every [`DNS_REFRESH`], each
/// character on the address that ranks first for it by rendezvous hashing. When an
/// agent dies and its address leaves the name, its characters go to their next choice.
#[derive(Debug)]
pub struct DnsAgents {
    /// `http` or `https`.
    scheme: &'static str,
    host: String,
    port: u16,
    current: tokio::sync::Mutex<(std::time::Instant, Option<StaticAgents>)>,
}

/// How long a DNS answer is used before asking again.
pub const DNS_REFRESH: Duration = Duration::from_secs(5);

impl DnsAgents {
    /// From `dns://HOST:PORT` (plain) or `dns+https://HOST:PORT` (mutual TLS, the
    /// agents' certificate naming HOST); `None` for any other endpoint.
    pub fn parse(endpoint: &str) -> Option<Result<Self, WorldError>> {
        let (scheme, rest) = if let Some(rest) = endpoint.strip_prefix("dns://") {
            ("http", rest)
        } else if let Some(rest) = endpoint.strip_prefix("dns+https://") {
            ("https", rest)
        } else {
            return None;
        };
        let bad = || {
            WorldError::InvalidArgument(format!(
                "agent endpoint {endpoint:?}: give dns://HOST:PORT or dns+https://HOST:PORT"
            ))
        };
        let parsed = rest
            .trim_end_matches('/')
            .rsplit_once(':')
            .and_then(|(host, port)| Some((host, port.parse::<u16>().ok()?)))
            .filter(|(host, _)| !host.is_empty())
            .ok_or_else(bad);
        Some(parsed.map(|(host, port)| Self {
            scheme,
            host: host.to_owned(),
            port,
            current: tokio::sync::Mutex::new((std::time::Instant::now(), None)),
        }))
    }

    /// The name the agents' certificate must carry (for `dns+https`).
    #[must_use]
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The agents the name resolves to now (cached for [`DNS_REFRESH`]).
    async fn agents<T>(
        &self,
        force: bool,
        pick: impl FnOnce(&StaticAgents) -> T,
    ) -> Result<T, WorldError> {
        let mut current = self.current.lock().await;
        let stale = current.0.elapsed() >= DNS_REFRESH;
        if force || stale || current.1.is_none() {
            let mut addresses: Vec<String> =
                tokio::net::lookup_host((self.host.as_str(), self.port))
                    .await
                    .map_err(|e| WorldError::Agent {
                        character: String::new(),
                        kind: dramatis_proto::ErrorKind::Unavailable,
                        message: format!("cannot resolve agents at {}: {e}", self.host),
                    })?
                    .map(|addr| format!("{}://{addr}", self.scheme))
                    .collect();
            addresses.sort();
            addresses.dedup();
            match StaticAgents::new(addresses) {
                Ok(found) => *current = (std::time::Instant::now(), Some(found)),
                // No agent now: keep the last answer, if there was one.
                Err(_) if current.1.is_some() => {}
                Err(_) => {
                    return Err(WorldError::Agent {
                        character: String::new(),
                        kind: dramatis_proto::ErrorKind::Unavailable,
                        message: format!("{} resolves to no agent", self.host),
                    });
                }
            }
        }
        Ok(pick(current.1.as_ref().expect("set above")))
    }
}

#[async_trait]
impl AgentDirectory for DnsAgents {
    async fn endpoint_for(&self, world: &str, character: &str) -> Result<String, WorldError> {
        self.agents(false, |agents| {
            agents.ranked(world, character)[0].to_owned()
        })
        .await
    }

    async fn recover(
        &self,
        world_id: &str,
        character_id: &str,
        endpoint: &str,
        _loss: Loss,
    ) -> Result<Option<String>, WorldError> {
        // A restarted pod comes back under a new address: give DNS a moment, then
        // place the character again among the agents there are now.
        tokio::time::sleep(RECONNECT_PAUSE).await;
        let fresh = self
            .agents(true, |agents| {
                agents.ranked(world_id, character_id)[0].to_owned()
            })
            .await?;
        if fresh != endpoint {
            tracing::warn!(world_id, character = character_id, dead = endpoint, %fresh,
                "agent gone from DNS; its character moves");
        }
        Ok(Some(fresh))
    }
}

/// One channel per agent endpoint, shared by every character hosted there.
#[derive(Debug, Clone)]
pub struct AgentPool {
    /// For `https://` endpoints: the deployment's CA and the world's certificate.
    channels: Arc<Channels>,
}

impl Default for AgentPool {
    fn default() -> Self {
        Self::new(None)
    }
}

impl AgentPool {
    #[must_use]
    pub fn new(tls: Option<ClientTlsConfig>) -> Self {
        Self {
            channels: Arc::new(
                Channels::new(tls, Duration::from_secs(5)).with_call_deadline(AGENT_CALL_DEADLINE),
            ),
        }
    }

    /// Drops the channel to `endpoint` (its agent is gone).
    pub fn forget(&self, endpoint: &str) {
        self.channels.forget(endpoint);
    }

    /// Whether the agent at `endpoint` answers a health check within
    /// [`PROBE_DEADLINE`], on a connection of the probe's own. A refused connection
    /// answers at once, with `Some(false)`; `None` means no answer came in time (a
    /// frozen process's kernel still accepts the connection, and then nothing more).
    pub async fn probe(&self, endpoint: &str) -> Option<bool> {
        // The connection attempt outlasts the probe: only the deadline decides.
        let Ok(channel) = self.channels.fresh(endpoint, PROBE_DEADLINE * 2) else {
            return Some(false);
        };
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        let check = health.check(tonic_health::pb::HealthCheckRequest {
            service: "dramatis.v1.Agent".into(),
        });
        tokio::time::timeout(PROBE_DEADLINE, check)
            .await
            .ok()
            .map(|answer| answer.is_ok())
    }

    /// A client for `endpoint`, connecting lazily.
    pub fn client(&self, endpoint: &str, character: &str) -> Result<AgentRpc, WorldError> {
        let channel = self
            .channels
            .get(endpoint)
            .map_err(|problem| WorldError::Agent {
                character: character.to_owned(),
                kind: dramatis_proto::ErrorKind::InvalidArgument,
                message: format!(
                    "agent {problem}{}",
                    if problem.contains("no TLS") {
                        " (serve --agent-tls DIR)"
                    } else {
                        ""
                    }
                ),
            })?;
        let interceptor: fn(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> =
            dramatis_runtime::telemetry::inject_trace_context;
        // A snapshot of a large shard is large; the audit comes in pages.
        Ok(AgentClient::with_interceptor(channel, interceptor)
            .max_decoding_message_size(AGENT_MESSAGE_BYTES))
    }
}

#[async_trait]
impl AgentPorts for AgentPool {
    fn port(&self, endpoint: &str, character: &str) -> Result<Arc<dyn AgentPort>, WorldError> {
        Ok(Arc::new(TonicAgent(self.client(endpoint, character)?)))
    }

    async fn probe(&self, endpoint: &str) -> Option<bool> {
        AgentPool::probe(self, endpoint).await
    }

    fn forget(&self, endpoint: &str) {
        AgentPool::forget(self, endpoint);
    }
}

/// What a world needs to reach its agents and to recover them when one dies.
#[derive(Debug, Clone)]
pub struct AgentLinks {
    pub directory: Arc<dyn AgentDirectory>,
    pub pool: Arc<dyn AgentPorts>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendezvous_places_alike_everywhere_spreads_and_moves_only_the_lost() {
        let endpoints: Vec<String> = (0..4).map(|i| format!("http://agent-{i}:7071")).collect();
        let all = StaticAgents::new(endpoints.clone()).expect("agents");
        // Listed in another order (another replica's configuration), same placement.
        let mut reversed = endpoints.clone();
        reversed.reverse();
        let other = StaticAgents::new(reversed).expect("agents");
        let mut per_endpoint = std::collections::BTreeMap::<&str, usize>::new();
        let characters: Vec<String> = (0..400).map(|i| format!("c{i}")).collect();
        for c in &characters {
            let first = all.ranked("w", c)[0];
            assert_eq!(first, other.ranked("w", c)[0]);
            *per_endpoint.entry(first).or_default() += 1;
        }
        assert_eq!(per_endpoint.len(), 4, "every agent gets characters");
        assert!(
            per_endpoint.values().all(|&n| (60..=140).contains(&n)),
            "{per_endpoint:?}"
        );
        // Without agent-3, only agent-3's characters move, each to its second choice.
        let fewer = StaticAgents::new(endpoints[..3].to_vec()).expect("agents");
        for c in &characters {
            let before = all.ranked("w", c);
            let after = fewer.ranked("w", c)[0];
            if before[0] == endpoints[3] {
                assert_eq!(after, before[1]);
            } else {
                assert_eq!(after, before[0]);
            }
        }
        // The weight is fixed across releases: a change would move every character.
        assert_eq!(rendezvous_weight("w", "c", "e"), 0xfc73_60f0_6c92_98ec);
        assert_eq!(
            rendezvous_weight("w", "c", "e"),
            rendezvous_weight("w", "c", "e")
        );
        assert_ne!(
            rendezvous_weight("w", "c", "e"),
            rendezvous_weight("w", "ce", "")
        );
    }
}

#[cfg(test)]
mod dns_tests {
    use super::*;

    #[tokio::test]
    async fn dns_endpoints_resolve_to_every_address_and_place_characters_alike() {
        let agents = DnsAgents::parse("dns://localhost:7071")
            .expect("a dns endpoint")
            .expect("valid");
        let endpoint = agents.endpoint_for("w", "holmes").await.expect("placed");
        assert!(
            endpoint == "http://127.0.0.1:7071" || endpoint == "http://[::1]:7071",
            "{endpoint}"
        );
        assert_eq!(
            agents.endpoint_for("w", "holmes").await.expect("placed"),
            endpoint
        );
        let tls = DnsAgents::parse("dns+https://agents.svc:7071")
            .expect("a dns endpoint")
            .expect("valid");
        assert_eq!((tls.scheme, tls.host()), ("https", "agents.svc"));
        for bad in ["dns://agents", "dns://:7071", "dns+https://agents:port"] {
            assert!(matches!(
                DnsAgents::parse(bad),
                Some(Err(WorldError::InvalidArgument(_)))
            ));
        }
        assert!(DnsAgents::parse("http://127.0.0.1:7071").is_none());
    }
}
