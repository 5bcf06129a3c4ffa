//! The characters hosted by one agent process and what they do: attach, perceive, act,
//! answer. Each character's shard sits behind its own lock; nothing crosses shards.
//! Shards are saved to the agent's data directory (when it has one) after every change
//! and read back when the character is attached again.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use dashmap::DashMap;
use dramatis_embed::Embedder;
use dramatis_llm::{CompletionRequest, LanguageModel, ModelRole, ResponseSchema, RoleModels};
use dramatis_proto::v1::{
    Action, ActionKind, CharacterProfile, Event, RecalledItem, SceneFrame, Usage,
};
use tokio::sync::{Mutex, mpsc};

use dramatis_memory::modules::{Grounding, ModuleSet, ReadQuery};

use crate::action::{ParsedKind, action_schema, parse_action};
use crate::emotion::is_refusal;
use crate::mind::AgentMind;
use crate::prompt::{self, BuiltPrompt};
use crate::recall::{EmotionVectors, Query, RecallSettings, Recalled, count_call, recall};
use crate::shard::{Annotation, AuditEntry, PerceivedKind, Shard};
use crate::stream_text::TextFieldStreamer;
use crate::writer::{Writer, rewrite_scenes, write_scene};
use crate::{ACTION_SCHEMA_NAME, AgentError};
use dramatis_runtime::now_ms;

/// How a scene's episodic memory is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryWrites {
    /// A deterministic first-person digest of what the character perceived (no call).
    #[default]
    Digest,
    /// The digest at once, then the character model rewrites the memories of every
    /// `write_batch` scenes in one call, with extra facts and their causes: for capable
    /// models.
    Model,
}

/// Settings of an agent process.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub models: RoleModels,
    /// The agent's own embedder.
    pub embedder: Arc<dyn Embedder>,
    pub recall: RecallSettings,
    pub memory_writes: MemoryWrites,
    /// Scenes per model rewrite (with [`MemoryWrites::Model`]).
    pub write_batch: usize,
    /// Where shards are saved; in memory only when `None`.
    pub data_dir: Option<PathBuf>,
    /// Tokens a turn may generate.
    pub act_max_tokens: u32,
    pub answer_max_tokens: u32,
    pub temperature: f32,
    /// Attempts after the first when the model's output cannot be used.
    pub act_retries: u32,
    /// Memory modules for every character, overriding what the scenario asks for.
    pub memory_modules: Option<ModuleSet>,
    /// Tokens the memory modules (other than ReverieMem) may add to one prompt.
    pub module_budget_tokens: usize,
}

impl AgentOptions {
    #[must_use]
    pub fn new(models: RoleModels, embedder: Arc<dyn Embedder>) -> Self {
        Self {
            models,
            embedder,
            recall: RecallSettings::default(),
            memory_writes: MemoryWrites::Digest,
            write_batch: 3,
            data_dir: None,
            act_max_tokens: 160,
            answer_max_tokens: 80,
            temperature: 0.7,
            act_retries: 1,
            memory_modules: None,
            module_budget_tokens: 240,
        }
    }
}

type Key = (String, String);

/// The characters of this agent. Cheap to clone.
#[derive(Debug, Clone)]
pub struct CharacterAgents {
    shards: Arc<DashMap<Key, Arc<Mutex<Shard>>>>,
    options: Arc<AgentOptions>,
    emotion_vectors: Arc<EmotionVectors>,
}

/// What an Act produced.
#[derive(Debug, Clone)]
pub struct ActOutcome {
    pub action: Action,
}

/// What an Answer produced.
#[derive(Debug, Clone)]
pub struct AnswerOutcome {
    pub answer: String,
    pub usage: Usage,
    /// Nothing the character remembers bears on the question; the answer says so.
    pub abstained: bool,
}

/// A file-name-safe rendering of an id.
fn file_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c.to_string()
            } else {
                format!("%{:02X}", u32::from(c))
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_owned()
}

