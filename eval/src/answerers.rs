//! Who answers KBF items, and the walk that asks each item at its story position.
//!
//! - [`AgentAnswerer`]: the character's own agent, asked through `World.Ask` (its shard,
//!   its answer model).
//! - [`RecallAnswerer`]: the agent's recall only (`Ask` with `recall_only`): the option
//!   best supported by what came to the character's mind. It measures what the shard
//!   holds at that point of the story; no language model answers.
//! - [`PoolAnswerer`]: the retrieval baselines, no agent and no model: the character's
//!   profile alone (`direct`), or one index over everything anyone knows so far
//!   (`naive-rag`, the leak the invariant exists to prevent).
//! - [`ModelAnswerer`]: the same two baselines through a language model, the one the
//!   agent answers with, so all three compare on one model.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::anyhow;
use async_trait::async_trait;
use dramatis_embed::Embedder;
use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel};
use dramatis_memory::vector::dot as cosine;
use dramatis_proto::v1::{AsOf, AskRequest, AskResponse, Usage, as_of};
use dramatis_runtime::client::describe;
use dramatis_scenario::Scenario;

use crate::kbf::{Probe, best_supported, match_letter};
use crate::walk::{Source, Walk};

pub use crate::asking::{Asked, GoldChange, Underived, Via, ask_at_positions, ask_via};

/// One way of answering an item, asked once the world stands at the item's position.
#[async_trait]
pub trait Answerer: Send {
    /// The matched letter, or `None` when the answer matched no option. `known` is
    /// everything anyone could know at the walk's position ([`sources`]).
    async fn answer(
        &mut self,
        walk: &mut Walk,
        known: &[Source],
        probe: &Probe,
    ) -> anyhow::Result<Option<char>>;

    /// Language-model use so far.
    fn usage(&self) -> Usage {
        Usage::default()
    }

    /// Per item asked, in order of asking, what the answer rested on (the texts an
    /// agent recalled); empty for answerers that read nothing of an agent.
    fn recalled(&self) -> &[Vec<String>] {
        &[]
    }
}

/// The multiple-choice question put to a character.
#[must_use]
pub fn multiple_choice(probe: &Probe) -> String {
    let mut question = format!("{}\nOptions:", probe.question);
    for (letter, text) in &probe.options {
        question.push_str(&format!("\n{letter}) {text}"));
    }
    question.push_str("\nReply with the letter of your answer.");
    question
}

/// `World.Ask` of the probe's character in the walked world.
async fn ask(
    walk: &mut Walk,
    probe: &Probe,
    question: String,
    recall_only: bool,
) -> anyhow::Result<AskResponse> {
    Ok(walk
        .client
        .ask(AskRequest {
            world_id: walk.world.clone(),
            character: probe.character.clone(),
            question,
            recall_only,
            options: choices(probe).into_iter().map(|(_, text)| text).collect(),
            as_of: walk.as_of.map(|seq| AsOf {
                point: Some(as_of::Point::Seq(seq)),
            }),
        })
        .await
        .map_err(|s| anyhow!("ask {} failed: {}", probe.character, describe(&s)))?
        .into_inner())
}

/// A probe's options other than the refusal, by letter, in letter order: what the
/// agent's evidence gate weighs, and its `choice` indexes.
fn choices(probe: &Probe) -> Vec<(char, String)> {
    probe
        .options
        .iter()
        .filter(|(letter, _)| **letter != crate::kbf::REFUSAL)
        .map(|(letter, text)| (*letter, text.clone()))
        .collect()
}

/// The character's agent answers through `World.Ask`.
#[derive(Debug, Default)]
pub struct AgentAnswerer {
    usage: Usage,
}

#[async_trait]
impl Answerer for AgentAnswerer {
    async fn answer(
        &mut self,
        walk: &mut Walk,
        _known: &[Source],
        probe: &Probe,
    ) -> anyhow::Result<Option<char>> {
        let answer = ask(walk, probe, multiple_choice(probe), false).await?;
        if let Some(u) = answer.usage {
            self.usage.add_calls_and_tokens(&u);
        }
        Ok(match_letter(&answer.answer, &probe.options))
    }

