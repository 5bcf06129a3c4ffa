//! Lazily connected gRPC channels, one per endpoint, shared by every caller of that
//! endpoint: the world's agents (`agent_clients`) and the other replicas
//! (`cluster::peers`).

use std::time::Duration;

use dashmap::DashMap;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

/// Channels by endpoint (`http://…` or `https://…`).
#[derive(Debug)]
pub struct Channels {
    channels: DashMap<String, Channel>,
    /// For `https://` endpoints; without it they are refused.
    tls: Option<ClientTlsConfig>,
    connect_timeout: Duration,
}

impl Channels {
    #[must_use]
    pub fn new(tls: Option<ClientTlsConfig>, connect_timeout: Duration) -> Self {
        Self {
            channels: DashMap::new(),
            tls,
            connect_timeout,
        }
    }

    /// The channel to `endpoint`, made (not yet connected) on first use. The error
    /// says what is wrong with the endpoint.
    pub fn get(&self, endpoint: &str) -> Result<Channel, String> {
        if let Some(channel) = self.channels.get(endpoint) {
            return Ok(channel.clone());
        }
        let mut target = Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| format!("bad endpoint {endpoint:?}: {e}"))?
            .connect_timeout(self.connect_timeout)
            .tcp_nodelay(true);
        if endpoint.starts_with("https://") {
            let tls = self.tls.clone().ok_or_else(|| {
                format!("endpoint {endpoint:?} is https, but no TLS is configured")
            })?;
            target = target
                .tls_config(tls)
                .map_err(|e| format!("TLS for {endpoint:?}: {e}"))?;
        }
        Ok(self
            .channels
            .entry(endpoint.to_owned())
            .or_insert_with(|| target.connect_lazy())
            .clone())
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
