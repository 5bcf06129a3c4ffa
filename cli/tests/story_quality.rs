//! Is the story any good: the built-in model kept from copying its prompt, a finished
//! world exported, and the pairwise judge from the command line.

use std::process::Stdio;
use std::time::Duration;

use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, OpenAiClient, OpenAiConfig};
use dramatis_memory::echo::echoed;
use dramatis_proto::v1::EventKind;
use tokio::io::{AsyncBufReadExt, BufReader};

mod common;
use common::{EXE, dramatis, repo, serve_scripted};

/// The built-in model served on a loopback port, with its address.
async fn builtin_model() -> Option<(tokio::process::Child, String)> {
    let model = repo().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        model.is_file(),
        "{} is absent: run `bash scripts/setup.sh`",
        model.display()
    );
    let mut child = tokio::process::Command::new(EXE)
        .args(["llm", "--listen", "127.0.0.1:0", "--model-file"])
        .arg(&model)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("dramatis llm starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let ready = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("ready in time")
        .expect("readable")?;
    let addr = ready.strip_prefix("DRAMATIS_READY ")?.to_owned();
    Some((child, addr))
}

#[tokio::test]
async fn the_builtin_model_asked_for_fresh_wording_does_not_copy_what_its_prompt_quotes() {
    let (_child, addr) = builtin_model().await.expect("the built-in model started");
    let quoted = "The loyal and devoted Sherlock Holmes is at the end of a long corridor, \
                  and you are right there with him, for he has no one but you.";
    let request = CompletionRequest::new(vec![
        ChatMessage::system("You are Stamford, an old friend of John Watson."),
        ChatMessage::user(format!(
            "Watson just said: \"{quoted}\"\nSay that sentence back to him, word for word."
        )),
    ])
    .with_max_tokens(48)
    .with_temperature(0.0);
    let mut config = OpenAiConfig::new(format!("http://{addr}/v1"), "smollm2");
    let plain = OpenAiClient::new(config.clone()).expect("client");
    config.dry = true;
    let dry = OpenAiClient::new(config).expect("client");

    // Greedy, so each answer is the model's one most likely: without DRY it copies.
    let copied = plain.complete(&request, None).await.expect("completion");
    assert!(
        echoed(&copied.text, [quoted]).is_some(),
        "the test needs a prompt the model copies: {}",
        copied.text
    );
    let fresh = dry
        .complete(&request.clone().worded_afresh(), None)
        .await
        .expect("completion");
    assert!(
        !fresh.text.trim().is_empty() && echoed(&fresh.text, [quoted]).is_none(),
        "with DRY the answer still copies the prompt: {}",
        fresh.text
    );
    // A request that does not ask for fresh wording is left alone.
    let again = dry.complete(&request, None).await.expect("completion");
    assert_eq!(again.text, copied.text);
}

#[tokio::test]
async fn a_finished_world_exports_as_markdown_and_transcript_line_for_line_with_its_log() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) = serve_scripted(&data.path().to_string_lossy()).await;
    let (ok, _, err) = dramatis(&[
        "create",
        "study-in-scarlet",
        "--id",
        "tale",
        "--server",
        &url,
    ])
    .await;
    assert!(ok, "{err}");
    let (ok, _, err) = dramatis(&["advance", "tale", "--to-end", "--server", &url]).await;
    assert!(ok, "{err}");

    let mut client = dramatis_runtime::client::world_client(
        &dramatis_runtime::client::ClientOptions::local(&url),
    )
    .await
    .expect("client");
    let log = dramatis_eval::walk::Logged::read(&mut client, "tale")
        .await
        .expect("log");
    assert!(log.events.len() > 30, "{}", log.events.len());

    let (ok, markdown, err) =
        dramatis(&["export", "tale", "--format", "markdown", "--server", &url]).await;
    assert!(ok, "{err}");
    let mut blocks = markdown.lines().filter(|l| !l.trim().is_empty());
    assert_eq!(blocks.next(), Some("# A Study in Scarlet — the opening"));
    let blocks: Vec<&str> = blocks.collect();
    assert_eq!(blocks.len(), log.events.len(), "{markdown}");
    for (block, event) in blocks.iter().zip(&log.events) {
        let unescaped = block.replace('\\', "");
        assert!(
            unescaped.contains(event.text.trim()),
            "{block} ≠ {}",
            event.text
        );
        match event.kind() {
            EventKind::SceneStart => assert!(block.starts_with("## Scene "), "{block}"),
            EventKind::Speech => assert!(
                block.starts_with(&format!("**{}**", event.speaker_name)),
                "{block}"
            ),
            _ => {}
        }
    }

    let out = data.path().join("tale.txt");
    let out = out.to_string_lossy();
    let (ok, _, err) = dramatis(&[
        "export",
        "tale",
        "--format",
        "transcript",
        "--out",
        &out,
        "--server",
        &url,
    ])
    .await;
    assert!(ok, "{err}");
    let written = std::fs::read_to_string(&*out).expect("export written");
    let lines: Vec<&str> = written.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), log.events.len(), "{written}");
    let speech = log
        .events
        .iter()
        .position(|e| e.kind() == EventKind::Speech)
        .expect("a line");
    let event = &log.events[speech];
    let to = if event.target_name.is_empty() {
        String::new()
    } else {
        format!(" (to {})", event.target_name)
    };
    assert_eq!(
        lines[speech],
        format!("{}{to}: {}", event.speaker_name, event.text.trim())
    );
    server.kill().await.expect("server stopped");
}

