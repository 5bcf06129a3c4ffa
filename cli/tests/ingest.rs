//! `dramatis ingest` as a user runs it: the test book with the scripted model answering
//! every stage (accepted, rejected and reported), stopped after stage 2 and resumed
//! without repeating a call, the folder run as a world, probed and scored; and bad
//! input refused with a clear message.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

mod common;

use std::path::{Path, PathBuf};

use common::{dramatis, repo};
use serde_json::Value;

fn book() -> PathBuf {
    repo().join("ingest/tests/books/wrayhaven")
}

/// The scripted model's answers for each stage (`scripted.json` beside the book).
/// Scenes: "the schoolhouse", usable only where the first paragraph names it. Graph: one
/// relation, usable only where the scene names both ends. Summaries, annotations and
/// pattern lines: usable everywhere.
fn fixture() -> PathBuf {
    book().join("scripted.json")
}

async fn ingest(out: &Path, extra: &[&str]) -> Value {
    let book_file = book().join("book.txt");
    let characters = book().join("characters.txt");
    let mut args = vec![
        "ingest",
        book_file.to_str().expect("test data"),
        "--characters",
        characters.to_str().expect("test data"),
        "--out",
        out.to_str().expect("test data"),
        "--json",
    ];
    args.extend_from_slice(extra);
    let (ok, said, err) = dramatis(&args).await;
    assert!(ok, "ingest failed: {err}");
    assert!(!err.contains("panicked"), "{err}");
    serde_json::from_str(&said).unwrap_or_else(|e| panic!("{e}: {said}"))
}

fn stage<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["stages"]
        .as_array()
        .expect("test data")
        .iter()
        .find(|s| s[0] == name)
        .map(|s| &s[1])
        .unwrap_or_else(|| panic!("no stage {name} in {report}"))
}

fn calls(report: &Value, name: &str) -> u64 {
    stage(report, name)["calls"].as_u64().expect("test data")
}

#[tokio::test]
async fn the_scripted_model_refines_every_stage_and_an_interrupted_ingest_repeats_no_call() {
    let dir = tempfile::tempdir().expect("test data");
    let out = dir.path().join("wrayhaven");
    let fixture = fixture();
    let scripted = ["--scripted", fixture.to_str().expect("test data")];

    // Stopped after stage 2: only scenes and episodic ran.
    let mut first = scripted.to_vec();
    first.extend(["--stop-after", "episodic"]);
    let stopped = ingest(&out, &first).await;
    assert_eq!(stopped["stopped_after"], "episodic");
    assert!(stopped["scenario"].is_null());
    let scene_calls = calls(&stopped, "scenes");
    let episodic_calls = calls(&stopped, "episodic");
    // Eight scenes; the six whose first paragraph has no schoolhouse are retried once;
    // the three holding a line no rule gives a speaker ask once more, about that line
    // ("I have not said yes, Kit.", after "He … added,", is Tobias's by the rules).
    assert_eq!(scene_calls, 2 + 6 * 2 + 3);
    assert_eq!(
        episodic_calls, 18,
        "one summary per character present per scene"
    );
    assert_eq!(stopped["stages"].as_array().expect("test data").len(), 2);

    // Resumed: stages 1 and 2 come from their caches; 3 and 4 call the model.
    let resumed = ingest(&out, &scripted).await;
    assert_eq!(calls(&resumed, "scenes"), 0);
    assert_eq!(calls(&resumed, "episodic"), 0);
    assert_eq!(stage(&resumed, "scenes")["from_cache"], true);
    assert_eq!(stage(&resumed, "episodic")["from_cache"], true);
    assert!(calls(&resumed, "graph") >= 8);
    assert!(calls(&resumed, "personality") > 100, "{resumed}");

    // Refinements the checks refused are reported, chunk by chunk, never dropped.
    let rejections = resumed["rejections"].as_array().expect("test data");
    let rejected_scenes: Vec<&str> = rejections
        .iter()
        .filter(|r| r["stage"] == "scenes")
        .map(|r| r["chunk"].as_str().expect("test data"))
        .collect();
    assert_eq!(
        rejected_scenes,
        [
            "scene 1", "scene 3", "scene 4", "scene 5", "scene 6", "scene 8"
        ]
    );
    assert!(
        rejections
            .iter()
            .filter(|r| r["stage"] == "graph")
            .all(|r| r["reason"]
                .as_str()
                .expect("test data")
                .contains("is not in the scene")),
        "{rejections:?}"
    );
    let summaries: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(out.join("layers/episodic.json")).expect("test data"),
    )
    .expect("test data");
    assert!(summaries.iter().all(|s| s["by"] == "model"));
    let scenes: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(out.join("layers/scenes.json")).expect("test data"),
    )
    .expect("test data");
    let places: Vec<&str> = scenes
        .iter()
        .map(|s| s["location"].as_str().expect("test data"))
        .collect();
    assert_eq!(places[1], "the schoolhouse");
    assert_eq!(
        places[0], "Wrayhaven quay",
        "a rejected refinement keeps the text's place"
    );
    let graph: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("layers/graph.json")).expect("test data"),
    )
    .expect("test data");
    let induced: Vec<&Value> = graph["facts"]
        .as_array()
        .expect("test data")
        .iter()
        .filter(|f| f["source"] == "model")
        .collect();
    assert!(!induced.is_empty());
    for f in &induced {
        assert_eq!(f["text"], "Gull Point looks over the Shards.");
    }

    // A rerun with the same inputs makes no model call at all.
    let again = ingest(&out, &scripted).await;
    for name in ["scenes", "episodic", "graph", "personality", "identity"] {
        assert_eq!(calls(&again, name), 0, "{name}");
    }

    // The folder runs as a world, and generated probes score on it.
    let scenario = out.join("scenario.toml");
    let (ok, transcript, err) = dramatis(&[
        "run",
        scenario.to_str().expect("test data"),
        "--scripted",
        "builtin",
        "--shared-agent",
    ])
    .await;
    assert!(ok, "{err}");
    assert!(transcript.contains("Scene 1"), "{transcript}");
    assert!(transcript.contains("Maren Hale:"), "{transcript}");
    let probes = dir.path().join("probes.jsonl");
    let (ok, said, err) = dramatis(&[
        "eval",
        "probes",
        scenario.to_str().expect("test data"),
        "--out",
        probes.to_str().expect("test data"),
    ])
    .await;
    assert!(ok, "{err}");
    let report = format!("{said}{err}");
    assert!(report.contains("items from"), "{report}");
    let (ok, said, err) = dramatis(&[
        "eval",
        "kbf",
        probes.to_str().expect("test data"),
        "--scenario",
        scenario.to_str().expect("test data"),
        "--answerer",
        "retrieval",
        "--json",
    ])
    .await;
    assert!(ok, "{err}");
    let kbf: Value = serde_json::from_str(&said).expect("test data");
    let overall = kbf["kbf"].as_f64().expect("test data");
    assert!(overall >= 0.5, "KBF {overall}: {said}");
}

