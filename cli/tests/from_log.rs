//! KBF on a story a real model played: `dramatis serve` on the built-in model plays a
//! few turns of the shipped scenario, `eval probes --from-log` makes items from its log
//! and `eval kbf --from-log` asks them on a replay of that log, each at its position.
//! The scripted replay cannot ask them: its lines are not the logged ones.

mod common;

use common::{dramatis, serve_builtin};

const TURNS: u32 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kbf_from_log_asks_a_story_the_builtin_model_played() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) = serve_builtin(&data.path().to_string_lossy()).await;
    let with = |args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        all.extend(["--server".to_owned(), url.clone()]);
        all
    };
    let run = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        dramatis(&args).await
    };
    let (ok, _, err) = run(with(&["create", "study-in-scarlet", "--id", "played"])).await;
    assert!(ok, "{err}");
    let turns = TURNS.to_string();
    let (ok, _, err) = run(with(&["advance", "played", "--turns", &turns])).await;
    assert!(ok, "{err}");

    let items = data.path().join("items.jsonl");
    let out = items.to_string_lossy().into_owned();
    let (ok, _, err) = run(with(&[
        "eval",
        "probes",
        "study-in-scarlet",
        "--from-log",
        "played",
        "--at",
        "line",
        "--out",
        &out,
    ]))
    .await;
    assert!(ok, "{err}");
    let probes: Vec<serde_json::Value> = std::fs::read_to_string(&items)
        .expect("items")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an item"))
        .collect();
    assert!(
        probes.iter().all(|p| p["played_with"] == "log:played"),
        "{probes:?}"
    );
    let lines = probes.iter().filter(|p| p["line"].is_u64()).count();
    assert!(lines >= 2, "{lines} items about the model's lines");

    // Replayed on the scripted model, the story logs other lines than the model's.
    let scenario = common::repo().join("scenarios/study-in-scarlet");
    let scenario = scenario.to_string_lossy().into_owned();
    let (ok, _, err) = dramatis(&["eval", "kbf", &out, "--scenario", &scenario]).await;
    assert!(!ok);
    assert!(err.contains("--from-log played"), "{err}");

    let (ok, json, err) = run(with(&[
        "eval",
        "kbf",
        &out,
        "--scenario",
        &scenario,
        "--from-log",
        "played",
        "--json",
    ]))
    .await;
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(json.trim()).expect("one JSON object");
    assert_eq!(report["story_turns"], TURNS);
    assert_eq!(
        report["gold_changed"],
        serde_json::json!([]),
        "the replay's gold is the log's"
    );
    let asked = report["items"].as_array().expect("items");
    assert_eq!(asked.len(), probes.len());
    for (asked, made) in asked.iter().zip(&probes) {
        assert_eq!(asked["id"], made["id"]);
        assert_eq!(asked["gold"], made["gold"]);
        assert!(asked["answer"].is_string(), "{asked}");
    }
    server.kill().await.expect("stopped");
}
