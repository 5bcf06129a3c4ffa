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
use crate::connection::{ConnectionInfo, OpenCall, Peer};

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

/// How long a new connection has to make its first complete request (a gRPC call, an
/// HTTP/1.1 request for the viewer). One that does not (a port scanner, a preface and
/// then silence, half a request line, a byte a second) is closed, freeing its slot.
pub const FIRST_REQUEST_WITHIN: Duration = Duration::from_secs(5);

/// Most connections a server holds at once by default. At the cap, a new connection
/// takes the place of one that has not yet made a request (the oldest first), else of
/// one with no call open (the longest idle); only when every held connection has a call
/// open is the new one refused.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1_000;

/// The plain server builder every Dramatis server starts from: HTTP/2 keepalive pings,
/// a cap on streams per connection, and the [`CallsLayer`] that [`Connections`] needs
/// to tell a connection that speaks from one that only holds a slot.
#[must_use]
pub fn builder() -> Server<Stack<CallsLayer, Identity>> {
    Server::builder()
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
        .layer(CallsLayer)
}

/// What [`secured_builder`] gives: [`builder`] with the access layer inside.
pub type SecuredServer = Server<Stack<AccessLayer, Stack<CallsLayer, Identity>>>;

/// [`builder`] with `security` applied: the TLS acceptor, and the access layer
/// around every route (health and reflection included).
pub fn secured_builder(security: &Security) -> Result<SecuredServer, tonic::transport::Error> {
    let mut builder = builder();
    if let Some(tls) = &security.tls {
        builder = builder.tls_config(tls.clone())?;
    }
    Ok(builder.layer(AccessLayer::new(security.access.clone())))
}

/// Connections from a bound listener, held as [`Connections::new`]`(max_connections)`
/// holds them. The server must be built on [`builder`] (its [`CallsLayer`] marks each
/// connection that makes a request; without it, every connection is closed once
/// [`FIRST_REQUEST_WITHIN`] has passed).
pub fn incoming(
    listener: TcpListener,
    max_connections: usize,
) -> impl futures::Stream<Item = std::io::Result<Guarded>> {
    Connections::new(max_connections).incoming(listener)
}

/// The connections one server holds: at most `max` at once, each closed if it makes
/// no complete request within its first seconds; at the cap, a newcomer takes the place
/// of a connection that has not spoken, else of an idle one, so a client that speaks is
/// served however many silent connections are opened against the server.
#[derive(Debug, Clone)]
pub struct Connections {
    table: Arc<Table>,
}

#[derive(Debug)]
struct Table {
    max: usize,
    first_request_within: Duration,
    epoch: std::time::Instant,
    held: std::sync::Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    next: u64,
    /// Every connection held and not told to close, by number.
    open: std::collections::HashMap<u64, Arc<Peer>>,
}

impl Connections {
    /// At most `max` connections (at least one), [`FIRST_REQUEST_WITHIN`] to speak.
    #[must_use]
    pub fn new(max: usize) -> Self {
        Self::with_deadline(max, FIRST_REQUEST_WITHIN)
    }

    /// As [`Connections::new`], with another time to the first request.
    #[must_use]
    pub fn with_deadline(max: usize, first_request_within: Duration) -> Self {
        Self {
            table: Arc::new(Table {
                max: max.max(1),
                first_request_within,
                epoch: std::time::Instant::now(),
                held: std::sync::Mutex::new(Held::default()),
            }),
        }
    }

    /// How many connections are held (closing ones not counted).
    #[must_use]
    pub fn held(&self) -> usize {
        self.table.lock().open.len()
    }

    /// The numbers of the connections held, in the order they came.
    #[cfg(test)]
    fn held_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = self.table.lock().open.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// The connections accepted on `listener`, with Nagle's algorithm off (small gRPC
    /// frames, a token or a one-event Perceive, must not wait for delayed
    /// acknowledgements).
    pub fn incoming(
        &self,
        listener: TcpListener,
    ) -> impl futures::Stream<Item = std::io::Result<Guarded>> + use<> {
        use futures::StreamExt as _;
        let table = Arc::clone(&self.table);
        TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .filter_map(move |accepted| {
                let admitted = accepted
                    .map(|stream| Table::admit(&table, stream))
                    .transpose();
                std::future::ready(admitted)
            })
    }
}

