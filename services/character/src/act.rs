//! Act: a character's turn. Recall from its own shard, ground the prompt in its memory
//! modules, ask the model for a structured action (retried once when unusable, then an
//! in-character fallback), and stream the words of the line as they are generated.

use std::time::Instant;
use tracing::Instrument as _;

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use dramatis_llm::{CompletionRequest, LanguageModel, ModelRole, ResponseSchema, TokenSink};
use dramatis_memory::reverie::Query;
use dramatis_proto::v1::{Action, ActionKind, SceneFrame, Usage};
use futures::Stream;

use crate::action::ACTION_SCHEMA_NAME;
use crate::action::{ParsedAction, ParsedKind, action_schema, parse_action};
use crate::boundary::{Asked, Guarded};
use crate::character::Character;
use crate::echo::{self, Echo};
use crate::error::AgentError;
use crate::host::{ActOutcome, CharacterAgents};
use crate::mind::usage_of;
use crate::prompt::{self, BuiltPrompt};
use crate::shard::{Annotation, PerceivedKind, Phrase, Shard};
use crate::stream_text::TextFieldStreamer;

/// The moment a turn answers, read from the character's current scene: its latest
/// lines, the last thing someone else said, and whether that was a question to it.
struct Moment {
    /// The last three lines and the direction, as one text and line by line in pieces.
    text: String,
    lines: Vec<Vec<String>>,
    /// What the character reacts to (the last line someone else said, or the
    /// direction), whole and in pieces.
    trigger: String,
    trigger_pieces: Vec<String>,
    /// Whether that line was a question put to the character: only then is a turn
    /// worth a Self-Probe call and weighed by the evidence gate.
    questioned: bool,
    /// The question's own words (the words heard, not who said them) and the scene's
    /// other lines, which the gate weighs it against.
    asked: String,
    heard: Vec<String>,
}

impl Moment {
    fn of(shard: &Shard, frame: &SceneFrame) -> Self {
        let me = shard.id().to_owned();
        let scene = shard.current_scene();
        let phrases: Vec<Phrase> = scene.iter().filter_map(|p| p.phrase(&me)).collect();
        let last_other = scene
            .iter()
            .rev()
            .find(|p| p.speaker != me && p.kind != PerceivedKind::SceneStart);
        let questioned = last_other.is_some_and(|p| {
            p.kind == PerceivedKind::Speech && p.target == me && p.text.contains('?')
        });
        let asked = last_other.map(|p| p.text.clone()).unwrap_or_default();
        let asked_seq = last_other.map(|p| p.seq);
        let heard: Vec<String> = if questioned {
            scene
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
        let recent = &phrases[phrases.len().saturating_sub(3)..];
        let mut lines: Vec<Vec<String>> = recent.iter().map(Phrase::pieces).collect();
        let mut text = recent
            .iter()
            .map(Phrase::text)
            .collect::<Vec<_>>()
            .join("\n");
        if !frame.direction.trim().is_empty() {
            text.push('\n');
            text.push_str(frame.direction.trim());
            lines.push(vec![frame.direction.trim().to_owned()]);
        }
        Self {
            text,
            lines,
            trigger,
            trigger_pieces,
            questioned,
            asked,
            heard,
        }
    }
}

/// A usable action, the reply it was read from, and the request it answered.
type Reply = (ParsedAction, String, CompletionRequest);

/// One item of a turn as it goes: the visible words of its line as the model writes
/// them, then the action.
#[derive(Debug)]
pub enum ActItem {
    Words(String),
    Action(ActOutcome),
}

impl Character {
    /// The character's turn as a stream: the visible words of its line as they are
    /// generated, then its action (see [`Character::turn`]). The turn runs as the stream
    /// is polled, in the caller's task; dropping the stream ends it.
    #[must_use]
    pub fn act(self, frame: SceneFrame) -> TurnItems {
        let said = Said::default();
        let sink = said.clone();
        TurnItems {
            turn: Some(Box::pin(
                async move { self.turn(&frame, Some(&sink)).await },
            )),
            said,
            ended: None,
        }
    }

