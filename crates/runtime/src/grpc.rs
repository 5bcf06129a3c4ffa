//! What every Dramatis gRPC server carries: request spans that continue the caller's
//! trace, health checking, and server reflection (v1 and v1alpha, so older tools such as
//! Python's `grpc_reflection.v1alpha` work too) over the `dramatis.v1` descriptors,
//! behind TLS when configured and the [`Access`] rule in front of every route.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tonic::service::Routes;
use tonic::transport::server::{Router, TcpIncoming};
use tonic::transport::{Server, ServerTlsConfig};
use tower_layer::{Identity, Stack};

use crate::auth::{Access, AccessLayer};

/// How a server is reached (plain or TLS) and who may call it.
#[derive(Debug, Clone)]
pub struct Security {
    pub tls: Option<ServerTlsConfig>,
    pub access: Access,
}

impl Security {
    /// Plain HTTP/2, anyone who can connect: loopback services with nothing configured.
    #[must_use]
    pub fn open() -> Self {
        Self {
            tls: None,
            access: Access::Open,
        }
    }
}

/// How often a server pings each HTTP/2 connection; one that does not answer within
/// [`KEEPALIVE_TIMEOUT`] is closed (its peer is gone or frozen).
pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(20);
pub const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Most streams (calls) one HTTP/2 connection may have open at once.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 256;

/// How long a new connection has to send its first [`FIRST_BYTES`] bytes (an HTTP/2
/// preface with its settings, an HTTP/1.1 request line, a TLS hello). One that sends
/// less (a port scanner, a preface and then silence) is closed, freeing its slot.
pub const FIRST_BYTES_WITHIN: Duration = Duration::from_secs(10);
pub const FIRST_BYTES: usize = 64;

/// Most connections a server holds at once by default; more are closed at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1_000;

/// A server builder with `security` applied: the TLS acceptor, and the access layer
/// around every route (health and reflection included); HTTP/2 keepalive pings and a
/// cap on streams per connection.
pub fn secured_builder(
    security: &Security,
) -> Result<Server<Stack<AccessLayer, Identity>>, tonic::transport::Error> {
    let mut builder = Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
    if let Some(tls) = &security.tls {
        builder = builder.tls_config(tls.clone())?;
    }
    Ok(builder.layer(AccessLayer::new(security.access.clone())))
}

/// Connections from a bound listener, with Nagle's algorithm off (small gRPC frames,
/// a token or a one-event Perceive, must not wait for delayed acknowledgements), at
/// most `max_connections` at once (more are closed as they come, with a warning), each
/// closed if it has not sent its first bytes in time ([`Guarded`]).
pub fn incoming(
    listener: TcpListener,
    max_connections: usize,
) -> impl futures::Stream<Item = std::io::Result<Guarded>> {
    use futures::StreamExt as _;
    let slots = Arc::new(tokio::sync::Semaphore::new(max_connections.max(1)));
    TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .filter_map(move |accepted| {
            let slots = Arc::clone(&slots);
            async move {
                let stream = match accepted {
                    Ok(stream) => stream,
                    Err(error) => return Some(Err(error)),
                };
                match slots.try_acquire_owned() {
                    Ok(slot) => Some(Ok(Guarded::new(stream, slot))),
                    Err(_) => {
                        tracing::warn!(peer = ?stream.peer_addr().ok(), max_connections,
                            "connection refused: the server holds as many as it may");
                        None
                    }
                }
            }
        })
}

/// A served connection: holds one of the server's connection slots while it lives,
/// and fails its reads (so the server closes it) if its first [`FIRST_BYTES`] bytes
/// have not come within [`FIRST_BYTES_WITHIN`]. After that, HTTP/2 keepalive decides.
#[derive(Debug)]
pub struct Guarded {
    inner: tokio::net::TcpStream,
    /// Bytes still owed before the deadline is lifted.
    owed: usize,
    deadline: std::pin::Pin<Box<tokio::time::Sleep>>,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Guarded {
    fn new(inner: tokio::net::TcpStream, slot: tokio::sync::OwnedSemaphorePermit) -> Self {
        Self {
            inner,
            owed: FIRST_BYTES,
            deadline: Box::pin(tokio::time::sleep(FIRST_BYTES_WITHIN)),
            _slot: slot,
        }
    }
}

impl tokio::io::AsyncRead for Guarded {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::future::Future as _;
        use std::task::Poll;
        let before = buf.filled().len();
        let read = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if self.owed == 0 {
            return read;
        }
        match read {
            Poll::Ready(Ok(())) => {
                let got = buf.filled().len() - before;
                self.owed = self.owed.saturating_sub(got);
                Poll::Ready(Ok(()))
            }
            Poll::Pending if self.deadline.as_mut().poll(cx).is_ready() => {
                Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the connection sent too little in its first seconds",
                )))
            }
            other => other,
        }
    }
}

