//! A client for OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, llama.cpp
//! server, Ollama, and Dramatis's own built-in model server).

use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;

use crate::sse::SseDecoder;
use crate::types::estimate_tokens;
use crate::{Completion, CompletionRequest, LanguageModel, LlmError, TokenSink};

/// Where and how to reach an endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Base URL including the API prefix, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// Longest wait for the response head or for the next streamed chunk.
    pub idle_timeout: Duration,
    /// Longest a whole call may take, retries included: a stream of keep-alives or a
    /// token a second ends here even though no single wait is long.
    pub deadline: Duration,
    /// Attempts after the first one, for retryable failures before any text streamed.
    pub max_retries: u32,
    /// First back-off delay; doubles each retry.
    pub backoff: Duration,
    /// Send llama.cpp's DRY sampler settings ([`dry_fields`]) with requests asking for fresh
    /// wording: the endpoint then penalises a generated run of tokens that repeats one
    /// already in the prompt. The built-in model and llama.cpp servers honour them; an
    /// endpoint that refuses unknown fields needs this off (the default).
    pub dry: bool,
}

/// The DRY settings sent with a request for fresh wording, as llama.cpp names them.
/// Runs of up to `dry_allowed_length` tokens repeat freely (a name, "I think"); each
/// token that would extend a longer repeated run is penalised by `dry_multiplier ×
/// dry_base^(run − dry_allowed_length)`, over the whole context (`dry_penalty_last_n`
/// −1). The base, length and reach are the sampler's published defaults; the
/// multiplier is above its suggested 0.8, which the built-in model talked through (it
/// swaps one word and goes on copying).
#[must_use]
pub fn dry_fields() -> serde_json::Value {
    json!({
        "dry_multiplier": 1.5,
        "dry_base": 1.75,
        "dry_allowed_length": 2,
        "dry_penalty_last_n": -1,
    })
}

impl OpenAiConfig {
    #[must_use]
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            model: model.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(60),
            deadline: Duration::from_secs(300),
            max_retries: 3,
            backoff: Duration::from_millis(250),
            dry: false,
        }
    }
}

/// The OpenAI-compatible client.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    config: OpenAiConfig,
    http: reqwest::Client,
    url: String,
}

impl OpenAiClient {
    /// Builds a client; no request is made until the first completion.
    pub fn new(config: OpenAiConfig) -> Result<Self, LlmError> {
        // reqwest is built without a default TLS provider; ring is the one we ship.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .build()
            .map_err(|e| LlmError::InvalidRequest(format!("http client: {e}")))?;
        let url = format!("{}/chat/completions", config.base_url);
        Ok(Self { config, http, url })
    }

    #[must_use]
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn body(&self, request: &CompletionRequest) -> serde_json::Value {
        let mut body = json!({
            "model": self.config.model,
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if let Some(seed) = request.seed {
            body["seed"] = seed.into();
        }
        if let Some(schema) = &request.schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": schema.name, "schema": schema.schema, "strict": true},
            });
        }
        if self.config.dry
            && request.fresh_wording
            && let (Some(body), serde_json::Value::Object(dry)) =
                (body.as_object_mut(), dry_fields())
        {
            body.extend(dry);
        }
        body
    }

    /// Sends `body` and waits (at most the idle timeout) for a successful status; an
    /// error status is returned with the start of its body.
    async fn send(&self, body: &serde_json::Value) -> Result<reqwest::Response, LlmError> {
        let endpoint = &self.url;
        let mut builder = self.http.post(endpoint).json(body);
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }
        let idle = self.config.idle_timeout;
        let response = tokio::time::timeout(idle, builder.send())
            .await
            .map_err(|_| LlmError::Timeout {
                endpoint: endpoint.clone(),
                after: idle,
            })?
            .map_err(|e| LlmError::Unreachable {
                endpoint: endpoint.clone(),
                message: e.to_string(),
            })?;
        let status = response.status();
        if !status.is_success() {
            let body = tokio::time::timeout(idle, response.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            return Err(LlmError::Status {
                endpoint: endpoint.clone(),
                status: status.as_u16(),
                body: body.chars().take(500).collect(),
            });
        }
        Ok(response)
    }

    async fn attempt(
        &self,
        body: &serde_json::Value,
        budget: usize,
        tokens: Option<&dyn TokenSink>,
        streamed: &mut bool,
    ) -> Result<Completion, LlmError> {
        let endpoint = &self.url;
        let idle = self.config.idle_timeout;
        let timeout = || LlmError::Timeout {
            endpoint: endpoint.clone(),
            after: idle,
        };
        let response = self.send(body).await?;
        let mut stream = response.bytes_stream();
        let mut decoder = SseDecoder::default();
        let mut completion = Completion::default();
        let mut usage_seen = false;
        loop {
            let chunk = tokio::time::timeout(idle, stream.next())
                .await
                .map_err(|_| timeout())?;
            let (payloads, ended) = match chunk {
                Some(Ok(bytes)) => (decoder.push(&bytes), false),
                Some(Err(e)) => {
                    return Err(LlmError::Unreachable {
                        endpoint: endpoint.clone(),
                        message: e.to_string(),
                    });
                }
                None => (decoder.finish().into_iter().collect(), true),
            };
            for payload in payloads {
                if payload.trim() == "[DONE]" {
                    return Ok(finish(completion, body, usage_seen));
                }
                let chunk: StreamChunk =
                    serde_json::from_str(&payload).map_err(|e| LlmError::Protocol {
                        endpoint: endpoint.clone(),
                        message: format!("bad chunk {payload:?}: {e}"),
                    })?;
                if let Some(error) = chunk.error {
                    let message = error["message"]
                        .as_str()
                        .map_or_else(|| error.to_string(), str::to_owned);
                    return Err(LlmError::Status {
                        endpoint: endpoint.clone(),
                        status: 500,
                        body: message,
                    });
                }
                if let Some(usage) = chunk.usage {
                    completion.prompt_tokens = usage.prompt_tokens;
                    completion.completion_tokens = usage.completion_tokens;
                    usage_seen = true;
                }
                for choice in chunk.choices {
                    let piece = choice
                        .delta
                        .and_then(|d| d.content)
                        .or_else(|| choice.message.and_then(|m| m.content));
                    if let Some(piece) = piece.filter(|p| !p.is_empty()) {
                        // The client holds the endpoint to max_tokens too: past the
                        // budget nothing more is kept or forwarded, and the call ends.
                        let room = budget.saturating_sub(completion.text.chars().count());
                        let kept: String = piece.chars().take(room).collect();
                        if !kept.is_empty() {
                            if let Some(sink) = tokens {
                                sink.token(&kept);
                            }
                            *streamed = true;
                            completion.text.push_str(&kept);
                        }
                        if kept.len() < piece.len() {
                            tracing::warn!(budget, "reply cut at its token budget");
                            return Ok(finish(completion, body, false));
                        }
                    }
                }
            }
            if ended {
                // The body ended without [DONE]: accept what arrived if anything did.
                if completion.text.is_empty() {
                    return Err(LlmError::Protocol {
                        endpoint: endpoint.clone(),
                        message: "stream ended without content".into(),
                    });
                }
                return Ok(finish(completion, body, usage_seen));
            }
        }
    }
}

