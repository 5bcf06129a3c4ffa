//! The `dramatis` binary itself: the built-in model over HTTP, and `run` spawning real
//! agent processes.

use std::process::Stdio;
use std::time::Duration;

use dramatis_character::{ACTION_SCHEMA_NAME, action_schema, parse_action};
use dramatis_llm::{
    ChatMessage, CompletionRequest, LanguageModel, OpenAiClient, OpenAiConfig, ResponseSchema,
};
use tokio::io::{AsyncBufReadExt, BufReader};

mod common;
use common::{EXE, dramatis, line_with, repo, serve_scripted};

#[tokio::test]
async fn builtin_model_serves_text_and_schema_valid_json() {
    let model = repo().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if !model.is_file() {
        eprintln!(
            "SKIPPED: {} is absent; run `bash scripts/setup.sh` to fetch it",
            model.display()
        );
        return;
    }
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
        .expect("readable")
        .expect("a ready line");
    let addr = ready
        .strip_prefix("DRAMATIS_READY ")
        .expect("ready line")
        .to_owned();
    let client = OpenAiClient::new(OpenAiConfig::new(format!("http://{addr}/v1"), "smollm2"))
        .expect("client");

    let plain = CompletionRequest::new(vec![ChatMessage::user("Say hello to Dr Watson.")])
        .with_max_tokens(16);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let text = client
        .complete(&plain, Some(&tx))
        .await
        .expect("plain completion");
    drop(tx);
    let mut streamed = String::new();
    while let Some(piece) = rx.recv().await {
        streamed.push_str(&piece);
    }
    assert!(!text.text.trim().is_empty(), "the model said something");
    assert_eq!(streamed, text.text, "streamed pieces add up to the text");
    assert!(text.completion_tokens > 0 && text.completion_tokens <= 16);
    assert!(
        text.prompt_tokens > 5,
        "usage comes from the model, not an estimate"
    );

    let present = vec!["watson".to_owned()];
    let exits = vec!["baker-street".to_owned()];
    let schema = ResponseSchema {
        name: ACTION_SCHEMA_NAME.into(),
        schema: action_schema(&present, &exits),
    };
    for _ in 0..3 {
        let constrained = CompletionRequest::new(vec![
            ChatMessage::system("You are Sherlock Holmes. Reply with JSON."),
            ChatMessage::user("Dr Watson has just walked into the laboratory. What do you do?"),
        ])
        .with_max_tokens(400)
        .with_schema(schema.clone());
        let output = client
            .complete(&constrained, None)
            .await
            .expect("json completion");
        let value: serde_json::Value = serde_json::from_str(output.text.trim())
            .unwrap_or_else(|e| panic!("{e}: {}", output.text));
        assert!(["speech", "action", "move"].contains(&value["kind"].as_str().unwrap_or("?")));
        assert!(
            ["", "watson"].contains(&value["target"].as_str().unwrap_or("?")),
            "{value}"
        );
        assert!(["", "baker-street"].contains(&value["destination"].as_str().unwrap_or("?")));
        // The grammar lets a line start only with a letter, a digit or an opening mark.
        let first = value["text"].as_str().and_then(|t| t.chars().next());
        assert!(
            first.is_some_and(|c| c.is_alphanumeric() || "'(*‘“".contains(c)),
            "{value}"
        );
        assert!(parse_action(&output.text).is_some(), "{}", output.text);
    }
}

/// The action schema's `pattern` reaches the llama.cpp grammar (an unsupported pattern
/// would silently become "any string").
#[test]
fn the_action_grammar_carries_the_text_pattern() {
    let schema = action_schema(&["watson".to_owned()], &[]).to_string();
    let grammar = dramatis_llm_local::grammar_for_schema(&schema).expect("grammar");
    assert!(
        grammar.contains(r#"[A-Za-z0-9'(*\u00C0-\u024F\u2018\u201C]"#),
        "{grammar}"
    );
}

/// Plays a shipped story with `dramatis COMMAND NAME` on the scripted model; returns
/// stdout after checking the command succeeded.
async fn play_scripted(command: &str, name: &str) -> String {
    let output = tokio::process::Command::new(EXE)
        .args([command, name, "--scripted", "builtin", "--no-color"])
        .current_dir(repo())
        .output()
        .await
        .expect("dramatis ran");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{command} {name} failed:\n{stdout}\n{stderr}"
    );
    stdout
}

#[tokio::test]
async fn run_plays_the_shipped_scenario_with_agent_processes() {
    let stdout = play_scripted("run", "study-in-scarlet").await;
    let headers: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("══════ Scene"))
        .collect();
    assert_eq!(headers.len(), 4, "{stdout}");
    assert!(headers[1].contains("St Bartholomew"));
    assert_eq!(
        stdout.matches("Scripted line").count(),
        24,
        "24 lines were spoken"
    );
    assert!(stdout.contains("24 turns in 4 scenes"), "{stdout}");
    assert!(stdout.contains("24 LLM calls (1.00/turn)"), "{stdout}");
}