impl tokio::io::AsyncWrite for Guarded {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl tonic::transport::server::Connected for Guarded {
    type ConnectInfo = <tokio::net::TcpStream as tonic::transport::server::Connected>::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.inner.connect_info()
    }
}

/// Raises this process's open-file limit to its hard limit: every connection, store
/// file and agent pipe is a descriptor, and the usual soft limit (1,024) is below the
/// default connection cap. Returns the limit now in force.
pub fn raise_file_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current < limit.maximum {
        limit.current = limit.maximum;
        if let Err(error) = setrlimit(Resource::Nofile, limit) {
            tracing::debug!(%error, "cannot raise the open-file limit");
        }
    }
    getrlimit(Resource::Nofile).current
}

/// [`standard_router`] on a server builder of the caller's (with layers, HTTP/1.1 for
/// gRPC-Web, ...), adding to `routes` (the caller's services and any plain HTTP routes).
pub async fn standard_router_with<L: Clone>(
    builder: Server<L>,
    service_name: &str,
    routes: Routes,
) -> Result<Router<L>, tonic_reflection::server::Error> {
    let (reporter, health) = tonic_health::server::health_reporter();
    for name in [service_name, ""] {
        reporter
            .set_service_status(name, tonic_health::ServingStatus::Serving)
            .await;
    }
    // Only the services this port serves are listed (the descriptor set describes
    // both of ours).
    let reflection = || {
        [
            service_name,
            "grpc.health.v1.Health",
            "grpc.reflection.v1.ServerReflection",
            "grpc.reflection.v1alpha.ServerReflection",
        ]
        .into_iter()
        .fold(
            tonic_reflection::server::Builder::configure()
                .register_encoded_file_descriptor_set(dramatis_proto::v1::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
                // Both reflection services describe both: a client that describes every
                // listed service (grpcurl describe) asks either for each (each build
                // would otherwise register only its own version's file).
                .include_reflection_service(false)
                .register_encoded_file_descriptor_set(tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET)
                .register_encoded_file_descriptor_set(
                    tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
                ),
            tonic_reflection::server::Builder::with_service_name,
        )
    };
    let routes = routes
        .add_service(health)
        .add_service(reflection().build_v1()?)
        .add_service(reflection().build_v1alpha()?);
    let mut builder = builder.trace_fn(crate::telemetry::server_span);
    Ok(builder.add_routes(routes))
}

/// Serves only the gRPC health service (`service_name` and the server as a whole,
/// both serving) on `addr`, plain HTTP/2, until `shutdown`; returns the bound address.
/// For probes (a kubelet's) that cannot present the client certificate a service's
/// own port demands; it answers nothing else.
pub async fn serve_health(
    addr: std::net::SocketAddr,
    service_name: &str,
    shutdown: crate::Shutdown,
) -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let (reporter, health) = tonic_health::server::health_reporter();
    for name in [service_name, ""] {
        reporter
            .set_service_status(name, tonic_health::ServingStatus::Serving)
            .await;
    }
    tokio::spawn(async move {
        let served = Server::builder()
            .add_service(health)
            .serve_with_incoming_shutdown(incoming(listener, 64), shutdown.wait())
            .await;
        if let Err(error) = served {
            tracing::warn!(%error, "the health endpoint stopped");
        }
    });
    Ok(bound)
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn the_health_port_answers_serving_for_the_service_and_nothing_else() {
        let shutdown = crate::Shutdown::new();
        let addr = super::serve_health(
            "127.0.0.1:0".parse().expect("addr"),
            "dramatis.v1.Agent",
            shutdown.clone(),
        )
        .await
        .expect("bound");
        let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .expect("uri")
            .connect()
            .await
            .expect("reachable");
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        for service in ["dramatis.v1.Agent", ""] {
            let answer = health
                .check(tonic_health::pb::HealthCheckRequest {
                    service: service.into(),
                })
                .await
                .expect("answered")
                .into_inner();
            assert_eq!(
                answer.status,
                tonic_health::pb::health_check_response::ServingStatus::Serving as i32
            );
        }
        let unknown = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "dramatis.v1.World".into(),
            })
            .await;
        assert_eq!(
            unknown.expect_err("not served").code(),
            tonic::Code::NotFound
        );
        // No other service lives on this port.
        let mut agent = dramatis_proto::v1::agent_client::AgentClient::new(channel);
        let call = agent
            .snapshot(dramatis_proto::v1::SnapshotRequest::default())
            .await;
        assert_eq!(
            call.expect_err("no agent here").code(),
            tonic::Code::Unimplemented
        );
        shutdown.trigger();
    }
}