/// The state a `kill -9` leaves 20 calls into the personality stage: the first three
/// stages' caches, and the call log up to there with its last line torn. The rerun
/// finishes, answers those 20 calls from the log and makes only the rest.
#[tokio::test]
async fn an_ingest_killed_inside_a_stage_resumes_from_its_call_log() {
    let dir = tempfile::tempdir().expect("test data");
    let fixture = fixture();
    let scripted = ["--scripted", fixture.to_str().expect("test data")];
    let whole = dir.path().join("whole");
    let full = ingest(&whole, &scripted).await;
    let before: u64 = ["scenes", "episodic", "graph"]
        .iter()
        .map(|s| calls(&full, s))
        .sum();
    let personality = calls(&full, "personality");
    assert!(personality > 40, "{full}");

    let killed = dir.path().join("killed");
    let cache = killed.join(".ingest");
    std::fs::create_dir_all(&cache).expect("test data");
    for entry in std::fs::read_dir(whole.join(".ingest"))
        .expect("the cache")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if ["scenes-", "episodic-", "graph-"]
            .iter()
            .any(|p| name.starts_with(p))
        {
            std::fs::copy(entry.path(), cache.join(&name)).expect("copy");
        }
    }
    let log = std::fs::read_to_string(whole.join(".ingest/calls.jsonl")).expect("call log");
    let lines: Vec<&str> = log.lines().collect();
    let kept = usize::try_from(before).expect("small") + 20;
    let torn = &lines[kept][..lines[kept].len() / 2];
    std::fs::write(
        cache.join("calls.jsonl"),
        format!("{}\n{torn}", lines[..kept].join("\n")),
    )
    .expect("test data");

    let resumed = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        ingest(&killed, &scripted),
    )
    .await
    .expect("the resumed ingest finished");
    assert_eq!(stage(&resumed, "graph")["from_cache"], true);
    assert_eq!(stage(&resumed, "personality")["cached_calls"], 20);
    assert_eq!(calls(&resumed, "personality"), personality - 20);
    assert_eq!(
        resumed["layers"], full["layers"],
        "the same layers as the uninterrupted run"
    );
}