/// A judge fixture: `first` answers when story `shown` is shown first.
fn verdict_rule(shown: &str, answer: [&str; 5]) -> serde_json::Value {
    let keys = [
        "anthropomorphism",
        "character_fidelity",
        "immersion",
        "writing_quality",
        "storyline",
    ];
    let mut reply = serde_json::Map::new();
    for (key, value) in keys.iter().zip(answer) {
        reply.insert((*key).to_owned(), value.into());
    }
    reply.insert("reason".into(), "scripted".into());
    serde_json::json!({
        "when": [format!("Story 1:\n{shown}")],
        "reply": serde_json::Value::Object(reply).to_string(),
    })
}

#[tokio::test]
async fn eval_judge_reads_two_story_files_judges_both_orders_and_keeps_an_audit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("written");
        path.to_string_lossy().into_owned()
    };
    let a = write("a.txt", "ALPHA: Holmes finds the ring.\n");
    let b = write("b.txt", "BETA: Holmes finds the ring again.\n");
    // A is preferred on four dimensions whichever way round; on storyline the judge
    // ties with A first and prefers B with B first: B wins it.
    let fixture = serde_json::json!([
        verdict_rule("ALPHA", ["1", "1", "1", "1", "tie"]),
        verdict_rule("BETA", ["2", "2", "2", "2", "1"]),
    ]);
    let fixture = write("judge.json", &fixture.to_string());
    let audit = dir.path().join("audit.jsonl");
    let audit_arg = audit.to_string_lossy().into_owned();
    let (ok, out, err) = dramatis(&[
        "eval",
        "judge",
        &a,
        &b,
        "--judge-scripted",
        &fixture,
        "--audit",
        &audit_arg,
        "--json",
    ])
    .await;
    assert!(ok, "{err}");
    let row = |key: &str| {
        let line = out
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} row:\n{out}"));
        line.split_whitespace().skip(1).take(3).collect::<Vec<_>>()
    };
    assert_eq!(row("anthropomorphism"), ["1", "0", "0"], "{out}");
    assert_eq!(row("writing_quality"), ["1", "0", "0"], "{out}");
    assert_eq!(row("storyline"), ["0", "0", "1"], "{out}");
    let json: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("json")).expect("json line");
    assert_eq!(json["bench"], "judge");
    assert_eq!(json["calls"], 2);
    let asked: Vec<serde_json::Value> = std::fs::read_to_string(&audit)
        .expect("audit")
        .lines()
        .map(|l| serde_json::from_str(l).expect("audit line"))
        .collect();
    assert_eq!(asked.len(), 2);
    assert_eq!(
        (asked[0]["first"].as_str(), asked[1]["first"].as_str()),
        (Some("a"), Some("b"))
    );
    let shown = asked[1]["prompt"][1]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        shown.starts_with("Story 1:\nBETA") && shown.contains("Story 2:\nALPHA"),
        "{shown}"
    );
}
