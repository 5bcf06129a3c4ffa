//! The OpenAI-compatible client against a local HTTP server that speaks the protocol:
//! streaming, error statuses, retries, timeouts and malformed bodies.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use dramatis_llm::{
    ChatMessage, CompletionRequest, LanguageModel, LlmError, OpenAiClient, OpenAiConfig,
    ResponseSchema,
};
use serde_json::{Value, json};

/// What the fake endpoint does on each call, in order (the last one repeats).
#[derive(Clone)]
enum Reply {
    Stream(Vec<&'static str>),
    Status(u16),
    Slow(Duration),
    Raw(&'static str),
    /// A keep-alive comment this often, for ever: never idle, never done.
    Trickle(Duration),
    /// One content chunk of this many characters.
    Huge(usize),
}

/// Request bodies received, each with its `Authorization` header.
type Seen = Arc<Mutex<Vec<(Value, Option<String>)>>>;

#[derive(Clone, Default)]
struct Fake {
    replies: Arc<Vec<Reply>>,
    seen: Seen,
}

impl Fake {
    fn calls(&self) -> usize {
        self.seen.lock().expect("lock").len()
    }
}

fn sse(body: String) -> Response {
    ([("content-type", "text/event-stream")], body).into_response()
}

async fn handler(
    State(fake): State<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let call = {
        let mut seen = fake.seen.lock().expect("lock");
        seen.push((body, auth));
        seen.len() - 1
    };
    let reply = fake.replies[call.min(fake.replies.len() - 1)].clone();
    match reply {
        Reply::Stream(pieces) => {
            let mut out = String::new();
            for piece in pieces {
                let chunk = json!({"choices": [{"index": 0, "delta": {"content": piece}}]});
                out.push_str(&format!("data: {chunk}\n\n"));
            }
            let usage =
                json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}});
            out.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
            sse(out)
        }
        Reply::Status(code) => (
            StatusCode::from_u16(code).expect("status"),
            Json(json!({"error": {"message": "nope"}})),
        )
            .into_response(),
        Reply::Slow(delay) => {
            tokio::time::sleep(delay).await;
            sse("data: [DONE]\n\n".into())
        }
        Reply::Raw(body) => sse(body.into()),
        Reply::Trickle(every) => {
            let beats = futures::stream::unfold((), move |()| async move {
                tokio::time::sleep(every).await;
                Some((Ok::<_, std::io::Error>(": keep-alive\n\n".to_owned()), ()))
            });
            (
                [("content-type", "text/event-stream")],
                axum::body::Body::from_stream(beats),
            )
                .into_response()
        }
        Reply::Huge(n) => {
            let chunk = json!({"choices": [{"index": 0, "delta": {"content": "x".repeat(n)}}]});
            sse(format!("data: {chunk}\n\ndata: [DONE]\n\n"))
        }
    }
}

async fn serve(replies: Vec<Reply>) -> (Fake, String) {
    let fake = Fake {
        replies: Arc::new(replies),
        seen: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(handler))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (fake, base)
}

fn client(base: &str, retries: u32, idle: Duration) -> OpenAiClient {
    let mut config = OpenAiConfig::new(base, "test-model");
    config.api_key = Some("sekret".into());
    config.max_retries = retries;
    config.idle_timeout = idle;
    config.backoff = Duration::from_millis(10);
    OpenAiClient::new(config).expect("client")
}

fn request() -> CompletionRequest {
    CompletionRequest::new(vec![
        ChatMessage::system("be brief"),
        ChatMessage::user("hello"),
    ])
    .with_max_tokens(20)
}