fn finish(mut completion: Completion, body: &serde_json::Value, usage_seen: bool) -> Completion {
    if !usage_seen {
        let prompt: String = body["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter_map(|x| x["content"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        completion.prompt_tokens = estimate_tokens(&prompt);
        completion.completion_tokens = estimate_tokens(&completion.text);
    }
    completion
}

#[async_trait]
impl LanguageModel for OpenAiClient {
    fn name(&self) -> &str {
        &self.config.model
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        tokens: Option<&dyn TokenSink>,
    ) -> Result<Completion, LlmError> {
        let body = self.body(request);
        let budget = usize::try_from(request.max_tokens)
            .unwrap_or(usize::MAX)
            .saturating_mul(MAX_CHARS_PER_TOKEN);
        let deadline = self.config.deadline;
        tokio::time::timeout(deadline, self.attempts(&body, budget, tokens))
            .await
            .unwrap_or_else(|_| {
                Err(LlmError::Timeout {
                    endpoint: self.url.clone(),
                    after: deadline,
                })
            })
    }
}

/// The most characters a reply may have per token of `max_tokens` (tokens average
/// about four characters; this leaves room for long ones).
pub const MAX_CHARS_PER_TOKEN: usize = 16;

impl OpenAiClient {
    /// The first attempt and its retries.
    async fn attempts(
        &self,
        body: &serde_json::Value,
        budget: usize,
        tokens: Option<&dyn TokenSink>,
    ) -> Result<Completion, LlmError> {
        let mut delay = self.config.backoff;
        let mut attempt = 0;
        loop {
            let mut streamed = false;
            match self.attempt(body, budget, tokens, &mut streamed).await {
                Ok(completion) => return Ok(completion),
                Err(error)
                    if error.is_retryable() && !streamed && attempt < self.config.max_retries =>
                {
                    attempt += 1;
                    tracing::warn!(%error, attempt, "retrying language model call");
                    tokio::time::sleep(delay).await;
                    delay = delay.saturating_mul(2);
                }
                Err(error) => return Err(error),
            }
        }
    }
}

#[derive(Debug, Deserialize)]
struct StreamChunk {
    #[serde(default)]
    choices: Vec<StreamChoice>,
    #[serde(default)]
    usage: Option<UsageBody>,
    /// Some servers report a failure mid-stream as an `error` object.
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct StreamChoice {
    #[serde(default)]
    delta: Option<ContentBody>,
    #[serde(default)]
    message: Option<ContentBody>,
}

#[derive(Debug, Deserialize)]
struct ContentBody {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Debug, Deserialize)]
struct UsageBody {
    #[serde(default)]
    prompt_tokens: u32,
    #[serde(default)]
    completion_tokens: u32,
}
