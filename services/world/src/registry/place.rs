//! Where a world is served in a cluster of replicas (here, or at its owner; taken over
//! when its owner's lease ran out), and the registry's two background sweeps: lease
//! renewal and putting idle finished worlds to sleep.

use std::sync::Arc;

use super::Worlds;
use crate::cluster::Holder;
use crate::error::WorldError;
use crate::world::World;

/// Where a world is served.
#[derive(Debug)]
pub enum Place {
    /// Here: this replica owns it.
    Here(Arc<World>),
    /// At another replica's endpoint.
    Owner(String),
}

impl Worlds {
    /// Where `world_id` is served: here, or at its owner. In a cluster, a world whose
    /// owner's lease has run out (or that nobody holds) is taken over: its lease taken
    /// and the world rebuilt from its log. A call another replica `forwarded` is never
    /// sent on: if the world moved meanwhile, the caller is told to try again.
    pub async fn place(&self, world_id: &str, forwarded: bool) -> Result<Place, WorldError> {
        if let Some(world) = self.local(world_id) {
            return Ok(Place::Here(world));
        }
        if let Some(world) = self.retry_unrestored(world_id).await? {
            return Ok(Place::Here(world));
        }
        let Some(cluster) = &self.inner.cluster else {
            return Err(WorldError::WorldNotFound(world_id.to_owned()));
        };
        // The common case, a world another replica owns, without waiting on a take-over
        // under way here.
        if !forwarded
            && let Holder::Other { endpoint, .. } = cluster.leases.holder(world_id).await?
        {
            return Ok(Place::Owner(endpoint));
        }
        let _taking = cluster.taking.lock().await;
        if let Some(world) = self.local(world_id) {
            return Ok(Place::Here(world));
        }
        loop {
            let revision = match cluster.leases.holder(world_id).await? {
                Holder::Other { endpoint, .. } if !forwarded => return Ok(Place::Owner(endpoint)),
                Holder::Other { .. } => {
                    return Err(WorldError::Moved(world_id.to_owned()));
                }
                Holder::Me { revision } => Some(revision),
                Holder::Free { revision } => revision,
            };
            let Some(record) = self.inner.log.world(world_id).await? else {
                return Err(WorldError::WorldNotFound(world_id.to_owned()));
            };
            let Some(revision) = cluster.leases.take(world_id, revision).await? else {
                continue; // another replica took it first: ask again who
            };
            cluster.owned.insert(world_id.to_owned(), revision);
            let started = std::time::Instant::now();
            match self.revive(&record).await {
                Ok(world) => {
                    self.inner
                        .worlds
                        .insert(world_id.to_owned(), Arc::clone(&world));
                    crate::metrics::LEASE_CHANGES
                        .with_label_values(&["taken"])
                        .inc();
                    self.count_worlds();
                    tracing::info!(
                        world_id,
                        ms = started.elapsed().as_millis(),
                        "world taken over"
                    );
                    return Ok(Place::Here(world));
                }
                Err(error) => {
                    cluster.owned.remove(world_id);
                    // Let another replica try at once; a lease not released runs out.
                    if let Err(release) = cluster.leases.release(world_id).await {
                        tracing::warn!(world_id, error = %release, "cannot release the lease of a world not revived");
                    }
                    return Err(error);
                }
            }
        }
    }

    /// The world if this replica serves it (and still owns it).
    pub(super) fn local(&self, world_id: &str) -> Option<Arc<World>> {
        let world = self
            .inner
            .worlds
            .get(world_id)
            .map(|w| Arc::clone(w.value()))?;
        if world.is_abandoned() {
            self.inner.worlds.remove(world_id);
            self.count_worlds();
            return None;
        }
        Some(world)
    }

    /// After the owner at `endpoint` did not answer: waits (at most one lease) for its
    /// lease on `world_id` to run out, unless the owner is alive after all.
    pub async fn wait_out_owner(&self, world_id: &str, endpoint: &str) {
        let Some(cluster) = &self.inner.cluster else {
            return;
        };
        if cluster.peers.alive(endpoint).await {
            return;
        }
        cluster.peers.forget(endpoint);
        let deadline = tokio::time::Instant::now() + cluster.leases.ttl();
        while tokio::time::Instant::now() < deadline {
            match cluster.leases.holder(world_id).await {
                Ok(Holder::Other {
                    endpoint: now,
                    expires_ms,
                }) if now == endpoint => {
                    let left = u64::try_from(expires_ms - dramatis_runtime::now_ms()).unwrap_or(0);
                    tokio::time::sleep(std::time::Duration::from_millis(left.clamp(10, 200))).await;
                }
                _ => return,
            }
        }
    }

    /// Renews this replica's leases every third of a lease until `shutdown`; a world
    /// whose lease another replica took (this one was paused or cut off) is given up.
    pub fn renew_leases(&self, shutdown: dramatis_runtime::Shutdown) {
        let Some(cluster) = self.inner.cluster.clone() else {
            return;
        };
        let inner = Arc::downgrade(&self.inner);
        self.inner.tasks.spawn(async move {
            let mut tick = tokio::time::interval(cluster.renew_every());
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = shutdown.wait() => break,
                }
                let Some(inner) = inner.upgrade() else { break };
                let owned: Vec<(String, u64)> = cluster
                    .owned
                    .iter()
                    .map(|e| (e.key().clone(), *e.value()))
                    .collect();
                for (world_id, revision) in owned {
                    match cluster.leases.take(&world_id, Some(revision)).await {
                        Ok(Some(next)) => {
                            cluster.owned.insert(world_id, next);
                        }
                        Ok(None) => {
                            tracing::warn!(%world_id, "lease taken by another replica; giving the world up");
                            cluster.owned.remove(&world_id);
                            crate::metrics::LEASE_CHANGES
                                .with_label_values(&["lost"])
                                .inc();
                            if let Some((_, world)) = inner.worlds.remove(&world_id) {
                                world.abandon();
                            }
                            crate::metrics::WORLDS
                                .set(i64::try_from(inner.worlds.len()).unwrap_or(i64::MAX));
                        }
                        Err(error) => {
                            tracing::warn!(%world_id, %error, "cannot renew the lease");
                        }
                    }
                }
            }
        });
    }

    /// Every `idle / 4` (at most a minute), puts finished worlds that have been idle
    /// for `idle` to sleep ([`World::sleep_if_idle`]), until `shutdown`.
    pub fn watch_idle(&self, idle: std::time::Duration, shutdown: dramatis_runtime::Shutdown) {
        // Weak, so a stopped service's log closes without waiting for this task.
        let inner = Arc::downgrade(&self.inner);
        let every = (idle / 4).clamp(
            std::time::Duration::from_millis(100),
            std::time::Duration::from_secs(60),
        );
        self.inner.tasks.spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = shutdown.wait() => break,
                }
                let Some(inner) = inner.upgrade() else {
                    break;
                };
                for world in (Self { inner }).list() {
                    world.sleep_if_idle(idle).await;
                }
            }
        });
    }

    /// Releases this replica's lease on `world_id`, if it is in a cluster.
    pub(super) async fn give_up_lease(&self, world_id: &str) {
        if let Some(cluster) = &self.inner.cluster {
            cluster.owned.remove(world_id);
            crate::metrics::LEASE_CHANGES
                .with_label_values(&["released"])
                .inc();
            if let Err(error) = cluster.leases.release(world_id).await {
                tracing::warn!(world_id, %error, "cannot release the lease");
            }
        }
    }
}
