//! `dramatis.v1.World`, method by method: validate → call the registry or the world →
//! convert. Errors go through `From<WorldError> for Status`.

use std::path::PathBuf;

use dramatis_proto::v1::world_server::World as WorldApi;
use dramatis_proto::v1::{self as pb, advance_request, create_world_request};
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::cluster::peers::{forwarded, was_forwarded};
use crate::limits::quote;
use crate::registry::{Place, ScenarioSource};
use crate::world::{PlayInput, Until};

use super::handle::{WorldGrpc, required, routed, to_completion};
use super::streams::{PlayStream, WatchStream, counted_watch, run_seat};

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
        to_completion(self.worlds.tasks(), async move {
            let world = worlds
                .create(source, world_id, request.replay)
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
            to_completion(self.worlds.tasks(), async move {
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
                to_completion(self.worlds.tasks(), async move {
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

    async fn intervene(
        &self,
        request: Request<pb::InterveneRequest>,
    ) -> Result<Response<pb::InterveneResponse>, Status> {
        self.direct(request).await
    }

    async fn fork(
        &self,
        request: Request<pb::ForkRequest>,
    ) -> Result<Response<pb::WorldInfo>, Status> {
        self.branch(request).await
    }

    async fn regenerate(
        &self,
        request: Request<pb::RegenerateRequest>,
    ) -> Result<Response<pb::AdvanceResponse>, Status> {
        self.ask_again(request).await
    }

    async fn export_character(
        &self,
        request: Request<pb::ExportCharacterRequest>,
    ) -> Result<Response<pb::ExportCharacterResponse>, Status> {
        let (metadata, _, request) = request.into_parts();
        required(&request.world_id, "world_id")?;
        required(&request.character, "character")?;
        routed!(
            self,
            metadata,
            &request.world_id,
            request,
            export_character,
            |world| world
                .export_character(&request.character)
                .await
                .map(Response::new)
                .map_err(Status::from)
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
        let items = world.watch(pov.as_deref(), request.from_seq, !request.no_follow);
        Ok(Response::new(counted_watch(items, slots)))
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
                    request.as_of.as_ref(),
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
