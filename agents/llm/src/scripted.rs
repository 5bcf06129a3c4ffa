//! A scripted language model for tests and offline runs: answers from fixture rules and
//! records every prompt it receives, so tests can assert on exactly what a character's
//! agent sent.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::Deserialize;

use crate::types::estimate_tokens;
use crate::{ChatMessage, Completion, CompletionRequest, LanguageModel, LlmError, TokenSink};

/// A fixture rule: when every `when` string occurs in the prompt, answer `reply`.
/// Rules are tried in order; the first match wins.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ScriptRule {
    pub when: Vec<String>,
    pub reply: String,
}

/// One prompt the model received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedPrompt {
    pub messages: Vec<ChatMessage>,
    pub schema: Option<String>,
}

impl RecordedPrompt {
    /// The prompt's whole text.
    #[must_use]
    pub fn text(&self) -> String {
        self.messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Debug, Default)]
struct State {
    prompts: Vec<RecordedPrompt>,
    calls: u64,
}

/// The scripted model. Clones share their record.
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    rules: Arc<Vec<ScriptRule>>,
    state: Arc<Mutex<State>>,
    record: bool,
}

impl Default for ScriptedModel {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl ScriptedModel {
    /// A model answering from `rules`; prompts no rule matches get a generic line.
    #[must_use]
    pub fn new(rules: Vec<ScriptRule>) -> Self {
        Self {
            rules: Arc::new(rules),
            state: Arc::default(),
            record: true,
        }
    }

    /// Rules from a JSON fixture: `[{"when": ["..."], "reply": "..."}]`.
    pub fn from_json(json: &str) -> Result<Self, LlmError> {
        let rules: Vec<ScriptRule> = serde_json::from_str(json)
            .map_err(|e| LlmError::InvalidRequest(format!("scripted model fixture: {e}")))?;
        Ok(Self::new(rules))
    }

    /// Stops keeping prompts (for long benchmark runs); calls are still counted.
    #[must_use]
    pub fn without_recording(mut self) -> Self {
        self.record = false;
        self
    }

    /// Every prompt received so far, in order.
    #[must_use]
    pub fn prompts(&self) -> Vec<RecordedPrompt> {
        self.lock().prompts.clone()
    }

    /// How many completions were requested.
    #[must_use]
    pub fn calls(&self) -> u64 {
        self.lock().calls
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding this lock leaves plain data behind; keep using it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn reply_for(&self, prompt: &str, call: u64, request: &CompletionRequest) -> String {
        if let Some(rule) = self
            .rules
            .iter()
            .find(|r| r.when.iter().all(|w| prompt.contains(w.as_str())))
        {
            return rule.reply.clone();
        }
        if request.schema.is_some() {
            format!(
                r#"{{"kind":"speech","text":"Scripted line {call}.","target":"","destination":"","thought":""}}"#
            )
        } else {
            format!("Scripted answer {call}.")
        }
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        tokens: Option<&TokenSink>,
    ) -> Result<Completion, LlmError> {
        let prompt = request.prompt_text();
        let call = {
            let mut state = self.lock();
            state.calls += 1;
            if self.record {
                state.prompts.push(RecordedPrompt {
                    messages: request.messages.clone(),
                    schema: request.schema.as_ref().map(|s| s.name.clone()),
                });
            }
            state.calls
        };
        let text = self.reply_for(&prompt, call, request);
        if let Some(sink) = tokens {
            for piece in text.split_inclusive(' ') {
                let _ = sink.send(piece.to_owned());
            }
        }
        Ok(Completion {
            prompt_tokens: estimate_tokens(&prompt),
            completion_tokens: estimate_tokens(&text),
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn first_matching_rule_answers_and_prompts_are_recorded() {
        let model = ScriptedModel::from_json(
            r#"[{"when":["Holmes","lab"],"reply":"A"},{"when":["Holmes"],"reply":"B"}]"#,
        )
        .expect("fixture parses");
        let ask = |text: &str| CompletionRequest::new(vec![ChatMessage::user(text)]);
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let a = model.complete(&ask("Holmes in the lab"), Some(&tx)).await;
        let b = model.complete(&ask("Holmes at home"), None).await;
        let c = model.complete(&ask("Watson"), None).await;
        assert_eq!(a.expect("a").text, "A");
        assert_eq!(b.expect("b").text, "B");
        assert_eq!(c.expect("c").text, "Scripted answer 3.");
        assert_eq!(rx.recv().await.as_deref(), Some("A"));
        let prompts: Vec<String> = model.prompts().iter().map(RecordedPrompt::text).collect();
        assert_eq!(prompts, ["Holmes in the lab", "Holmes at home", "Watson"]);
        assert_eq!(model.calls(), 3);
    }
}
