//! A character's turn (its agent's action, streamed to watchers, or a person's), an
//! interview, and the prompt audit: the world's calls to agents for one character.

use std::time::Instant;

use futures::StreamExt as _;
use tracing::Instrument as _;

use dramatis_proto::v1::{self as pb, TokenChunk, act_response};

use super::World;
use crate::error::WorldError;
use crate::limits::Limits;
use dramatis_story::drafts::{Draft, resolve};
use dramatis_story::state::WorldState;

/// Prompts in one page of `GetAudit` when the caller does not say, and the most it
/// may ask for (a prompt is up to ~10 KB: a page stays far below message limits).
pub const AUDIT_PAGE: u32 = 100;
pub const AUDIT_PAGE_MAX: u32 = 1_000;
/// Options a multiple-choice question may carry at most (the agent holds the same
/// bound).
pub const MAX_OPTIONS: usize = 8;

impl World {
    /// The actor's turn from its agent (or, in a replaying world, from the replayed
    /// log), its tokens streamed to watchers. Called under the step lock.
    pub(super) async fn agent_turn(
        &self,
        state: &WorldState,
        actor: &str,
    ) -> Result<Draft, WorldError> {
        self.deliver_pending(actor).await?;
        let scenario = self.scenario();
        if let Some(replay) = &self.replay {
            return replay.next(self.perspective(&scenario, state, actor), state, actor);
        }
        let started = Instant::now();
        let seed = self
            .retake_seed
            .swap(0, std::sync::atomic::Ordering::AcqRel);
        let request = pb::ActRequest {
            character: Some(self.character_ref(actor)),
            frame: Some(pb::SceneFrame {
                seed,
                ..self.frame_of(state, actor)
            }),
        };
        let seq = self.hub.next_seq();
        let speaker_name = scenario.name_of(actor).to_owned();
        let hearers = state.present_at(
            state
                .locations
                .get(actor)
                .map_or(state.scene_location.as_str(), String::as_str),
        );
        // The whole stream is one call: an agent that dies mid-line is recovered and
        // asked again (watchers may see the line's first tokens twice; the log holds
        // one line).
        let action = self
            .call_agent(actor, |port| {
                let request = request.clone();
                let (hearers, speaker_name) = (&hearers, &speaker_name);
                async move {
                    let mut items = port.act(request).await?;
                    let mut action = None;
                    while let Some(item) = items.next().await {
                        match item? {
                            act_response::Item::Token(text) => {
                                let token = TokenChunk {
                                    seq,
                                    speaker: actor.to_owned(),
                                    text,
                                    speaker_name: speaker_name.clone(),
                                    perceivers: hearers.clone(),
                                };
                                self.hub.publish_token(token);
                            }
                            act_response::Item::Action(a) => action = Some(a),
                        }
                    }
                    Ok(action)
                }
            })
            .instrument(tracing::info_span!("act"))
            .await?;
        let action = action.ok_or_else(|| WorldError::Agent {
            character: actor.to_owned(),
            kind: dramatis_proto::ErrorKind::Internal,
            message: "act stream ended without an action".into(),
        })?;
        let mut draft = resolve(self.perspective(&scenario, state, actor), state, &action);
        if let Some(usage) = &mut draft.usage {
            usage.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        }
        Ok(draft)
    }

    /// The id of a character given by id, name or alias.
    pub fn character_id(&self, character: &str) -> Result<String, WorldError> {
        self.scenario()
            .find_character(character)
            .map(|c| c.id.clone())
            .ok_or_else(|| WorldError::CharacterNotFound {
                world: self.id.clone(),
                character: character.to_owned(),
            })
    }

    /// Puts a question to one character; its agent answers from its own shard. With
    /// options (a multiple-choice question) the agent also says which one it holds
    /// evidence for.
    pub async fn ask(
        &self,
        character: &str,
        question: &str,
        options: &[String],
        recall_only: bool,
        as_of: Option<&pb::AsOf>,
    ) -> Result<pb::AskResponse, WorldError> {
        let id = self.character_id(character)?;
        if question.trim().is_empty() {
            return Err(WorldError::InvalidArgument(
                "question must not be empty".into(),
            ));
        }
        Limits::check_chars("question", question, self.limits.max_question_chars)?;
        if options.len() > MAX_OPTIONS {
            return Err(WorldError::InvalidArgument(format!(
                "{} options; a question takes at most {MAX_OPTIONS}",
                options.len()
            )));
        }
        for option in options {
            if option.trim().is_empty() {
                return Err(WorldError::InvalidArgument(
                    "an option must not be empty".into(),
                ));
            }
            Limits::check_chars("option", option, self.limits.max_question_chars)?;
        }
        let as_of = match as_of {
            Some(point) => Some(self.as_of_seq(point, &id).await?),
            None => None,
        };
        self.deliver_pending(&id).await?;
        let request = pb::AnswerRequest {
            character: Some(self.character_ref(&id)),
            question: question.to_owned(),
            recall_only,
            options: options.to_vec(),
            as_of,
        };
        let answer = self
            .call_agent(&id, |port| {
                let request = request.clone();
                async move { port.answer(request).await }
            })
            .await?;
        Ok(pb::AskResponse {
            character: id,
            answer: answer.answer,
            usage: answer.usage,
            abstained: answer.abstained,
            recalled: answer.recalled,
            choice: answer.choice,
            as_of_seq: as_of,
        })
    }

