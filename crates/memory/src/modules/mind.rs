//! What a module may ask of the agent that runs it: embeddings and model calls. The
//! agent implements [`Mind`] over its own embedder and the character's model, counts
//! and audits every call; a module never sees either directly.

use serde_json::Value;

/// Why a step that cannot go on without the embedder or the model failed. ReverieMem's
/// read path needs both; the other modules' steps fall back instead of failing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MindError {
    #[error("embedder: {0}")]
    Embed(String),
    /// The model call failed; `retryable` when a later call may succeed (the server
    /// was busy or unreachable).
    #[error("language model: {message}")]
    Model { message: String, retryable: bool },
}

/// One model call, worded by a module and sent once as it is.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// The step, as the prompt audit names it.
    pub purpose: &'a str,
    pub system: String,
    pub user: String,
    pub max_tokens: u32,
    pub temperature: f32,
    /// The reply's JSON schema and its name.
    pub schema_name: &'a str,
    pub schema: Value,
    /// (memory id, layer) of every item the prompt holds, in prompt order, for the audit.
    pub items: Vec<(String, String)>,
}

/// Model calls and their tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    pub calls: u32,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
}

impl Spent {
    /// One call of `prompt_tokens` in and `completion_tokens` out.
    #[must_use]
    pub fn call(prompt_tokens: u32, completion_tokens: u32) -> Self {
        Self {
            calls: 1,
            prompt_tokens,
            completion_tokens,
        }
    }

    pub fn add(&mut self, other: Self) {
        self.calls = self.calls.saturating_add(other.calls);
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
    }
}

/// What one [`Call`] returned.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// The JSON object the reply holds (repaired when slightly wrong), if any.
    pub value: Option<Value>,
    /// The reply as the model wrote it.
    pub text: String,
    pub spent: Spent,
}

/// What a module may ask of the agent that runs it.
#[async_trait::async_trait]
pub trait Mind: Send + Sync {
    /// Embeddings of `texts`, in order; a text whose embedding failed gets an empty
    /// vector (the module then ranks nothing as relevant to it).
    async fn embed(&self, texts: &[String]) -> Vec<Vec<f32>>;
    /// The model's answer to `prompt` as JSON valid against `schema`, or `None` when no
    /// capable model is configured or its output stayed unusable; the caller then takes
    /// its deterministic fallback. `purpose` names the step in the prompt audit.
    async fn json(&self, purpose: &str, prompt: &str, schema: &Value) -> Option<Value>;

    /// Embeddings of `texts`, in order, or the embedder's error.
    async fn try_embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, MindError> {
        Ok(self.embed(texts).await)
    }
    /// Vectors of `texts`, each given as its pieces: a text's vector is composed from
    /// its pieces' (which the agent may have embedded already). The default embeds
    /// each text whole.
    async fn compose(&self, texts: &[Vec<String>]) -> Result<Vec<Vec<f32>>, MindError> {
        let whole: Vec<String> = texts.iter().map(|pieces| pieces.concat()).collect();
        self.try_embed(&whole).await
    }
    /// Sends `call` once, audited before it is sent. The default has no model.
    async fn call(&self, call: Call<'_>) -> Result<Reply, MindError> {
        Err(MindError::Model {
            message: format!("no model for {}", call.purpose),
            retryable: false,
        })
    }
}
