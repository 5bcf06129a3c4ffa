//! A scripted language model for tests and offline runs: answers from fixture rules and
//! records every prompt it receives, so tests can assert on exactly what a character's
//! agent sent.
//!
//! Its answer is a function of its prompt, as a real model's is at temperature 0: a
//! generated line carries a number drawn from the prompt's text, not from how many calls
//! this process made. A process that restarts (a killed service, a replaced agent) then
//! tells the same story from the same state, which is what lets a crashed run be
//! compared with an uncrashed one event by event.

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
    prompt_tokens: u64,
}

/// The scripted model. Clones share their record.
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    rules: Arc<Vec<ScriptRule>>,
    state: Arc<Mutex<State>>,
    record: bool,
    /// Lines numbered with [`FIXED_DIGITS`] spaced digits instead of plain ones.
    fixed_width: bool,
    /// Lines numbered by the calls answered, not by the prompt.
    by_call: bool,
}

/// Digits of a line's number under [`ScriptedModel::with_fixed_width_lines`].
const FIXED_DIGITS: usize = 6;

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
            fixed_width: false,
            by_call: false,
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

    /// Numbers generated lines with six digits, spaced ("Scripted line 0 0 1 2 3 4."),
    /// so every line is the same number of words and embedding tokens whatever its
    /// number. For benchmarks whose cost per line must not vary with the number:
    /// "Scripted line 7." is 6 tokens, "Scripted line 7000." 7.3 on average.
    #[must_use]
    pub fn with_fixed_width_lines(mut self) -> Self {
        self.fixed_width = true;
        self
    }

    /// Numbers generated lines by the calls this model has answered (1, 2, 3…), not by
    /// their prompts, so a line does not depend on what its prompt holds. For tests
    /// that change one character's prompts on purpose (a whisper) and expect everyone's
    /// lines to stay as they were. A new process numbers from 1 again, so a run that
    /// restarts its agents is not the same story under this mode.
    #[must_use]
    pub fn numbered_by_call(mut self) -> Self {
        self.by_call = true;
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

    /// Prompt tokens (estimated) over every completion requested.
    #[must_use]
    pub fn prompt_tokens(&self) -> u64 {
        self.lock().prompt_tokens
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding this lock leaves plain data behind; keep using it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn reply_for(&self, prompt: &str, request: &CompletionRequest, call: u64) -> String {
        if let Some(rule) = self
            .rules
            .iter()
            .find(|r| r.when.iter().all(|w| prompt.contains(w.as_str())))
        {
            return rule.reply.clone();
        }
        let call = if self.by_call {
            call
        } else {
            line_number(prompt, request)
        };
        if let Some(schema) = &request.schema {
            let number = if self.fixed_width {
                fixed_width(call)
            } else {
                call.to_string()
            };
            minimal_instance(&schema.schema, &number).to_string()
        } else {
            format!("Scripted answer {call}.")
        }
    }
}

/// Numbers a generated line can carry: below a million, so a line is short and two
/// lines of one story rarely share one.
const LINE_NUMBERS: u64 = 1_000_000;

/// The number of the line generated for `prompt`: FNV-1a over the prompt's text, its
/// schema's name and its seed (when it has one), the same in every process and every
/// build.
fn line_number(prompt: &str, request: &CompletionRequest) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0100_0000_01b3;
    let schema = request.schema.as_ref().map_or("", |s| s.name.as_str());
    let seed = request.seed.map(u32::to_le_bytes);
    let hash = prompt
        .bytes()
        .chain([0])
        .chain(schema.bytes())
        .chain(seed.into_iter().flatten())
        .fold(OFFSET, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(PRIME)
        });
    hash % LINE_NUMBERS
}

/// The smallest value that `schema` accepts, the way an instant model under a grammar
/// would answer: the first enum choice, the minimum number, `true`, the fewest array
/// items, and "Scripted line N." for a string that may not be empty.
fn minimal_instance(schema: &serde_json::Value, line: &str) -> serde_json::Value {
    use serde_json::{Value, json};
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut object = serde_json::Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    object.insert(name.clone(), minimal_instance(property, line));
                }
            }
            Value::Object(object)
        }
        Some("array") => {
            let count = number("minItems").unwrap_or(0.0) as usize;
            let item = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array((0..count).map(|_| minimal_instance(&item, line)).collect())
        }
        Some("string") if number("minLength").unwrap_or(0.0) > 0.0 => {
            json!(format!("Scripted line {line}."))
        }
        Some("string") => json!(""),
        Some("integer") => json!(number("minimum").unwrap_or(0.0) as i64),
        Some("number") => json!(number("minimum").unwrap_or(0.0)),
        Some("boolean") => json!(true),
        _ => Value::Null,
    }
}

