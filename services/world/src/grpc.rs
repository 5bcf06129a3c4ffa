//! The `dramatis.v1.World` gRPC service: converts requests, calls [`Worlds`], maps
//! errors through `dramatis_proto::status`. No story logic lives here.

use std::path::PathBuf;
use std::pin::Pin;

use dramatis_proto::status::to_status;
use dramatis_proto::v1::world_server::World as WorldApi;
use dramatis_proto::v1::{self as pb, advance_request, create_world_request};
use futures::Stream;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::registry::{ScenarioSource, Worlds};
use crate::story::perception::PerceptionRouter;
use crate::world::Until;

/// The gRPC face of a [`Worlds`] registry.
#[derive(Debug, Clone)]
pub struct WorldGrpc {
    worlds: Worlds,
    /// Seats claimed with `ClaimSeat`: token -> (world id, where their actions go).
    seats: std::sync::Arc<dashmap::DashMap<String, (String, tokio::sync::mpsc::Sender<PlayInput>)>>,
}

impl WorldGrpc {
    #[must_use]
    pub fn new(worlds: Worlds) -> Self {
        Self {
            worlds,
            seats: std::sync::Arc::default(),
        }
    }

    /// The world a request names: `world_id` must be given and must exist.
    fn world(&self, world_id: &str) -> Result<std::sync::Arc<crate::world::World>, Status> {
        required(world_id, "world_id")?;
        self.worlds.get(world_id).map_err(|e| to_status(&e))
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

/// Forwards what `pov` perceives of `world` (events as its agent got them; words of
/// lines spoken where it is) into `out`, wrapped by `wrap`.
fn follow_as<T: Send + 'static>(
    world: &crate::world::World,
    pov: &str,
    from_seq: u64,
    follow: bool,
    out: tokio::sync::mpsc::Sender<T>,
    wrap: impl Fn(pb::watch_response::Item) -> T + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let (all_tx, mut all_rx) = tokio::sync::mpsc::channel(256);
    world.hub().watch(from_seq, follow, all_tx);
    let pov = pov.to_owned();
    tokio::spawn(async move {
        loop {
            let message = tokio::select! {
                () = out.closed() => break,
                message = all_rx.recv() => match message {
                    Some(message) => message,
                    None => break,
                },
            };
            let seen = match message.item {
                Some(pb::watch_response::Item::Event(event)) => {
                    PerceptionRouter::view_for(&event, &pov).map(pb::watch_response::Item::Event)
                }
                Some(pb::watch_response::Item::Token(token)) => token
                    .perceivers
                    .contains(&pov)
                    .then_some(pb::watch_response::Item::Token(token)),
                None => None,
            };
            if let Some(item) = seen
                && out.send(wrap(item)).await.is_err()
            {
                break;
            }
        }
    })
}

/// The longest a world waits for a person's action (10 minutes).
const MAX_TURN_WAIT_MS: u64 = 600_000;

fn play_item(item: pb::play_response::Item) -> Result<pb::PlayResponse, Status> {
    Ok(pb::PlayResponse { item: Some(item) })
}

#[tonic::async_trait]
impl WorldApi for WorldGrpc {
    async fn list_scenarios(
        &self,
        _request: Request<pb::ListScenariosRequest>,
    ) -> Result<Response<pb::ListScenariosResponse>, Status> {
        let catalog = self.worlds.catalog().clone();
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
                    scenes: u32::try_from(s.scenes).unwrap_or(u32::MAX),
                    path: s.path.to_string_lossy().into_owned(),
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
        let world = self
            .worlds
            .create(source, world_id)
            .await
            .map_err(|e| to_status(&e))?;
        Ok(Response::new(world.info()))
    }

    async fn get_world(
        &self,
        request: Request<pb::GetWorldRequest>,
    ) -> Result<Response<pb::WorldInfo>, Status> {
        let request = request.into_inner();
        let world = self.world(&request.world_id)?;
        Ok(Response::new(world.info()))
    }

