//! Clients of the other replicas, for calls forwarded to a world's owner. A forwarded
//! call carries the caller's `authorization` (the owner checks the same tokens), the
//! current trace context (so the trace crosses the replica→owner hop), and a mark that
//! it was forwarded, so it is never forwarded twice.

use std::time::Duration;

use dramatis_proto::v1::world_client::WorldClient;
use tonic::metadata::MetadataMap;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, ClientTlsConfig};

use crate::channels::Channels;

/// The header a forwarded call carries.
pub const FORWARDED: &str = "dramatis-forwarded";

/// A client of one replica.
pub type PeerRpc = WorldClient<
    InterceptedService<
        Channel,
        fn(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status>,
    >,
>;

/// One lazily connected channel per replica endpoint.
#[derive(Debug)]
pub struct Peers {
    channels: Channels,
}

impl Default for Peers {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Peers {
    /// `tls`: for `https://` replica endpoints, the CA their certificates chain to
    /// (the system's roots are trusted too).
    #[must_use]
    pub fn new(tls: Option<ClientTlsConfig>) -> Self {
        Self {
            channels: Channels::new(
                Some(tls.unwrap_or_default().with_native_roots()),
                Duration::from_secs(2),
            ),
        }
    }

    /// A client of the replica at `endpoint`.
    pub fn client(&self, endpoint: &str) -> Result<PeerRpc, tonic::Status> {
        let channel = self
            .channels
            .get(endpoint)
            .map_err(|problem| tonic::Status::internal(format!("replica {problem}")))?;
        let interceptor: fn(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> =
            dramatis_runtime::telemetry::inject_trace_context;
        Ok(WorldClient::with_interceptor(channel, interceptor)
            .max_decoding_message_size(64 * 1024 * 1024))
    }

    /// Forgets the channel to a replica that did not answer.
    pub fn forget(&self, endpoint: &str) {
        self.channels.forget(endpoint);
    }

    /// Whether the replica at `endpoint` answers a health check within a second.
    pub async fn alive(&self, endpoint: &str) -> bool {
        let Some(channel) = self.channels.existing(endpoint) else {
            return false;
        };
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        let check = health.check(tonic_health::pb::HealthCheckRequest {
            service: String::new(),
        });
        matches!(
            tokio::time::timeout(Duration::from_secs(1), check).await,
            Ok(Ok(_))
        )
    }
}

/// `message` as a call forwarded on behalf of a caller whose metadata is `from`.
pub fn forwarded<T>(from: &MetadataMap, message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    if let Some(token) = from.get("authorization") {
        request
            .metadata_mut()
            .insert("authorization", token.clone());
    }
    request
        .metadata_mut()
        .insert(FORWARDED, tonic::metadata::MetadataValue::from_static("1"));
    request
}

/// Whether a call was forwarded by another replica.
#[must_use]
pub fn was_forwarded(metadata: &MetadataMap) -> bool {
    metadata.contains_key(FORWARDED)
}
