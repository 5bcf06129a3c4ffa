//! Connecting to a running world service as a client.

use anyhow::Context as _;
use dramatis_proto::v1::world_client::WorldClient;
use tonic::transport::Channel;

/// A World client for `server` (`http://host:port`; a bare `host:port` works too).
pub async fn world_client(server: &str) -> anyhow::Result<WorldClient<Channel>> {
    let url = if server.contains("://") {
        server.to_owned()
    } else {
        format!("http://{server}")
    };
    WorldClient::connect(url.clone())
        .await
        .with_context(|| format!("cannot reach the world service at {url}"))
}

/// A readable message for a failed call.
pub fn describe(status: &tonic::Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}