#[tokio::test]
async fn streams_pieces_in_order_and_reports_usage() {
    let (fake, base) = serve(vec![Reply::Stream(vec!["Hel", "lo", " there"])]).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let schema = ResponseSchema {
        name: "reply".into(),
        schema: json!({"type": "object"}),
    };
    let completion = client(&base, 0, Duration::from_secs(5))
        .complete(&request().with_schema(schema), Some(&tx))
        .await
        .expect("completion");
    drop(tx);
    assert_eq!(completion.text, "Hello there");
    assert_eq!(
        (completion.prompt_tokens, completion.completion_tokens),
        (12, 3)
    );
    let mut pieces = Vec::new();
    while let Some(piece) = rx.recv().await {
        pieces.push(piece);
    }
    assert_eq!(pieces, ["Hel", "lo", " there"]);
    let seen = fake.seen.lock().expect("lock");
    let (body, auth) = &seen[0];
    assert_eq!(auth.as_deref(), Some("Bearer sekret"));
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_tokens"], 20);
    assert_eq!(body["messages"][1]["content"], "hello");
    assert_eq!(body["response_format"]["json_schema"]["name"], "reply");
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let (fake, base) = serve(vec![Reply::Status(400)]).await;
    let error = client(&base, 3, Duration::from_secs(5))
        .complete(&request(), None)
        .await
        .expect_err("400 fails");
    assert!(
        matches!(error, LlmError::Status { status: 400, ref body, .. } if body.contains("nope"))
    );
    assert_eq!(fake.calls(), 1);
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff_until_success() {
    let (fake, base) = serve(vec![
        Reply::Status(503),
        Reply::Status(429),
        Reply::Stream(vec!["ok"]),
    ])
    .await;
    let completion = client(&base, 3, Duration::from_secs(5))
        .complete(&request(), None)
        .await
        .expect("third time lucky");
    assert_eq!(completion.text, "ok");
    assert_eq!(fake.calls(), 3);
}

#[tokio::test]
async fn a_silent_endpoint_times_out() {
    let (fake, base) = serve(vec![Reply::Slow(Duration::from_secs(3))]).await;
    let error = client(&base, 1, Duration::from_millis(200))
        .complete(&request(), None)
        .await
        .expect_err("times out");
    assert!(
        matches!(error, LlmError::Timeout { after, .. } if after == Duration::from_millis(200))
    );
    assert_eq!(fake.calls(), 2, "a timeout is retried once, then reported");
}

#[tokio::test]
async fn malformed_chunks_are_a_protocol_error() {
    let (fake, base) = serve(vec![Reply::Raw("data: {not json\n\n")]).await;
    let error = client(&base, 1, Duration::from_secs(5))
        .complete(&request(), None)
        .await
        .expect_err("malformed");
    assert!(
        matches!(error, LlmError::Protocol { ref message, .. } if message.contains("bad chunk"))
    );
    assert_eq!(fake.calls(), 2);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_reported_as_such() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    drop(listener);
    let error = client(&base, 0, Duration::from_secs(2))
        .complete(&request(), None)
        .await
        .expect_err("nothing listens");
    assert!(matches!(error, LlmError::Unreachable { .. }), "{error}");
}

#[tokio::test]
async fn an_error_reported_mid_stream_surfaces_with_its_message() {
    let body = "data: {\"error\": {\"message\": \"prompt exceeds the context\"}}\n\n";
    let (_, base) = serve(vec![Reply::Raw(body)]).await;
    let error = client(&base, 0, Duration::from_secs(5))
        .complete(&request(), None)
        .await
        .expect_err("server failed");
    assert!(
        matches!(error, LlmError::Status { status: 500, ref body, .. } if body == "prompt exceeds the context"),
        "{error}"
    );
}

#[tokio::test]
async fn keep_alives_for_ever_end_at_the_call_deadline() {
    let (fake, base) = serve(vec![Reply::Trickle(Duration::from_millis(50))]).await;
    let mut config = OpenAiConfig::new(&base, "test-model");
    config.idle_timeout = Duration::from_millis(500);
    config.deadline = Duration::from_secs(2);
    config.backoff = Duration::from_millis(10);
    let started = std::time::Instant::now();
    let client = OpenAiClient::new(config).expect("client");
    let error = tokio::time::timeout(Duration::from_secs(20), client.complete(&request(), None))
        .await
        .expect("the call ends by itself")
        .expect_err("never done");
    assert!(
        matches!(error, LlmError::Timeout { after, .. } if after == Duration::from_secs(2)),
        "{error}"
    );
    assert!(started.elapsed() >= Duration::from_secs(2));
    assert_eq!(fake.calls(), 1, "the deadline covers the retries too");
}

#[tokio::test]
async fn a_reply_past_its_token_budget_is_cut_and_so_is_what_streams() {
    let (_fake, base) = serve(vec![Reply::Huge(2 * 1024 * 1024)]).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let completion = client(&base, 0, Duration::from_secs(5))
        .complete(&request(), Some(&tx))
        .await
        .expect("cut, not failed");
    drop(tx);
    let budget = 20 * dramatis_llm::MAX_CHARS_PER_TOKEN;
    assert_eq!(completion.text.chars().count(), budget);
    let mut streamed = String::new();
    while let Some(piece) = rx.recv().await {
        streamed.push_str(&piece);
    }
    assert_eq!(
        streamed, completion.text,
        "watchers see what the call returns"
    );
}

#[tokio::test]
async fn dry_fields_go_only_with_requests_for_fresh_wording_and_only_when_configured() {
    let (fake, base) = serve(vec![Reply::Stream(vec!["ok"]); 3]).await;
    let mut config = OpenAiConfig::new(&base, "test-model");
    config.dry = true;
    let with_dry = OpenAiClient::new(config).expect("client");
    let without = client(&base, 0, Duration::from_secs(5));
    for (model, request) in [
        (&with_dry, request().worded_afresh()),
        (&with_dry, request()),
        (&without, request().worded_afresh()),
    ] {
        model.complete(&request, None).await.expect("completion");
    }
    let seen = fake.seen.lock().expect("lock");
    let bodies: Vec<&Value> = seen.iter().map(|(body, _)| body).collect();
    // llama.cpp reads the lengths as integers: a float there is a refused request.
    assert_eq!(bodies[0]["dry_multiplier"], json!(1.5));
    assert_eq!(bodies[0]["dry_base"], json!(1.75));
    assert_eq!(bodies[0]["dry_allowed_length"], json!(2));
    assert_eq!(bodies[0]["dry_penalty_last_n"], json!(-1));
    for body in &bodies[1..] {
        assert!(body.get("dry_multiplier").is_none(), "{body}");
    }
}
