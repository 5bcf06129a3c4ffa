use super::*;
use crate::modules::LineKind;
use crate::modules::test_mind::TestMind;
use persona::rule_snapshot;
use serde_json::json;

fn line(position: u64, speaker: &str, text: &str) -> Line {
    Line {
        position,
        scene_id: "s1".into(),
        kind: LineKind::Speech,
        speaker: speaker.into(),
        speaker_name: speaker.to_uppercase(),
        target: String::new(),
        target_name: String::new(),
        text: text.into(),
        location: "lab".into(),
    }
}

async fn feed(moom: &mut Moom, mind: &TestMind, storyline: &mut Vec<Line>, count: usize) {
    for _ in 0..count {
        let position = storyline.len() as u64 + 1;
        storyline.push(line(
            position,
            "holmes",
            &format!("Line number {position} about the case."),
        ));
        moom.observe(mind, storyline).await;
    }
}

#[tokio::test]
async fn levels_appear_exactly_at_the_thresholds() {
    let mind = TestMind::default();
    let config = MoomConfig {
        forgetting: ForgettingParams {
            capacity: 1000,
            ..ForgettingParams::default()
        },
        ..MoomConfig::default()
    };
    let mut moom = Moom::new("watson", config);
    let mut storyline = Vec::new();
    feed(&mut moom, &mind, &mut storyline, 5).await;
    assert_eq!(moom.made(), [0, 0, 0], "5 lines: no unit yet");
    feed(&mut moom, &mind, &mut storyline, 1).await;
    assert_eq!(moom.made(), [1, 0, 0], "the 6th line closes unit 1");
    assert_eq!(moom.level(1)[0].span, (1, 6));
    feed(&mut moom, &mind, &mut storyline, 23).await;
    assert_eq!(moom.made(), [4, 0, 0], "29 lines");
    feed(&mut moom, &mind, &mut storyline, 1).await;
    assert_eq!(moom.made(), [5, 1, 0], "30 lines: the first summary");
    assert_eq!(moom.level(2)[0].span, (1, 30));
    feed(&mut moom, &mind, &mut storyline, 119).await;
    assert_eq!(moom.made(), [24, 4, 0], "149 lines");
    feed(&mut moom, &mind, &mut storyline, 1).await;
    assert_eq!(
        moom.made(),
        [25, 5, 1],
        "150 lines: the first third-level summary"
    );
    assert_eq!(moom.level(3)[0].span, (1, 150));
    // No model: every summary is the extractive fallback, one attempt each.
    let asked = mind.asked();
    assert_eq!(
        asked
            .iter()
            .filter(|p| p.starts_with("moom-summary-2"))
            .count(),
        5
    );
    assert_eq!(
        asked
            .iter()
            .filter(|p| p.starts_with("moom-summary-3"))
            .count(),
        1
    );
    assert!(moom.level(2)[0].text.contains("Line number"));
}

#[tokio::test]
async fn capacity_holds_over_a_long_run_and_reads_reinforce() {
    let mind = TestMind::default();
    let config = MoomConfig {
        forgetting: ForgettingParams {
            capacity: 12,
            k: 3,
            ..ForgettingParams::default()
        },
        ..MoomConfig::default()
    };
    let mut moom = Moom::new("watson", config);
    let mut storyline = Vec::new();
    for round in 0..100 {
        feed(&mut moom, &mind, &mut storyline, 6).await;
        assert!(moom.plot.len() <= 12, "round {round}: {}", moom.plot.len());
        if round % 10 == 9 {
            let q = crate::modules::test_mind::bag("line number case");
            let read = moom
                .ground(
                    &mind,
                    &storyline,
                    &ReadQuery {
                        text: "the case",
                        vector: &q,
                        answering: true,
                        present: &[],
                    },
                )
                .await;
            assert_eq!(
                read.iter().filter(|g| g.kind.starts_with("plot")).count(),
                3
            );
            let now = storyline.len() as u64;
            for g in &read {
                let kept = moom.plot.iter().find(|m| m.id == g.id).expect("kept");
                assert_eq!(kept.trace.retrieved.last(), Some(&now), "reinforced");
            }
        }
    }
    assert_eq!(moom.made()[0], 100);
    assert_eq!(moom.plot.len(), 12);
}