    /// The character's next action. Visible words go to `tokens` as generated.
    /// Unusable model output is retried, then replaced by a plain in-character line.
    pub async fn turn(
        &self,
        frame: &SceneFrame,
        tokens: Option<&dyn TokenSink>,
    ) -> Result<ActOutcome, AgentError> {
        let agents = &self.agents;
        let mut shard = self.shard.lock().await;
        let started = Instant::now();
        let model = agents.options.models.get(ModelRole::Character);
        let moment = Moment::of(&shard, frame);
        let mut recalled = agents
            .recall(
                &mut shard,
                model.as_ref(),
                &Query {
                    text: &moment.text,
                    lines: &moment.lines,
                    trigger: &moment.trigger,
                    trigger_pieces: &moment.trigger_pieces,
                    scene_id: &frame.scene_id,
                    rounds: if moment.questioned {
                        agents.options.recall.act_rounds
                    } else {
                        0
                    },
                    options: &[],
                },
            )
            .instrument(tracing::info_span!("recall"))
            .await?;
        shard.set_mood(recalled.mood.clone());
        let present: Vec<String> = frame.present.iter().map(|p| p.id.clone()).collect();
        let grounding = agents
            .module_grounding(
                &mut shard,
                model.as_ref(),
                &moment.text,
                false,
                &present,
                &mut recalled.spent,
            )
            .instrument(tracing::info_span!("grounding"))
            .await?;
        // Asked something its memory does not support: the turn carries the refusal.
        let refuse = moment.questioned
            && agents
                .verdict(
                    &shard,
                    &mut recalled,
                    &grounding,
                    &moment.heard,
                    (&moment.asked, &[]),
                )
                .abstain;
        let built = prompt::act(
            &shard,
            &recalled,
            &grounding,
            frame,
            refuse,
            agents.options.prompt_budget_tokens,
        );
        // What the line must not echo: the lines just perceived and the excerpts shown.
        let context = echo::recent_context(
            &shard,
            recalled
                .pattern
                .as_ref()
                .map_or(&[][..], |p| p.excerpts.as_slice()),
        );
        let mut usage = usage_of(recalled.spent);
        let schema = action_schema(&present, &frame.exits);
        let reply = agents
            .generate(
                &mut shard,
                model.as_ref(),
                &built,
                schema,
                tokens,
                &mut usage,
            )
            .await?;
        let (parsed, deflect) = agents
            .checked(
                &mut shard,
                model.as_ref(),
                (&built, frame),
                &context,
                reply,
                &mut usage,
            )
            .await?;
        usage.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut action = into_action(&mut shard, parsed, deflect, moment, usage);
        // What this turn left in the character travels with its line, so the line's
        // delivery restores it even to an agent started after the turn.
        action.actor_state = shard.turn_state();
        agents.warm_words(&action);
        // Not saved here: the turn's audited prompts and feeling go to disk with the
        // character's own event, which the world delivers as soon as it has logged the
        // line (one durable write instead of two per line). A snapshot shows them
        // meanwhile, and a detach saves them. `kill -9` in between loses them, never an
        // acknowledged event.
        drop(shard);
        Ok(ActOutcome { action })
    }
}

impl CharacterAgents {
    /// Asks the model for an action, once and then up to `act_retries` more times while
    /// the output is unusable. Only the first attempt streams to `tokens`.
    async fn generate(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        built: &BuiltPrompt,
        schema: serde_json::Value,
        tokens: Option<&dyn TokenSink>,
        usage: &mut Usage,
    ) -> Result<Option<Reply>, AgentError> {
        let character = shard.id().to_owned();
        for attempt in 0..=self.options.act_retries {
            // Every call is audited, retries included: each one sends the prompt again.
            built.audit(shard, "act");
            let temperature = if attempt == 0 {
                self.options.temperature
            } else {
                0.2
            };
            let request = CompletionRequest::new(built.messages.clone())
                .with_seed(built.seed)
                .with_max_tokens(self.options.act_max_tokens)
                .with_temperature(temperature)
                .with_schema(ResponseSchema {
                    name: ACTION_SCHEMA_NAME.into(),
                    schema: schema.clone(),
                })
                // A line is the character's own words, not a copy of what the prompt
                // quotes (the lines just heard, the style excerpts).
                .worded_afresh();
            // Only the first attempt streams: a retry's words would run into the first's.
            let sink = if attempt == 0 { tokens } else { None };
            let completion = match stream_completion(model, &request, sink)
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
                return Ok(Some((action, completion.text, request)));
            }
            tracing::warn!(character, attempt, output = %completion.text, "unusable action output");
        }
        Ok(None)
    }

    /// The guards on the turn's reply, the echo guard first, then the boundary guard
    /// on whatever line stands: the action, or none (with `true` when the boundary
    /// guard gave the line up, to be deflected).
    async fn checked(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        (built, frame): (&BuiltPrompt, &SceneFrame),
        context: &[String],
        reply: Option<Reply>,
        usage: &mut Usage,
    ) -> Result<(Option<ParsedAction>, bool), AgentError> {
        let reply = match reply {
            Some(reply) if self.options.echo_guard => {
                self.echo_guarded(shard, model, built, context, reply, usage)
                    .await?
            }
            other => other,
        };
        match reply {
            Some(reply) => self.guarded(shard, model, built, frame, reply, usage).await,
            None => Ok((None, false)),
        }
    }