#[tokio::test]
async fn sandbox_runs_the_shipped_open_story_and_refuses_a_script() {
    let stdout = play_scripted("sandbox", "lamplighters-ledger").await;
    let rounds: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("══════ Round"))
        .collect();
    assert_eq!(rounds.len(), 6, "{stdout}");
    let mut places: Vec<&str> = rounds
        .iter()
        .filter_map(|l| l.split_once(": ").map(|(_, place)| place))
        .collect();
    places.sort_unstable();
    places.dedup();
    assert!(places.len() >= 2, "scenes at several places: {places:?}");
    assert!(
        stdout.contains("The narrator judged the scene complete."),
        "the scripted narrator ends scenes: {stdout}"
    );
    assert!(
        stdout.contains("(1.20/turn)"),
        "one narrator call per scene: {stdout}"
    );

    let scripted = tokio::process::Command::new(EXE)
        .args(["sandbox", "study-in-scarlet", "--scripted", "builtin"])
        .current_dir(repo())
        .output()
        .await
        .expect("dramatis sandbox");
    assert!(!scripted.status.success());
    let message = String::from_utf8_lossy(&scripted.stderr);
    assert!(message.contains("is a scripted scenario"), "{message}");
}

/// `dramatis run SCENARIO` on the scripted model must fail; returns its stderr.
async fn run_refused(scenario: &str) -> String {
    let output = tokio::process::Command::new(EXE)
        .args(["run", scenario, "--scripted", "builtin"])
        .current_dir(repo())
        .output()
        .await
        .expect("dramatis run");
    assert!(!output.status.success(), "run {scenario} succeeded");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn bad_input_is_refused_with_a_clear_message() {
    let stderr = run_refused("no-such-scenario").await;
    assert!(
        stderr.contains("no shipped scenario named \"no-such-scenario\""),
        "{stderr}"
    );
    // A folder is a scenario only when it holds scenario.toml.
    let empty = tempfile::tempdir().expect("tempdir");
    let stderr = run_refused(&empty.path().to_string_lossy()).await;
    assert!(
        stderr.contains("a folder without a scenario.toml"),
        "{stderr}"
    );
}

fn embedder_present() -> bool {
    let present = repo()
        .join("models/all-MiniLM-L6-v2-int8-nbits/model.onnx")
        .is_file();
    if !present {
        eprintln!("SKIPPED: embedding model is absent; run `bash scripts/setup.sh`");
    }
    present
}

/// `dramatis eval kbf PROBES --scenario SCENARIO --json --answerer ANSWERER EXTRA…`.
fn kbf_json(
    probes: &std::path::Path,
    scenario: &str,
    answerer: &str,
    extra: &[&str],
) -> Result<serde_json::Value, String> {
    let output = std::process::Command::new(EXE)
        .args(["eval", "kbf"])
        .arg(probes)
        .args(["--scenario", scenario, "--json", "--answerer", answerer])
        .args(extra)
        .current_dir(repo())
        .output()
        .expect("dramatis eval kbf");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&output.stdout).expect("one JSON object"))
}

/// The items of a probe file, one JSON object per line.
fn probe_items(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("probe file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json item"))
        .collect()
}