    async fn list_worlds(
        &self,
        _request: Request<pb::ListWorldsRequest>,
    ) -> Result<Response<pb::ListWorldsResponse>, Status> {
        let worlds = self.worlds.list().iter().map(|w| w.info()).collect();
        Ok(Response::new(pb::ListWorldsResponse { worlds }))
    }

    async fn delete_world(
        &self,
        request: Request<pb::DeleteWorldRequest>,
    ) -> Result<Response<pb::DeleteWorldResponse>, Status> {
        let request = request.into_inner();
        required(&request.world_id, "world_id")?;
        self.worlds
            .delete(&request.world_id)
            .await
            .map_err(|e| to_status(&e))?;
        Ok(Response::new(pb::DeleteWorldResponse {}))
    }

    async fn advance(
        &self,
        request: Request<pb::AdvanceRequest>,
    ) -> Result<Response<pb::AdvanceResponse>, Status> {
        let request = request.into_inner();
        required(&request.world_id, "world_id")?;
        let until = match request.until {
            Some(advance_request::Until::Turns(0)) => {
                return Err(Status::invalid_argument("turns must be at least 1"));
            }
            Some(advance_request::Until::Turns(n)) => Until::Turns(n),
            Some(advance_request::Until::SceneEnd(true)) => Until::SceneEnd,
            Some(advance_request::Until::ScriptEnd(true)) => Until::ScriptEnd,
            Some(_) | None => {
                return Err(Status::invalid_argument(
                    "until is required: turns > 0, scene_end = true or script_end = true",
                ));
            }
        };
        let world = self.world(&request.world_id)?;
        let events = world.advance(until).await.map_err(|e| to_status(&e))?;
        Ok(Response::new(pb::AdvanceResponse {
            events,
            world: Some(world.info()),
        }))
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let request = request.into_inner();
        let world = self.world(&request.world_id)?;
        let pov = if request.pov.trim().is_empty() {
            None
        } else {
            Some(
                world
                    .character_id(&request.pov)
                    .map_err(|e| to_status(&e))?,
            )
        };
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        let Some(pov) = pov else {
            world.hub().watch(request.from_seq, !request.no_follow, tx);
            let stream = futures::StreamExt::map(ReceiverStream::new(rx), Ok);
            return Ok(Response::new(Box::pin(stream)));
        };
        // One character's point of view: the hub's stream, filtered as its agent is.
        // (The follower ends by itself when the watcher goes away; it is not joined.)
        drop(follow_as(
            &world,
            &pov,
            request.from_seq,
            !request.no_follow,
            tx,
            |item| pb::WatchResponse { item: Some(item) },
        ));
        let stream = futures::StreamExt::map(ReceiverStream::new(rx), Ok);
        Ok(Response::new(Box::pin(stream)))
    }

    async fn ask(
        &self,
        request: Request<pb::AskRequest>,
    ) -> Result<Response<pb::AskResponse>, Status> {
        let request = request.into_inner();
        required(&request.world_id, "world_id")?;
        required(&request.character, "character")?;
        required(&request.question, "question")?;
        let world = self.world(&request.world_id)?;
        let answer = world
            .ask(&request.character, &request.question, request.recall_only)
            .await
            .map_err(|e| to_status(&e))?;
        Ok(Response::new(answer))
    }

    async fn get_audit(
        &self,
        request: Request<pb::GetAuditRequest>,
    ) -> Result<Response<pb::GetAuditResponse>, Status> {
        let request = request.into_inner();
        let world = self.world(&request.world_id)?;
        let audits = world
            .audit(Some(request.character.as_str()))
            .await
            .map_err(|e| to_status(&e))?;
        Ok(Response::new(pb::GetAuditResponse { audits }))
    }

    type PlayStream = PlayStream;