    /// The event a moment of the story stands at for `character`: a logged seq, or the
    /// last event of a scene that has begun. A moment not yet played, or one before the
    /// character joined the story (a newcomer a director brought in), is refused.
    async fn as_of_seq(&self, point: &pb::AsOf, character: &str) -> Result<u64, WorldError> {
        let seq = self.moment(point)?;
        let record = self.log.world(&self.id).await?;
        let joined = record
            .iter()
            .flat_map(|r| &r.newcomers)
            .find(|n| n.character.id == character)
            .map(|n| n.after_seq);
        match joined {
            Some(after) if seq <= after => Err(WorldError::OutOfRange(format!(
                "as of event {seq}: {} joined the story after event {after}",
                dramatis_runtime::quote(character)
            ))),
            _ => Ok(seq),
        }
    }

    /// The event a moment of the story stands at.
    fn moment(&self, point: &pb::AsOf) -> Result<u64, WorldError> {
        let last = self.hub.next_seq() - 1;
        match &point.point {
            Some(pb::as_of::Point::Seq(seq)) if *seq == 0 => Err(WorldError::OutOfRange(
                "as of event 0: events are numbered from 1".into(),
            )),
            Some(pb::as_of::Point::Seq(seq)) if *seq > last => {
                Err(WorldError::OutOfRange(format!(
                    "as of event {seq}: the story has logged {last} events; a moment not yet played cannot be asked"
                )))
            }
            Some(pb::as_of::Point::Seq(seq)) => Ok(*seq),
            Some(pb::as_of::Point::Scene(scene)) => {
                self.hub.scene_last_seq(scene).ok_or_else(|| {
                    WorldError::OutOfRange(format!(
                        "as of scene {}: no such scene has begun",
                        dramatis_runtime::quote(scene)
                    ))
                })
            }
            None => Err(WorldError::InvalidArgument(
                "as_of names no moment (give seq or scene)".into(),
            )),
        }
    }

    /// A page of the prompt audit of `character` (id, name or alias), or of every
    /// character: at most `page_size` prompts, from where `page_token` says, and the
    /// token of the next page (empty at the end). A token is `CHARACTER:PROMPT`, the
    /// positions to go on from.
    pub async fn audit(
        &self,
        character: Option<&str>,
        page_size: u32,
        page_token: &str,
    ) -> Result<(Vec<pb::CharacterAudit>, String), WorldError> {
        let wanted: Vec<String> = match character.filter(|c| !c.trim().is_empty()) {
            Some(needle) => vec![self.character_id(needle)?],
            None => self.agents.characters(),
        };
        let bad_token = || {
            WorldError::InvalidArgument(format!(
                "page_token {} is not one this service gave",
                crate::limits::quote(page_token)
            ))
        };
        let (mut at, mut from) = if page_token.is_empty() {
            (0, 0)
        } else {
            let (at, from) = page_token.split_once(':').ok_or_else(bad_token)?;
            (
                at.parse::<usize>().map_err(|_| bad_token())?,
                from.parse::<u64>().map_err(|_| bad_token())?,
            )
        };
        let mut room = match page_size {
            0 => AUDIT_PAGE,
            n => n.min(AUDIT_PAGE_MAX),
        };
        let mut audits = Vec::new();
        while let Some(id) = wanted.get(at) {
            let request = pb::SnapshotRequest {
                character: Some(self.character_ref(id)),
                prompts_only: true,
                prompts_from: from,
                prompts_limit: room,
            };
            let page = self
                .call_agent(id, |port| {
                    let request = request.clone();
                    async move { port.snapshot(request).await }
                })
                .await?;
            let got = dramatis_runtime::saturating_u32(page.prompts.len());
            audits.push(pb::CharacterAudit {
                character: id.clone(),
                prompts: page.prompts,
            });
            from += u64::from(got);
            room = room.saturating_sub(got);
            if from >= page.prompts_total {
                (at, from) = (at + 1, 0);
            }
            if room == 0 {
                break;
            }
        }
        let next = if at < wanted.len() {
            format!("{at}:{from}")
        } else {
            String::new()
        };
        Ok((audits, next))
    }
}
