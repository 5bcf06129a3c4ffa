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

/// Creates a world from a scenario file (its absolute path is sent); returns its id.
pub async fn create_world_from_file(
    client: &mut WorldClient<Channel>,
    scenario_path: &std::path::Path,
) -> anyhow::Result<String> {
    let path = std::fs::canonicalize(scenario_path).unwrap_or_else(|_| scenario_path.to_path_buf());
    Ok(client
        .create_world(dramatis_proto::v1::CreateWorldRequest {
            source: Some(
                dramatis_proto::v1::create_world_request::Source::ScenarioPath(
                    path.to_string_lossy().into_owned(),
                ),
            ),
            world_id: String::new(),
        })
        .await
        .map_err(|s| anyhow::anyhow!("cannot create the world: {}", describe(&s)))?
        .into_inner()
        .world_id)
}

/// A readable message for a failed call.
pub fn describe(status: &tonic::Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}
