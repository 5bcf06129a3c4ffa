//! The agent's side of the memory-module seam: embeddings from the agent's own embedder
//! (composed from pieces it embedded before), JSON from the character model (schema in
//! `response_format`, repaired when it comes back slightly wrong, retried once) — or
//! nothing, when module steps run on their deterministic fallbacks — and ReverieMem's
//! one-shot calls. Every call is counted and audited.

use std::sync::Mutex;

use dramatis_embed::{EmbedError, Embedder, embed_composed};
use dramatis_llm::{
    ChatMessage, CompletionRequest, LanguageModel, LlmError, ResponseSchema, parse_json,
};
use dramatis_memory::modules::{Call, Mind, MindError, Reply, Spent};
use dramatis_proto::v1::Usage;

use crate::shard::AuditEntry;
use dramatis_runtime::now_ms;

/// Tokens a module step may generate.
const MODULE_MAX_TOKENS: u32 = 320;

/// A [`Mind`] for one operation on one shard.
pub(crate) struct AgentMind<'a> {
    pub embedder: &'a dyn Embedder,
    /// The model, when module steps may call it.
    pub model: Option<&'a dyn LanguageModel>,
    spent: Mutex<Spent>,
    audit: Mutex<Vec<AuditEntry>>,
}

impl<'a> AgentMind<'a> {
    pub fn new(embedder: &'a dyn Embedder, model: Option<&'a dyn LanguageModel>) -> Self {
        Self {
            embedder,
            model,
            spent: Mutex::default(),
            audit: Mutex::default(),
        }
    }

    /// The calls `json` made (a [`Reply`] carries its own) and every prompt sent, for
    /// the caller to record.
    pub fn finish(self) -> (Spent, Vec<AuditEntry>) {
        (
            self.spent.into_inner().unwrap_or_default(),
            self.audit.into_inner().unwrap_or_default(),
        )
    }

    fn audit(&self, purpose: &str, prompt: String, items: Vec<(String, String)>) {
        dramatis_runtime::lock(&self.audit).push(AuditEntry {
            purpose: purpose.to_owned(),
            prompt,
            items,
            timestamp_ms: now_ms(),
            flagged: Vec::new(),
            guard: Vec::new(),
        });
    }
}

/// The wire's usage of `spent`.
#[must_use]
pub fn usage_of(spent: Spent) -> Usage {
    Usage {
        llm_calls: spent.calls,
        prompt_tokens: spent.prompt_tokens,
        completion_tokens: spent.completion_tokens,
        latency_ms: 0,
    }
}

fn embed_failed(error: &EmbedError) -> MindError {
    MindError::Embed(error.to_string())
}

fn model_failed(error: &LlmError) -> MindError {
    MindError::Model {
        message: error.to_string(),
        retryable: error.is_retryable(),
    }
}

#[async_trait::async_trait]
impl Mind for AgentMind<'_> {
    async fn embed(&self, texts: &[String]) -> Vec<Vec<f32>> {
        match self.embedder.embed(texts).await {
            Ok(vectors) => vectors,
            Err(error) => {
                // A module without vectors still works (it ranks nothing as relevant).
                tracing::warn!(%error, "module embedding failed");
                vec![Vec::new(); texts.len()]
            }
        }
    }

    async fn json(
        &self,
        purpose: &str,
        prompt: &str,
        schema: &serde_json::Value,
    ) -> Option<serde_json::Value> {
        let model = self.model?;
        let request = CompletionRequest::new(vec![
            ChatMessage::system(
                "You maintain one story character's memory. Reply with one JSON object.",
            ),
            ChatMessage::user(prompt),
        ])
        .with_max_tokens(MODULE_MAX_TOKENS)
        .with_temperature(0.2)
        .with_schema(ResponseSchema {
            name: purpose.replace('-', "_"),
            schema: schema.clone(),
        });
        let sent = request.prompt_text();
        for attempt in 0..2 {
            self.audit(purpose, sent.clone(), Vec::new());
            let completion = match model.complete(&request, None).await {
                Ok(completion) => completion,
                Err(error) => {
                    tracing::warn!(%error, purpose, "module step: model call failed");
                    return None;
                }
            };
            dramatis_runtime::lock(&self.spent).add(Spent::call(
                completion.prompt_tokens,
                completion.completion_tokens,
            ));
            if let Some((value, _)) =
                parse_json::<serde_json::Value>(&completion.text, serde_json::Value::is_object)
            {
                return Some(value);
            }
            tracing::warn!(purpose, attempt, output = %completion.text, "unusable module output");
        }
        None
    }
    async fn try_embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, MindError> {
        self.embedder
            .embed(texts)
            .await
            .map_err(|e| embed_failed(&e))
    }

    async fn compose(&self, texts: &[Vec<String>]) -> Result<Vec<Vec<f32>>, MindError> {
        embed_composed(self.embedder, texts)
            .await
            .map_err(|e| embed_failed(&e))
    }

    async fn call(&self, call: Call<'_>) -> Result<Reply, MindError> {
        let Some(model) = self.model else {
            return Err(MindError::Model {
                message: format!("no model for {}", call.purpose),
                retryable: false,
            });
        };
        let request = CompletionRequest::new(vec![
            ChatMessage::system(call.system),
            ChatMessage::user(call.user),
        ])
        .with_max_tokens(call.max_tokens)
        .with_temperature(call.temperature)
        .with_schema(ResponseSchema {
            name: call.schema_name.to_owned(),
            schema: call.schema,
        });
        self.audit(call.purpose, request.prompt_text(), call.items);
        let completion = model
            .complete(&request, None)
            .await
            .map_err(|e| model_failed(&e))?;
        let value = parse_json::<serde_json::Value>(&completion.text, serde_json::Value::is_object)
            .map(|(value, _)| value);
        Ok(Reply {
            value,
            spent: Spent::call(completion.prompt_tokens, completion.completion_tokens),
            text: completion.text,
        })
    }
}
