use super::*;
use crate::modules::test_mind::TestMind;

fn line(position: u64, speaker: &str, target: &str, kind: LineKind, text: &str) -> Line {
    Line {
        position,
        scene_id: "s".into(),
        kind,
        speaker: speaker.into(),
        speaker_name: match speaker {
            "holmes" => "Sherlock Holmes".into(),
            "lestrade" => "Inspector Lestrade".into(),
            other => other.into(),
        },
        target: target.into(),
        target_name: target.into(),
        text: text.into(),
        location: String::new(),
    }
}

fn storyline(n: u64) -> Vec<Line> {
    (1..=n)
        .map(|p| match p % 3 {
            0 => line(
                p,
                "holmes",
                "watson",
                LineKind::Speech,
                &format!("Tobacco ash tells me much, Watson ({p})."),
            ),
            1 => line(
                p,
                "lestrade",
                "",
                LineKind::Action,
                &format!("Inspector Lestrade paces by the window ({p})."),
            ),
            _ => line(
                p,
                "watson",
                "holmes",
                LineKind::Speech,
                &format!("Go on, Holmes ({p})."),
            ),
        })
        .collect()
}

fn p(query: &str, kind: BookmarkKind) -> Proposal {
    Proposal {
        query: query.into(),
        kind,
    }
}

#[tokio::test]
async fn reuse_derive_and_none_on_fixed_queries() {
    let mind = TestMind::default();
    let mut marks = Bookmarks::new("watson");
    let story = storyline(12);
    let first = [p(
        "How does Holmes behave toward me?",
        BookmarkKind::Behaviour,
    )];
    let decided = marks.decide(&mind, &first).await;
    assert_eq!(decided, [Decision::None], "an empty pool");
    let active = marks.activate(&first, &decided);
    marks.sync(&mind, &story, &active).await;
    assert_eq!(marks.pool[0].sync, 12);
    // Same question in other words: reuse. A narrower one: derive. Another type or
    // no shared words: none.
    let next = [
        p("How does Holmes behave toward me?", BookmarkKind::Behaviour),
        p(
            "How does Holmes behave when tobacco comes up?",
            BookmarkKind::Behaviour,
        ),
        p("Where is Holmes now?", BookmarkKind::State),
        p("What is a hansom cab?", BookmarkKind::Concept),
    ];
    let decided = marks.decide(&mind, &next).await;
    assert_eq!(
        decided,
        [
            Decision::Reuse(0),
            Decision::Derive(0),
            Decision::None,
            Decision::None
        ]
    );
    let active = marks.activate(&next, &decided);
    assert_eq!(active, [0, 1, 2, 3]);
    let derived = &marks.pool[1];
    assert_eq!(derived.parent.as_deref(), Some("bookmarks:1"));
    assert_eq!(
        derived.sync, 12,
        "a derived bookmark starts at its parent's point"
    );
    assert_eq!(derived.answer, marks.pool[0].answer);
    assert_eq!(
        marks.pool[2].sync, 0,
        "a new bookmark starts at the beginning"
    );
    assert_eq!(marks.pool[2].answer, "Unknown");
    assert_eq!(marks.stats.proposals, 5);
    assert_eq!(
        (marks.stats.reused, marks.stats.derived, marks.stats.created),
        (1, 1, 3)
    );
    assert!((marks.stats.hit_rate() - 0.4).abs() < 1e-9);

    // A model decision overrides the overlap rule.
    let mind = TestMind::answering(vec![json!({"decisions": [
        {"query": 0, "relation": "reuse", "bookmark": "bookmarks:2"}
    ]})]);
    let again = [p(
        "How does Holmes behave when tobacco comes up?",
        BookmarkKind::Behaviour,
    )];
    let decided = marks.decide(&mind, &again).await;
    assert_eq!(decided, [Decision::Reuse(1)]);
}

