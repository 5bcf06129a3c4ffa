//! `dramatis llm`: an OpenAI-compatible `/v1/chat/completions` endpoint (streaming and
//! not) in front of the [`LocalEngine`]. `response_format` with a JSON schema becomes a
//! llama.cpp grammar, so even a tiny model returns valid JSON.

use std::convert::Infallible;
use std::future::Future;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;

use dramatis_llm::ChatMessage;

use crate::engine::{Dry, GenerationEvent, GenerationJob, LocalEngine};

/// Settings of the HTTP front.
#[derive(Debug, Clone)]
pub struct LocalServerConfig {
    /// The model name reported and accepted.
    pub model_name: String,
}

#[derive(Clone)]
struct AppState {
    engine: LocalEngine,
    model_name: String,
}

/// Serves the engine on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    engine: LocalEngine,
    config: LocalServerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let state = AppState {
        engine,
        model_name: config.model_name,
    };
    let app = axum::Router::new()
        .route("/health", get(|| async { "ok" }))
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat_completions))
        .with_state(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn models(State(state): State<AppState>) -> Json<Value> {
    Json(json!({"object": "list", "data": [{"id": state.model_name, "object": "model"}]}))
}

#[derive(Debug, Deserialize)]
struct ChatRequest {
    messages: Vec<ChatMessage>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    temperature: Option<f32>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    response_format: Option<Value>,
    #[serde(default)]
    seed: Option<u32>,
    /// llama.cpp's DRY sampler settings; `dry_multiplier` 0 (the default) is off.
    #[serde(default)]
    dry_multiplier: f32,
    #[serde(default = "dry_base")]
    dry_base: f32,
    #[serde(default = "dry_allowed_length")]
    dry_allowed_length: i32,
    #[serde(default = "dry_penalty_last_n")]
    dry_penalty_last_n: i32,
}

// llama.cpp's defaults for the DRY fields a request leaves out.
fn dry_base() -> f32 {
    1.75
}
fn dry_allowed_length() -> i32 {
    2
}
fn dry_penalty_last_n() -> i32 {
    -1
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = json!({"error": {"message": message.into(), "type": "invalid_request_error"}});
    (status, Json(body)).into_response()
}

/// The JSON schema inside an OpenAI `response_format`, if one was given.
fn schema_of(format: Option<&Value>) -> Result<Option<String>, String> {
    let Some(format) = format else {
        return Ok(None);
    };
    match format["type"].as_str() {
        Some("json_schema") => {
            let schema = &format["json_schema"]["schema"];
            if schema.is_object() {
                Ok(Some(schema.to_string()))
            } else {
                Err("response_format.json_schema.schema must be an object".into())
            }
        }
        Some("json_object") => Ok(Some(r#"{"type":"object"}"#.into())),
        Some("text") | None => Ok(None),
        Some(other) => Err(format!("response_format.type {other:?} is not supported")),
    }
}

/// The llama.cpp grammar (GBNF) that makes the engine produce only JSON valid under
/// `schema` (a JSON Schema, as text). A string's `pattern` becomes part of the grammar.
pub fn grammar_for_schema(schema: &str) -> Result<String, String> {
    llama_cpp_2::json_schema_to_grammar(schema).map_err(|e| format!("schema: {e}"))
}

async fn chat_completions(
    State(state): State<AppState>,
    body: Result<Json<ChatRequest>, axum::extract::rejection::JsonRejection>,
) -> Response {
    let Json(request) = match body {
        Ok(body) => body,
        Err(rejection) => return error(StatusCode::BAD_REQUEST, rejection.body_text()),
    };
    if request.messages.is_empty() {
        return error(StatusCode::BAD_REQUEST, "messages must not be empty");
    }
    let grammar = match schema_of(request.response_format.as_ref()) {
        Ok(Some(schema)) => match grammar_for_schema(&schema) {
            Ok(grammar) => Some(grammar),
            Err(e) => return error(StatusCode::BAD_REQUEST, e),
        },
        Ok(None) => None,
        Err(message) => return error(StatusCode::BAD_REQUEST, message),
    };
    let (events, mut receiver) = mpsc::unbounded_channel();
    let job = GenerationJob {
        messages: request.messages,
        max_tokens: request.max_tokens.unwrap_or(256).clamp(1, 2048),
        temperature: request.temperature.unwrap_or(0.7),
        grammar,
        dry: (request.dry_multiplier > 0.0).then_some(Dry {
            multiplier: request.dry_multiplier,
            base: request.dry_base,
            allowed_length: request.dry_allowed_length,
            penalty_last_n: request.dry_penalty_last_n,
        }),
        seed: request.seed.unwrap_or_else(|| {
            // Unseeded requests vary from call to call, as with any hosted endpoint.
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        }),
        events,
    };
    if let Err(e) = state.engine.submit(job) {
        return error(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
    }
    let model = state.model_name.clone();
    let id = format!("chatcmpl-{}", std::process::id());
    if request.stream {
        let stream = UnboundedReceiverStream::new(receiver).map(move |event| {
            let chunk = match event {
                GenerationEvent::Piece(text) => json!({
                    "id": id, "object": "chat.completion.chunk", "model": model,
                    "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}],
                }),
                GenerationEvent::Done {
                    prompt_tokens,
                    completion_tokens,
                } => {
                    let usage = usage(prompt_tokens, completion_tokens);
                    return Ok::<_, Infallible>(Bytes::from(format!(
                        "data: {}\n\ndata: [DONE]\n\n",
                        json!({"id": id, "object": "chat.completion.chunk", "model": model,
                            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                            "usage": usage})
                    )));
                }
                GenerationEvent::Failed(message) => json!({"error": {"message": message}}),
            };
            Ok(Bytes::from(format!("data: {chunk}\n\n")))
        });
        return Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(Body::from_stream(stream))
            .unwrap_or_else(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()));
    }
    let mut text = String::new();
    while let Some(event) = receiver.recv().await {
        match event {
            GenerationEvent::Piece(piece) => text.push_str(&piece),
            GenerationEvent::Done {
                prompt_tokens,
                completion_tokens,
            } => {
                return Json(json!({
                    "id": id, "object": "chat.completion", "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop"}],
                    "usage": usage(prompt_tokens, completion_tokens),
                }))
                .into_response();
            }
            GenerationEvent::Failed(message) => {
                return error(StatusCode::INTERNAL_SERVER_ERROR, message);
            }
        }
    }
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "engine stopped mid-generation",
    )
}

fn usage(prompt_tokens: u32, completion_tokens: u32) -> Value {
    json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    })
}
