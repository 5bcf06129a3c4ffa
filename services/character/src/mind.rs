//! The agent's side of the memory-module seam: embeddings from the agent's own embedder,
//! and JSON from the character model (schema in `response_format`, repaired when it
//! comes back slightly wrong, retried once) — or nothing, when module steps run on their
//! deterministic fallbacks. Every call is counted and audited.

use std::sync::Mutex;

use dramatis_embed::Embedder;
use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, ResponseSchema, parse_json};
use dramatis_memory::modules::Mind;
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
    usage: Mutex<Usage>,
    audit: Mutex<Vec<AuditEntry>>,
}

impl<'a> AgentMind<'a> {
    pub fn new(embedder: &'a dyn Embedder, model: Option<&'a dyn LanguageModel>) -> Self {
        Self {
            embedder,
            model,
            usage: Mutex::default(),
            audit: Mutex::default(),
        }
    }

    /// The calls made and their prompts, for the caller to record.
    pub fn finish(self) -> (Usage, Vec<AuditEntry>) {
        (
            self.usage.into_inner().unwrap_or_default(),
            self.audit.into_inner().unwrap_or_default(),
        )
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
            if let Ok(mut audit) = self.audit.lock() {
                audit.push(AuditEntry {
                    purpose: purpose.to_owned(),
                    prompt: sent.clone(),
                    items: Vec::new(),
                    timestamp_ms: now_ms(),
                    flagged: Vec::new(),
                    guard: Vec::new(),
                });
            }
            let completion = match model.complete(&request, None).await {
                Ok(completion) => completion,
                Err(error) => {
                    tracing::warn!(%error, purpose, "module step: model call failed");
                    return None;
                }
            };
            if let Ok(mut usage) = self.usage.lock() {
                usage.count_call(completion.prompt_tokens, completion.completion_tokens);
            }
            if let Some((value, _)) =
                parse_json::<serde_json::Value>(&completion.text, serde_json::Value::is_object)
            {
                return Some(value);
            }
            tracing::warn!(purpose, attempt, output = %completion.text, "unusable module output");
        }
        None
    }
}