#[tokio::test]
async fn syncing_reads_only_the_unseen_suffix() {
    let mind = TestMind::default();
    let mut marks = Bookmarks::new("watson");
    let first = [p(
        "How does Sherlock Holmes behave toward me?",
        BookmarkKind::Behaviour,
    )];
    let active = marks.activate(&first, &[Decision::None]);
    let story = storyline(30);
    marks.sync(&mind, &story[..18], &active).await;
    assert_eq!(
        marks.stats.lines_read, 18,
        "a new bookmark reads from the beginning"
    );
    assert_eq!(marks.stats.tokens_saved, 0);
    // Holmes addressed Watson at 3, 6, …, 18: six pieces of evidence.
    assert_eq!(marks.pool[0].evidence.len(), 6);
    assert!(
        marks.pool[0]
            .answer
            .ends_with("Tobacco ash tells me much, Watson (18).\""),
        "{}",
        marks.pool[0].answer
    );
    let before: u64 = story[..18]
        .iter()
        .map(|l| estimate_tokens(&l.render()) as u64)
        .sum();
    marks.sync(&mind, &story, &active).await;
    assert_eq!(
        marks.stats.lines_read,
        18 + 12,
        "then only the 12 new lines"
    );
    assert_eq!(marks.stats.tokens_saved, before);
    assert_eq!(marks.pool[0].evidence.len(), EVIDENCE, "evidence is capped");
    assert!(marks.pool[0].answer.contains("(30)"));
    // Synced to now: nothing more to read.
    marks.sync(&mind, &story, &active).await;
    assert_eq!(marks.stats.lines_read, 30);
}

#[tokio::test]
async fn state_and_concept_synchronisation() {
    let mind = TestMind::default();
    let mut marks = Bookmarks::new("watson");
    let mut story = storyline(12);
    story.push(line(
        13,
        "lestrade",
        "",
        LineKind::Movement,
        "Inspector Lestrade leaves for Scotland Yard.",
    ));
    story.push(line(
        14,
        "holmes",
        "watson",
        LineKind::Speech,
        "Observe the tobacco ash on the floor.",
    ));
    let proposals = [
        p("Where is Inspector Lestrade now?", BookmarkKind::State),
        p("What is known about tobacco?", BookmarkKind::Concept),
    ];
    let active = marks.activate(&proposals, &[Decision::None, Decision::None]);
    marks.sync(&mind, &story, &active).await;
    // State: chunk by chunk the latest line about Lestrade; the last holds now.
    assert_eq!(marks.pool[0].evidence.len(), 3, "chunks 1–6, 7–12, 13–14");
    assert_eq!(
        marks.pool[0].answer,
        "Inspector Lestrade leaves for Scotland Yard."
    );
    // Concept: occurrences at 3, 6, 9, 12 and 14, each with its neighbours, merged
    // where they overlap: 2–4, 5–7, 8–10, 11–14.
    assert_eq!(marks.pool[1].evidence.len(), 4);
    assert!(
        marks.pool[1].evidence[3].contains("(12)")
            && marks.pool[1].evidence[3].contains("Observe the tobacco ash")
    );
}

#[tokio::test]
async fn ground_returns_active_and_nearby_bookmarks() {
    let mind = TestMind::default();
    let mut marks = Bookmarks::new("watson");
    let story = storyline(12);
    let present = vec!["holmes".to_owned(), "watson".to_owned()];
    let v = vec![0.0f32; 4];
    let query = ReadQuery {
        text: "Holmes studies the tobacco ash.",
        vector: &v,
        answering: false,
        present: &present,
    };
    let first = marks.ground(&mind, &story, &query).await;
    // Template proposals: Holmes's state, Holmes's behaviour, the tobacco concept.
    let queries: Vec<&str> = marks.pool.iter().map(|b| b.query.as_str()).collect();
    assert_eq!(
        queries,
        [
            "Where is Sherlock Holmes now and what are they after?",
            "How does Sherlock Holmes usually behave toward me?",
            "What is known about tobacco?",
        ]
    );
    assert!(
        first
            .iter()
            .all(|g| g.kind == "active" && g.module == "bookmarks")
    );
    assert_eq!(first.len(), 3);
    assert_eq!(
        mind.asked(),
        ["bookmarks-propose", "bookmarks-answer"],
        "no candidates: no match call"
    );
    assert_eq!(marks.calls, 2);
    // The same scene again: all three reused, nothing re-read.
    let read = marks.stats.lines_read;
    let again = marks.ground(&mind, &story, &query).await;
    assert_eq!(again.len(), 3);
    assert_eq!(marks.stats.reused, 3);
    assert_eq!(marks.stats.lines_read, read);
}
