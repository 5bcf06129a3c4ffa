//! The characters hosted by one agent process and what they do: attach, perceive, act,
//! answer. Each character's shard sits behind its own lock; nothing crosses shards.

use std::sync::Arc;
use std::time::Instant;

use dashmap::DashMap;
use dramatis_llm::{CompletionRequest, LanguageModel, ModelRole, ResponseSchema, RoleModels};
use dramatis_proto::v1::{
    Action, ActionKind, CharacterProfile, Event, PromptRecord, SceneFrame, Usage,
};
use tokio::sync::{Mutex, mpsc};

use crate::action::{ParsedKind, action_schema, parse_action};
use crate::prompt::{self, BuiltPrompt};
use crate::shard::Shard;
use crate::stream_text::TextFieldStreamer;
use crate::{ACTION_SCHEMA_NAME, AgentError};

/// Settings of an agent process.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub models: RoleModels,
    /// Tokens a turn may generate.
    pub act_max_tokens: u32,
    pub answer_max_tokens: u32,
    pub temperature: f32,
    /// Attempts after the first when the model's output cannot be used.
    pub act_retries: u32,
}

impl AgentOptions {
    #[must_use]
    pub fn new(models: RoleModels) -> Self {
        Self {
            models,
            act_max_tokens: 128,
            answer_max_tokens: 80,
            temperature: 0.7,
            act_retries: 1,
        }
    }
}

type Key = (String, String);

/// The characters of this agent. Cheap to clone.
#[derive(Debug, Clone)]
pub struct CharacterAgents {
    shards: Arc<DashMap<Key, Arc<Mutex<Shard>>>>,
    options: Arc<AgentOptions>,
}

/// What an Act produced.
#[derive(Debug, Clone)]
pub struct ActOutcome {
    pub action: Action,
}

impl CharacterAgents {
    #[must_use]
    pub fn new(options: AgentOptions) -> Self {
        Self {
            shards: Arc::default(),
            options: Arc::new(options),
        }
    }

    fn shard(&self, world: &str, character: &str) -> Result<Arc<Mutex<Shard>>, AgentError> {
        self.shards
            .get(&(world.to_owned(), character.to_owned()))
            .map(|s| Arc::clone(s.value()))
            .ok_or_else(|| AgentError::NotAttached {
                world: world.to_owned(),
                character: character.to_owned(),
            })
    }

    /// Creates the character's shard, or keeps the existing one. Returns the number of
    /// memory items and whether the shard already existed.
    pub async fn attach(
        &self,
        world: &str,
        character: &str,
        profile: CharacterProfile,
    ) -> Result<(u32, bool), AgentError> {
        if profile.id != character {
            return Err(AgentError::InvalidArgument(format!(
                "profile.id {:?} does not match character_id {character:?}",
                profile.id
            )));
        }
        let key = (world.to_owned(), character.to_owned());
        let (shard, resumed) = match self.shards.entry(key) {
            dashmap::Entry::Occupied(e) => (Arc::clone(e.get()), true),
            dashmap::Entry::Vacant(e) => {
                let shard = Arc::new(Mutex::new(Shard::new(profile)));
                e.insert(Arc::clone(&shard));
                (shard, false)
            }
        };
        let items = shard.lock().await.memory().len();
        tracing::info!(world_id = world, character, resumed, "character attached");
        Ok((u32::try_from(items).unwrap_or(u32::MAX), resumed))
    }

    /// Drops the character's shard.
    pub fn detach(&self, world: &str, character: &str) -> Result<(), AgentError> {
        self.shards
            .remove(&(world.to_owned(), character.to_owned()))
            .map(|_| ())
            .ok_or_else(|| AgentError::NotAttached {
                world: world.to_owned(),
                character: character.to_owned(),
            })
    }

