//! Connecting to a running world service as a client.

use dramatis_proto::v1::world_client::WorldClient;
use tonic::transport::Channel;

/// The world service could not be reached.
#[derive(Debug)]
pub struct ConnectError {
    pub url: String,
    pub source: tonic::transport::Error,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot reach the world service at {}", self.url)
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// A World client for `server` (`http://host:port`; a bare `host:port` works too).
pub async fn world_client(server: &str) -> Result<WorldClient<Channel>, ConnectError> {
    let url = if server.contains("://") {
        server.to_owned()
    } else {
        format!("http://{server}")
    };
    WorldClient::connect(url.clone())
        .await
        .map_err(|source| ConnectError { url, source })
}

/// A readable message for a failed call.
#[must_use]
pub fn describe(status: &tonic::Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}