impl CharacterAgents {
    #[must_use]
    pub fn new(options: AgentOptions) -> Self {
        Self {
            shards: Arc::default(),
            options: Arc::new(options),
            emotion_vectors: Arc::default(),
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

    /// Where the shard of `character` in `world` is saved.
    #[must_use]
    pub fn shard_path(&self, world: &str, character: &str) -> Option<PathBuf> {
        self.options.data_dir.as_ref().map(|dir| {
            dir.join(file_safe(world))
                .join(format!("{}.json", file_safe(character)))
        })
    }

    fn save(&self, shard: &Shard, world: &str) -> Result<(), AgentError> {
        if let Some(path) = self.shard_path(world, shard.id()) {
            shard.save(&path)?;
        }
        Ok(())
    }

    /// Creates the character's shard, or keeps the one in memory, or reads the one
    /// saved on disk. Returns the number of memory items and whether a shard was
    /// resumed.
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
        let modules = match &self.options.memory_modules {
            Some(set) => *set,
            None if profile.memory_modules.trim().is_empty() => ModuleSet::default(),
            None => ModuleSet::parse(&profile.memory_modules)
                .map_err(|e| AgentError::InvalidArgument(format!("profile.memory_modules: {e}")))?,
        };
        let key = (world.to_owned(), character.to_owned());
        if let Some(existing) = self.shards.get(&key).map(|s| Arc::clone(s.value())) {
            let items = existing.lock().await.memory().len();
            return Ok((dramatis_runtime::saturating_u32(items), true));
        }
        let saved = self.shard_path(world, character).filter(|p| p.is_file());
        let (mut shard, resumed) = match &saved {
            Some(path) => (Shard::load(profile, path)?, true),
            None => (
                Shard::new(profile, self.options.embedder.as_ref()).await?,
                false,
            ),
        };
        shard.use_modules(modules);
        if !resumed {
            self.save(&shard, world)?;
        }
        let items = shard.memory().len();
        // A concurrent attach of the same character may have won; keep the first.
        self.shards
            .entry(key)
            .or_insert_with(|| Arc::new(Mutex::new(shard)));
        tracing::info!(
            world_id = world,
            character,
            resumed,
            items,
            "character attached"
        );
        Ok((dramatis_runtime::saturating_u32(items), resumed))
    }

    /// Drops the character's shard, and its file.
    pub fn detach(&self, world: &str, character: &str) -> Result<(), AgentError> {
        self.shards
            .remove(&(world.to_owned(), character.to_owned()))
            .ok_or_else(|| AgentError::NotAttached {
                world: world.to_owned(),
                character: character.to_owned(),
            })?;
        if let Some(path) = self.shard_path(world, character)
            && let Err(e) = std::fs::remove_file(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove shard file");
        }
        Ok(())
    }

    /// Stores events the character perceived; writes every scene that ended to
    /// long-term memory.
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
        let before = shard.perceived().len();
        let (accepted, ended) = shard.perceive(events)?;
        if shard.modules().any() {
            let lines: Vec<_> = shard.perceived()[before..]
                .iter()
                .filter_map(crate::shard::Perceived::storyline_line)
                .collect();
            let model = self.options.models.get(ModelRole::Character);
            let mind = self.mind(model.as_ref());
            for line in lines {
                shard.modules_mut().observe(&mind, line).await;
            }
            for draft in &ended {
                shard.modules_mut().scene_end(&mind, &draft.scene_id).await;
            }
            let (_, audit) = mind.finish();
            for entry in audit {
                shard.record_prompt(entry);
            }
        }
        let (id, name) = (shard.profile.id.clone(), shard.profile.name.clone());
        let writer = Writer {
            id: &id,
            name: &name,
        };
        // With ReverieMem's layers off, scenes are not written to them (the profile's
        // starting memories stay, unread).
        let ended = if shard.module_set().reverie {
            ended
        } else {
            Vec::new()
        };
        for draft in ended {
            let written = write_scene(writer, &draft, self.options.embedder.as_ref()).await?;
            shard.commit(written);
            if self.options.memory_writes != MemoryWrites::Model {
                continue;
            }
            let Some(batch) = shard.queue_rewrite(draft, self.options.write_batch) else {
                continue;
            };
            let model = self.options.models.get(ModelRole::Character);
            let rewritten = rewrite_scenes(
                writer,
                &batch,
                model.as_ref(),
                self.options.embedder.as_ref(),
            )
            .await?;
            let items = batch
                .iter()
                .flat_map(|d| d.events.iter())
                .filter(|e| e.kind != PerceivedKind::SceneEnd)
                .map(|e| (e.memory_id(), crate::shard::PERCEIVED.to_owned()))
                .collect();
            shard.record_prompt(AuditEntry {
                purpose: "scene_memory".into(),
                prompt: rewritten.prompt.clone(),
                items,
                timestamp_ms: now_ms(),
            });
            shard.commit_rewrite(rewritten);
        }
        if accepted > 0 {
            self.save(&shard, world)?;
        }
        Ok((accepted, shard.last_seq()))
    }

