//! The `dramatis.v1.World` gRPC service: converts requests, calls [`Worlds`], maps
//! errors through `dramatis_proto::status`. No story logic lives here.

use std::path::PathBuf;
use std::pin::Pin;

use dramatis_proto::v1::world_server::World as WorldApi;
use dramatis_proto::v1::{self as pb, advance_request, create_world_request};
use futures::Stream;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};

use crate::cluster::peers::{forwarded, was_forwarded};
use crate::error::WorldError;
use crate::limits::quote;
use crate::registry::{Place, ScenarioSource, Worlds};
use crate::world::{OpenSeat, PlayInput, Until};

/// The gRPC face of a [`Worlds`] registry.
#[derive(Debug, Clone)]
pub struct WorldGrpc {
    worlds: Worlds,
    /// One permit per open `Watch` stream (`--max-watchers`).
    watchers: std::sync::Arc<tokio::sync::Semaphore>,
    /// Seats claimed with `ClaimSeat`: token -> (world id, where their actions go).
    seats: std::sync::Arc<dashmap::DashMap<String, (String, tokio::sync::mpsc::Sender<PlayInput>)>>,
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
    async fn place(&self, world_id: &str, metadata: &MetadataMap) -> Result<Place, Status> {
        required(world_id, "world_id")?;
        self.worlds
            .place(world_id, was_forwarded(metadata))
            .await
            .map_err(Status::from)
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
/// change completes, and only the answer is lost.
async fn to_completion<T: Send + 'static>(
    work: impl std::future::Future<Output = Result<T, Status>> + Send + 'static,
) -> Result<T, Status> {
    use tracing::Instrument as _;
    tokio::spawn(work.in_current_span())
        .await
        .map_err(|e| Status::internal(format!("the call's work ended abnormally: {e}")))?
}

impl WorldGrpc {
    /// A watcher of a world this replica does not own, served from the shared log.
    async fn watch_from_log(
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
        let (tx, rx) = tokio::sync::mpsc::channel(crate::world::WATCH_BUFFER);
        crate::cluster::mirror::watch(
            std::sync::Arc::clone(self.worlds.log()),
            scenario,
            crate::cluster::mirror::MirrorWatch {
                world_id: request.world_id,
                from_seq: request.from_seq,
                follow: !request.no_follow,
                pov,
            },
            tx,
        );
        Ok(Response::new(counted_watch(ReceiverStream::new(rx), slot)))
    }