fn number(v: &serde_json::Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

/// The letter `eval kbf --json` answered item `id` with.
fn answer_of(report: &serde_json::Value, id: &str) -> String {
    report["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["id"] == id)
        .unwrap_or_else(|| panic!("no item {id}"))["answer"]
        .as_str()
        .expect("answer")
        .to_owned()
}

/// The KBF protocol on both shipped scenarios and the test suite's own: `eval probes`
/// plays each on the scripted model and writes items with positions; `eval kbf` replays
/// the story, stops at each position and asks there. The gold re-derived on the replay
/// matches the file (the replay is the same story), and the agents' own recall refuses
/// far more often than one index over everyone's knowledge when it should.
#[test]
fn generated_probes_are_asked_at_their_positions_and_recall_beats_naive_rag() {
    if !embedder_present() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for scenario in [
        "scenarios/study-in-scarlet/scenario.toml",
        "scenarios/lamplighters-ledger/scenario.toml",
        "tests/scenarios/tidewater/scenario.toml",
    ] {
        let out = dir.path().join("probes.jsonl");
        let made = std::process::Command::new(EXE)
            .args(["eval", "probes", scenario, "--out"])
            .arg(&out)
            .current_dir(repo())
            .output()
            .expect("dramatis eval probes");
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        let items = probe_items(&out);
        assert!(items.len() >= 20, "{scenario}: {} items", items.len());
        assert!(
            items
                .iter()
                .all(|i| i["at"].is_u64() && i["truth"].is_string())
        );
        assert!(
            items.iter().any(|i| i["line"].is_u64()),
            "{scenario}: no line items"
        );
        let krf = items.iter().filter(|i| i["split"] == "KRf").count();
        let recall = kbf_json(&out, scenario, "retrieval", &[]).expect("kbf retrieval");
        let naive = kbf_json(&out, scenario, "naive-rag", &[]).expect("kbf naive-rag");
        assert_eq!(recall["n_krf"].as_u64(), Some(krf as u64), "{scenario}");
        assert_eq!(
            recall["n_kr"].as_u64(),
            Some((items.len() - krf) as u64),
            "{scenario}"
        );
        assert_eq!(recall["gold_changed"], serde_json::json!([]), "{scenario}");
        assert!(number(&recall, "kbf") >= 0.6, "{scenario}: {recall}");
        let margin = number(&recall, "kr_acc") - number(&naive, "kr_acc");
        assert!(
            margin >= 0.3,
            "{scenario}: KR margin {margin}: {recall} vs {naive}"
        );

        // A probe file from another story (one line's text changed) is refused, naming
        // the line.
        let line = items
            .iter()
            .find(|i| i["line"].is_u64())
            .expect("a line item");
        let tampered: String = items
            .iter()
            .map(|i| {
                let mut i = i.clone();
                if i["line"] == line["line"] {
                    i["line_text"] = serde_json::json!("Something else was said.");
                }
                format!("{i}\n")
            })
            .collect();
        std::fs::write(&out, tampered).expect("write");
        let error = kbf_json(&out, scenario, "retrieval", &[]).expect_err("a foreign run");
        assert!(
            error.contains(&format!("as line {}", line["line"]))
                && error.contains("must be replayed"),
            "{error}"
        );
    }
}

/// The hand-written sets in other words than their sources (issue 32): on the replay
/// every item keeps the gold its writer judged, both splits are there, and the report
/// scores each third of the story apart.
#[test]
fn the_paraphrased_sets_keep_their_gold_and_are_scored_by_position() {
    if !embedder_present() {
        return;
    }
    for (probes, scenario) in [
        (
            "scenarios/study-in-scarlet/paraphrased.jsonl",
            "scenarios/study-in-scarlet/scenario.toml",
        ),
        (
            "scenarios/lamplighters-ledger/paraphrased.jsonl",
            "scenarios/lamplighters-ledger/scenario.toml",
        ),
        (
            "tests/scenarios/tidewater/paraphrased.jsonl",
            "tests/scenarios/tidewater/scenario.toml",
        ),
    ] {
        let path = repo().join(probes);
        let items = probe_items(&path);
        assert!(items.len() >= 40, "{probes}: {} items", items.len());
        let recall = kbf_json(&path, scenario, "retrieval", &[]).expect("kbf retrieval");
        assert_eq!(recall["gold_changed"], serde_json::json!([]), "{probes}");
        assert!(
            recall["n_krf"].as_u64() >= Some(16) && recall["n_kr"].as_u64() >= Some(16),
            "{probes}: {recall}"
        );
        let turns = recall["story_turns"].as_u64().expect("story length");
        assert!(turns >= 12, "{probes}: {turns} turns");
        let bands = recall["bands"].as_object().expect("bands");
        let asked: Vec<&str> = bands.keys().map(String::as_str).collect();
        assert_eq!(asked, ["early", "end", "middle"], "{probes}");
        let counted: u64 = bands
            .values()
            .map(|b| b["n_krf"].as_u64().unwrap_or(0) + b["n_kr"].as_u64().unwrap_or(0))
            .sum();
        assert_eq!(
            counted,
            items.len() as u64,
            "{probes}: every item in one band"
        );
        for (band, score) in bands {
            let n = score["n_krf"].as_u64().unwrap_or(0) + score["n_kr"].as_u64().unwrap_or(0);
            assert!(n >= 10, "{probes}: {n} items {band}");
        }
    }
}

/// `eval probes --paraphrase` asks the model to put each cloze in other words and
/// keeps a rewrite only when it does not give the answer away. A fixture model answers
/// the rewrite prompt: with a question in other words for most items, and with one
/// that names the answer for the items about "Valparaiso" (so those keep their cloze).
/// Everything but the question (ids, options, gold, positions) is the same as without
/// the flag, and each rewritten item keeps the cloze it came from.
#[test]
fn paraphrased_probes_are_rewritten_without_their_answer_and_keep_their_gold() {
    if !embedder_present() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = dir.path().join("paraphrase.json");
    let rules = serde_json::json!([
        {"when": ["The blank hides: Valparaiso"], "reply": "{\"question\": \"Did it sail from Valparaiso?\"}"},
        {"when": ["The blank hides:"], "reply": "{\"question\": \"What was left unsaid there?\"}"}
    ]);
    std::fs::write(&fixture, rules.to_string()).expect("fixture");
    let scenario = "tests/scenarios/tidewater/scenario.toml";
    let run = |paraphrase: bool| {
        let out = dir.path().join(format!("probes-{paraphrase}.jsonl"));
        let mut command = std::process::Command::new(EXE);
        command
            .args(["eval", "probes", scenario, "--scripted"])
            .arg(&fixture)
            .arg("--out")
            .arg(&out)
            .current_dir(repo());
        if paraphrase {
            command.arg("--paraphrase");
        }
        let made = command.output().expect("dramatis eval probes");
        let stderr = String::from_utf8_lossy(&made.stderr).into_owned();
        assert!(made.status.success(), "{stderr}");
        (probe_items(&out), stderr)
    };
    let (cloze, _) = run(false);
    let (rewritten, report) = run(true);
    assert_eq!(cloze.len(), rewritten.len());
    let names_the_answer = |i: &serde_json::Value| {
        i["truth"]
            .as_str()
            .and_then(|t| i["options"][t].as_str())
            .is_some_and(|answer| answer == "Valparaiso")
    };
    let kept = rewritten.iter().filter(|i| names_the_answer(i)).count();
    for (before, after) in cloze.iter().zip(&rewritten) {
        for key in ["id", "character", "options", "gold", "split", "at", "truth"] {
            assert_eq!(before[key], after[key], "{key} of {}", before["id"]);
        }
        if names_the_answer(after) {
            assert_eq!(after["question"], before["question"], "{}", after["id"]);
            assert!(after["cloze"].is_null());
        } else {
            assert_eq!(after["question"], "What was left unsaid there?");
            assert_eq!(after["cloze"], before["question"]);
        }
    }
    assert!(
        report.contains(&format!(
            "rewritten in other words: {} of {} items",
            rewritten.len() - kept,
            rewritten.len()
        )) && report.contains(&format!("{kept} kept their cloze form")),
        "{report}"
    );
}

/// The evidence gate, measured as the product: the same agents, asked through
/// `World.Ask` with the options, with the gate and the option search on (the default)
/// and off (the similarity rule that held before). A question in other words than the
/// memory that answers it ("In which engagement did the army surgeon get hurt?" against
/// Watson's memory of Maiwand) was refused and is now answered; an item a character
/// could not know, that a loosely related memory answered, is now refused; and on every
/// hand-written set the gate scores higher.
#[test]
fn the_evidence_gate_answers_in_other_words_and_refuses_on_loose_memories() {
    if !embedder_present() {
        return;
    }
    let before_flags = [
        "--evidence-gate",
        "off",
        "--option-search",
        "off",
        "--recall-by",
        "vectors",
    ];
    let scenario = "scenarios/study-in-scarlet/scenario.toml";
    let mut gains = Vec::new();
    for (probes, scenario, answered, refused) in [
        (
            "scenarios/study-in-scarlet/paraphrased.jsonl",
            scenario,
            Some(("para-watson-wound:watson@3", "A")),
            None,
        ),
        (
            "scenarios/study-in-scarlet/probes.jsonl",
            scenario,
            None,
            Some("holmes-consulting:lestrade"),
        ),
        (
            "scenarios/lamplighters-ledger/paraphrased.jsonl",
            "scenarios/lamplighters-ledger/scenario.toml",
            None,
            None,
        ),
    ] {
        let path = repo().join(probes);
        let before = kbf_json(&path, scenario, "retrieval", &before_flags).expect("before");
        let now = kbf_json(&path, scenario, "retrieval", &[]).expect("now");
        if let Some((id, gold)) = answered {
            assert_eq!(answer_of(&before, id), "E", "{probes}: refused before");
            assert_eq!(answer_of(&now, id), gold, "{probes}: answered now");
        }
        if let Some(id) = refused {
            assert_ne!(answer_of(&before, id), "E", "{probes}: answered before");
            assert_eq!(answer_of(&now, id), "E", "{probes}: refused now");
        }
        assert!(number(&now, "kr_acc") >= 0.8, "{probes}: {now}");
        gains.push((probes, number(&before, "kbf"), number(&now, "kbf")));
    }
    for (probes, before, now) in gains {
        assert!(now > before + 0.05, "{probes}: KBF {before:.2} -> {now:.2}");
    }
}

/// Words in other words: WordNet's synonyms (set-up fetches them) let the gate see that
/// "the books" a question names are "the ledgers" a fact names, so Ada, who knows the
/// inspector comes on Thursday to audit the ledgers, answers "On which weekday is the
/// revenue man due to go through the books?". With `--synonyms off` she refuses it, and
/// the synonyms cost no refusal anywhere in the set.
#[test]
fn synonyms_answer_a_question_that_names_the_subject_in_other_words() {
    if !embedder_present() {
        return;
    }
    let probes = repo().join("tests/scenarios/tidewater/paraphrased.jsonl");
    let scenario = "tests/scenarios/tidewater/scenario.toml";
    let id = "ada-inspect-day@1";
    let without = kbf_json(&probes, scenario, "retrieval", &["--synonyms", "off"]).expect("off");
    let with = kbf_json(&probes, scenario, "retrieval", &[]).expect("on");
    assert_eq!(answer_of(&without, id), "E", "{without}");
    assert_eq!(answer_of(&with, id), "D", "{with}");
    assert!(number(&with, "kr_acc") > 0.99, "{with}");
    assert!(
        number(&with, "kbf") > number(&without, "kbf"),
        "{without} / {with}"
    );
}

/// The retrieval answerer reads each agent's recall, not the scenario file: with the
/// semantic layer off in the agents, the facts each character was given are no longer
/// found, and KRf accuracy collapses. The hand-written items, asked at the end of the
/// story, get their gold re-derived there, and keep the margin over naive RAG.
#[test]
fn the_retrieval_answerer_measures_the_agents_shard() {
    if !embedder_present() {
        return;
    }
    let probes = repo().join("scenarios/study-in-scarlet/probes.jsonl");
    let scenario = "scenarios/study-in-scarlet/scenario.toml";
    let full = kbf_json(&probes, scenario, "retrieval", &[]).expect("full");
    let naive = kbf_json(&probes, scenario, "naive-rag", &[]).expect("naive");
    let without = kbf_json(
        &probes,
        scenario,
        "retrieval",
        &["--layers", "episodic,personality"],
    )
    .expect("without semantic");
    // Asked at the end of the story, four hand-written KR items have become knowable:
    // Watson and Lestrade have been to the rooms at Baker Street, Watson and Holmes to
    // the house at Lauriston Gardens.
    assert_eq!(
        (full["n_krf"].as_u64(), full["n_kr"].as_u64()),
        (Some(19), Some(25))
    );
    let changed: Vec<&str> = full["gold_changed"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(
        changed,
        [
            "holmes-rooms:watson",
            "holmes-rooms:lestrade",
            "lestrade-body:watson",
            "lestrade-body:holmes"
        ]
    );
    assert_eq!(full["characters"].as_object().map(|c| c.len()), Some(4));
    assert!(number(&full, "krf_acc") >= 0.6, "{full}");
    assert!(
        number(&full, "kr_acc") - number(&naive, "kr_acc") >= 0.3,
        "{full} vs {naive}"
    );
    assert!(
        number(&without, "krf_acc") <= number(&full, "krf_acc") - 0.4,
        "semantic off still finds the facts: {without} vs {full}"
    );
}

/// `serve`, then `create`, `worlds`, `play` and `watch --pov` against it, as a person
/// at a terminal would use them.
#[tokio::test]
async fn a_person_creates_a_world_and_plays_watson_from_the_terminal() {
    const CANARY: &str = "TERMINAL-CANARY-5150";
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) = serve_scripted(&data.path().to_string_lossy()).await;

    let (ok, id, err) = create_desk(&url).await;
    assert!(ok, "{err}");
    assert_eq!(id.trim(), "desk");
    assert!(err.contains("dramatis play desk <character>"), "{err}");
    let (ok, _, err) = dramatis(&["create", "no-such-story", "--server", &url]).await;
    assert!(!ok && err.contains("NotFound"), "{err}");
    let (ok, listed, _) = dramatis(&["worlds", "--server", &url]).await;
    assert!(ok);
    assert!(listed.starts_with("desk\tA Study in Scarlet"), "{listed}");
    assert!(listed.contains("scene 1 of 4"), "{listed}");

    // Play Watson: answer his first turn, then leave (his agent takes over).
    let mut player = tokio::process::Command::new(EXE)
        .args(["play", "desk", "Watson", "--server", &url, "--no-color"])
        .current_dir(repo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("play started");
    let mut stdin = player.stdin.take().expect("stdin");
    let mut prompts = BufReader::new(player.stderr.take().expect("stderr")).lines();
    let mut transcript = BufReader::new(player.stdout.take().expect("stdout")).lines();
    let mut seen = String::new();
    line_with(&mut prompts, "You are playing watson", &mut seen).await;
    let turn = line_with(&mut prompts, ">>> Your turn", &mut seen).await;
    assert!(turn.contains("at the Criterion Bar"), "{turn}");
    assert!(turn.contains("Stamford (@stamford)"), "{turn}");
    tokio::io::AsyncWriteExt::write_all(
        &mut stdin,
        format!("@stamford I need rooms I can afford. {CANARY}\n").as_bytes(),
    )
    .await
    .expect("typed");
    let spoken = line_with(&mut transcript, CANARY, &mut String::new()).await;
    assert!(spoken.contains("John Watson"), "{spoken}");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), player.wait())
        .await
        .expect("play ends when the person leaves")
        .expect("exit status");
    assert!(status.success());

    // Stamford heard it; Holmes, at Bart's, did not.
    let watch = |pov: &'static str| {
        let url = url.clone();
        async move {
            let (ok, text, err) = dramatis(&[
                "watch",
                "desk",
                "--pov",
                pov,
                "--no-follow",
                "--no-color",
                "--server",
                &url,
            ])
            .await;
            assert!(ok, "{err}");
            text
        }
    };
    assert!(watch("stamford").await.contains(CANARY));
    assert!(!watch("holmes").await.contains(CANARY));
    let _ = server.kill().await;
}

