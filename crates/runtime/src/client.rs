//! Connecting to a running world service as a client: plain or TLS, with a bearer
//! token on every call when one is given.

use std::path::PathBuf;

use dramatis_proto::v1::world_client::WorldClient;
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