    async fn play(
        &self,
        request: Request<tonic::Streaming<pb::PlayRequest>>,
    ) -> Result<Response<PlayStream>, Status> {
        let mut inbound = request.into_inner();
        let Some(pb::PlayRequest {
            item: Some(pb::play_request::Item::Claim(claim)),
        }) = inbound.message().await?
        else {
            return Err(Status::invalid_argument(
                "the first message must be a claim (world_id, character)",
            ));
        };
        let seat = self.open_seat(&claim)?;
        let inputs = inbound.map_while(|message| match message {
            Ok(pb::PlayRequest {
                item: Some(pb::play_request::Item::Action(action)),
            }) => Some(PlayInput::Action(action, None)),
            Ok(_) => Some(PlayInput::NotAnAction),
            Err(_) => None,
        });
        let stream = ReceiverStream::new(seat.start(inputs, || {}));
        Ok(Response::new(Box::pin(stream)))
    }

    type ClaimSeatStream = PlayStream;

    async fn claim_seat(
        &self,
        request: Request<pb::PlayClaim>,
    ) -> Result<Response<PlayStream>, Status> {
        let claim = request.into_inner();
        let seat = self.open_seat(&claim)?;
        let token = uuid::Uuid::new_v4().to_string();
        let (inputs_tx, inputs_rx) = tokio::sync::mpsc::channel(8);
        self.seats
            .insert(token.clone(), (seat.world.id().to_owned(), inputs_tx));
        let _ = seat
            .out
            .send(play_item(pb::play_response::Item::Seat(token.clone())))
            .await;
        let seats = std::sync::Arc::clone(&self.seats);
        let rx = seat.start(ReceiverStream::new(inputs_rx), move || {
            seats.remove(&token);
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn play_act(
        &self,
        request: Request<pb::PlayActRequest>,
    ) -> Result<Response<pb::PlayActResponse>, Status> {
        let request = request.into_inner();
        required(&request.seat, "seat")?;
        let Some(action) = request.action else {
            return Err(Status::invalid_argument("action is required"));
        };
        let inputs = self
            .seats
            .get(&request.seat)
            .filter(|entry| entry.0 == request.world_id)
            .map(|entry| entry.1.clone())
            .ok_or_else(|| {
                Status::not_found(format!(
                    "no open seat {} in world {:?} (claim one with ClaimSeat)",
                    request.seat, request.world_id
                ))
            })?;
        let (reply, accepted) = tokio::sync::oneshot::channel();
        inputs
            .send(PlayInput::Action(action, Some(reply)))
            .await
            .map_err(|_| Status::not_found(format!("seat {} is closed", request.seat)))?;
        match accepted.await {
            Ok(Ok(())) => Ok(Response::new(pb::PlayActResponse {})),
            Ok(Err(notice)) => Err(Status::failed_precondition(notice)),
            Err(_) => Err(Status::not_found(format!(
                "seat {} is closed",
                request.seat
            ))),
        }
    }
}

/// What a player sends once the claim is made.
enum PlayInput {
    /// An action, and (for `PlayAct`) where to say whether it was taken.
    Action(
        pb::PlayAction,
        Option<tokio::sync::oneshot::Sender<Result<(), String>>>,
    ),
    NotAnAction,
}

/// A claimed character: the world, the character's id, the turns the world offers it
/// and the stream to the person.
struct OpenSeat {
    world: std::sync::Arc<crate::world::World>,
    id: String,
    turns: tokio::sync::mpsc::Receiver<crate::world::TurnRequest>,
    out: tokio::sync::mpsc::Sender<Result<pb::PlayResponse, Status>>,
    rx: tokio::sync::mpsc::Receiver<Result<pb::PlayResponse, Status>>,
    /// Forwards what the character perceives; stopped when the seat closes, so the
    /// person's stream ends with it.
    follower: tokio::task::JoinHandle<()>,
}

impl WorldGrpc {
    /// Claims the character for a person and starts forwarding what it perceives.
    fn open_seat(&self, claim: &pb::PlayClaim) -> Result<OpenSeat, Status> {
        required(&claim.character, "claim.character")?;
        let world = self.world(&claim.world_id)?;
        // The story waits for the person while holding the world, so the wait is capped.
        let timeout = std::time::Duration::from_millis(if claim.timeout_ms == 0 {
            60_000
        } else {
            u64::from(claim.timeout_ms).min(MAX_TURN_WAIT_MS)
        });
        let (id, turns) = world
            .claim(&claim.character, timeout)
            .map_err(|e| match e {
                crate::WorldError::InvalidArgument(message) => Status::already_exists(message),
                other => to_status(&other),
            })?;
        let (out, rx) = tokio::sync::mpsc::channel(256);
        // Room for these two was just made; nothing can fill the channel first.
        let _ = out.try_send(play_item(pb::play_response::Item::Claimed(id.clone())));
        let from = if claim.from_seq == 0 {
            world.hub().next_seq()
        } else {
            claim.from_seq
        };
        let follower = follow_as(&world, &id, from, true, out.clone(), |item| {
            play_item(match item {
                pb::watch_response::Item::Event(e) => pb::play_response::Item::Event(e),
                pb::watch_response::Item::Token(t) => pb::play_response::Item::Token(t),
            })
        });
        Ok(OpenSeat {
            world,
            id,
            turns,
            out,
            rx,
            follower,
        })
    }
}

impl OpenSeat {
    /// Runs the seat until the person leaves (`inputs` ends or the stream to them
    /// closes): offers each turn, passes the person's action on, tells them when the
    /// agent took a turn back. Then gives the character back and calls `closed`.
    fn start(
        self,
        inputs: impl Stream<Item = PlayInput> + Send + Unpin + 'static,
        closed: impl FnOnce() + Send + 'static,
    ) -> tokio::sync::mpsc::Receiver<Result<pb::PlayResponse, Status>> {
        let Self {
            world,
            id,
            mut turns,
            out,
            rx,
            follower,
        } = self;
        let mut inputs = inputs;
        tokio::spawn(async move {
            let notice = |text: &str| play_item(pb::play_response::Item::Notice(text.to_owned()));
            let mut pending: Option<tokio::sync::oneshot::Sender<pb::Action>> = None;
            loop {
                let handed_back = async {
                    match pending.as_mut() {
                        Some(reply) => reply.closed().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    offer = turns.recv() => {
                        let Some(offer) = offer else {
                            // The world closed the seat: it was deleted.
                            let _ = out.send(notice("This world was deleted; your seat is closed.")).await;
                            break;
                        };
                        pending = Some(offer.reply);
                        let turn = pb::YourTurn {
                            frame: Some(offer.frame),
                            timeout_ms: u32::try_from(offer.timeout.as_millis()).unwrap_or(u32::MAX),
                        };
                        if out.send(play_item(pb::play_response::Item::YourTurn(turn))).await.is_err() {
                            break;
                        }
                    }
                    () = handed_back => {
                        pending = None;
                        let _ = out.send(notice("Too late: your character's agent took this turn.")).await;
                    }
                    () = out.closed() => break,
                    input = inputs.next() => match input {
                        Some(PlayInput::Action(a, accepted)) => {
                            let taken = match pending.take() {
                                Some(reply) => reply
                                    .send(pb::Action {
                                        kind: a.kind,
                                        text: a.text,
                                        target: a.target,
                                        destination: a.destination,
                                        thought: a.thought,
                                        usage: None,
                                        fallback: false,
                                    })
                                    .map_err(|_| "Too late: your character's agent took this turn.".to_owned()),
                                None => Err("It is not your turn yet.".to_owned()),
                            };
                            if let Err(text) = &taken {
                                let _ = out.send(notice(text)).await;
                            }
                            if let Some(accepted) = accepted {
                                let _ = accepted.send(taken);
                            }
                        }
                        Some(PlayInput::NotAnAction) => {
                            let _ = out.send(notice("Send actions only; the claim is made.")).await;
                        }
                        None => break,
                    },
                }
            }
            world.release(&id);
            follower.abort();
            closed();
        });
        rx
    }
}
