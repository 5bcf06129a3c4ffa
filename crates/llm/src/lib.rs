//! `dramatis-llm` owns the language-model seam: the [`LanguageModel`] trait, an
//! OpenAI-compatible chat-completions client (streaming, timeouts, retries), JSON
//! repair, model roles, and a scripted model for tests that records every prompt it
//! receives. The built-in llama.cpp model is `dramatis-llm-local`, which only the CLI
//! links.
//!
//! It knows nothing of worlds, characters or gRPC: callers hand it messages and get
//! text back.

mod error;
mod json;
mod openai;
mod roles;
mod scripted;
mod sse;
mod types;

pub use error::LlmError;
pub use json::parse_json;
pub use openai::{MAX_CHARS_PER_TOKEN, OpenAiClient, OpenAiConfig, dry_fields};
pub use roles::{ModelRole, RoleModels};
pub use scripted::{RecordedPrompt, ScriptRule, ScriptedModel};
pub use types::{
    ChatMessage, ChatRole, Completion, CompletionRequest, LanguageModel, ResponseSchema, TokenSink,
};
