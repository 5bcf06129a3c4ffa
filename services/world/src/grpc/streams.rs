//! The long-lived calls' streams: watchers (counted, under the limits, from the world's
//! hub or, for a world owned elsewhere, the shared log) and seats.

use std::pin::Pin;

use dramatis_proto::v1 as pb;
use futures::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Response, Status};

use std::sync::Arc;

use crate::cluster::mirror::SharedTranscript;
use crate::error::WorldError;
use crate::transcript;
use crate::world::{OpenSeat, PlayInput};
use dramatis_story::view::{SharedScenario, View};

use super::handle::{WorldGrpc, required};

impl WorldGrpc {
    /// A watcher of a world this replica does not own, served from the shared log.
    pub(super) async fn watch_from_log(
        &self,
        request: pb::WatchRequest,
    ) -> Result<Response<WatchStream>, Status> {
        if self.worlds.cluster().is_none() {
            return Err(WorldError::WorldNotFound(request.world_id).into());
        }
        let scenario = self.worlds.scenario_of(&request.world_id).await?;
        let pov = if request.pov.trim().is_empty() {
            None
        } else {
            let found = scenario.find_character(&request.pov).map(|c| c.id.clone());
            Some(found.ok_or_else(|| WorldError::CharacterNotFound {
                world: request.world_id.clone(),
                character: request.pov.clone(),
            })?)
        };
        let slot = self.service_watcher_slot()?;
        let scenario = SharedScenario::from(scenario);
        let view = pov.map(|pov| View::new(scenario.clone(), &request.world_id, Some(pov)));
        let log = SharedTranscript::new(Arc::clone(self.worlds.log()), scenario, &request.world_id);
        let items = transcript::watch(&log, view, request.from_seq, !request.no_follow);
        Ok(Response::new(counted_watch(items, slot)))
    }

    /// A place for one more watcher of `world`, under the service's and the world's
    /// limits.
    pub(super) fn watcher_slots(
        &self,
        world: &crate::world::World,
    ) -> Result<(tokio::sync::OwnedSemaphorePermit, crate::hub::WatcherSlot), WorldError> {
        let limits = self.worlds.limits();
        let service = self.service_watcher_slot()?;
        let here = world
            .hub()
            .enter_watcher(limits.max_watchers_per_world)
            .ok_or_else(|| {
                WorldError::Full(format!(
                    "this world has {} watchers, its limit (serve --max-watchers-per-world)",
                    limits.max_watchers_per_world
                ))
            })?;
        Ok((service, here))
    }

    /// A place for one more watcher under the service's limit.
    pub(super) fn service_watcher_slot(
        &self,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, WorldError> {
        std::sync::Arc::clone(&self.watchers)
            .try_acquire_owned()
            .map_err(|_| {
                WorldError::Full(format!(
                    "this service serves {} watchers, its limit (serve --max-watchers)",
                    self.worlds.limits().max_watchers
                ))
            })
    }

    /// Claims the character a person asked for (`Play`, `ClaimSeat`) in a world this
    /// replica owns.
    pub(super) fn open_seat(
        world: std::sync::Arc<crate::world::World>,
        claim: &pb::PlayClaim,
        extensions: &tonic::Extensions,
    ) -> Result<OpenSeat, Status> {
        required(&claim.character, "claim.character")?;
        let player = extensions
            .get::<dramatis_runtime::auth::Caller>()
            .map(|caller| caller.name.as_str());
        Ok(OpenSeat::open(world, claim, player)?)
    }
}

pub(super) type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchResponse, Status>> + Send>>;
pub(super) type PlayStream = Pin<Box<dyn Stream<Item = Result<pb::PlayResponse, Status>> + Send>>;

/// Opens a seat for `claim` and runs it with `inputs`; the person's stream as gRPC
/// items.
pub(super) fn run_seat(
    seat: OpenSeat,
    inputs: impl Stream<Item = PlayInput> + Send + Unpin + 'static,
    closed: impl FnOnce() + Send + 'static,
) -> PlayStream {
    let rx = seat.start(inputs, closed);
    crate::metrics::SEATS.inc();
    let seated = Seated;
    Box::pin(futures::StreamExt::map(
        ReceiverStream::new(rx),
        move |item| {
            let _counted = &seated;
            Ok(item)
        },
    ))
}

/// Held by an open seat's stream: counted in `dramatis_seats` until it ends.
struct Seated;

impl Drop for Seated {
    fn drop(&mut self) {
        crate::metrics::SEATS.dec();
    }
}

/// A transcript's `items` as the gRPC stream of a watcher, counted in
/// `dramatis_watchers` while it is open and holding `slots` (its places under the
/// watcher limits) as long.
pub(super) fn counted_watch(items: transcript::Items, slots: impl Send + 'static) -> WatchStream {
    let watching = crate::metrics::watcher();
    Box::pin(futures::StreamExt::map(items, move |item| {
        let _counted = (&watching, &slots);
        item.map(|item| pb::WatchResponse { item: Some(item) })
            .map_err(Status::from)
    }))
}