/// `dramatis create study-in-scarlet --id desk` on the service at `url`.
async fn create_desk(url: &str) -> (bool, String, String) {
    dramatis(&[
        "create",
        "study-in-scarlet",
        "--id",
        "desk",
        "--server",
        url,
    ])
    .await
}

/// The line count in a summary line of `dramatis advance` ("… · 5 lines (…) · …").
fn lines_in(summary: &str) -> u32 {
    let counted = summary.split(" · ").nth(1).expect("a line count");
    counted
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {summary:?}"))
}

/// `dramatis advance` drives a served world a few turns, to the scene's end, then to the
/// story's end, with one summary line per scene in order, and counts that add up.
#[tokio::test]
async fn advance_runs_a_served_world_and_prints_a_line_per_scene() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) = serve_scripted(&data.path().to_string_lossy()).await;
    let (ok, _, err) = create_desk(&url).await;
    assert!(ok, "{err}");

    let (ok, out, err) = dramatis(&["advance", "desk", "--turns", "2", "--server", &url]).await;
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with("scene 1/4 — the Criterion Bar · "),
        "{out}"
    );
    assert!(lines[0].ends_with("still going"), "{out}");
    assert_eq!(lines_in(lines[0]), 2);
    assert!(err.contains("next: scene 1 of 4 (2 turns in)"), "{err}");
    let mut spoken = 2;

    let (ok, out, err) = dramatis(&["advance", "desk", "--server", &url]).await;
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].starts_with("scene 1/4 at the Criterion Bar (continued) · "),
        "{out}"
    );
    assert!(!lines[0].ends_with("still going"), "{out}");
    spoken += lines_in(lines[0]);
    assert!(err.contains("next: scene 2 of 4\n"), "{err}");

    let (ok, out, err) = dramatis(&["advance", "desk", "--to-end", "--server", &url]).await;
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let heads: Vec<&str> = lines.iter().map(|l| &l[..9]).collect();
    assert_eq!(heads, ["scene 2/4", "scene 3/4", "scene 4/4"], "{out}");
    for line in &lines {
        assert!(
            lines_in(line) > 0 && !line.ends_with("still going"),
            "{line}"
        );
        spoken += lines_in(line);
    }
    let total: u32 = err
        .split("finished after ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no total in {err}"));
    assert_eq!(
        spoken, total,
        "every turn was a line of some scene's summary"
    );

    let (ok, out, err) = dramatis(&["advance", "desk", "--server", &url]).await;
    assert!(
        ok && out.is_empty() && err.contains("already finished"),
        "{out}{err}"
    );
    let (ok, _, err) = dramatis(&["advance", "nowhere", "--server", &url]).await;
    assert!(!ok && err.contains("NotFound"), "{err}");
    let (ok, _, err) = dramatis(&["advance", "desk", "--turns", "0", "--server", &url]).await;
    assert!(!ok && err.contains("--turns"), "{err}");
    let (ok, _, err) = dramatis(&[
        "advance", "desk", "--turns", "1", "--to-end", "--server", &url,
    ])
    .await;
    assert!(!ok && err.contains("cannot be used with"), "{err}");
    let _ = server.kill().await;
}

