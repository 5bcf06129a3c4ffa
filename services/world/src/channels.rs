//! Lazily connected gRPC channels, one per endpoint, shared by every caller of that
//! endpoint: the world's agents (`agent_clients`) and the other replicas
//! (`cluster::peers`).

use std::time::Duration;

use dashmap::DashMap;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

/// How often a connection to a peer is pinged, busy or idle.
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);

/// How long an unanswered ping waits before the connection is called dead: a frozen
/// peer is found within [`KEEPALIVE_INTERVAL`] + this.
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Channels by endpoint (`http://…` or `https://…`).
#[derive(Debug)]
pub struct Channels {
    channels: DashMap<String, Channel>,
    /// For `https://` endpoints; without it they are refused.
    tls: Option<ClientTlsConfig>,
    connect_timeout: Duration,
    /// The most any one call may take, if limited.
    call_deadline: Option<Duration>,
}

impl Channels {
    #[must_use]
    pub fn new(tls: Option<ClientTlsConfig>, connect_timeout: Duration) -> Self {
        Self {
            channels: DashMap::new(),
            tls,
            connect_timeout,
            call_deadline: None,
        }
    }

    /// The same, ending any call that takes longer than `deadline` with
    /// DEADLINE_EXCEEDED.
    #[must_use]
    pub fn with_call_deadline(mut self, deadline: Duration) -> Self {
        self.call_deadline = Some(deadline);
        self
    }

    /// The channel to `endpoint`, made (not yet connected) on first use. The error
    /// says what is wrong with the endpoint.
    pub fn get(&self, endpoint: &str) -> Result<Channel, String> {
        if let Some(channel) = self.channels.get(endpoint) {
            return Ok(channel.clone());
        }
        let target = self.target(endpoint, self.connect_timeout)?;
        Ok(self
            .channels
            .entry(endpoint.to_owned())
            .or_insert_with(|| target.connect_lazy())
            .clone())
    }

    /// A channel to `endpoint` of its own, not shared (a probe's, which must not
    /// depend on the state of a connection that just failed), giving up a connection
    /// attempt after `connect_timeout`.
    pub fn fresh(&self, endpoint: &str, connect_timeout: Duration) -> Result<Channel, String> {
        Ok(self.target(endpoint, connect_timeout)?.connect_lazy())
    }

    fn target(&self, endpoint: &str, connect_timeout: Duration) -> Result<Endpoint, String> {
        let mut target = Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| format!("bad endpoint {endpoint:?}: {e}"))?
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true)
            // A peer whose process is frozen (stopped, swapped out, wedged) keeps its
            // socket open: only an unanswered ping shows it. The connection is then
            // closed, failing the calls in flight, and the caller recovers the peer.
            .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
            .keep_alive_timeout(KEEPALIVE_TIMEOUT)
            .keep_alive_while_idle(true);
        if let Some(deadline) = self.call_deadline {
            target = target.timeout(deadline);
        }
        if endpoint.starts_with("https://") {
            let tls = self.tls.clone().ok_or_else(|| {
                format!("endpoint {endpoint:?} is https, but no TLS is configured")
            })?;
            // A peer that is frozen still accepts TCP connections (its kernel does),
            // but never finishes the handshake: without a deadline, a call waiting for
            // a new connection would wait without end.
            target = target
                .tls_config(tls.timeout(connect_timeout))
                .map_err(|e| format!("TLS for {endpoint:?}: {e}"))?;
        }
        Ok(target)
    }

    /// The channel to `endpoint` if one was made.
    #[must_use]
    pub fn existing(&self, endpoint: &str) -> Option<Channel> {
        self.channels.get(endpoint).map(|c| c.clone())
    }

    /// Drops the channel to `endpoint` (its server is gone).
    pub fn forget(&self, endpoint: &str) {
        self.channels.remove(endpoint);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Channels;

    /// A peer whose kernel accepts connections but whose process never answers (a
    /// stopped agent: the listener's backlog completes the TCP handshake): a call on
    /// a new connection to it fails once the TLS handshake's deadline passes. Before,
    /// it waited without end, and no recovery ever began.
    #[tokio::test]
    async fn a_call_to_a_peer_that_accepts_and_never_answers_fails_within_the_connect_timeout() {
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = silent.local_addr().expect("addr");
        let pki =
            dramatis_runtime::pki::DeploymentPki::generate(&[], &[], Duration::from_secs(3_600))
                .expect("a deployment's certificates");
        let channels = Channels::new(Some(pki.world_client_tls()), Duration::from_millis(500));
        let channel = channels.get(&format!("https://{addr}")).expect("a channel");
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        let call = health.check(tonic_health::pb::HealthCheckRequest::default());
        let failed = tokio::time::timeout(Duration::from_secs(20), call)
            .await
            .expect("the call waited on the handshake without end");
        assert_eq!(
            failed.expect_err("nothing answered").code(),
            tonic::Code::Unavailable
        );
        drop(silent);
    }
}