    fn usage(&self) -> Usage {
        self.usage
    }
}

/// The option best supported by what the character's agent recalls for the question.
pub struct RecallAnswerer<'a> {
    pub embedder: &'a dyn Embedder,
    pub threshold: f32,
    /// Per item asked, in order of asking: the texts recalled.
    pub recalled: Vec<Vec<String>>,
    /// Self-Probe calls the recalls spent.
    pub usage: Usage,
}

#[async_trait]
impl Answerer for RecallAnswerer<'_> {
    async fn answer(
        &mut self,
        walk: &mut Walk,
        _known: &[Source],
        probe: &Probe,
    ) -> anyhow::Result<Option<char>> {
        let response = ask(walk, probe, probe.question.clone(), true).await?;
        if let Some(u) = response.usage {
            self.usage.add_calls_and_tokens(&u);
        }
        let texts: Vec<String> = response.recalled.into_iter().map(|r| r.text).collect();
        // The agent's evidence gate decides; with the gate off (no choice, no
        // refusal) the option most similar to what was recalled is taken.
        let chosen = response.choice.and_then(|c| {
            choices(probe)
                .get(usize::try_from(c).ok()?)
                .map(|(l, _)| *l)
        });
        let letter = match chosen {
            Some(letter) => letter,
            None if response.abstained || texts.is_empty() => crate::kbf::REFUSAL,
            None => {
                let pool = self.embedder.embed(&texts).await?;
                best_supported(probe, &pool, self.embedder, self.threshold).await?
            }
        };
        self.recalled.push(texts);
        Ok(Some(letter))
    }

    fn usage(&self) -> Usage {
        self.usage
    }

    fn recalled(&self) -> &[Vec<String>] {
        &self.recalled
    }
}

/// What a baseline may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// The character's profile and manner of speech only.
    Profile,
    /// One index over everything anyone knows so far: every fact, every character's
    /// profile and memories, every line logged (the naive-RAG leak).
    Everyone,
}

/// Texts of a pool at the walk's position (`known`), for `character`.
fn pool_texts(scenario: &Scenario, known: &[Source], pool: Pool, character: &str) -> Vec<String> {
    match pool {
        Pool::Profile => scenario
            .character(character)
            .map(|c| {
                c.profile
                    .split(". ")
                    .map(str::to_owned)
                    .chain(std::iter::once(c.style.clone()))
                    .filter(|s| !s.trim().is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        Pool::Everyone => known
            .iter()
            .flat_map(|s| s.text.lines().map(str::to_owned).collect::<Vec<_>>())
            .filter(|t| !t.trim().is_empty())
            .collect(),
    }
}

/// Embeddings of pool texts, each text embedded once per evaluation.
#[derive(Default)]
struct Vectors(HashMap<String, Vec<f32>>);

impl Vectors {
    async fn of(
        &mut self,
        texts: &[String],
        embedder: &dyn Embedder,
    ) -> anyhow::Result<Vec<Vec<f32>>> {
        let missing: Vec<String> = texts
            .iter()
            .filter(|t| !self.0.contains_key(*t))
            .cloned()
            .collect();
        if !missing.is_empty() {
            let vectors = embedder.embed(&missing).await?;
            self.0.extend(missing.into_iter().zip(vectors));
        }
        Ok(texts.iter().map(|t| self.0[t].clone()).collect())
    }
}

/// A retrieval baseline: the option best supported by its pool; no agent, no model.
pub struct PoolAnswerer<'a> {
    pub scenario: &'a Scenario,
    pub embedder: &'a dyn Embedder,
    pub pool: Pool,
    pub threshold: f32,
    vectors: Vectors,
}

impl<'a> PoolAnswerer<'a> {
    #[must_use]
    pub fn new(
        scenario: &'a Scenario,
        embedder: &'a dyn Embedder,
        pool: Pool,
        threshold: f32,
    ) -> Self {
        Self {
            scenario,
            embedder,
            pool,
            threshold,
            vectors: Vectors::default(),
        }
    }
}

#[async_trait]
impl Answerer for PoolAnswerer<'_> {
    async fn answer(
        &mut self,
        _walk: &mut Walk,
        known: &[Source],
        probe: &Probe,
    ) -> anyhow::Result<Option<char>> {
        let texts = pool_texts(self.scenario, known, self.pool, &probe.character);
        Ok(Some(self.answer_from(&texts, probe).await?))
    }
}

impl PoolAnswerer<'_> {
    /// The option best supported by `texts`, a pool the caller gathered (each text is
    /// embedded once per answerer).
    pub async fn answer_from(&mut self, texts: &[String], probe: &Probe) -> anyhow::Result<char> {
        let pool = self.vectors.of(texts, self.embedder).await?;
        best_supported(probe, &pool, self.embedder, self.threshold).await
    }

    /// The character's profile and manner of speech, as [`Pool::Profile`] reads them.
    #[must_use]
    pub fn profile(&self, character: &str) -> Vec<String> {
        pool_texts(self.scenario, &[], Pool::Profile, character)
    }
}