impl Table {
    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds `stream` if there is room or room can be made; `None` if every held
    /// connection has a call open.
    fn admit(table: &Arc<Self>, stream: tokio::net::TcpStream) -> Option<Guarded> {
        let mut held = table.lock();
        if held.open.len() >= table.max {
            let Some(victim) = Self::idlest(&held) else {
                drop(held);
                tracing::warn!(peer = ?stream.peer_addr().ok(), max_connections = table.max,
                    "connection refused: every connection the server may hold has a call open");
                return None;
            };
            if let Some(peer) = held.open.remove(&victim) {
                tracing::debug!(
                    spoke = peer.spoke.load(std::sync::atomic::Ordering::Acquire),
                    "closing a connection to make room for a new one"
                );
                peer.evict();
            }
        }
        let id = held.next;
        held.next += 1;
        let peer = Arc::new(Peer {
            id,
            opened: u64::try_from(table.epoch.elapsed().as_millis()).unwrap_or(u64::MAX),
            spoke: std::sync::atomic::AtomicBool::new(false),
            last_call: std::sync::atomic::AtomicU64::new(0),
            calls: std::sync::atomic::AtomicUsize::new(0),
            evicted: std::sync::atomic::AtomicBool::new(false),
            waker: futures::task::AtomicWaker::new(),
            epoch: table.epoch,
        });
        held.open.insert(id, Arc::clone(&peer));
        drop(held);
        Some(Guarded {
            inner: stream,
            deadline: Some(Box::pin(tokio::time::sleep(table.first_request_within))),
            peer,
            table: Arc::clone(table),
        })
    }

    /// The connection to close for a newcomer: the oldest that has not made a request,
    /// else the one idle longest with no call open.
    fn idlest(held: &Held) -> Option<u64> {
        use std::sync::atomic::Ordering;
        let silent = held
            .open
            .values()
            .filter(|p| !p.spoke.load(Ordering::Acquire))
            .min_by_key(|p| p.opened);
        if let Some(peer) = silent {
            return Some(peer.id);
        }
        held.open
            .values()
            .filter(|p| p.calls.load(Ordering::Acquire) == 0)
            .min_by_key(|p| p.last_call.load(Ordering::Acquire))
            .map(|p| p.id)
    }
}

/// A served connection: holds its place in its server's [`Connections`] while it
/// lives, and fails its reads (so the server closes it) if it has made no request
/// within the first-request deadline, or when a newcomer has taken its place. After its
/// first request, HTTP/2 keepalive decides.
#[derive(Debug)]
pub struct Guarded {
    inner: tokio::net::TcpStream,
    /// Until the first request.
    deadline: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    peer: Arc<Peer>,
    table: Arc<Table>,
}

impl Drop for Guarded {
    fn drop(&mut self) {
        let mut held = self.table.lock();
        if held
            .open
            .get(&self.peer.id)
            .is_some_and(|p| Arc::ptr_eq(p, &self.peer))
        {
            held.open.remove(&self.peer.id);
        }
    }
}

impl Guarded {
    /// Why this connection must close now, if it must.
    fn closing(&mut self, cx: &mut std::task::Context<'_>) -> Option<std::io::Error> {
        use std::future::Future as _;
        use std::sync::atomic::Ordering;
        self.peer.waker.register(cx.waker());
        if self.peer.evicted.load(Ordering::Acquire) {
            return Some(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "closed to make room for a connection that speaks",
            ));
        }
        if let Some(deadline) = &mut self.deadline {
            if self.peer.spoke.load(Ordering::Acquire) {
                self.deadline = None;
            } else if deadline.as_mut().poll(cx).is_ready() {
                return Some(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the connection made no request in its first seconds",
                ));
            }
        }
        None
    }
}

impl tokio::io::AsyncRead for Guarded {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if let Some(error) = self.closing(cx) {
            return std::task::Poll::Ready(Err(error));
        }
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
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
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        ConnectionInfo {
            tcp: self.inner.connect_info(),
            peer: Arc::clone(&self.peer),
        }
    }
}

