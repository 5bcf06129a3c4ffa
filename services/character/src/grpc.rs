//! The `dramatis.v1.Agent` gRPC service: converts, validates required fields, calls
//! [`CharacterAgents`], maps errors through `dramatis_proto::status`.

use std::pin::Pin;

use dramatis_proto::v1::agent_server::Agent as AgentApi;
use dramatis_proto::v1::{self as pb, act_response};
use futures::{Stream, StreamExt as _};
use tonic::{Request, Response, Status};

use crate::act::ActItem;
use crate::host::CharacterAgents;

/// The gRPC face of [`CharacterAgents`].
#[derive(Debug, Clone)]
pub struct AgentGrpc {
    agents: CharacterAgents,
}

impl AgentGrpc {
    #[must_use]
    pub fn new(agents: CharacterAgents) -> Self {
        Self { agents }
    }
}

fn character_ref(character: Option<&pb::CharacterRef>) -> Result<(String, String), Status> {
    let character = character.ok_or_else(|| Status::invalid_argument("character is required"))?;
    if character.world_id.trim().is_empty() {
        return Err(Status::invalid_argument("character.world_id is required"));
    }
    if character.character_id.trim().is_empty() {
        return Err(Status::invalid_argument(
            "character.character_id is required",
        ));
    }
    Ok((character.world_id.clone(), character.character_id.clone()))
}

type ActStream = Pin<Box<dyn Stream<Item = Result<pb::ActResponse, Status>> + Send>>;

#[tonic::async_trait]
impl AgentApi for AgentGrpc {
    async fn attach(
        &self,
        request: Request<pb::AttachRequest>,
    ) -> Result<Response<pb::AttachResponse>, Status> {
        let request = request.into_inner();
        let (world, character) = character_ref(request.character.as_ref())?;
        let profile = request
            .profile
            .ok_or_else(|| Status::invalid_argument("profile is required"))?;
        let (memory_items, resumed) = self
            .agents
            .attach(&world, &character, profile)
            .await
            .map_err(Status::from)?;
        let last_seq = self
            .agents
            .last_seq(&world, &character)
            .await
            .map_err(Status::from)?;
        Ok(Response::new(pb::AttachResponse {
            memory_items,
            resumed,
            last_seq,
        }))
    }

    async fn perceive(
        &self,
        request: Request<pb::PerceiveRequest>,
    ) -> Result<Response<pb::PerceiveResponse>, Status> {
        let request = request.into_inner();
        let (world, character) = character_ref(request.character.as_ref())?;
        crate::perceive::check_world(&world, &request.events).map_err(Status::from)?;
        let (accepted, last_seq) = self
            .agents
            .character(&world, &character)
            .map_err(Status::from)?
            .perceive(&request.events)
            .await
            .map_err(Status::from)?;
        Ok(Response::new(pb::PerceiveResponse { accepted, last_seq }))
    }

    type ActStream = ActStream;

    async fn act(&self, request: Request<pb::ActRequest>) -> Result<Response<ActStream>, Status> {
        let request = request.into_inner();
        let (world, character) = character_ref(request.character.as_ref())?;
        let frame = request
            .frame
            .ok_or_else(|| Status::invalid_argument("frame is required"))?;
        // Fail fast on an unknown character, before the stream opens.
        let character = self
            .agents
            .character(&world, &character)
            .map_err(Status::from)?;
        // The turn runs as tonic polls the stream: its words, then its action. A world
        // that gives up the call drops the stream, and the turn ends with it (the world
        // asks again; nothing was logged).
        let items = character.act(frame).map(|item| {
            let item = match item.map_err(Status::from)? {
                ActItem::Words(text) => act_response::Item::Token(text),
                ActItem::Action(outcome) => act_response::Item::Action(outcome.action),
            };
            Ok(pb::ActResponse { item: Some(item) })
        });
        Ok(Response::new(Box::pin(items)))
    }

    async fn answer(
        &self,
        request: Request<pb::AnswerRequest>,
    ) -> Result<Response<pb::AnswerResponse>, Status> {
        let request = request.into_inner();
        let (world, character) = character_ref(request.character.as_ref())?;
        crate::answer::check_options(&request.options).map_err(Status::from)?;
        crate::answer::check_question(&request.question).map_err(Status::from)?;
        let choice = |c: Option<usize>| c.and_then(|c| u32::try_from(c).ok());
        if request.recall_only {
            let view = self
                .agents
                .character(&world, &character)
                .map_err(Status::from)?
                .recall_view_as_of(&request.question, &request.options, request.as_of)
                .await
                .map_err(Status::from)?;
            return Ok(Response::new(pb::AnswerResponse {
                answer: String::new(),
                usage: Some(view.usage),
                abstained: view.abstained,
                recalled: view.items,
                choice: choice(view.choice),
            }));
        }
        let outcome = self
            .agents
            .character(&world, &character)
            .map_err(Status::from)?
            .answer_as_of(&request.question, &request.options, request.as_of)
            .await
            .map_err(Status::from)?;
        Ok(Response::new(pb::AnswerResponse {
            answer: outcome.answer,
            usage: Some(outcome.usage),
            abstained: outcome.abstained,
            recalled: Vec::new(),
            choice: choice(outcome.choice),
        }))
    }

    async fn snapshot(
        &self,
        request: Request<pb::SnapshotRequest>,
    ) -> Result<Response<pb::SnapshotResponse>, Status> {
        let request = request.into_inner();
        let (world, character) = character_ref(request.character.as_ref())?;
        let shard = self
            .agents
            .snapshot(&world, &character)
            .await
            .map_err(Status::from)?;
        let prompts = shard.prompts();
        let total = prompts.len() as u64;
        let from = usize::try_from(request.prompts_from).unwrap_or(usize::MAX);
        let limit = match request.prompts_limit {
            0 => usize::MAX,
            n => n as usize,
        };
        let page: Vec<pb::PromptRecord> = prompts.into_iter().skip(from).take(limit).collect();
        if request.prompts_only {
            return Ok(Response::new(pb::SnapshotResponse {
                last_seq: shard.last_seq(),
                prompts: page,
                prompts_total: total,
                ..pb::SnapshotResponse::default()
            }));
        }
        Ok(Response::new(pb::SnapshotResponse {
            profile: Some(shard.profile.clone()),
            memory: shard.memory(),
            last_seq: shard.last_seq(),
            prompts: page,
            module_stats: shard.modules().stats(),
            prompts_total: total,
        }))
    }

    async fn detach(
        &self,
        request: Request<pb::DetachRequest>,
    ) -> Result<Response<pb::DetachResponse>, Status> {
        let request = request.into_inner();
        let (world, character) = character_ref(request.character.as_ref())?;
        self.agents
            .detach(&world, &character, request.keep_shard)
            .await
            .map_err(Status::from)?;
        Ok(Response::new(pb::DetachResponse {}))
    }
}