    /// The echo guard on the turn's reply: as it stands, as the retry replaced it, or
    /// none when the turn falls back.
    async fn echo_guarded(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        built: &BuiltPrompt,
        context: &[String],
        (action, reply, request): Reply,
        usage: &mut Usage,
    ) -> Result<Option<Reply>, AgentError> {
        let line = action.text.clone();
        let echo = echo::guard_echo(shard, model, (built, &request), &line, context, usage)
            .instrument(tracing::info_span!("echo_guard"))
            .await?;
        Ok(match echo {
            Echo::Kept => Some((action, reply, request)),
            Echo::Replaced(again, text) => Some((again, text, request)),
            Echo::GivenUp => None,
        })
    }

    /// The boundary guard on the turn's line: the action as it stands, as the retry
    /// replaced it, or none with `true` when the guard gave it up (to be deflected).
    async fn guarded(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        built: &BuiltPrompt,
        frame: &SceneFrame,
        (action, reply, request): Reply,
        usage: &mut Usage,
    ) -> Result<(Option<ParsedAction>, bool), AgentError> {
        let asked = Asked {
            purpose: "act",
            built,
            request: &request,
            frame: Some(frame),
            given: &[],
        };
        let text = |reply: &str| parse_action(reply).map(|a| a.text);
        let guard = self.options.boundary_guard;
        let guarded = crate::boundary::guard_line(guard, shard, model, &asked, &reply, text, usage)
            .instrument(tracing::info_span!("guard"))
            .await?;
        Ok(match guarded {
            Guarded::Kept => (Some(action), false),
            Guarded::Replaced(again) => (parse_action(&again), false),
            Guarded::GivenUp => (None, true),
        })
    }

    /// Starts embedding the words of a line just made, in the background. They are
    /// what everyone who perceives the line embeds (this process's characters among
    /// them) and what the next turn's recall embeds first; started now, the model run
    /// overlaps the world's durable write of the line instead of following it. The
    /// process's embedder cache keeps the vector, or hands the run under way to
    /// whoever asks next, so nothing is embedded twice. A failure here is left to that
    /// later call, which embeds again and reports it.
    fn warm_words(&self, action: &Action) {
        // The world logs speech and action words as given (trimmed); a movement's
        // line is written by the world.
        if !matches!(
            action.kind(),
            ActionKind::Speech | ActionKind::Action | ActionKind::Unspecified
        ) {
            return;
        }
        let words = action.text.trim();
        if words.is_empty() {
            return;
        }
        let embedder = std::sync::Arc::clone(&self.options.embedder);
        let words = vec![words.to_owned()];
        self.tasks.spawn(async move {
            // Only the cache wants the vector; a failure is met again, and reported,
            // by whoever embeds these words next.
            let _ = embedder.embed(&words).await;
        });
    }
}

/// The action a turn ends with: the parsed one (its goal and feeling kept on the
/// shard), or an in-character line when nothing usable came or the guard gave up.
fn into_action(
    shard: &mut Shard,
    parsed: Option<ParsedAction>,
    deflect: bool,
    moment: Moment,
    usage: Usage,
) -> Action {
    let name = shard.profile.name.clone();
    let deflected = |text: String| Action {
        kind: ActionKind::Action as i32,
        text,
        usage: Some(usage),
        fallback: true,
        ..Action::default()
    };
    match parsed {
        Some(p) => {
            shard.revise_goal(&p.goal);
            shard.expect_own(Annotation {
                emotion: p.emotion.clone(),
                intensity: p.intensity,
                intent: p.intent.clone(),
                trigger: moment.trigger,
                trigger_pieces: moment.trigger_pieces,
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
                actor_state: String::new(),
            }
        }
        None if deflect => deflected(format!("{name} hesitates, and lets the matter drop.")),
        None => deflected(format!("{name} pauses, weighing what to say.")),
    }
}

/// Runs a completion, passing only the visible words of the action on to `tokens`.
async fn stream_completion(
    model: &dyn LanguageModel,
    request: &CompletionRequest,
    tokens: Option<&dyn TokenSink>,
) -> Result<dramatis_llm::Completion, AgentError> {
    let Some(out) = tokens else {
        return Ok(model.complete(request, None).await?);
    };
    let visible = VisibleWords {
        streamer: std::sync::Mutex::default(),
        out,
    };
    Ok(model.complete(request, Some(&visible)).await?)
}

/// A sink that passes on only the characters of the action's `"text"` value.
struct VisibleWords<'a> {
    streamer: std::sync::Mutex<TextFieldStreamer>,
    out: &'a dyn TokenSink,
}

impl TokenSink for VisibleWords<'_> {
    fn token(&self, piece: &str) {
        let text = dramatis_runtime::lock(&self.streamer).push(piece);
        if !text.is_empty() {
            self.out.token(&text);
        }
    }
}