#[tokio::test]
async fn each_persona_strategy_merges_as_specified() {
    let mind = TestMind::default();
    let mut moom = Moom::new("watson", MoomConfig::default());
    let v = |key: &str, value: &str| SnapshotValue {
        person: "holmes".into(),
        key: key.into(),
        value: value.into(),
    };
    // replace
    moom.merge(&mind, v("occupation", "chemist"), "Holmes", 1)
        .await;
    moom.merge(&mind, v("occupation", "consulting detective"), "Holmes", 2)
        .await;
    // append (duplicates ignored)
    moom.merge(&mind, v("skills", "violin"), "Holmes", 1).await;
    moom.merge(&mind, v("skills", "boxing"), "Holmes", 2).await;
    moom.merge(&mind, v("skills", "Violin"), "Holmes", 3).await;
    // trajectory
    moom.merge(&mind, v("whereabouts", "the laboratory"), "Holmes", 2)
        .await;
    moom.merge(&mind, v("whereabouts", "Baker Street"), "Holmes", 8)
        .await;
    // contradictory: liking tobacco cancels an old dislike of tobacco
    moom.merge(&mind, v("dislikes", "strong tobacco"), "Holmes", 1)
        .await;
    moom.merge(&mind, v("dislikes", "idleness"), "Holmes", 1)
        .await;
    moom.merge(&mind, v("likes", "strong tobacco"), "Holmes", 4)
        .await;
    // complex: no model, the newer value leads and keeps the old
    moom.merge(&mind, v("relationship_to_me", "a stranger"), "Holmes", 1)
        .await;
    moom.merge(&mind, v("relationship_to_me", "my flatmate"), "Holmes", 5)
        .await;

    let keys = &moom.personas["holmes"].keys;
    let texts = |k: &str| keys[k].iter().map(|v| v.text.as_str()).collect::<Vec<_>>();
    assert_eq!(texts("occupation"), ["consulting detective"]);
    assert_eq!(texts("skills"), ["violin", "boxing"]);
    assert_eq!(texts("whereabouts"), ["the laboratory", "Baker Street"]);
    assert_eq!(texts("likes"), ["strong tobacco"]);
    assert_eq!(texts("dislikes"), ["idleness"]);
    assert_eq!(
        texts("relationship_to_me"),
        ["my flatmate (before: a stranger)"]
    );
    assert_eq!(mind.asked(), ["moom-persona-merge"]);
    let line = moom.describe("holmes", 10).expect("described");
    assert!(
        line.starts_with("Holmes — occupation: consulting detective"),
        "{line}"
    );
    assert!(
        line.contains("whereabouts: Baker Street (2 rounds ago); the laboratory (8 rounds ago)"),
        "{line}"
    );

    // With a model, the complex merge is the model's.
    let mind = TestMind::answering(vec![json!({"merged": "a flatmate he is warming to"})]);
    moom.merge(&mind, v("relationship_to_me", "a friend"), "Holmes", 9)
        .await;
    assert_eq!(
        moom.personas["holmes"].keys["relationship_to_me"][0].text,
        "a flatmate he is warming to"
    );
}

#[tokio::test]
async fn the_fallback_snapshot_reads_plain_statements() {
    let lines = vec![
        line(
            1,
            "stamford",
            "I am a dresser at Bart's. I like a quiet pint, I hate the fog.",
        ),
        line(2, "watson", "I am an army doctor."),
    ];
    let found = rule_snapshot("watson", &lines);
    let pairs: Vec<(&str, &str)> = found
        .iter()
        .map(|v| (v.key.as_str(), v.value.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("occupation", "dresser at bart's"),
            ("likes", "a quiet pint"),
            ("dislikes", "the fog")
        ]
    );
    assert!(
        found.iter().all(|v| v.person == "stamford"),
        "not the character itself"
    );
}