    /// Whether the character is attached (without copying its shard).
    pub fn ensure_attached(&self, world: &str, character: &str) -> Result<(), AgentError> {
        self.shard(world, character).map(|_| ())
    }

    /// The shard's contents and prompt record.
    pub async fn snapshot(&self, world: &str, character: &str) -> Result<Shard, AgentError> {
        Ok(self.shard(world, character)?.lock().await.clone())
    }

    /// The modules' mind for one operation: the agent's embedder, and the character
    /// model when module steps may call it (with model-written memory).
    fn mind<'a>(&'a self, model: &'a dyn LanguageModel) -> AgentMind<'a> {
        let calls = self.options.memory_writes == MemoryWrites::Model;
        AgentMind::new(self.options.embedder.as_ref(), calls.then_some(model))
    }

    /// Grounding from the memory modules for `text` (none when no module is on); their
    /// model calls are added to `usage` and audited.
    async fn module_grounding(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        text: &str,
        answering: bool,
        present: &[String],
        usage: &mut Usage,
    ) -> Result<Vec<Grounding>, AgentError> {
        if !shard.modules().any() {
            return Ok(Vec::new());
        }
        let vector = self
            .options
            .embedder
            .embed(&[text.to_owned()])
            .await?
            .pop()
            .unwrap_or_default();
        let mind = self.mind(model);
        let grounding = shard
            .modules_mut()
            .ground(
                &mind,
                &ReadQuery {
                    text,
                    vector: &vector,
                    answering,
                    present,
                },
                self.options.module_budget_tokens,
            )
            .await;
        let (spent, audit) = mind.finish();
        usage.add_calls_and_tokens(&spent);
        for entry in audit {
            shard.record_prompt(entry);
        }
        Ok(grounding)
    }

