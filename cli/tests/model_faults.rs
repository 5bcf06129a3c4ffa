//! `dramatis run` against a language-model endpoint that misbehaves: the API key given
//! on the command line reaches every process that calls the model, and a model that
//! fails every call still lets the story finish, in character.

mod common;

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use common::dramatis;

/// Authorization headers seen, one per request.
type Seen = Arc<Mutex<Vec<Option<String>>>>;

/// A model endpoint that answers with HTTP 500 to `fails` of every `of` requests
/// (0 of 1: never; 1 of 1: always).
async fn endpoint(fails: usize, of: usize) -> (Seen, String) {
    let seen: Seen = Arc::default();
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            axum::routing::post(
                move |State(seen): State<Seen>, headers: HeaderMap| async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let n = {
                        let mut seen = seen.lock().expect("lock");
                        seen.push(auth);
                        seen.len()
                    };
                    answer(if n % of < fails {
                        StatusCode::INTERNAL_SERVER_ERROR
                    } else {
                        StatusCode::OK
                    })
                },
            ),
        )
        .with_state(Arc::clone(&seen));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (seen, base)
}

/// A streamed line of speech, or the error status.
fn answer(reply: StatusCode) -> Response {
    if reply != StatusCode::OK {
        return (reply, "overloaded").into_response();
    }
    let line = serde_json::json!({"kind": "speech", "text": "The tide is turning."});
    let chunk =
        serde_json::json!({"choices": [{"index": 0, "delta": {"content": line.to_string()}}]});
    (
        [("content-type", "text/event-stream")],
        format!("data: {chunk}\n\ndata: [DONE]\n\n"),
    )
        .into_response()
}

fn run_args<'a>(base: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "tests/scenarios/tidewater/scenario.toml",
        "--llm-endpoint",
        base,
        "--memory-writes",
        "digest",
        "--boundary-guard",
        "off",
    ];
    args.extend_from_slice(extra);
    args
}

#[tokio::test]
async fn the_api_key_flag_reaches_every_agent_process() {
    let (seen, base) = endpoint(0, 1).await;
    let (ok, transcript, err) = dramatis(&run_args(&base, &["--llm-api-key", "sekret-key"])).await;
    assert!(ok, "{err}");
    assert!(transcript.contains("The tide is turning."), "{transcript}");
    let seen = seen.lock().expect("lock");
    assert!(seen.len() >= 4, "{} calls", seen.len());
    let carried = seen
        .iter()
        .filter(|a| a.as_deref() == Some("Bearer sekret-key"))
        .count();
    assert_eq!(carried, seen.len(), "{seen:?}");
}

/// Every call fails: the story still runs to its end in character, and `run` then
/// exits non-zero, saying every turn of each scene fell back.
#[tokio::test]
async fn a_model_that_always_fails_still_lets_the_story_end_in_character() {
    let (seen, base) = endpoint(1, 1).await;
    let (ok, transcript, err) = dramatis(&run_args(&base, &["--shared-agent"])).await;
    assert!(!ok, "run exits non-zero when every turn of a scene failed");
    assert!(
        err.contains("every turn of scene 1, 2, 3 fell back to an in-character line"),
        "{err}"
    );
    assert!(
        transcript.contains("pauses, weighing what to say"),
        "{transcript}"
    );
    assert!(
        transcript.contains("Scene 3"),
        "the story ran to its end: {transcript}"
    );
    assert!(!seen.lock().expect("lock").is_empty());
}

/// Two calls of every three fail: some turns fall back, none of the scenes wholly, so
/// `run` succeeds.
#[tokio::test]
async fn a_model_that_fails_often_but_not_always_lets_run_succeed() {
    let (seen, base) = endpoint(2, 3).await;
    let (ok, transcript, err) = dramatis(&run_args(&base, &["--shared-agent"])).await;
    assert!(ok, "{err}");
    assert!(transcript.contains("The tide is turning."), "{transcript}");
    assert!(seen.lock().expect("lock").len() >= 3);
}