/// The director from the terminal: a whisper and a narration are logged, each tells who
/// perceived it, and a point of view shows a whisper to its character alone, marked.
#[tokio::test]
async fn the_director_intervenes_from_the_terminal() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) = serve_scripted(&data.path().to_string_lossy()).await;
    let (ok, _, err) = create_desk(&url).await;
    assert!(ok, "{err}");
    let (ok, _, err) = dramatis(&["advance", "desk", "--turns", "2", "--server", &url]).await;
    assert!(ok, "{err}");

    let canary = "DIRECTOR-CANARY-6604";
    let whisper = format!("You feel watched. {canary}");
    let (ok, out, err) = dramatis(&[
        "intervene",
        "desk",
        "--whisper",
        "John Watson",
        &whisper,
        "--server",
        &url,
    ])
    .await;
    assert!(ok, "{err}");
    let whispered: u64 = out
        .strip_prefix("event ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no event number in {out}"));
    assert!(out.trim_end().ends_with("perceived by watson"), "{out}");
    let (ok, out, err) = dramatis(&[
        "intervene",
        "desk",
        "--narrate",
        "A glass shatters.",
        "--at",
        "the Criterion Bar",
        "--server",
        &url,
    ])
    .await;
    assert!(ok, "{err}");
    assert_eq!(
        out.trim_end(),
        format!("event {} · perceived by stamford, watson", whispered + 1)
    );

    let pov = |who: &'static str| {
        let url = url.clone();
        async move {
            let (ok, out, err) = dramatis(&[
                "watch",
                "desk",
                "--pov",
                who,
                "--no-follow",
                "--no-color",
                "--server",
                &url,
            ])
            .await;
            assert!(ok, "{err}");
            out
        }
    };
    let watson = pov("watson").await;
    let line = watson
        .lines()
        .find(|l| l.contains(canary))
        .unwrap_or_else(|| panic!("Watson's story lacks the whisper: {watson}"));
    assert!(line.starts_with("[director → "), "{line}");
    assert!(
        !pov("stamford").await.contains(canary),
        "Stamford never hears it"
    );

    let (ok, _, err) = dramatis(&["intervene", "desk", "--reveal", "x", "--server", &url]).await;
    assert!(!ok && err.contains("--to"), "{err}");
    let (ok, _, err) = dramatis(&[
        "intervene",
        "desk",
        "--whisper",
        "moriarty",
        "hello",
        "--server",
        &url,
    ])
    .await;
    assert!(!ok && err.contains("has no character"), "{err}");
    // The server may have stopped already; the test is over either way.
    let _ = server.kill().await;
}

