use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::LlmError;

/// Receives generated text piece by piece while a completion runs. A sink is called
/// from the completion's own task, in order; it must not block. The words are a live
/// preview: the completion returns the whole text whatever a sink does with them.
pub trait TokenSink: Send + Sync {
    /// The next piece of the completion's text.
    fn token(&self, piece: &str);
}

/// A channel's sender is a sink (a test collects the pieces this way); a receiver
/// that left takes nothing more.
impl TokenSink for tokio::sync::mpsc::UnboundedSender<String> {
    fn token(&self, piece: &str) {
        // A listener that left loses nothing: the reply comes whole.
        let _ = self.send(piece.to_owned());
    }
}

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
}

impl ChatMessage {
    #[must_use]
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::System,
            content: content.into(),
        }
    }

    #[must_use]
    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::User,
            content: content.into(),
        }
    }

    #[must_use]
    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::Assistant,
            content: content.into(),
        }
    }
}

/// A JSON schema the answer must follow. Endpoints that support structured output
/// (OpenAI `response_format`, llama.cpp grammars) constrain generation with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    pub name: String,
    pub schema: serde_json::Value,
}

/// A chat-completion request.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    pub messages: Vec<ChatMessage>,
    pub max_tokens: u32,
    pub temperature: f32,
    pub schema: Option<ResponseSchema>,
    /// The answer should be worded afresh, not copy runs of words from the prompt (a
    /// character's line, whose prompt quotes what others just said). A client whose
    /// endpoint can penalise such runs asks it to (see [`crate::OpenAiConfig::dry`]);
    /// other models ignore it.
    pub fresh_wording: bool,
    /// The sampling seed to draw the answer with (`None`: the endpoint's own). A line
    /// asked again is given a seed of its own, so it is drawn anew.
    pub seed: Option<u32>,
}

impl CompletionRequest {
    #[must_use]
    pub fn new(messages: Vec<ChatMessage>) -> Self {
        Self {
            messages,
            max_tokens: 128,
            temperature: 0.7,
            schema: None,
            fresh_wording: false,
            seed: None,
        }
    }

    /// Draws the answer with `seed` (see [`Self::seed`]).
    #[must_use]
    pub fn with_seed(mut self, seed: Option<u32>) -> Self {
        self.seed = seed;
        self
    }

    /// Asks for an answer worded afresh (see [`Self::fresh_wording`]).
    #[must_use]
    pub fn worded_afresh(mut self) -> Self {
        self.fresh_wording = true;
        self
    }

    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    #[must_use]
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = temperature;
        self
    }

    #[must_use]
    pub fn with_schema(mut self, schema: ResponseSchema) -> Self {
        self.schema = Some(schema);
        self
    }

    /// All message contents joined, as the model sees them (for audits and estimates).
    #[must_use]
    pub fn prompt_text(&self) -> String {
        self.messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// What a completion produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    pub text: String,
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
}

/// A chat model. Implementations: [`crate::OpenAiClient`] (any OpenAI-compatible
/// endpoint, including the built-in one) and [`crate::ScriptedModel`] (tests).
#[async_trait]
pub trait LanguageModel: Send + Sync + std::fmt::Debug {
    /// A short name for logs and summaries.
    fn name(&self) -> &str;

    /// Runs one completion. Generated pieces go to `tokens` as they arrive; the
    /// returned [`Completion`] holds the whole text.
    async fn complete(
        &self,
        request: &CompletionRequest,
        tokens: Option<&dyn TokenSink>,
    ) -> Result<Completion, LlmError>;
}

/// A rough token count ([`dramatis_base::estimate_tokens`]) for endpoints that report
/// none.
#[must_use]
pub fn estimate_tokens(text: &str) -> u32 {
    dramatis_base::saturating_u32(dramatis_base::estimate_tokens(text))
}
