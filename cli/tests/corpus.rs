//! `dramatis eval corpus` on a slice of the corpus: two books of `../shared/books/`, the
//! first items of each one's file in `eval/corpus/`, so the command that makes the
//! README's table keeps working. The whole table is `dramatis eval corpus` on all six.

mod common;

use common::{dramatis, repo};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_books_are_ingested_and_their_first_items_asked_by_every_answerer() {
    let books = repo().join("../shared/books");
    let work = tempfile::tempdir().expect("work folder");
    let scarlet = books.join("a-study-in-scarlet.txt");
    let island = books.join("treasure-island.txt");
    let items = repo().join("eval/corpus");
    let answers = repo().join("eval/answers");
    let argv = [
        "eval",
        "corpus",
        scarlet.to_str().expect("path"),
        island.to_str().expect("path"),
        "--items",
        items.to_str().expect("path"),
        "--answers",
        answers.to_str().expect("path"),
        "--work",
        work.path().to_str().expect("path"),
        "--limit",
        "3",
        "--json",
    ];
    let (ok, said, err) = dramatis(&argv).await;
    assert!(ok, "eval corpus failed: {err}");
    let table: Value = serde_json::from_str(&said).expect("one JSON object");
    let rows = table["books"].as_array().expect("books");
    let names: Vec<&str> = rows.iter().filter_map(|b| b["book"].as_str()).collect();
    assert_eq!(names, ["a-study-in-scarlet", "treasure-island"], "in order");
    for row in rows {
        assert_eq!(row["items"], 3, "{row}");
        // The ingest (here from nothing) is timed apart from the asking.
        let ingest = row["ingest_seconds"].as_f64().unwrap_or(0.0);
        assert!(ingest > 0.0, "ingest timed: {row}");
        for answerer in [
            "retrieval",
            "no-episodic",
            "no-semantic",
            "naive-rag",
            "direct",
        ] {
            let s = &row["scores"][answerer];
            let n = s["n_krf"].as_u64().expect("n_krf") + s["n_kr"].as_u64().expect("n_kr");
            assert_eq!(n, 3, "{answerer} scored every item: {row}");
            let kbf = s["kbf"].as_f64().expect("kbf");
            assert!((0.0..=1.0).contains(&kbf), "{answerer}: {kbf}");
        }
    }
    // A second run reuses each book's ingest.
    assert!(work.path().join("a-study-in-scarlet/.ingest").is_dir());
    assert!(
        work.path().join("treasure-island/cuts").is_dir(),
        "cut scenarios kept"
    );
    assert!(table["mean"]["retrieval"]["kbf"].is_number());
}
