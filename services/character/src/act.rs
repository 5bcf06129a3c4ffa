//! Act: a character's turn. Recall from its own shard, ground the prompt in its memory
//! modules, ask the model for a structured action (retried once when unusable, then an
//! in-character fallback), and stream the words of the line as they are generated.

use std::time::Instant;
use tracing::Instrument as _;

use dramatis_llm::{CompletionRequest, LanguageModel, ModelRole, ResponseSchema};
use dramatis_memory::modules::ModuleKind;
use dramatis_proto::v1::{Action, ActionKind, SceneFrame};
use tokio::sync::mpsc;

use crate::action::{ParsedKind, action_schema, parse_action};
use crate::boundary::{Asked, Guarded};
use crate::host::{ActOutcome, CharacterAgents};
use crate::prompt::{self};
use crate::reverie::recall::{Query, Recalled, recall};
use crate::shard::{Annotation, PerceivedKind, Phrase};
use crate::stream_text::TextFieldStreamer;
use crate::{ACTION_SCHEMA_NAME, AgentError};

impl CharacterAgents {
    /// The character's next action. Visible words stream to `tokens` as generated.
    /// Unusable model output is retried, then replaced by a plain in-character line.
    pub async fn act(
        &self,
        world: &str,
        character: &str,
        frame: &SceneFrame,
        tokens: Option<mpsc::UnboundedSender<String>>,
    ) -> Result<ActOutcome, AgentError> {
        let shard = self.shard(world, character)?;
        let mut shard = shard.lock().await;
        let started = Instant::now();
        let model = self.options.models.get(ModelRole::Character);
        let me = shard.id().to_owned();
        // The moment: the latest lines of the scene, and the last one someone else said.
        let phrases: Vec<Phrase> = shard
            .current_scene()
            .iter()
            .filter_map(|p| p.phrase(&me))
            .collect();
        let last_other = shard
            .current_scene()
            .iter()
            .rev()
            .find(|p| p.speaker != me && p.kind != PerceivedKind::SceneStart);
        // Only a question put to the character is worth a Self-Probe call in a turn;
        // otherwise the scene's own lines are the probes.
        let questioned = last_other.is_some_and(|p| {
            p.kind == PerceivedKind::Speech && p.target == me && p.text.contains('?')
        });
        // The gate weighs a question's own words (the words heard, not who said them)
        // against what the character holds, the scene's other lines included.
        let asked = last_other.map(|p| p.text.clone()).unwrap_or_default();
        let asked_seq = last_other.map(|p| p.seq);
        let heard: Vec<String> = if questioned {
            shard
                .current_scene()
                .iter()
                .filter(|p| Some(p.seq) != asked_seq)
                .filter_map(|p| p.line(&me))
                .collect()
        } else {
            Vec::new()
        };
        let (trigger, trigger_pieces) = last_other.and_then(|p| p.phrase(&me)).map_or_else(
            || (frame.direction.clone(), vec![frame.direction.clone()]),
            |p| (p.text(), p.pieces()),
        );
        // The last three lines and the direction; recall gets each line in its pieces.
        let recent = &phrases[phrases.len().saturating_sub(3)..];
        let mut moment_lines: Vec<Vec<String>> = recent.iter().map(Phrase::pieces).collect();
        let mut moment = recent
            .iter()
            .map(Phrase::text)
            .collect::<Vec<_>>()
            .join("\n");
        if !frame.direction.trim().is_empty() {
            moment.push('\n');
            moment.push_str(frame.direction.trim());
            moment_lines.push(vec![frame.direction.trim().to_owned()]);
        }
        let mut recalled = if shard.module_set().contains(ModuleKind::Reverie) {
            recall(
                &mut shard,
                &Query {
                    text: &moment,
                    lines: &moment_lines,
                    trigger: &trigger,
                    trigger_pieces: &trigger_pieces,
                    scene_id: &frame.scene_id,
                    rounds: if questioned {
                        self.options.recall.act_rounds
                    } else {
                        0
                    },
                    options: &[],
                },
                &self.options.recall,
                self.options.embedder.as_ref(),
                &self.emotion_vectors,
                model.as_ref(),
            )
            .instrument(tracing::info_span!("recall"))
            .await?
        } else {
            Recalled::nothing(shard.mood().clone())
        };
        shard.set_mood(recalled.mood.clone());
        let present: Vec<String> = frame.present.iter().map(|p| p.id.clone()).collect();
        let grounding = self
            .module_grounding(
                &mut shard,
                model.as_ref(),
                &moment,
                false,
                &present,
                &mut recalled.usage,
            )
            .instrument(tracing::info_span!("grounding"))
            .await?;
        // Asked something its memory does not support: the turn carries the refusal.
        let refuse = questioned
            && self
                .verdict(&shard, &mut recalled, &grounding, &heard, (&asked, &[]))
                .abstain;
        let built = prompt::act(&shard, &recalled, &grounding, frame, refuse);
        let name = shard.profile.name.clone();
        let mut usage = recalled.usage;
        // The parsed action, with the model's reply and the request it answered.
        let mut parsed = None;
        let schema = action_schema(&present, &frame.exits);
        for attempt in 0..=self.options.act_retries {
            // Every call is audited, retries included: each one sends the prompt again.
            built.audit(&mut shard, "act");
            let temperature = if attempt == 0 {
                self.options.temperature
            } else {
                0.2
            };
            let request = CompletionRequest::new(built.messages.clone())
                .with_max_tokens(self.options.act_max_tokens)
                .with_temperature(temperature)
                .with_schema(ResponseSchema {
                    name: ACTION_SCHEMA_NAME.into(),
                    schema: schema.clone(),
                });
            // Only the first attempt streams: a retry's words would run into the first's.
            let sink = if attempt == 0 { tokens.as_ref() } else { None };
            let completion = match stream_completion(model.as_ref(), &request, sink)
                .instrument(tracing::info_span!("model"))
                .await
            {
                Ok(completion) => completion,
                // The client has spent its retries (or its deadline): the story goes on
                // with an in-character line instead of failing the turn.
                Err(AgentError::Model(error)) => {
                    tracing::warn!(character, %error, "the model failed; the turn falls back");
                    break;
                }
                Err(other) => return Err(other),
            };
            usage.count_call(completion.prompt_tokens, completion.completion_tokens);
            if let Some(action) = parse_action(&completion.text) {
                parsed = Some((action, completion.text, request));
                break;
            }
            tracing::warn!(character, attempt, output = %completion.text, "unusable action output");
        }
        // A line the guard gave up is deflected in character.
        let mut deflect = false;
        let parsed = match parsed {
            Some((action, reply, request)) => {
                let asked = Asked {
                    purpose: "act",
                    built: &built,
                    request: &request,
                    frame: Some(frame),
                    given: &[],
                };
                let text = |reply: &str| parse_action(reply).map(|a| a.text);
                let guard = self.options.boundary_guard;
                match crate::boundary::guard_line(
                    guard,
                    &mut shard,
                    model.as_ref(),
                    &asked,
                    &reply,
                    text,
                    &mut usage,
                )
                .instrument(tracing::info_span!("guard"))
                .await?
                {
                    Guarded::Kept => Some(action),
                    Guarded::Replaced(again) => parse_action(&again),
                    Guarded::GivenUp => {
                        deflect = true;
                        None
                    }
                }
            }
            None => None,
        };
        usage.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let deflected = |text: String| Action {
            kind: ActionKind::Action as i32,
            text,
            usage: Some(usage),
            fallback: true,
            ..Action::default()
        };
        let action = match parsed {
            Some(p) => {
                shard.revise_goal(&p.goal);
                shard.expect_own(Annotation {
                    emotion: p.emotion.clone(),
                    intensity: p.intensity,
                    intent: p.intent.clone(),
                    trigger: trigger.clone(),
                    trigger_pieces: trigger_pieces.clone(),
                });
                Action {
                    kind: match p.kind {
                        ParsedKind::Speech => ActionKind::Speech,
                        ParsedKind::Action => ActionKind::Action,
                        ParsedKind::Move => ActionKind::Movement,
                    } as i32,
                    text: p.text,
                    target: p.target,
                    destination: p.destination,
                    thought: p.thought,
                    usage: Some(usage),
                    fallback: false,
                }
            }
            None if deflect => deflected(format!("{name} hesitates, and lets the matter drop.")),
            None => deflected(format!("{name} pauses, weighing what to say.")),
        };
        // Not saved here: the turn's audited prompts and feeling go to disk with the
        // character's own event, which the world delivers as soon as it has logged the
        // line (one durable write instead of two per line). A snapshot shows them
        // meanwhile, and a detach saves them. `kill -9` in between loses them, never an
        // acknowledged event.
        drop(shard);
        Ok(ActOutcome { action })
    }
}