    /// A place for one more watcher of `world`, under the service's and the world's
    /// limits.
    fn watcher_slots(
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
    fn service_watcher_slot(&self) -> Result<tokio::sync::OwnedSemaphorePermit, WorldError> {
        std::sync::Arc::clone(&self.watchers)
            .try_acquire_owned()
            .map_err(|_| {
                WorldError::Full(format!(
                    "this service serves {} watchers, its limit (serve --max-watchers)",
                    self.worlds.limits().max_watchers
                ))
            })
    }

    fn peers(&self) -> Result<&crate::cluster::Peers, Status> {
        self.worlds.cluster().map(|c| &c.peers).ok_or_else(|| {
            Status::internal("a world has an owner elsewhere but no cluster is configured")
        })
    }

    /// Claims the character a person asked for (`Play`, `ClaimSeat`) in a world this
    /// replica owns.
    fn open_seat(
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

fn required(value: &str, field: &str) -> Result<(), Status> {
    if value.trim().is_empty() {
        Err(Status::invalid_argument(format!("{field} is required")))
    } else {
        Ok(())
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<pb::WatchResponse, Status>> + Send>>;
type PlayStream = Pin<Box<dyn Stream<Item = Result<pb::PlayResponse, Status>> + Send>>;

/// Opens a seat for `claim` and runs it with `inputs`; the person's stream as gRPC
/// items.
fn run_seat(
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

/// `stream`, counted in `dramatis_watchers` while it is open, holding `slots` (its
/// places under the watcher limits) as long.
fn counted_watch(
    stream: impl Stream<Item = Result<pb::WatchResponse, Status>> + Send + 'static,
    slots: impl Send + 'static,
) -> WatchStream {
    let watching = crate::metrics::watcher();
    Box::pin(futures::StreamExt::map(stream, move |item| {
        let _counted = (&watching, &slots);
        item
    }))
}

/// The items a hub sends a watcher, then RESOURCE_EXHAUSTED if it was cut off for not
/// reading.
fn paced_watch(
    items: tokio::sync::mpsc::Receiver<pb::WatchResponse>,
    cut_off: crate::hub::CutOff,
) -> impl Stream<Item = Result<pb::WatchResponse, Status>> + Send + 'static {
    let verdict = futures::StreamExt::filter_map(futures::stream::once(cut_off), |why| {
        std::future::ready(why.ok().map(|why| Err(Status::resource_exhausted(why))))
    });
    futures::StreamExt::chain(
        futures::StreamExt::map(ReceiverStream::new(items), Ok),
        verdict,
    )
}

#[tonic::async_trait]
impl WorldApi for WorldGrpc {
    async fn list_scenarios(
        &self,
        _request: Request<pb::ListScenariosRequest>,
    ) -> Result<Response<pb::ListScenariosResponse>, Status> {
        let catalog = self.worlds.catalog().clone();
        let shown = catalog.clone();
        let listed = tokio::task::spawn_blocking(move || catalog.list())
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        let scenarios = listed
            .into_iter()
            .filter_map(|entry| match entry {
                Ok(s) => Some(pb::ScenarioInfo {
                    name: s.name,
                    title: s.title,
                    description: s.description,
                    characters: s.characters,
                    scenes: dramatis_runtime::saturating_u32(s.scenes),
                    path: shown.shown(&s.path).to_string_lossy().into_owned(),
                }),
                Err(error) => {
                    tracing::warn!(%error, "skipping invalid shipped scenario");
                    None
                }
            })
            .collect();
        Ok(Response::new(pb::ListScenariosResponse { scenarios }))
    }

    async fn create_world(
        &self,
        request: Request<pb::CreateWorldRequest>,
    ) -> Result<Response<pb::WorldInfo>, Status> {
        let request = request.into_inner();
        let source = match request.source {
            Some(create_world_request::Source::ScenarioName(name)) => {
                required(&name, "scenario_name")?;
                ScenarioSource::Name(name)
            }
            Some(create_world_request::Source::ScenarioPath(path)) => {
                required(&path, "scenario_path")?;
                ScenarioSource::Path(PathBuf::from(path))
            }
            Some(create_world_request::Source::Sandbox(spec)) => {
                ScenarioSource::Sandbox(Box::new(spec))
            }
            None => {
                return Err(Status::invalid_argument(
                    "source is required: give scenario_name or scenario_path",
                ));
            }
        };
        let world_id = Some(request.world_id).filter(|w| !w.is_empty());
        let worlds = self.worlds.clone();
        to_completion(async move {
            let world = worlds
                .create(source, world_id)
                .await
                .map_err(Status::from)?;
            Ok(Response::new(world.info()))
        })
        .await
    }

    async fn get_world(
        &self,
        request: Request<pb::GetWorldRequest>,
    ) -> Result<Response<pb::WorldInfo>, Status> {
        let (metadata, _, request) = request.into_parts();
        // (In a block of its own: the macro's `?` ends the block, not this call.)
        let answer = async {
            routed!(
                self,
                metadata,
                &request.world_id,
                request,
                get_world,
                |world| Ok(Response::new(world.info()))
            )
        }
        .await;
        // A world a restart could not rebuild is shown as it is: FAILED, and why.
        match answer {
            Err(status) if status.code() == tonic::Code::FailedPrecondition => self
                .worlds
                .unrestored_info(&request.world_id)
                .map(Response::new)
                .ok_or(status),
            answer => answer,
        }
    }

    async fn list_worlds(
        &self,
        _request: Request<pb::ListWorldsRequest>,
    ) -> Result<Response<pb::ListWorldsResponse>, Status> {
        let (metadata, _, _) = _request.into_parts();
        if self.worlds.cluster().is_none() || was_forwarded(&metadata) {
            let mut worlds: Vec<_> = self.worlds.list().iter().map(|w| w.info()).collect();
            worlds.extend(self.worlds.unrestored());
            worlds.sort_by(|a, b| a.world_id.cmp(&b.world_id));
            return Ok(Response::new(pb::ListWorldsResponse { worlds }));
        }
        // Every world of the shared log, each as its owner (or, for an unowned one,
        // this replica once it has taken it over) reports it.
        let records = self.worlds.log().worlds().await.map_err(Status::from)?;
        let infos = futures::StreamExt::map(futures::stream::iter(records), |record| {
            let metadata = &metadata;
            async move {
                let request = pb::GetWorldRequest {
                    world_id: record.world_id.clone(),
                };
                let answer: Result<Response<pb::WorldInfo>, Status> = routed!(
                    self,
                    metadata,
                    &request.world_id,
                    request,
                    get_world,
                    |world| Ok(Response::new(world.info()))
                );
                answer.map(Response::into_inner)
            }
        });
        let infos: Vec<_> =
            futures::StreamExt::collect(futures::StreamExt::buffered(infos, 16)).await;
        let mut worlds = Vec::with_capacity(infos.len());
        for info in infos {
            match info {
                Ok(info) => worlds.push(info),
                // Deleted meanwhile.
                Err(status) if status.code() == tonic::Code::NotFound => {}
                Err(status) => return Err(status),
            }
        }
        Ok(Response::new(pb::ListWorldsResponse { worlds }))
    }

    async fn delete_world(
        &self,
        request: Request<pb::DeleteWorldRequest>,
    ) -> Result<Response<pb::DeleteWorldResponse>, Status> {
        let (metadata, _, request) = request.into_parts();
        let delete = |world_id: String| {
            let worlds = self.worlds.clone();
            to_completion(async move {
                worlds.delete(&world_id).await.map_err(Status::from)?;
                Ok(Response::new(pb::DeleteWorldResponse {}))
            })
        };
        let answer = async {
            routed!(
                self,
                metadata,
                &request.world_id,
                request,
                delete_world,
                |world| delete(world.id().to_owned()).await
            )
        }
        .await;
        match answer {
            // A world a restart could not rebuild is deleted from its log and shards.
            Err(status)
                if status.code() == tonic::Code::FailedPrecondition
                    && self.worlds.unrestored_info(&request.world_id).is_some() =>
            {
                delete(request.world_id.clone()).await
            }
            answer => answer,
        }
    }

    async fn advance(
        &self,
        request: Request<pb::AdvanceRequest>,
    ) -> Result<Response<pb::AdvanceResponse>, Status> {
        let (metadata, _, request) = request.into_parts();
        required(&request.world_id, "world_id")?;
        let until = match request.until {
            Some(advance_request::Until::Turns(0)) => {
                return Err(Status::invalid_argument("turns must be at least 1"));
            }
            Some(advance_request::Until::Turns(n)) => {
                let max = self.worlds.limits().max_turns;
                crate::limits::Limits::check_count(
                    "turns",
                    u64::from(n),
                    u64::from(max),
                    "--max-turns",
                )?;
                Until::Turns(n)
            }
            Some(advance_request::Until::SceneEnd(true)) => Until::SceneEnd,
            Some(advance_request::Until::ScriptEnd(true)) => Until::ScriptEnd,
            Some(_) | None => {
                return Err(Status::invalid_argument(
                    "until is required: turns > 0, scene_end = true or script_end = true",
                ));
            }
        };
        routed!(
            self,
            metadata,
            &request.world_id,
            request,
            advance,
            |world| {
                to_completion(async move {
                    let events = world.advance(until).await.map_err(Status::from)?;
                    Ok(Response::new(pb::AdvanceResponse {
                        events,
                        world: Some(world.info()),
                    }))
                })
                .await
            }
        )
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let request = request.into_inner();
        required(&request.world_id, "world_id")?;
        let Ok(world) = self.worlds.get(&request.world_id) else {
            // Owned elsewhere (or by nobody now): from the shared log, here.
            return self.watch_from_log(request).await;
        };
        let pov = if request.pov.trim().is_empty() {
            None
        } else {
            Some(world.character_id(&request.pov).map_err(Status::from)?)
        };
        let slots = self.watcher_slots(&world)?;
        let (tx, rx) = tokio::sync::mpsc::channel(crate::world::WATCH_BUFFER);
        let Some(pov) = pov else {
            let cut_off = world.hub().watch(request.from_seq, !request.no_follow, tx);
            return Ok(Response::new(counted_watch(
                paced_watch(rx, cut_off),
                slots,
            )));
        };
        // One character's point of view: the hub's stream, filtered as its agent is.
        // (The follower ends by itself when the watcher goes away; it is not joined.)
        let (follower, cut_off) =
            world.follow_as(&pov, request.from_seq, !request.no_follow, tx, |item| {
                pb::WatchResponse { item: Some(item) }
            });
        drop(follower);
        Ok(Response::new(counted_watch(
            paced_watch(rx, cut_off),
            slots,
        )))
    }

    async fn ask(
        &self,
        request: Request<pb::AskRequest>,
    ) -> Result<Response<pb::AskResponse>, Status> {
        let (metadata, _, request) = request.into_parts();
        required(&request.world_id, "world_id")?;
        required(&request.character, "character")?;
        required(&request.question, "question")?;
        routed!(self, metadata, &request.world_id, request, ask, |world| {
            let answer = world
                .ask(
                    &request.character,
                    &request.question,
                    &request.options,
                    request.recall_only,
                )
                .await
                .map_err(Status::from)?;
            Ok(Response::new(answer))
        })
    }

    async fn get_audit(
        &self,
        request: Request<pb::GetAuditRequest>,
    ) -> Result<Response<pb::GetAuditResponse>, Status> {
        let (metadata, _, request) = request.into_parts();
        routed!(
            self,
            metadata,
            &request.world_id,
            request,
            get_audit,
            |world| {
                let (audits, next_page_token) = world
                    .audit(
                        Some(request.character.as_str()),
                        request.page_size,
                        &request.page_token,
                    )
                    .await
                    .map_err(Status::from)?;
                Ok(Response::new(pb::GetAuditResponse {
                    audits,
                    next_page_token,
                }))
            }
        )
    }

    type PlayStream = PlayStream;

    async fn play(
        &self,
        request: Request<tonic::Streaming<pb::PlayRequest>>,
    ) -> Result<Response<PlayStream>, Status> {
        let (metadata, extensions, mut inbound) = request.into_parts();
        let Some(pb::PlayRequest {
            item: Some(pb::play_request::Item::Claim(claim)),
        }) = inbound.message().await?
        else {
            return Err(Status::invalid_argument(
                "the first message must be a claim (world_id, character)",
            ));
        };
        let world = match self.place(&claim.world_id, &metadata).await? {
            Place::Here(world) => world,
            Place::Owner(endpoint) => {
                // The seat lives at the owner: the person's stream goes there whole.
                let first = pb::PlayRequest {
                    item: Some(pb::play_request::Item::Claim(claim)),
                };
                let rest = inbound.map_while(Result::ok);
                let outbound = tokio_stream::StreamExt::chain(tokio_stream::once(first), rest);
                let answer = self
                    .peers()?
                    .client(&endpoint)?
                    .play(forwarded(&metadata, outbound))
                    .await?;
                return Ok(Response::new(Box::pin(answer.into_inner())));
            }
        };
        let seat = Self::open_seat(world, &claim, &extensions)?;
        let inputs = inbound.map_while(|message| match message {
            Ok(pb::PlayRequest {
                item: Some(pb::play_request::Item::Action(action)),
            }) => Some(PlayInput::Action(action, None)),
            Ok(_) => Some(PlayInput::NotAnAction),
            Err(_) => None,
        });
        Ok(Response::new(run_seat(seat, inputs, || {})))
    }

    type ClaimSeatStream = PlayStream;

    async fn claim_seat(
        &self,
        request: Request<pb::PlayClaim>,
    ) -> Result<Response<PlayStream>, Status> {
        let (metadata, extensions, claim) = request.into_parts();
        let world = match self.place(&claim.world_id, &metadata).await? {
            Place::Here(world) => world,
            Place::Owner(endpoint) => {
                let answer = self
                    .peers()?
                    .client(&endpoint)?
                    .claim_seat(forwarded(&metadata, claim))
                    .await?;
                return Ok(Response::new(Box::pin(answer.into_inner())));
            }
        };
        let seat = Self::open_seat(world, &claim, &extensions)?;
        let token = uuid::Uuid::new_v4().to_string();
        let (inputs_tx, inputs_rx) = tokio::sync::mpsc::channel(8);
        self.seats
            .insert(token.clone(), (seat.world_id().to_owned(), inputs_tx));
        seat.tell(pb::play_response::Item::Seat(token.clone()))
            .await;
        let seats = std::sync::Arc::clone(&self.seats);
        let stream = run_seat(seat, ReceiverStream::new(inputs_rx), move || {
            seats.remove(&token);
        });
        Ok(Response::new(stream))
    }

    async fn play_act(
        &self,
        request: Request<pb::PlayActRequest>,
    ) -> Result<Response<pb::PlayActResponse>, Status> {
        let (metadata, _, request) = request.into_parts();
        required(&request.seat, "seat")?;
        if !self.seats.contains_key(&request.seat)
            && let Place::Owner(endpoint) = self.place(&request.world_id, &metadata).await?
        {
            // Seats live with their world's owner.
            return self
                .peers()?
                .client(&endpoint)?
                .play_act(forwarded(&metadata, request))
                .await;
        }
        let Some(action) = request.action else {
            return Err(Status::invalid_argument("action is required"));
        };
        let max = self.worlds.limits().max_line_chars;
        crate::limits::Limits::check_chars("action.text", &action.text, max)?;
        crate::limits::Limits::check_chars("action.thought", &action.thought, max)?;
        let inputs = self
            .seats
            .get(&request.seat)
            .filter(|entry| entry.0 == request.world_id)
            .map(|entry| entry.1.clone())
            .ok_or_else(|| {
                Status::not_found(format!(
                    "no open seat {} in world {} (claim one with ClaimSeat)",
                    quote(&request.seat),
                    quote(&request.world_id)
                ))
            })?;
        let (reply, accepted) = tokio::sync::oneshot::channel();
        inputs
            .send(PlayInput::Action(action, Some(reply)))
            .await
            .map_err(|_| Status::not_found(format!("seat {} is closed", quote(&request.seat))))?;
        match accepted.await {
            Ok(Ok(())) => Ok(Response::new(pb::PlayActResponse {})),
            Ok(Err(notice)) => Err(Status::failed_precondition(notice)),
            Err(_) => Err(Status::not_found(format!(
                "seat {} is closed",
                quote(&request.seat)
            ))),
        }
    }
}
