//! A crowd on real agent processes: `bench cast` with everyone at one place, bounded
//! attention against none in one run, and a case that fails reported while the others
//! are still measured and printed.

mod common;
use common::dramatis;

#[tokio::test]
async fn a_crowd_turn_costs_the_tokens_of_a_small_room_and_a_failed_case_does_not_hide_the_rest() {
    let (ok, out, err) = dramatis(&[
        "bench",
        "cast",
        "--characters",
        "40",
        "--layouts",
        "pool",
        "--agent-pool",
        "1",
        "--one-place",
        // 2 is below the least attention a story may set: that world is refused.
        "--attention",
        "2,0,12",
        "--json",
    ])
    .await;
    assert!(ok, "{err}");
    let json: serde_json::Value =
        serde_json::from_str(out.lines().last().expect("json")).expect("json line");
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3, "{out}");
    let skipped = runs[0]["skipped"].as_str().unwrap_or_default();
    assert!(
        skipped.starts_with("failed") && skipped.contains("attention"),
        "{skipped}"
    );
    let tokens = |run: &serde_json::Value| run["prompt_tokens_per_turn"].as_f64().unwrap_or(0.0);
    let (all, bounded) = (tokens(&runs[1]), tokens(&runs[2]));
    assert!(runs[1]["lines"].as_u64() > Some(0) && runs[2]["lines"].as_u64() > Some(0));
    // Thirty-nine others listed in every turn against twelve and a count.
    assert!(all > bounded * 1.5, "all {all}, bounded {bounded}");
    // What the agent holds alone is part of its resident memory, not all of it: the
    // executable's and ONNX Runtime's code pages are shared with every other process.
    for run in &runs[1..] {
        let own = run["idle_private_mb_per_character"].as_f64().unwrap_or(0.0);
        let resident = run["idle_rss_mb_per_character"].as_f64().unwrap_or(0.0);
        assert!(
            own > 0.0 && own < resident,
            "own {own}, resident {resident}"
        );
    }
    let table: Vec<&str> = out.lines().filter(|l| l.starts_with("pool")).collect();
    assert_eq!(table.len(), 3, "{out}");
    assert!(table[0].contains("skipped: failed"), "{}", table[0]);
}