/// The words a turn said that its stream has not handed out yet, and the task waiting
/// for them. Words are pushed from inside the turn's own poll, or from a model's
/// thread; either wakes the waiting stream.
#[derive(Debug, Clone, Default)]
struct Said(Arc<std::sync::Mutex<SaidNow>>);

#[derive(Debug, Default)]
struct SaidNow {
    words: VecDeque<String>,
    waiting: Option<Waker>,
}

impl TokenSink for Said {
    fn token(&self, piece: &str) {
        let waiting = {
            let mut said = dramatis_runtime::lock(&self.0);
            said.words.push_back(piece.to_owned());
            said.waiting.take()
        };
        if let Some(waker) = waiting {
            waker.wake();
        }
    }
}

impl Said {
    fn take(&self) -> Option<String> {
        dramatis_runtime::lock(&self.0).words.pop_front()
    }

    fn wake_on_words(&self, cx: &Context<'_>) {
        dramatis_runtime::lock(&self.0).waiting = Some(cx.waker().clone());
    }
}

/// A turn under way, as a stream of [`ActItem`]s: every word said, in order, then the
/// action (or the turn's error), then the end.
pub struct TurnItems {
    turn: Option<futures::future::BoxFuture<'static, Result<ActOutcome, AgentError>>>,
    said: Said,
    ended: Option<Result<ActOutcome, AgentError>>,
}

impl Stream for TurnItems {
    type Item = Result<ActItem, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(words) = this.said.take() {
            return Poll::Ready(Some(Ok(ActItem::Words(words))));
        }
        if let Some(turn) = this.turn.as_mut() {
            // Asked before the turn is polled, so words said meanwhile wake this task.
            this.said.wake_on_words(cx);
            match turn.as_mut().poll(cx) {
                Poll::Ready(ended) => {
                    this.turn = None;
                    this.ended = Some(ended);
                }
                Poll::Pending => {
                    return this.said.take().map_or(Poll::Pending, |words| {
                        Poll::Ready(Some(Ok(ActItem::Words(words))))
                    });
                }
            }
        }
        // The turn ended: the words it said go first, then its action.
        if let Some(words) = this.said.take() {
            return Poll::Ready(Some(Ok(ActItem::Words(words))));
        }
        Poll::Ready(this.ended.take().map(|ended| ended.map(ActItem::Action)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use async_trait::async_trait;
    use dramatis_llm::{Completion, LlmError, RoleModels, ScriptRule, ScriptedModel, TokenSink};
    use dramatis_proto::v1::{CharacterProfile, SceneFrame};

    use super::*;
    use crate::host::AgentOptions;

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
            _: Option<&dyn TokenSink>,
        ) -> Result<Completion, LlmError> {
            Err(LlmError::Status {
                endpoint: "http://127.0.0.1:9/v1/chat/completions".into(),
                status: 500,
                body: "overloaded".into(),
            })
        }
    }

    /// Holmes attached to an agent on `model`.
    async fn holmes(model: Arc<dyn LanguageModel>) -> CharacterAgents {
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
        agents
    }

    /// Holmes attached to an agent on `model`, and his turn in an empty frame.
    async fn holmes_turn(model: Arc<dyn LanguageModel>) -> (CharacterAgents, ActOutcome) {
        let agents = holmes(model).await;
        let outcome = agents
            .character("w", "holmes")
            .expect("attached")
            .turn(&SceneFrame::default(), None)
            .await
            .expect("a turn, not an error");
        (agents, outcome)
    }

    /// The turn's stream hands out the visible words in order as they are written,
    /// none of the JSON around them, and the action last; then it ends.
    #[tokio::test]
    async fn a_turn_streams_its_words_in_order_then_its_action() {
        use futures::StreamExt as _;
        let model = ScriptedModel::new(vec![ScriptRule {
            when: vec!["Character: Holmes".into()],
            reply: r#"{"kind":"speech","target":"","text":"You have been in Afghanistan, I perceive.","thought":"","destination":""}"#.into(),
        }]);
        let agents = holmes(Arc::new(model)).await;
        let items: Vec<ActItem> = agents
            .character("w", "holmes")
            .expect("attached")
            .act(SceneFrame::default())
            .map(|item| item.expect("no error"))
            .collect()
            .await;
        let (last, words) = items.split_last().expect("items");
        let ActItem::Action(outcome) = last else {
            panic!("the action comes last: {items:?}");
        };
        let words: Vec<&str> = words
            .iter()
            .map(|item| match item {
                ActItem::Words(words) => words.as_str(),
                ActItem::Action(_) => panic!("one action: {items:?}"),
            })
            .collect();
        assert!(words.len() > 3, "word by word: {words:?}");
        assert_eq!(words.concat(), outcome.action.text);
        assert_eq!(
            outcome.action.text,
            "You have been in Afghanistan, I perceive."
        );
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
