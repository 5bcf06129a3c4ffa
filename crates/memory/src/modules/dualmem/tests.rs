use super::*;
use crate::modules::test_mind::{TestMind, bag};

fn line(position: u64, speaker: &str, target: &str, text: &str) -> Line {
    Line {
        position,
        scene_id: "s".into(),
        kind: LineKind::Speech,
        speaker: speaker.into(),
        speaker_name: speaker.to_uppercase(),
        target: target.into(),
        target_name: target.to_uppercase(),
        text: text.into(),
        location: String::new(),
    }
}

fn scene() -> Vec<Line> {
    vec![
        line(
            1,
            "holmes",
            "watson",
            "You have been in Afghanistan, I perceive.",
        ),
        line(2, "watson", "holmes", "How on earth did you know that?"),
        line(
            3,
            "holmes",
            "watson",
            "Your tan and your wounded shoulder told me Afghanistan.",
        ),
        line(4, "stamford", "", "The rooms in Baker Street are cheap."),
    ]
}

#[test]
fn questions_pick_their_stream() {
    assert_eq!(
        choose_stream("Where were you wounded?", true),
        Stream::Factual
    );
    assert_eq!(
        choose_stream("What did Holmes say about the tan?", true),
        Stream::Factual
    );
    assert_eq!(
        choose_stream("Why do you think Holmes showed off?", true),
        Stream::Insight
    );
    assert_eq!(choose_stream("Do you trust him?", true), Stream::Insight);
    assert_eq!(choose_stream("Tell me about Holmes.", true), Stream::Both);
    assert_eq!(
        choose_stream("Where were you, and why?", true),
        Stream::Both
    );
    assert_eq!(choose_stream("anything", false), Stream::Both);
}

#[tokio::test]
async fn a_retrieved_insight_brings_its_linked_facts() {
    let mind = TestMind::answering(vec![json!({"insights": [
        {"text": "Holmes reads people like evidence; being read so easily unsettles me.",
         "facts": ["dualmem:fact:1", "dualmem:fact:3"]}
    ]})]);
    let mut dual = DualMem::new("watson", "An army doctor, wounded, proud, short of money.");
    let storyline = scene();
    dual.scene_end(&mind, &storyline, "s").await;
    assert_eq!(dual.facts.len(), 4);
    assert_eq!(dual.insights.len(), 1);
    let q = bag("why does holmes read people like evidence");
    let got = dual
        .retrieve(
            &mind,
            &ReadQuery {
                text: "Why do you think Holmes reads people like that?",
                vector: &q,
                answering: true,
                present: &[],
            },
        )
        .await;
    let ids: Vec<&str> = got.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(
        ids,
        ["dualmem:insight:1", "dualmem:fact:1", "dualmem:fact:3"]
    );
    assert_eq!(got[0].kind, "insight");
    assert!(got[1..].iter().all(|g| g.kind == "fact"));
    // A factual question reads only the fact stream.
    let q = bag("cheap rooms baker street");
    let facts = dual
        .retrieve(
            &mind,
            &ReadQuery {
                text: "Where are the rooms cheap?",
                vector: &q,
                answering: true,
                present: &[],
            },
        )
        .await;
    assert!(facts.iter().all(|g| g.kind == "fact"));
    assert_eq!(facts[0].id, "dualmem:fact:4");
}

#[tokio::test]
async fn null_insights_and_the_fallback() {
    // The model judges the evidence insufficient: no insight, counted.
    let mind = TestMind::answering(vec![json!({"insights": null})]);
    let mut dual = DualMem::new("watson", "An army doctor.");
    dual.scene_end(&mind, &scene(), "s").await;
    assert!(dual.insights.is_empty());
    assert_eq!(dual.null_insights, 1);
    // No model: Holmes addressed Watson twice, so one insight linked to those lines.
    let mind = TestMind::default();
    let mut dual = DualMem::new("watson", "An army doctor.");
    dual.scene_end(&mind, &scene(), "s").await;
    assert_eq!(dual.insights.len(), 1);
    assert_eq!(dual.insights[0].facts, ["dualmem:fact:1", "dualmem:fact:3"]);
    assert!(
        dual.insights[0]
            .text
            .starts_with("HOLMES kept turning to me (2 times), about afghanistan"),
        "{}",
        dual.insights[0].text
    );
    // The next scene writes only its own lines.
    let mut storyline = scene();
    storyline.push(line(5, "stamford", "watson", "Shall I introduce you?"));
    dual.scene_end(&mind, &storyline, "s2").await;
    assert_eq!(dual.facts.len(), 5);
    assert_eq!(
        dual.null_insights, 1,
        "one line from Stamford is not enough"
    );
}

#[tokio::test]
async fn stale_insights_regenerate_when_retrieved_after_a_persona_change() {
    let mind = TestMind::answering(vec![
        json!({"insights": [{"text": "Holmes is a show-off.", "facts": ["dualmem:fact:1"]}]}),
        json!({"text": "Holmes's deductions are a gift I should learn from."}),
    ]);
    let mut dual = DualMem::new("watson", "A bitter invalid.");
    dual.scene_end(&mind, &scene(), "s").await;
    assert_eq!(dual.insights[0].persona_version, 1);
    dual.set_persona("A bitter invalid.");
    assert!(
        !dual.is_stale(&dual.insights[0]),
        "same persona, same version"
    );
    dual.set_persona("A hopeful man finding his feet again.");
    assert!(dual.is_stale(&dual.insights[0]));
    let q = bag("holmes show off");
    let query = ReadQuery {
        text: "What do you make of Holmes?",
        vector: &q,
        answering: true,
        present: &[],
    };
    let got = dual.retrieve(&mind, &query).await;
    assert_eq!(
        got[0].text,
        "Holmes's deductions are a gift I should learn from."
    );
    assert_eq!(dual.insights[0].persona_version, 2);
    assert_eq!(dual.regenerated, 1);
    // Fresh now: a second read regenerates nothing.
    dual.retrieve(&mind, &query).await;
    assert_eq!(dual.regenerated, 1);
    assert_eq!(mind.asked(), ["dualmem-insights", "dualmem-regenerate"]);
}