/// The echo guard, and a transcript kept in a file. Every character's model says one
/// line, so every line after the first echoes it: each is asked again (Stamford's
/// retry gives a new line, which stands; the others' retries echo too and fall back
/// in character), the audit notes each decision, and the summary counts no echo. Piped
/// into a file, each line is printed once: the words streamed from a first attempt are
/// not printed beside the settled line.
#[tokio::test]
async fn an_echoing_line_is_asked_again_then_replaced_and_a_piped_run_prints_each_line_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let echo = "The loyal and devoted Sherlock Holmes is at the end of a long corridor.";
    let fresh = "Stamford looks at the clock and asks after the rent.";
    let speech = |text: &str| {
        format!(r#"{{"kind":"speech","target":"","text":"{text}","thought":"","destination":""}}"#)
    };
    let rules = serde_json::json!([
        {"when": ["Character: Stamford", "repeats something already said"], "reply": speech(fresh)},
        {"when": ["Character: "], "reply": speech(echo)},
    ]);
    let fixture = dir.path().join("echo.json");
    std::fs::write(&fixture, rules.to_string()).expect("fixture");
    let audit = dir.path().join("audit");
    let (ok, out, err) = dramatis(&[
        "run",
        "study-in-scarlet",
        "--scripted",
        &fixture.to_string_lossy(),
        "--audit-dir",
        &audit.to_string_lossy(),
    ])
    .await;
    assert!(ok, "{err}");
    // Once a scene, by the first to speak who had not heard it: Stamford, then Holmes
    // and Lestrade, each in a scene of his own. In the last scene both have heard it.
    let said: Vec<&str> = out.lines().filter(|l| l.ends_with(echo)).collect();
    assert_eq!(
        said,
        [
            format!("Stamford: {echo}"),
            format!("Sherlock Holmes: {echo}"),
            format!("Inspector Lestrade: {echo}"),
        ],
        "{out}"
    );
    assert_eq!(out.matches(fresh).count(), 1, "{out}");
    assert!(
        out.contains("Watson pauses, weighing what to say."),
        "{out}"
    );
    // Holmes's and Lestrade's lines repeat Stamford's for a reader, though neither of
    // them had heard it: the guard knows only what its character perceived.
    assert!(out.contains("· 2 echoes (50.0 per 100 lines)"), "{out}");
    let mut notes = Vec::new();
    for file in std::fs::read_dir(&audit).expect("audit dir") {
        let text = std::fs::read_to_string(file.expect("entry").path()).expect("audit file");
        for line in text.lines() {
            let record: serde_json::Value = serde_json::from_str(line).expect("json line");
            for note in record["guard"].as_array().into_iter().flatten() {
                notes.push(note.as_str().unwrap_or_default().to_owned());
            }
        }
    }
    let asked = notes.iter().filter(|n| n.ends_with("asked again")).count();
    let replaced = notes
        .iter()
        .filter(|n| n.ends_with("replaced by the in-character fallback"))
        .count();
    let stood = notes
        .iter()
        .filter(|n| n.contains("the new line stands"))
        .count();
    assert!(asked >= 2 && stood == 1, "{notes:#?}");
    assert_eq!(
        asked,
        replaced + stood,
        "every retry is decided: {notes:#?}"
    );
}

