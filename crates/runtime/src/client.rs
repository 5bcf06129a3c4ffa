//! Connecting to a running world service as a client: plain or TLS, with a bearer
//! token on every call when one is given; and the round every driver of a story makes
//! (create, watch, advance), written once.

use std::path::PathBuf;

use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{
    AdvanceRequest, AdvanceResponse, CreateWorldRequest, WatchRequest, WatchResponse, WorldInfo,
    advance_request, create_world_request,
};
use tonic::Streaming;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

/// A World client as every Dramatis command holds it.
pub type WorldRpc = WorldClient<InterceptedService<Channel, Bearer>>;

/// Where the world service is and how to prove who is calling.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// `http://host:port`, `https://host:port`, or a bare `host:port` (plain).
    pub server: String,
    /// The bearer token sent with every call.
    pub token: Option<String>,
    /// A CA certificate (PEM) to trust besides the system's, for `https://`.
    pub tls_ca: Option<PathBuf>,
}

impl ClientOptions {
    /// A service this process started itself on loopback (no token, no TLS).
    #[must_use]
    pub fn local(server: &str) -> Self {
        Self {
            server: server.to_owned(),
            ..Self::default()
        }
    }
}

/// Puts `authorization: Bearer TOKEN` on every call.
#[derive(Debug, Clone, Default)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// The world service could not be reached, or the options cannot work.
#[derive(Debug)]
pub struct ConnectError {
    pub url: String,
    pub reason: String,
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.reason, self.url)
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A World client for `options`.
pub async fn world_client(options: &ClientOptions) -> Result<WorldRpc, ConnectError> {
    let url = if options.server.contains("://") {
        options.server.clone()
    } else {
        format!("http://{}", options.server)
    };
    let fail =
        |reason: &str, source: Option<Box<dyn std::error::Error + Send + Sync>>| ConnectError {
            url: url.clone(),
            reason: reason.to_owned(),
            source,
        };
    let bearer = match &options.token {
        Some(token) => {
            Bearer(Some(format!("Bearer {}", token.trim()).parse().map_err(
                |_| fail("the token is not printable ASCII, for", None),
            )?))
        }
        None => Bearer(None),
    };
    let mut endpoint = Endpoint::from_shared(url.clone())
        .map_err(|e| fail("not a server address:", Some(Box::new(e))))?;
    if url.starts_with("https://") {
        let tls = crate::pki::client_tls(options.tls_ca.as_deref())
            .map_err(|e| fail("cannot set up TLS for", Some(Box::new(e))))?;
        endpoint = endpoint
            .tls_config(tls)
            .map_err(|e| fail("cannot set up TLS for", Some(Box::new(e))))?;
    } else if options.tls_ca.is_some() {
        return Err(fail("--tls-ca needs an https:// server, not", None));
    }
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| fail("cannot reach the world service at", Some(Box::new(e))))?;
    Ok(WorldClient::with_interceptor(channel, bearer))
}

/// A readable message for a failed call.
#[must_use]
pub fn describe(status: &tonic::Status) -> String {
    format!("{:?}: {}", status.code(), status.message())
}

/// A call of the create → watch → advance round failed: which call, and the service's
/// answer.
#[derive(Debug, thiserror::Error)]
#[error("cannot {call}: {}", describe(.status))]
pub struct CallError {
    /// What the call was for, as in "cannot create the world".
    pub call: &'static str,
    pub status: tonic::Status,
}

impl CallError {
    fn of(call: &'static str) -> impl FnOnce(tonic::Status) -> Self {
        move |status| Self { call, status }
    }
}

/// Creates a world from `source`; an empty `world_id` lets the service name it.
pub async fn create_world(
    client: &mut WorldRpc,
    source: create_world_request::Source,
    world_id: &str,
) -> Result<WorldInfo, CallError> {
    client
        .create_world(CreateWorldRequest {
            source: Some(source),
            world_id: world_id.to_owned(),
            ..Default::default()
        })
        .await
        .map(tonic::Response::into_inner)
        .map_err(CallError::of("create the world"))
}

/// Follows world `world_id`'s whole transcript from `from_seq`, as every reader sees it.
pub async fn watch_world(
    client: &mut WorldRpc,
    world_id: &str,
    from_seq: u64,
) -> Result<Streaming<WatchResponse>, CallError> {
    client
        .watch(WatchRequest {
            world_id: world_id.to_owned(),
            from_seq,
            no_follow: false,
            pov: String::new(),
        })
        .await
        .map(tonic::Response::into_inner)
        .map_err(CallError::of("watch the world"))
}

/// Creates a world the service names, and follows it from its first event. The watch
/// opens before the first advance, so a watcher misses nothing.
pub async fn create_and_watch(
    client: &mut WorldRpc,
    source: create_world_request::Source,
) -> Result<(WorldInfo, Streaming<WatchResponse>), CallError> {
    let world = create_world(client, source, "").await?;
    let watching = watch_world(client, &world.world_id, 1).await?;
    Ok((world, watching))
}

/// Advances world `world_id` until `until`.
pub async fn advance(
    client: &mut WorldRpc,
    world_id: &str,
    until: advance_request::Until,
) -> Result<AdvanceResponse, CallError> {
    client
        .advance(AdvanceRequest {
            world_id: world_id.to_owned(),
            until: Some(until),
        })
        .await
        .map(tonic::Response::into_inner)
        .map_err(CallError::of("advance the world"))
}

/// Advances world `world_id` to the end of its script (or its open story's rounds).
pub async fn advance_to_end(
    client: &mut WorldRpc,
    world_id: &str,
) -> Result<AdvanceResponse, CallError> {
    advance(client, world_id, advance_request::Until::ScriptEnd(true)).await
}
