//! World ownership: one lease per world in a JetStream key-value bucket, taken and
//! renewed by compare-and-set on the key's revision, so of two replicas racing for a
//! world exactly one wins. A lease names its holder's address, so the others know
//! where to forward.
//!
//! Expiry compares wall clocks of the replicas (loosely synchronised, as Kubernetes
//! nodes are); safety does not rest on it: a replica that wrongly believes it still
//! owns a world is refused by the event log itself.

use std::time::Duration;

use async_nats::jetstream::kv::{self, Operation, UpdateErrorKind};
use serde::{Deserialize, Serialize};

use crate::error::WorldError;

/// Who this replica is, as other replicas see it.
#[derive(Debug, Clone)]
pub struct Replica {
    /// A name unique among the replicas (the pod's name).
    pub id: String,
    /// Where other replicas reach this one's gRPC port (`http://host:port`).
    pub endpoint: String,
}

/// A lease's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseValue {
    pub owner: String,
    pub endpoint: String,
    pub expires_ms: i64,
}

/// Who holds a world's lease, with the key's revision to compare against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// Nobody, or a holder whose lease ran out: it can be taken.
    Free { revision: Option<u64> },
    /// This replica.
    Me { revision: u64 },
    /// Another live replica.
    Other { endpoint: String, expires_ms: i64 },
}

/// The lease bucket.
#[derive(Clone)]
pub struct Leases {
    store: kv::Store,
    me: Replica,
    ttl: Duration,
}

impl std::fmt::Debug for Leases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leases")
            .field("me", &self.me)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

fn lease_err(what: &str, e: impl std::fmt::Display) -> WorldError {
    WorldError::Log(format!("lease {what}: {e}"))
}

impl Leases {
    pub(crate) fn new(store: kv::Store, me: Replica, ttl: Duration) -> Self {
        Self { store, me, ttl }
    }

    /// The world-ownership leases of the replicas sharing `log`, in a bucket beside it;
    /// `me` holds its leases for `ttl` at a time.
    pub async fn open(
        log: &crate::log::JetStreamLog,
        me: Replica,
        ttl: Duration,
    ) -> Result<Self, WorldError> {
        Ok(Self::new(log.bucket("leases").await?, me, ttl))
    }

    #[must_use]
    pub fn me(&self) -> &Replica {
        &self.me
    }

    #[must_use]
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn value(&self) -> Result<bytes::Bytes, WorldError> {
        let value = LeaseValue {
            owner: self.me.id.clone(),
            endpoint: self.me.endpoint.clone(),
            expires_ms: dramatis_runtime::now_ms()
                + i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX),
        };
        serde_json::to_vec(&value)
            .map(Into::into)
            .map_err(|e| lease_err("encode", e))
    }

    /// Who holds `world_id`'s lease now.
    pub async fn holder(&self, world_id: &str) -> Result<Holder, WorldError> {
        let Some(entry) = self
            .store
            .entry(world_id)
            .await
            .map_err(|e| lease_err("read", e))?
        else {
            return Ok(Holder::Free { revision: None });
        };
        if entry.operation != Operation::Put {
            return Ok(Holder::Free {
                revision: Some(entry.revision),
            });
        }
        let value: LeaseValue =
            serde_json::from_slice(&entry.value).map_err(|e| lease_err("decode", e))?;
        Ok(if value.owner == self.me.id {
            Holder::Me {
                revision: entry.revision,
            }
        } else if value.expires_ms <= dramatis_runtime::now_ms() {
            Holder::Free {
                revision: Some(entry.revision),
            }
        } else {
            Holder::Other {
                endpoint: value.endpoint,
                expires_ms: value.expires_ms,
            }
        })
    }

    /// Takes (or renews) the lease whose key is at `revision` (`None`: no key yet).
    /// `Ok(None)` when another replica changed it first.
    pub async fn take(
        &self,
        world_id: &str,
        revision: Option<u64>,
    ) -> Result<Option<u64>, WorldError> {
        let value = self.value()?;
        let result = match revision {
            None => self.store.create(world_id, value).await.map_err(|e| {
                if e.kind() == kv::CreateErrorKind::AlreadyExists {
                    None
                } else {
                    Some(lease_err("create", e))
                }
            }),
            Some(revision) => self
                .store
                .update(world_id, value, revision)
                .await
                .map_err(|e| {
                    if e.kind() == UpdateErrorKind::WrongLastRevision {
                        None
                    } else {
                        Some(lease_err("update", e))
                    }
                }),
        };
        match result {
            Ok(revision) => Ok(Some(revision)),
            Err(None) => Ok(None),
            Err(Some(error)) => Err(error),
        }
    }

    /// Gives `world_id`'s lease up (its world was deleted).
    pub async fn release(&self, world_id: &str) -> Result<(), WorldError> {
        self.store
            .purge(world_id)
            .await
            .map_err(|e| lease_err("release", e))
    }
}