#[tokio::test]
async fn bad_books_and_lists_get_clear_errors() {
    let dir = tempfile::tempdir().expect("test data");
    let characters = book().join("characters.txt");
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "  \n\n").expect("test data");
    let binary = dir.path().join("binary.txt");
    std::fs::write(&binary, [0x7f, b'E', b'L', b'F', 0, 1, 2, 3]).expect("test data");
    let latin1 = dir.path().join("latin1.txt");
    std::fs::write(&latin1, b"CHAPTER ONE\n\nCaf\xe9 au lait.\n").expect("test data");
    let huge = dir.path().join("huge.txt");
    let paragraph = "The tide came in over the shingle and went out again. ".repeat(40) + "\n\n";
    std::fs::write(
        &huge,
        paragraph.repeat(20 * 1024 * 1024 / paragraph.len() + 1),
    )
    .expect("test data");
    let nobody = dir.path().join("nobody.txt");
    std::fs::write(
        &nobody,
        "Ebenezer Scrooge | Scrooge\nJacob Marley | Marley\n",
    )
    .expect("test data");
    // A contents list and nothing under it.
    let contents = dir.path().join("contents.txt");
    std::fs::write(
        &contents,
        "THE BOOK\n\nCONTENTS\n\nCHAPTER I. The Crossing\nCHAPTER II. The Lighthouse\n\
         CHAPTER III. The Return\n",
    )
    .expect("test data");
    let malformed = dir.path().join("malformed.txt");
    std::fs::write(&malformed, "Maren Hale | Maren\n | the widow\n").expect("test data");
    // The same book saved as UTF-16 (with its byte-order mark), and in Windows-1252.
    let utf16 = dir.path().join("utf16.txt");
    let mut bytes = vec![0xff, 0xfe];
    bytes.extend(
        "CHAPTER ONE\n\nThe tide came in.\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes),
    );
    std::fs::write(&utf16, bytes).expect("test data");
    let cp1252 = dir.path().join("cp1252.txt");
    std::fs::write(&cp1252, b"CHAPTER ONE\n\n\x93Come in,\x94 said Maren.\n").expect("test data");
    // 3,000 words in wrapped lines with no blank line, indent or long line between
    // paragraphs.
    let unbroken = dir.path().join("unbroken.txt");
    std::fs::write(
        &unbroken,
        "The tide came in over the shingle and went out again.\n".repeat(300),
    )
    .expect("test data");
    // One person on two lines: a name that is another line's alias.
    let twice = dir.path().join("twice.txt");
    std::fs::write(&twice, "Maren Hale | Maren, the widow\nMaren | Mrs Hale\n").expect("test data");
    let book_file = book().join("book.txt");
    let out = dir.path().join("out");
    for (book_path, list, expect) in [
        (&empty, &characters, "is empty"),
        (
            &binary,
            &characters,
            "is not a text file (a zero byte at offset 4)",
        ),
        (
            &latin1,
            &characters,
            "is not UTF-8 text (invalid bytes at offset 16)",
        ),
        (&huge, &characters, "ingest reads books up to 16 MB"),
        (
            &contents,
            &characters,
            "no story text: the book's chapters hold",
        ),
        (
            &book_file,
            &nobody,
            "none of the 2 characters of the list is on stage",
        ),
        (
            &book_file,
            &malformed,
            "malformed.txt: line 2: expected `Canonical Name | alias",
        ),
        (
            &utf16,
            &characters,
            "is UTF-16 (little-endian) text; ingest reads UTF-8. Convert it first: iconv -f UTF-16",
        ),
        (
            &cp1252,
            &characters,
            "it looks like Windows-1252 (Western European). Convert it first: iconv -f WINDOWS-1252",
        ),
        (
            &unbroken,
            &characters,
            "no paragraphs: 3300 words in 1 blocks",
        ),
        (
            &book_file,
            &twice,
            "twice.txt: line 2: `Maren` is already on line 1 (`Maren Hale`)",
        ),
    ] {
        let (ok, _, err) = ingest_no_model(book_path, list, &out).await;
        assert!(!ok, "{} was accepted", book_path.display());
        assert!(err.contains(expect), "{}: {err}", book_path.display());
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[tokio::test]
async fn a_book_without_quotes_and_a_list_naming_a_stranger_ingest_with_warnings() {
    let dir = tempfile::tempdir().expect("test data");
    let text = std::fs::read_to_string(book().join("book.txt")).expect("test book");
    let unquoted = dir.path().join("unquoted.txt");
    std::fs::write(&unquoted, text.replace(['"', '“', '”'], "")).expect("test data");
    let list = dir.path().join("characters.txt");
    let mut characters = std::fs::read_to_string(book().join("characters.txt")).expect("list");
    characters.push_str("Ebenezer Scrooge | Scrooge\n");
    std::fs::write(&list, characters).expect("test data");
    let book_file = book().join("book.txt");
    for (book_path, warning, other) in [
        (
            unquoted.as_path(),
            "warning: no quoted speech in the book",
            "warning: the book never names ebenezer-scrooge",
        ),
        (
            book_file.as_path(),
            "warning: the book never names ebenezer-scrooge (by name or alias)",
            "warning: no quoted speech",
        ),
    ] {
        let out = dir.path().join("out");
        let (ok, stdout, err) = ingest_no_model(book_path, &list, &out).await;
        assert!(ok, "{err}");
        assert!(err.contains(warning), "{err}");
        assert!(stdout.contains("wrote"), "{stdout}");
        // The stranger is in both runs; only the unquoted book lacks speech.
        if book_path.ends_with("book.txt") {
            assert!(!err.contains(other), "{err}");
        } else {
            assert!(err.contains(other), "{err}");
        }
        std::fs::remove_dir_all(&out).expect("clean");
    }
}

/// `dramatis ingest BOOK --characters LIST --out OUT --no-model`.
async fn ingest_no_model(book: &Path, list: &Path, out: &Path) -> (bool, String, String) {
    dramatis(&[
        "ingest",
        book.to_str().expect("test data"),
        "--characters",
        list.to_str().expect("test data"),
        "--out",
        out.to_str().expect("test data"),
        "--no-model",
    ])
    .await
}
