//! Several world-service replicas over one shared (JetStream) log: each world has one
//! owner at a time, by lease ([`lease`]); a call reaching another replica is forwarded
//! to the owner ([`peers`]), or, when the owner's lease ran out, the replica takes the
//! lease, rebuilds the world from its log and goes on. Watchers are served by whichever
//! replica they reached, from the log itself ([`mirror`]).

pub mod lease;
pub mod mirror;
pub mod peers;

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;

pub use lease::{Holder, LeaseValue, Leases, Replica};
pub use peers::Peers;

/// A replica's part in the cluster: its leases, the worlds it owns (with each lease's
/// revision), and its clients of the other replicas.
#[derive(Debug)]
pub struct Cluster {
    pub leases: Leases,
    /// World id -> revision of this replica's lease on it.
    pub(crate) owned: DashMap<String, u64>,
    pub peers: Peers,
    /// Held while a world is taken over, so one replica never rebuilds it twice.
    pub(crate) taking: tokio::sync::Mutex<()>,
}

impl Cluster {
    #[must_use]
    pub fn new(leases: Leases, peers: Peers) -> Arc<Self> {
        Arc::new(Self {
            leases,
            owned: DashMap::new(),
            peers,
            taking: tokio::sync::Mutex::new(()),
        })
    }

    /// How often owned leases are renewed: three times per lease.
    #[must_use]
    pub fn renew_every(&self) -> Duration {
        (self.leases.ttl() / 3).max(Duration::from_millis(50))
    }
}