    /// Stores events the character perceived.
    pub async fn perceive(
        &self,
        world: &str,
        character: &str,
        events: &[Event],
    ) -> Result<(u32, u64), AgentError> {
        if let Some(foreign) = events.iter().find(|e| e.world_id != world) {
            return Err(AgentError::InvalidArgument(format!(
                "event {} belongs to world {:?}, not {world:?}",
                foreign.seq, foreign.world_id
            )));
        }
        let shard = self.shard(world, character)?;
        let mut shard = shard.lock().await;
        let accepted = shard.perceive(events)?;
        Ok((accepted, shard.last_seq()))
    }

    /// The shard's contents and prompt record.
    pub async fn snapshot(&self, world: &str, character: &str) -> Result<Shard, AgentError> {
        Ok(self.shard(world, character)?.lock().await.clone())
    }

    async fn record(&self, shard: &Mutex<Shard>, built: &BuiltPrompt, purpose: &str) {
        let prompt = built
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let mut shard = shard.lock().await;
        let character_id = shard.id().to_owned();
        shard.record_prompt(PromptRecord {
            memory_ids: built.items.iter().map(|m| m.id.clone()).collect(),
            items: built.items.clone(),
            prompt,
            purpose: purpose.to_owned(),
            character_id,
            timestamp_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        });
    }

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
        let (built, name) = {
            let shard = shard.lock().await;
            (prompt::act(&shard, frame), shard.profile.name.clone())
        };
        let model = self.options.models.get(ModelRole::Character);
        let started = Instant::now();
        let mut usage = Usage::default();
        let mut parsed = None;
        let present: Vec<String> = frame.present.iter().map(|p| p.id.clone()).collect();
        let schema = action_schema(&present, &frame.exits);
        for attempt in 0..=self.options.act_retries {
            // Every call is audited, retries included: each one sends the prompt again.
            self.record(&shard, &built, "act").await;
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
            let completion = stream_completion(model.as_ref(), &request, sink).await?;
            usage.llm_calls += 1;
            usage.prompt_tokens += completion.prompt_tokens;
            usage.completion_tokens += completion.completion_tokens;
            if let Some(action) = parse_action(&completion.text) {
                parsed = Some(action);
                break;
            }
            tracing::warn!(character, attempt, output = %completion.text, "unusable action output");
        }
        usage.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let action = match parsed {
            Some(p) => Action {
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
            },
            None => Action {
                kind: ActionKind::Action as i32,
                text: format!("{name} pauses, weighing what to say."),
                usage: Some(usage),
                fallback: true,
                ..Action::default()
            },
        };
        Ok(ActOutcome { action })
    }

    /// Answers a question from the character's own shard.
    pub async fn answer(
        &self,
        world: &str,
        character: &str,
        question: &str,
    ) -> Result<(String, Usage), AgentError> {
        if question.trim().is_empty() {
            return Err(AgentError::InvalidArgument(
                "question must not be empty".into(),
            ));
        }
        let shard = self.shard(world, character)?;
        let built = prompt::answer(&*shard.lock().await, question);
        self.record(&shard, &built, "answer").await;
        let started = Instant::now();
        let request = CompletionRequest::new(built.messages)
            .with_max_tokens(self.options.answer_max_tokens)
            .with_temperature(self.options.temperature);
        let model = self.options.models.get(ModelRole::Character);
        let completion = model.complete(&request, None).await?;
        let usage = Usage {
            llm_calls: 1,
            prompt_tokens: completion.prompt_tokens,
            completion_tokens: completion.completion_tokens,
            latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        let answer = completion.text.trim().to_owned();
        Ok((answer, usage))
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

    use dramatis_llm::{ScriptRule, ScriptedModel};
    use dramatis_proto::v1::{CharacterProfile, SceneFrame};

    use super::*;

    #[tokio::test]
    async fn unusable_output_is_retried_audited_each_time_then_replaced_in_character() {
        let model = ScriptedModel::new(vec![ScriptRule {
            when: vec!["Character: Holmes".into()],
            reply: "I think, therefore I am.".into(),
        }]);
        let agents = CharacterAgents::new(AgentOptions::new(RoleModels::uniform(Arc::new(
            model.clone(),
        ))));
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