/// A character new to the story from the terminal: `--bring-in` with `--profile`
/// enters it where `--at` names (a place's name, as a person gives it), those there
/// see what it looks like, and a profile without a name is refused before the call.
#[tokio::test]
async fn the_director_brings_in_a_newcomer_from_the_terminal() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) = serve_scripted(&data.path().to_string_lossy()).await;
    let (ok, _, err) = dramatis(&[
        "create",
        "lamplighters-ledger",
        "--id",
        "lanes",
        "--server",
        &url,
    ])
    .await;
    assert!(ok, "{err}");
    let (ok, _, err) = dramatis(&["advance", "lanes", "--turns", "2", "--server", &url]).await;
    assert!(ok, "{err}");
    let newcomer = |extra: &'static [&'static str]| {
        let url = url.clone();
        async move {
            let mut args = vec![
                "intervene",
                "lanes",
                "--bring-in",
                "agnes",
                "--at",
                "Gasworks Lane",
                "--profile",
                "A night-soil carter who hears everything said on the lanes.",
                "--known-as",
                "a carter with a lantern on her cart",
                "--server",
                &url,
            ];
            args.extend_from_slice(extra);
            dramatis(&args).await
        }
    };
    let (ok, _, err) = newcomer(&[]).await;
    assert!(!ok && err.contains("--name"), "{err}");
    let (ok, out, err) = newcomer(&["--name", "Agnes Pell", "--alias", "Aggie"]).await;
    assert!(ok, "{err}");
    let perceived = out
        .trim_end()
        .rsplit_once("perceived by ")
        .map(|(_, who)| who.split(", ").collect::<Vec<_>>())
        .unwrap_or_else(|| panic!("no perceivers in {out}"));
    assert!(
        perceived.contains(&"agnes") && perceived.contains(&"ada"),
        "{out}"
    );
    let (ok, out, err) = dramatis(&[
        "watch",
        "lanes",
        "--pov",
        "ada",
        "--no-follow",
        "--no-color",
        "--server",
        &url,
    ])
    .await;
    assert!(ok, "{err}");
    assert!(
        out.contains("A carter with a lantern on her cart arrives at Gasworks Lane."),
        "{out}"
    );
    assert!(!out.contains("Agnes") && !out.contains("Aggie"), "{out}");
    // The server may have stopped already; the test is over either way.
    let _ = server.kill().await;
}