/// A baseline through a language model: the character's profile as the system prompt,
/// and for `naive-rag` the five items of the shared index nearest the question.
pub struct ModelAnswerer<'a> {
    pub scenario: &'a Scenario,
    pub embedder: &'a dyn Embedder,
    pub model: Arc<dyn LanguageModel>,
    pub pool: Pool,
    vectors: Vectors,
    usage: Usage,
}

impl<'a> ModelAnswerer<'a> {
    #[must_use]
    pub fn new(
        scenario: &'a Scenario,
        embedder: &'a dyn Embedder,
        model: Arc<dyn LanguageModel>,
        pool: Pool,
    ) -> Self {
        Self {
            scenario,
            embedder,
            model,
            pool,
            vectors: Vectors::default(),
            usage: Usage::default(),
        }
    }

    /// The pool's items nearest the question, best first.
    async fn context(&mut self, known: &[Source], probe: &Probe) -> anyhow::Result<Vec<String>> {
        if self.pool == Pool::Profile {
            return Ok(Vec::new());
        }
        let texts = pool_texts(self.scenario, known, self.pool, &probe.character);
        let vectors = self.vectors.of(&texts, self.embedder).await?;
        let question = self
            .embedder
            .embed(std::slice::from_ref(&probe.question))
            .await?
            .pop()
            .unwrap_or_default();
        let mut scored: Vec<(f32, &String)> = vectors
            .iter()
            .map(|v| cosine(v, &question))
            .zip(&texts)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        Ok(scored.into_iter().take(5).map(|(_, t)| t.clone()).collect())
    }
}

#[async_trait]
impl Answerer for ModelAnswerer<'_> {
    async fn answer(
        &mut self,
        _walk: &mut Walk,
        known: &[Source],
        probe: &Probe,
    ) -> anyhow::Result<Option<char>> {
        let character = self
            .scenario
            .character(&probe.character)
            .ok_or_else(|| anyhow!("no character {:?}", probe.character))?;
        let mut system = format!(
            "You are {}. {} You speak {}. Answer as {} would, from what {} knows; if {} \
             could not know the answer, choose E.",
            character.name,
            character.profile,
            character.style,
            character.name,
            character.name,
            character.name
        );
        let context = self.context(known, probe).await?;
        if !context.is_empty() {
            system.push_str("\nWhat comes to mind:");
            for item in &context {
                system.push_str(&format!("\n- {item}"));
            }
        }
        let request = CompletionRequest::new(vec![
            ChatMessage::system(system),
            ChatMessage::user(multiple_choice(probe)),
        ])
        .with_max_tokens(80)
        .with_temperature(0.0);
        let completion = self.model.complete(&request, None).await?;
        self.usage
            .count_call(completion.prompt_tokens, completion.completion_tokens);
        Ok(match_letter(&completion.text, &probe.options))
    }

    fn usage(&self) -> Usage {
        self.usage
    }
}