/// `call` as [`FIXED_DIGITS`] digits, each a word of its own ("0 0 1 2 3 4"); a call
/// past the width keeps all its digits.
fn fixed_width(call: u64) -> String {
    let digits: Vec<String> = format!("{call:0FIXED_DIGITS$}")
        .chars()
        .map(String::from)
        .collect();
    digits.join(" ")
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        tokens: Option<&dyn TokenSink>,
    ) -> Result<Completion, LlmError> {
        let prompt = request.prompt_text();
        let prompt_tokens = estimate_tokens(&prompt);
        let call = {
            let mut state = self.lock();
            state.calls += 1;
            state.prompt_tokens += u64::from(prompt_tokens);
            if self.record {
                state.prompts.push(RecordedPrompt {
                    messages: request.messages.clone(),
                    schema: request.schema.as_ref().map(|s| s.name.clone()),
                });
            }
            state.calls
        };
        let text = self.reply_for(&prompt, request, call);
        if let Some(sink) = tokens {
            for piece in text.split_inclusive(' ') {
                sink.token(piece);
            }
        }
        Ok(Completion {
            prompt_tokens,
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
        let c = c.expect("c").text;
        assert!(
            c.starts_with("Scripted answer ") && c.ends_with('.'),
            "a prompt no rule matches gets a generic answer: {c}"
        );
        assert_eq!(rx.recv().await.as_deref(), Some("A"));
        let prompts: Vec<String> = model.prompts().iter().map(RecordedPrompt::text).collect();
        assert_eq!(prompts, ["Holmes in the lab", "Holmes at home", "Watson"]);
        assert_eq!(model.calls(), 3);
    }

    #[tokio::test]
    async fn schema_requests_get_the_smallest_valid_instance() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["speech", "action"]},
                "text": {"type": "string", "minLength": 1},
                "thought": {"type": "string"},
                "level": {"type": "integer", "minimum": 1, "maximum": 3},
                "done": {"type": "boolean"},
                "probes": {"type": "array", "items": {"type": "string"}}
            }
        });
        let request = CompletionRequest::new(vec![ChatMessage::user("anything")]).with_schema(
            crate::ResponseSchema {
                name: "test".into(),
                schema,
            },
        );
        let model = ScriptedModel::default();
        let reply = model.complete(&request, None).await.expect("reply");
        let value: serde_json::Value = serde_json::from_str(&reply.text).expect("json");
        let line = format!("Scripted line {}.", line_number("anything", &request));
        assert_eq!(
            value,
            serde_json::json!({"kind": "speech", "text": line, "thought": "",
                "level": 1, "done": true, "probes": []})
        );
    }

    /// A restarted process (a new model) answers a prompt as the first one did, and
    /// another prompt gets another line.
    #[tokio::test]
    async fn the_answer_is_a_function_of_the_prompt_not_of_the_calls_before() {
        let ask = |text: &str| CompletionRequest::new(vec![ChatMessage::user(text)]);
        let first = ScriptedModel::default();
        let mut before = Vec::new();
        for text in ["Holmes", "Watson", "Holmes"] {
            before.push(first.complete(&ask(text), None).await.expect("reply").text);
        }
        let restarted = ScriptedModel::default();
        let again = restarted
            .complete(&ask("Holmes"), None)
            .await
            .expect("reply");
        assert_eq!(before[0], before[2], "the same prompt, the same answer");
        assert_ne!(before[0], before[1], "another prompt, another answer");
        assert_eq!(
            again.text, before[0],
            "a new process answers as the old one did"
        );
        assert_eq!(first.calls(), 3);
        // A seed draws the line anew, the same way each time.
        let seeded = |seed| ask("Holmes").with_seed(Some(seed));
        let drawn = first.complete(&seeded(7), None).await.expect("reply").text;
        assert_ne!(drawn, before[0], "a seed draws another line");
        let again = restarted.complete(&seeded(7), None).await.expect("reply");
        assert_eq!(again.text, drawn, "the same seed, the same line");
    }

    /// Numbered by call, a line does not depend on its prompt.
    #[tokio::test]
    async fn numbered_by_call_lines_follow_the_calls_not_the_prompt() {
        let ask = |text: &str| CompletionRequest::new(vec![ChatMessage::user(text)]);
        let model = ScriptedModel::default().numbered_by_call();
        let mut texts = Vec::new();
        for text in ["Holmes", "Holmes", "Watson"] {
            texts.push(model.complete(&ask(text), None).await.expect("reply").text);
        }
        assert_eq!(
            texts,
            [
                "Scripted answer 1.",
                "Scripted answer 2.",
                "Scripted answer 3."
            ]
        );
    }

    #[tokio::test]
    async fn fixed_width_lines_have_as_many_words_at_any_count() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1}}
        });
        let request = CompletionRequest::new(vec![ChatMessage::user("anything")]).with_schema(
            crate::ResponseSchema {
                name: "test".into(),
                schema,
            },
        );
        let model = ScriptedModel::default()
            .without_recording()
            .with_fixed_width_lines();
        let mut texts = Vec::new();
        for i in 0..12 {
            let request = CompletionRequest {
                messages: vec![ChatMessage::user(format!("anything {i}"))],
                ..request.clone()
            };
            let reply = model.complete(&request, None).await.expect("reply");
            let value: serde_json::Value = serde_json::from_str(&reply.text).expect("json");
            texts.push(value["text"].as_str().expect("text").to_owned());
        }
        let numbers: std::collections::BTreeSet<&String> = texts.iter().collect();
        assert_eq!(numbers.len(), 12, "twelve prompts, twelve lines: {texts:?}");
        let words: Vec<usize> = texts.iter().map(|t| t.split(' ').count()).collect();
        assert_eq!(words, vec![8; 12]);
        assert_eq!(fixed_width(1_234_567), "1 2 3 4 5 6 7");
    }
}
