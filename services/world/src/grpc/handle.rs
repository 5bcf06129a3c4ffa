//! The service's handle: the registry it serves, its watcher permits and claimed seats,
//! where a request's world is served, and the rules every call follows (a change runs
//! to completion whatever the caller does; a call for a world owned elsewhere is
//! forwarded).

use tonic::Status;
use tonic::metadata::MetadataMap;

use crate::cluster::peers::was_forwarded;
use crate::registry::{Place, Worlds};
use crate::world::PlayInput;

/// The gRPC face of a [`Worlds`] registry.
#[derive(Debug, Clone)]
pub struct WorldGrpc {
    pub(super) worlds: Worlds,
    /// One permit per open `Watch` stream (`--max-watchers`).
    pub(super) watchers: std::sync::Arc<tokio::sync::Semaphore>,
    /// Seats claimed with `ClaimSeat`: token -> (world id, where their actions go).
    pub(super) seats:
        std::sync::Arc<dashmap::DashMap<String, (String, tokio::sync::mpsc::Sender<PlayInput>)>>,
}

impl WorldGrpc {
    #[must_use]
    pub fn new(worlds: Worlds) -> Self {
        let watchers = std::sync::Arc::new(tokio::sync::Semaphore::new(
            worlds.limits().max_watchers.max(1),
        ));
        Self {
            watchers,
            worlds,
            seats: std::sync::Arc::default(),
        }
    }

    /// Where the world a request names is served: `world_id` must be given and the
    /// world must exist (here, or at its owner in a cluster).
    pub(super) async fn place(
        &self,
        world_id: &str,
        metadata: &MetadataMap,
    ) -> Result<Place, Status> {
        required(world_id, "world_id")?;
        self.worlds
            .place(world_id, was_forwarded(metadata))
            .await
            .map_err(Status::from)
    }

    /// The other replicas, when a world is owned elsewhere.
    pub(super) fn peers(&self) -> Result<&crate::cluster::Peers, Status> {
        self.worlds.cluster().map(|c| &c.peers).ok_or_else(|| {
            Status::internal("a world has an owner elsewhere but no cluster is configured")
        })
    }
}

/// Serves a call for one world: `$local` (with `$world` bound) where this replica owns
/// it, else the same call forwarded to its owner. An owner that does not answer is
/// waited out (its lease runs out) and the call placed again, once.
macro_rules! routed {
    ($self:ident, $metadata:expr, $world_id:expr, $message:expr, $method:ident,
     |$world:ident| $local:expr) => {{
        let mut waited = false;
        loop {
            match $self.place($world_id, &$metadata).await? {
                Place::Here($world) => break $local,
                Place::Owner(endpoint) => {
                    let mut owner = $self.peers()?.client(&endpoint)?;
                    match owner.$method(forwarded(&$metadata, $message.clone())).await {
                        Err(status) if status.code() == tonic::Code::Unavailable && !waited => {
                            waited = true;
                            $self.worlds.wait_out_owner($world_id, &endpoint).await;
                        }
                        answer => break answer,
                    }
                }
            }
        }
    }};
}

/// Runs a call's work to its end whatever the caller does. A client that gives up (its
/// deadline passes, Ctrl-C) makes tonic drop the handler's future; dropped halfway, a
/// world change would be half made: an event logged but never applied (the next append
/// is then refused as fenced and the world abandons itself), a world created without
/// being recorded, one deleted from memory but not from its log. On its own task the
/// change completes, and only the answer is lost. The task is one of the service's
/// (`tasks`), so shutdown waits for it.
pub(super) async fn to_completion<T: Send + 'static>(
    tasks: &tokio_util::task::TaskTracker,
    work: impl std::future::Future<Output = Result<T, Status>> + Send + 'static,
) -> Result<T, Status> {
    use tracing::Instrument as _;
    tasks
        .spawn(work.in_current_span())
        .await
        .map_err(|e| Status::internal(format!("the call's work ended abnormally: {e}")))?
}

pub(super) use routed;

/// Refuses an empty `value` of the required field `field`.
pub(super) fn required(value: &str, field: &str) -> Result<(), Status> {
    if value.trim().is_empty() {
        Err(Status::invalid_argument(format!("{field} is required")))
    } else {
        Ok(())
    }
}