/// The ablation table over two module sets, two layer rows and a short long run: with
/// no module the planted facts are not recalled at all; with every module they all are,
/// and BOOKMARKS reports its hits and the tokens syncing saved.
#[tokio::test]
async fn ablate_compares_module_sets_on_planted_facts() {
    let (ok, out, err) = dramatis(&[
        "eval",
        "ablate",
        "study-in-scarlet",
        "scenarios/study-in-scarlet/probes.jsonl",
        "--sets",
        "none;all",
        "--without-layers",
        "semantic",
        "--rounds",
        "48",
        "--json",
    ])
    .await;
    assert!(ok, "{err}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).expect("json rows");
    assert_eq!(rows.len(), 4);
    // The layer rows: ReverieMem alone with every layer, then without the semantic
    // layer, whose visible facts are what KRf items ask about.
    assert_eq!(rows[2]["modules"], "reverie (all layers)");
    assert_eq!(rows[3]["modules"], "reverie without semantic");
    assert!(
        rows[3]["krf_acc"].as_f64() < rows[2]["krf_acc"].as_f64().map(|a| a - 0.4),
        "{} vs {}",
        rows[3],
        rows[2]
    );
    let (none, all) = (&rows[0], &rows[1]);
    assert_eq!(none["modules"], "none");
    assert_eq!(all["modules"], "reverie,dualmem,moom,bookmarks");
    assert_eq!(none["long_run_lines"], 48);
    assert_eq!(none["recall_at_10"], 0.0, "{none}");
    assert_eq!(none["probe_qa"], 0.0);
    assert_eq!(all["recall_at_10"], 1.0, "{all}");
    assert_eq!(all["probe_qa"], 1.0);
    // With no module, only the profiles' starting memories and knowledge are kept
    // (unread); every module keeps its stores on top.
    let starting = none["items_kept"].as_u64().expect("count");
    assert!(
        all["items_kept"].as_u64().expect("count") > starting + 40,
        "{none} {all}"
    );
    let none_stores: Vec<&String> = none["items_by_store"]
        .as_object()
        .expect("map")
        .keys()
        .collect();
    assert_eq!(none_stores, ["episodic", "personality", "semantic"]);
    for store in [
        "episodic",
        "semantic",
        "dualmem.fact",
        "moom.plot-1",
        "bookmarks.bookmark",
    ] {
        assert!(
            all["items_by_store"][store].as_u64().unwrap_or(0) > 0,
            "{store}: {all}"
        );
    }
    assert!(
        all["bookmark_hit_rate"]
            .as_f64()
            .is_some_and(|r| r > 0.0 && r <= 1.0),
        "{all}"
    );
    assert!(
        all["bookmark_tokens_saved"]
            .as_f64()
            .is_some_and(|t| t > 0.0),
        "{all}"
    );
    assert!(none["bookmark_hit_rate"].is_null());
    // The scripted model and digest writes: one call per turn, modules on or off.
    assert_eq!(none["calls_per_turn"], 1.0);
    assert_eq!(all["calls_per_turn"], 1.0);
}

/// The README's card import: Seraphina's PNG card and the Eldoria World Info make an
/// open story that plays on the scripted model; a file that is no card is refused with
/// one error that names it, and nothing is written.
#[tokio::test]
async fn a_card_and_a_lorebook_import_and_play_and_a_bad_card_is_named() {
    let fixtures = repo().join("../shared/fixtures");
    if !fixtures.join("cards").is_dir() {
        eprintln!("SKIPPED: {} is absent", fixtures.display());
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("seraphina");
    let (ok, said, err) = dramatis(&[
        "import",
        "card",
        &fixtures
            .join("cards/default_Seraphina.png")
            .to_string_lossy(),
        "--lorebook",
        &fixtures.join("lorebooks/Eldoria.json").to_string_lossy(),
        "--out",
        &out.to_string_lossy(),
    ])
    .await;
    assert!(ok, "{err}");
    assert!(said.contains("1 character(s), 8 fact(s)"), "{said}");
    assert_eq!(
        err.matches("note: lorebook fields kept").count(),
        1,
        "the unused fields are named once: {err}"
    );
    let (ok, transcript, err) = dramatis(&[
        "sandbox",
        &out.to_string_lossy(),
        "--scripted",
        "builtin",
        "--shared-agent",
    ])
    .await;
    assert!(ok, "{err}");
    assert!(transcript.contains("Seraphina:"), "{transcript}");

    let not_a_card = dir.path().join("plain.png");
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&[0, 0, 0, 0]);
    png.extend_from_slice(b"IEND");
    png.extend_from_slice(&crc32fast::hash(b"IEND").to_be_bytes());
    std::fs::write(&not_a_card, &png).expect("written");
    let refused = dir.path().join("refused");
    let (ok, _, err) = dramatis(&[
        "import",
        "card",
        &not_a_card.to_string_lossy(),
        "--out",
        &refused.to_string_lossy(),
    ])
    .await;
    assert!(!ok);
    assert!(
        err.contains("plain.png") && err.contains("no character card"),
        "{err}"
    );
    assert!(!refused.exists(), "nothing written");
}

/// Every complete BookWorld preset in the shared fixtures imports into a scenario folder
/// that runs on the scripted model: the script as a scene, the others as open stories.
/// Chinese names reach the transcript intact.
#[tokio::test]
async fn bookworld_presets_import_and_run() {
    let presets = repo().join("../shared/fixtures/bookworld/experiment_presets");
    if !presets.is_dir() {
        eprintln!("SKIPPED: {} is absent", presets.display());
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for (preset, command, expect) in [
        ("example_script", "run", "Lacia·Eldridge:"),
        ("example_free", "sandbox", "Trek·Vemil:"),
        ("experiment_alice", "sandbox", "Alice"),
        ("experiment_red_mansions", "sandbox", "林黛玉"),
    ] {
        let out = dir.path().join(preset);
        let (ok, said, err) = dramatis(&[
            "import",
            "bookworld",
            &presets.join(format!("{preset}.json")).to_string_lossy(),
            "--out",
            &out.to_string_lossy(),
        ])
        .await;
        assert!(ok, "{preset}: {err}");
        assert!(said.starts_with("wrote "), "{said}");
        // The folder is the scenario: `run FOLDER` reads its scenario.toml.
        let (ok, transcript, err) = dramatis(&[
            command,
            &out.to_string_lossy(),
            "--scripted",
            "builtin",
            "--shared-agent",
        ])
        .await;
        assert!(ok, "{preset}: {err}");
        assert!(
            transcript.contains(expect),
            "{preset}: no {expect:?} in {transcript}"
        );
    }
}
