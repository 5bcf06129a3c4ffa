//! The `dramatis.v1.World` gRPC service: converts requests, calls [`Worlds`], maps
//! errors through `dramatis_proto::status`. No story logic lives here.

use std::path::PathBuf;
use std::pin::Pin;

use dramatis_proto::status::to_status;
use dramatis_proto::v1::world_server::World as WorldApi;
use dramatis_proto::v1::{self as pb, advance_request, create_world_request};
use futures::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::router::PerceptionRouter;
use crate::service::{ScenarioSource, Worlds};
use crate::world::Until;

/// The gRPC face of a [`Worlds`] registry.
#[derive(Debug, Clone)]
pub struct WorldGrpc {
    worlds: Worlds,
}

impl WorldGrpc {
    #[must_use]
    pub fn new(worlds: Worlds) -> Self {
        Self { worlds }
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
) {
    let (all_tx, mut all_rx) = tokio::sync::mpsc::channel(256);
    world.hub().watch(from_seq, follow, all_tx);
    let pov = pov.to_owned();
    tokio::spawn(async move {
        while let Some(message) = all_rx.recv().await {
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
    });
}

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
        follow_as(
            &world,
            &pov,
            request.from_seq,
            !request.no_follow,
            tx,
            |item| pb::WatchResponse { item: Some(item) },
        );
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
            .ask(&request.character, &request.question)
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
        required(&claim.character, "claim.character")?;
        let world = self.world(&claim.world_id)?;
        let timeout = std::time::Duration::from_millis(if claim.timeout_ms == 0 {
            60_000
        } else {
            u64::from(claim.timeout_ms)
        });
        let (id, mut turns) = world
            .claim(&claim.character, timeout)
            .map_err(|e| match e {
                crate::WorldError::InvalidArgument(message) => Status::already_exists(message),
                other => to_status(&other),
            })?;
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        let from = if claim.from_seq == 0 {
            world.hub().next_seq()
        } else {
            claim.from_seq
        };
        let _ = tx
            .send(play_item(pb::play_response::Item::Claimed(id.clone())))
            .await;
        follow_as(&world, &id, from, true, tx.clone(), |item| {
            play_item(match item {
                pb::watch_response::Item::Event(e) => pb::play_response::Item::Event(e),
                pb::watch_response::Item::Token(t) => pb::play_response::Item::Token(t),
            })
        });
        tokio::spawn(async move {
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
                        let Some(offer) = offer else { break };
                        pending = Some(offer.reply);
                        let turn = pb::YourTurn {
                            frame: Some(offer.frame),
                            timeout_ms: u32::try_from(offer.timeout.as_millis()).unwrap_or(u32::MAX),
                        };
                        if tx.send(play_item(pb::play_response::Item::YourTurn(turn))).await.is_err() {
                            break;
                        }
                    }
                    () = handed_back => {
                        pending = None;
                        let notice = "Too late: your character's agent took this turn.".to_owned();
                        let _ = tx.send(play_item(pb::play_response::Item::Notice(notice))).await;
                    }
                    message = inbound.message() => match message {
                        Ok(Some(pb::PlayRequest { item: Some(pb::play_request::Item::Action(a)) })) => {
                            match pending.take() {
                                Some(reply) => {
                                    let action = pb::Action {
                                        kind: a.kind,
                                        text: a.text,
                                        target: a.target,
                                        destination: a.destination,
                                        thought: a.thought,
                                        usage: None,
                                        fallback: false,
                                    };
                                    let _ = reply.send(action);
                                }
                                None => {
                                    let notice = "It is not your turn yet.".to_owned();
                                    let _ = tx.send(play_item(pb::play_response::Item::Notice(notice))).await;
                                }
                            }
                        }
                        Ok(Some(_)) => {
                            let notice = "Send actions only; the claim is made.".to_owned();
                            let _ = tx.send(play_item(pb::play_response::Item::Notice(notice))).await;
                        }
                        Ok(None) | Err(_) => break,
                    },
                }
            }
            world.release(&id);
        });
        let stream = ReceiverStream::new(rx);
        Ok(Response::new(Box::pin(stream)))
    }
}