    fn audit(shard: &mut Shard, built: &BuiltPrompt, purpose: &str) {
        let prompt = built
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        shard.record_prompt(AuditEntry {
            purpose: purpose.to_owned(),
            prompt,
            items: built.items.clone(),
            timestamp_ms: now_ms(),
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
        let mut shard = shard.lock().await;
        let started = Instant::now();
        let model = self.options.models.get(ModelRole::Character);
        let me = shard.id().to_owned();
        // The moment: the latest lines of the scene, and the last one someone else said.
        let lines: Vec<String> = shard
            .current_scene()
            .iter()
            .filter_map(|p| p.line(&me))
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
        let trigger = last_other
            .and_then(|p| p.line(&me))
            .unwrap_or_else(|| frame.direction.clone());
        let mut moment = lines[lines.len().saturating_sub(3)..].join("\n");
        if !frame.direction.trim().is_empty() {
            moment.push('\n');
            moment.push_str(frame.direction.trim());
        }
        let mut recalled = if shard.module_set().reverie {
            recall(
                &mut shard,
                &Query {
                    text: &moment,
                    trigger: &trigger,
                    scene_id: &frame.scene_id,
                    rounds: if questioned {
                        self.options.recall.act_rounds
                    } else {
                        0
                    },
                },
                &self.options.recall,
                self.options.embedder.as_ref(),
                &self.emotion_vectors,
                model.as_ref(),
            )
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
            .await?;
        let built = prompt::act(&shard, &recalled, &grounding, frame);
        let name = shard.profile.name.clone();
        let mut usage = recalled.usage;
        let mut parsed = None;
        let schema = action_schema(&present, &frame.exits);
        for attempt in 0..=self.options.act_retries {
            // Every call is audited, retries included: each one sends the prompt again.
            Self::audit(&mut shard, &built, "act");
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
            count_call(&mut usage, &completion);
            if let Some(action) = parse_action(&completion.text) {
                parsed = Some(action);
                break;
            }
            tracing::warn!(character, attempt, output = %completion.text, "unusable action output");
        }
        usage.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let action = match parsed {
            Some(p) => {
                shard.revise_goal(&p.goal);
                shard.expect_own(Annotation {
                    emotion: p.emotion.clone(),
                    intensity: p.intensity,
                    intent: p.intent.clone(),
                    trigger: trigger.clone(),
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
            None => Action {
                kind: ActionKind::Action as i32,
                text: format!("{name} pauses, weighing what to say."),
                usage: Some(usage),
                fallback: true,
                ..Action::default()
            },
        };
        self.save(&shard, world)?;
        Ok(ActOutcome { action })
    }

    /// What an interview question brings to mind: ReverieMem's recall (when on) and
    /// the modules' grounding, with whether the character must abstain. The usage is
    /// that of Self-Probe and module steps.
    async fn recall_for_question(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        question: &str,
    ) -> Result<(Recalled, Vec<Grounding>), AgentError> {
        let scene_id = shard
            .perceived()
            .last()
            .map(|p| p.scene_id.clone())
            .unwrap_or_default();
        let mut recalled: Recalled = if shard.module_set().reverie {
            recall(
                shard,
                &Query {
                    text: question,
                    trigger: question,
                    scene_id: &scene_id,
                    rounds: self.options.recall.answer_rounds,
                },
                &self.options.recall,
                self.options.embedder.as_ref(),
                &self.emotion_vectors,
                model,
            )
            .await?
        } else {
            Recalled::nothing(shard.mood().clone())
        };
        let grounding = self
            .module_grounding(shard, model, question, true, &[], &mut recalled.usage)
            .await?;
        // With ReverieMem off, the modules alone decide whether anything bears on it.
        if !shard.module_set().reverie {
            recalled.abstain = grounding.is_empty();
        } else if !grounding.is_empty() && recalled.abstain {
            recalled.abstain = false;
        }
        Ok((recalled, grounding))
    }

    /// Answers a question from the character's own shard. When nothing the character
    /// remembers bears on it, the answer is an in-character refusal.
    pub async fn answer(
        &self,
        world: &str,
        character: &str,
        question: &str,
    ) -> Result<AnswerOutcome, AgentError> {
        if question.trim().is_empty() {
            return Err(AgentError::InvalidArgument(
                "question must not be empty".into(),
            ));
        }
        let shard = self.shard(world, character)?;
        let mut shard = shard.lock().await;
        let started = Instant::now();
        let model = self.options.models.get(ModelRole::Character);
        let (recalled, grounding) = self
            .recall_for_question(&mut shard, model.as_ref(), question)
            .await?;
        // An interview does not change the character's mood in the story.
        let built = prompt::answer(&shard, &recalled, &grounding, question);
        Self::audit(&mut shard, &built, "answer");
        let request = CompletionRequest::new(built.messages)
            .with_max_tokens(self.options.answer_max_tokens)
            .with_temperature(self.options.temperature);
        let completion = model.complete(&request, None).await?;
        let mut usage = recalled.usage;
        count_call(&mut usage, &completion);
        usage.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut answer = completion.text.trim().to_owned();
        if recalled.abstain && !is_refusal(&answer) {
            // The model claimed something its character cannot know: keep the boundary.
            tracing::info!(character, said = %answer, "replaced an unsupported answer with a refusal");
            answer = "I cannot answer that from my own knowledge.".to_owned();
        }
        self.save(&shard, world)?;
        Ok(AnswerOutcome {
            answer,
            usage,
            abstained: recalled.abstain,
        })
    }

    /// What `question` brings to the character's mind — the items an answer prompt would
    /// hold, with their module and text — without the answer call. For evaluating memory.
    pub async fn recall_view(
        &self,
        world: &str,
        character: &str,
        question: &str,
    ) -> Result<(Vec<RecalledItem>, Usage, bool), AgentError> {
        if question.trim().is_empty() {
            return Err(AgentError::InvalidArgument(
                "question must not be empty".into(),
            ));
        }
        let shard = self.shard(world, character)?;
        let mut shard = shard.lock().await;
        let model = self.options.models.get(ModelRole::Character);
        let (recalled, grounding) = self
            .recall_for_question(&mut shard, model.as_ref(), question)
            .await?;
        let built = prompt::answer(&shard, &recalled, &grounding, question);
        let texts = prompt::item_texts(&shard, &recalled, &grounding);
        let items = built
            .items
            .iter()
            .map(|(id, layer)| RecalledItem {
                id: id.clone(),
                module: crate::shard::module_of(layer).to_owned(),
                layer: layer.clone(),
                text: texts.get(id).cloned().unwrap_or_default(),
            })
            .collect();
        self.save(&shard, world)?;
        Ok((items, recalled.usage, recalled.abstain))
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
        let agents = CharacterAgents::new(AgentOptions::new(
            RoleModels::uniform(Arc::new(model.clone())),
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