/// Runs a completion, forwarding only the visible words of the action to `tokens`.
async fn stream_completion(
    model: &dyn LanguageModel,
    request: &CompletionRequest,
    tokens: Option<&mpsc::UnboundedSender<String>>,
) -> Result<dramatis_llm::Completion, AgentError> {
    let Some(visible) = tokens else {
        return Ok(model.complete(request, None).await?);
    };
    let (raw_tx, mut raw_rx) = mpsc::unbounded_channel::<String>();
    let visible = visible.clone();
    let forward = tokio::spawn(async move {
        let mut streamer = TextFieldStreamer::default();
        while let Some(piece) = raw_rx.recv().await {
            let text = streamer.push(&piece);
            if !text.is_empty() && visible.send(text).is_err() {
                break;
            }
        }
    });
    let result = model.complete(request, Some(&raw_tx)).await;
    drop(raw_tx);
    let _ = forward.await;
    Ok(result?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use dramatis_llm::{Completion, LlmError, RoleModels, ScriptRule, ScriptedModel, TokenSink};
    use dramatis_proto::v1::{CharacterProfile, SceneFrame};

    use super::*;
    use crate::AgentOptions;

    /// A model whose every call fails as an endpoint that answers 500 does once the
    /// client's retries are spent.
    #[derive(Debug)]
    struct FailingModel;

    #[async_trait]
    impl LanguageModel for FailingModel {
        fn name(&self) -> &str {
            "failing"
        }

        async fn complete(
            &self,
            _: &CompletionRequest,
            _: Option<&TokenSink>,
        ) -> Result<Completion, LlmError> {
            Err(LlmError::Status {
                endpoint: "http://127.0.0.1:9/v1/chat/completions".into(),
                status: 500,
                body: "overloaded".into(),
            })
        }
    }

    /// Holmes attached to an agent on `model`, and his turn in an empty frame.
    async fn holmes_turn(model: Arc<dyn LanguageModel>) -> (CharacterAgents, ActOutcome) {
        let agents = CharacterAgents::new(AgentOptions::new(
            RoleModels::uniform(model),
            Arc::new(dramatis_embed::FakeEmbedder::new(32)),
        ));
        let profile = CharacterProfile {
            id: "holmes".into(),
            name: "Holmes".into(),
            profile: "A detective.".into(),
            ..CharacterProfile::default()
        };
        agents
            .attach("w", "holmes", profile)
            .await
            .expect("attached");
        let outcome = agents
            .act("w", "holmes", &SceneFrame::default(), None)
            .await
            .expect("a turn, not an error");
        (agents, outcome)
    }

    #[tokio::test]
    async fn a_failing_model_gives_an_in_character_line_not_an_error() {
        let (_, outcome) = holmes_turn(Arc::new(FailingModel)).await;
        assert!(outcome.action.fallback);
        assert_eq!(outcome.action.text, "Holmes pauses, weighing what to say.");
    }

    #[tokio::test]
    async fn unusable_output_is_retried_audited_each_time_then_replaced_in_character() {
        let model = ScriptedModel::new(vec![ScriptRule {
            when: vec!["Character: Holmes".into()],
            reply: "I think, therefore I am.".into(),
        }]);
        let (agents, outcome) = holmes_turn(Arc::new(model.clone())).await;
        assert!(outcome.action.fallback);
        assert_eq!(outcome.action.text, "Holmes pauses, weighing what to say.");
        assert_eq!(
            outcome.action.usage.map(|u| u.llm_calls),
            Some(2),
            "one retry"
        );
        assert_eq!(model.calls(), 2);
        let shard = agents.snapshot("w", "holmes").await.expect("shard");
        assert_eq!(shard.prompts().len(), 2, "both calls are in the audit");
        assert!(
            shard
                .prompts()
                .iter()
                .all(|p| p.character_id == "holmes" && p.purpose == "act")
        );
    }
}