/// Marks each request's connection as one that speaks, and counts its open calls
/// until each answer's body is done, for [`Connections`] to choose whom to close.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallsLayer;

impl<S> tower_layer::Layer<S> for CallsLayer {
    type Service = CallsService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CallsService { inner }
    }
}

/// See [`CallsLayer`].
#[derive(Debug, Clone)]
pub struct CallsService<S> {
    inner: S,
}

impl<S, B> tower_service::Service<http::Request<B>> for CallsService<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, S::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let extensions = request.extensions();
        let call = extensions
            .get::<ConnectionInfo>()
            .or_else(|| {
                extensions
                    .get::<tonic::transport::server::TlsConnectInfo<ConnectionInfo>>()
                    .map(tonic::transport::server::TlsConnectInfo::get_ref)
            })
            .map(|info| info.peer.call());
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(match call {
                Some(call) => response.map(|body| {
                    tonic::body::Body::new(CallBody {
                        inner: body,
                        _call: call,
                    })
                }),
                None => response,
            })
        })
    }
}

/// An answer's body, keeping its call open until it is done or dropped.
struct CallBody {
    inner: tonic::body::Body,
    _call: OpenCall,
}

impl http_body::Body for CallBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
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
        let served = builder()
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

    use std::time::Duration;

    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_client::HealthClient;

    use super::Connections;

    /// A health server on its own connections; returns its address.
    async fn served(connections: &Connections, shutdown: &crate::Shutdown) -> String {
        served_reporting(connections, shutdown).await.0
    }

    /// [`served`], and the reporter that sets its health.
    async fn served_reporting(
        connections: &Connections,
        shutdown: &crate::Shutdown,
    ) -> (String, tonic_health::server::HealthReporter) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (reporter, health) = tonic_health::server::health_reporter();
        let incoming = connections.incoming(listener);
        let stop = shutdown.clone();
        tokio::spawn(async move {
            super::builder()
                .add_service(health)
                .serve_with_incoming_shutdown(incoming, stop.wait())
                .await
        });
        (format!("http://{addr}"), reporter)
    }

    async fn client(url: &str) -> HealthClient<tonic::transport::Channel> {
        let channel = tonic::transport::Channel::from_shared(url.to_owned())
            .expect("uri")
            .connect()
            .await
            .expect("reachable");
        let mut client = HealthClient::new(channel);
        client
            .check(HealthCheckRequest::default())
            .await
            .expect("answered");
        client
    }

    /// A connection that sent the HTTP/2 preface and nothing more.
    async fn silent(url: &str) -> tokio::net::TcpStream {
        let mut stream = tokio::net::TcpStream::connect(url.trim_start_matches("http://"))
            .await
            .expect("connect");
        stream
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .expect("preface");
        stream
    }

    /// Whether the server closes `stream` within `within` (what it sent before, its
    /// settings, is read past).
    async fn closed(stream: &mut tokio::net::TcpStream, within: Duration) -> bool {
        let mut buf = [0u8; 256];
        tokio::time::timeout(within, async {
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return true,
                    Ok(_) => {}
                }
            }
        })
        .await
        .unwrap_or(false)
    }

    async fn until_held(connections: &Connections, count: usize) {
        for _ in 0..200 {
            if connections.held() == count {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("held {} connections, not {count}", connections.held());
    }

    /// Past the first-request deadline, a connection that made a call is still held
    /// and still answers; a silent one and one that trickles a byte at a time without
    /// finishing a request are closed.
    #[tokio::test]
    async fn past_the_first_request_deadline_only_a_connection_that_spoke_is_held() {
        let shutdown = crate::Shutdown::new();
        let connections = Connections::with_deadline(10, Duration::from_millis(400));
        let url = served(&connections, &shutdown).await;
        let mut spoke = client(&url).await;
        let mut quiet = silent(&url).await;
        let mut trickle = tokio::net::TcpStream::connect(url.trim_start_matches("http://"))
            .await
            .expect("connect");
        until_held(&connections, 3).await;
        let mut cut = false;
        for byte in b"GET / HTTP/1.1\r\nHost: x\r\n".iter().cycle().take(20) {
            if trickle.write_all(&[*byte]).await.is_err() {
                cut = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            closed(&mut quiet, Duration::from_secs(2)).await,
            "the silent one is held"
        );
        assert!(
            cut || closed(&mut trickle, Duration::from_secs(2)).await,
            "the trickle is held"
        );
        until_held(&connections, 1).await;
        spoke
            .check(HealthCheckRequest::default())
            .await
            .expect("the connection that spoke still answers");
        assert_eq!(connections.held(), 1, "the same connection answered");
        shutdown.trigger();
    }

    /// At the cap, a newcomer takes the place of the oldest connection that has not
    /// spoken, then of the one idle longest; one with a call open (a watch) is never
    /// closed for a newcomer, and when every held one has a call open the newcomer is
    /// refused while the watches go on.
    #[tokio::test]
    async fn at_the_cap_a_newcomer_takes_the_place_of_a_silent_then_an_idle_connection() {
        let shutdown = crate::Shutdown::new();
        let connections = Connections::with_deadline(3, Duration::from_secs(60));
        let (url, reporter) = served_reporting(&connections, &shutdown).await;
        let _first = client(&url).await; // 0
        let mut older = silent(&url).await; // 1
        until_held(&connections, 2).await;
        let mut newer = silent(&url).await; // 2
        until_held(&connections, 3).await;
        assert_eq!(connections.held_ids(), [0, 1, 2]);

        let mut second = client(&url).await; // 3
        assert!(
            closed(&mut older, Duration::from_secs(2)).await,
            "the oldest silent one is held"
        );
        assert_eq!(connections.held_ids(), [0, 2, 3]);
        let mut third = client(&url).await; // 4
        assert!(
            closed(&mut newer, Duration::from_secs(2)).await,
            "the other silent one is held"
        );
        assert_eq!(connections.held_ids(), [0, 3, 4]);

        // All three spoke. A watch keeps 3 open; 0 has been idle longer than 4.
        let mut watch = second
            .watch(HealthCheckRequest::default())
            .await
            .expect("a watch")
            .into_inner();
        watch
            .message()
            .await
            .expect("a status")
            .expect("the first status");
        third
            .check(HealthCheckRequest::default())
            .await
            .expect("answered");
        let mut fourth = client(&url).await; // 5
        assert_eq!(connections.held_ids(), [3, 4, 5], "not the idlest closed");
        let mut watch_too = fourth
            .watch(HealthCheckRequest::default())
            .await
            .expect("a watch")
            .into_inner();
        watch_too
            .message()
            .await
            .expect("a status")
            .expect("the first status");

        let mut fifth = silent(&url).await; // 6, in place of 4, the one idle
        let mut sixth = silent(&url).await; // 7, in place of 6, silent
        assert!(
            closed(&mut fifth, Duration::from_secs(2)).await,
            "a silent one is held"
        );
        assert!(
            !closed(&mut sixth, Duration::from_millis(300)).await,
            "the newest was closed"
        );
        assert_eq!(connections.held_ids(), [3, 5, 7]);

        // Every place has a call open: a newcomer is refused.
        let mut seventh = client(&url).await; // 8, in place of 7
        let _watch_three = seventh
            .watch(HealthCheckRequest::default())
            .await
            .expect("a watch")
            .into_inner();
        assert_eq!(connections.held_ids(), [3, 5, 8]);
        let mut refused = silent(&url).await; // 9
        assert!(
            closed(&mut refused, Duration::from_secs(2)).await,
            "a newcomer took a watch's place"
        );
        assert_eq!(connections.held_ids(), [3, 5, 8]);
        reporter
            .set_service_status("", tonic_health::ServingStatus::NotServing)
            .await;
        for watch in [&mut watch, &mut watch_too] {
            let status = watch
                .message()
                .await
                .expect("the watch goes on")
                .expect("a status");
            assert_eq!(
                status.status,
                tonic_health::pb::health_check_response::ServingStatus::NotServing as i32
            );
        }
        shutdown.trigger();
    }
}
