//! ReverieMem as a module: switched off it reads and writes nothing, and its calls and
//! their audit go through the agent's `Mind`, never past what the character may see.

use std::collections::BTreeSet;

use super::*;
use crate::modules::test_mind::{TestMind, bag};
use crate::modules::{MindError, Spent};
use crate::{Fact, VisibilityRoute};

fn fact(id: &str, text: &str, visible_to: &[&str]) -> (Fact, Vec<f32>) {
    let mut vector = bag(text);
    dramatis_base::normalise(&mut vector);
    let fact = Fact {
        id: id.into(),
        subject: "Holmes".into(),
        predicate: "did".into(),
        object: text.into(),
        cause: String::new(),
        visibility: visible_to
            .iter()
            .map(|s| (*s).to_owned())
            .collect::<BTreeSet<_>>(),
        route: VisibilityRoute::Observation,
        text: text.into(),
    };
    (fact, vector)
}

fn layers() -> ReverieLayers {
    let mut layers = ReverieLayers::new("watson");
    for (fact, vector) in [
        fact(
            "reagent",
            "Holmes found the reagent in the laboratory",
            &["watson", "holmes"],
        ),
        fact("letter", "Holmes hid the secret letter", &["holmes"]),
    ] {
        layers.semantic.add(fact, &vector);
    }
    layers
}

/// Self-Probe runs whenever anything is found (nothing is ever "covered").
fn settings() -> RecallSettings {
    RecallSettings {
        relevant: 0.5,
        covered: f32::MAX,
        ..RecallSettings::default()
    }
}

const QUESTION: &str = "Where did Holmes find the reagent?";

fn query(rounds: u32) -> Query<'static> {
    Query {
        text: QUESTION,
        lines: &[],
        trigger: QUESTION,
        trigger_pieces: &[],
        scene_id: "lab",
        rounds,
        options: &[],
    }
}

fn reverie<'a>(layers: &'a ReverieLayers, mood: &'a Mood, on: bool) -> Reverie<'a> {
    Reverie {
        layers,
        mood,
        character: "watson",
        name: "Watson",
        on,
    }
}

#[tokio::test]
async fn a_module_that_is_off_reads_and_writes_nothing_and_keeps_the_mood() {
    let layers = layers();
    let mood = Mood {
        emotion: "wary".into(),
        intensity: 0.7,
        pattern: Some("calm".into()),
        scene_id: "lab".into(),
    };
    let mind = TestMind::replying(&[r#"{"sufficient":true,"probes":[]}"#]);
    let off = reverie(&layers, &mood, false);
    let recalled = off
        .read(&mind, &query(2), &settings(), &EmotionVectors::default())
        .await
        .expect("read");
    assert!(recalled.facts.is_empty() && recalled.anchor.is_none());
    assert!(recalled.abstain, "nothing recalled bears on the question");
    assert_eq!(recalled.mood, mood);
    assert_eq!((recalled.rounds, recalled.spent), (0, Spent::default()));
    let draft = SceneDraft {
        scene_id: "lab".into(),
        events: Vec::new(),
        moments: Vec::new(),
        names: std::collections::BTreeMap::new(),
    };
    assert!(
        off.write(&mind, &draft, true)
            .await
            .expect("write")
            .is_none()
    );
    assert!(off.arrive(&mind, &[]).await.expect("arrive").is_empty());
    assert!(mind.prompts().is_empty(), "no call was made");
    // On, the same question is read and its Self-Probe asked.
    let on = reverie(&layers, &mood, true);
    let recalled = on
        .read(&mind, &query(2), &settings(), &EmotionVectors::default())
        .await
        .expect("read");
    assert_eq!(recalled.facts.len(), 1);
    assert!(!recalled.abstain);
    assert_eq!(mind.prompts().len(), 1);
}

#[tokio::test]
async fn self_probe_asks_through_the_mind_and_finds_only_what_the_character_may_see() {
    let layers = layers();
    let mood = Mood::default();
    // The model asks for the secret letter, which only Holmes saw hidden.
    let mind =
        TestMind::replying(&[r#"{"sufficient":false,"probes":["the secret letter Holmes hid"]}"#]);
    let recalled = reverie(&layers, &mood, true)
        .read(&mind, &query(1), &settings(), &EmotionVectors::default())
        .await
        .expect("read");
    let prompts = mind.prompts();
    assert_eq!(prompts.len(), 1);
    assert!(prompts[0].starts_with("You help Watson remember."));
    assert!(prompts[0].contains("Question: Where did Holmes find the reagent?"));
    assert!(prompts[0].contains("- Holmes found the reagent in the laboratory"));
    assert_eq!(recalled.spent, Spent::call(10, 5));
    assert_eq!(recalled.rounds, 2, "the first search and one probe round");
    let ids: Vec<&str> = recalled.facts.iter().map(|(f, _)| f.id.as_str()).collect();
    assert_eq!(ids, ["reagent"], "the letter is not visible to Watson");
}

#[tokio::test]
async fn an_unusable_probe_reply_ends_the_rounds_and_a_failed_call_fails_the_read() {
    let layers = layers();
    let mood = Mood::default();
    let mind = TestMind::replying(&["I would rather not say."]);
    let recalled = reverie(&layers, &mood, true)
        .read(&mind, &query(2), &settings(), &EmotionVectors::default())
        .await
        .expect("read");
    assert_eq!((recalled.rounds, recalled.spent.calls), (1, 1));
    assert_eq!(recalled.facts.len(), 1);
    // No reply left: the model call fails, and so does the read.
    let error = reverie(&layers, &mood, true)
        .read(&mind, &query(2), &settings(), &EmotionVectors::default())
        .await
        .expect_err("the call failed");
    assert!(
        matches!(
            error,
            MindError::Model {
                retryable: false,
                ..
            }
        ),
        "{error}"
    );
}
