//! What the server knows of one connection: its [`Peer`] record, shared by the socket
//! and its requests, and the [`ConnectionInfo`] a request carries. Apart from
//! `grpc.rs` (the table of connections) so that `auth.rs` reads a request's
//! connection without the server's table, and neither imports the other.

use std::sync::Arc;

/// What the server knows of one connection, shared by its socket ([`Guarded`](crate::grpc::Guarded)) and its
/// requests (through [`ConnectionInfo`]); its table is in `grpc.rs`.
#[derive(Debug)]
pub struct Peer {
    pub(crate) id: u64,
    /// Milliseconds after the table's epoch.
    pub(crate) opened: u64,
    pub(crate) spoke: std::sync::atomic::AtomicBool,
    pub(crate) last_call: std::sync::atomic::AtomicU64,
    pub(crate) calls: std::sync::atomic::AtomicUsize,
    pub(crate) evicted: std::sync::atomic::AtomicBool,
    pub(crate) waker: futures::task::AtomicWaker,
    pub(crate) epoch: std::time::Instant,
}

impl Peer {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A request has come: the connection has spoken, and has one more call open
    /// until the returned guard (held by the answer's body) is dropped.
    pub(crate) fn call(self: &Arc<Self>) -> OpenCall {
        use std::sync::atomic::Ordering;
        self.spoke.store(true, Ordering::Release);
        self.calls.fetch_add(1, Ordering::AcqRel);
        self.last_call.store(self.now(), Ordering::Release);
        OpenCall(Arc::clone(self))
    }

    pub(crate) fn evict(&self) {
        self.evicted
            .store(true, std::sync::atomic::Ordering::Release);
        self.waker.wake();
    }
}

/// One call open on a connection; dropping it closes the call.
#[derive(Debug)]
pub(crate) struct OpenCall(Arc<Peer>);

impl Drop for OpenCall {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        self.0.last_call.store(self.0.now(), Ordering::Release);
        self.0.calls.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a request learns of its connection (in its extensions; under TLS, inside
/// [`tonic::transport::server::TlsConnectInfo`]).
#[derive(Debug, Clone)]
pub struct ConnectionInfo {
    pub tcp: tonic::transport::server::TcpConnectInfo,
    pub(crate) peer: Arc<Peer>,
}
