//! An interview is read-only: `Answer` and the recall-only view leave the character's
//! layers, every memory module and the shard file exactly as they were, and a question
//! never reaches a later prompt of the character. Only the prompt audit grows (it is a
//! record of what was sent, not memory). Every module is on and module steps call the
//! scripted model, whose BOOKMARKS proposals echo the question the way a capable model
//! would.

use std::path::Path;
use std::sync::Arc;

use dramatis_character::shard::{Stored, read_store_file};
use dramatis_character::{AgentOptions, CharacterAgents, MemoryWrites};
use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptRule, ScriptedModel};
use dramatis_memory::modules::ModuleSet;
use dramatis_proto::v1::{
    CharacterProfile, Event, EventKind, KnownFact, PersonalityPattern, PresentCharacter, SceneFrame,
};

/// A word no scene holds, planted in the interviewer's questions.
const CANARY: &str = "ZEPHYRQUILL";

fn rule(when: &[&str], reply: &str) -> ScriptRule {
    ScriptRule {
        when: when.iter().map(|w| (*w).to_owned()).collect(),
        reply: reply.to_owned(),
    }
}

/// A model whose BOOKMARKS proposals take up the question's strange word, and whose
/// later proposals share a word with that bookmark (so a kept bookmark would be listed
/// again when matching).
fn model() -> ScriptedModel {
    ScriptedModel::new(vec![
        rule(
            &["Propose up to", CANARY],
            &format!(r#"{{"queries":[{{"query":"Where is {CANARY} hidden?","kind":"concept"}}]}}"#),
        ),
        rule(
            &["Propose up to"],
            r#"{"queries":[{"query":"Where is the ring hidden?","kind":"concept"}]}"#,
        ),
        rule(
            &["help Holmes remember"],
            r#"{"sufficient":true,"probes":[]}"#,
        ),
        rule(&["Question:"], "I could not say."),
    ])
}

fn holmes() -> CharacterProfile {
    CharacterProfile {
        id: "holmes".into(),
        name: "Holmes".into(),
        profile: "A consulting detective.".into(),
        knowledge: vec![KnownFact {
            id: "ring".into(),
            text: "A gold ring lay beside the body".into(),
            ..KnownFact::default()
        }],
        patterns: vec![PersonalityPattern {
            id: "calm".into(),
            description: "calm polite conversation".into(),
            excerpts: vec!["Quite so.".into()],
        }],
        ..CharacterProfile::default()
    }
}

async fn attached(model: &ScriptedModel, data_dir: &Path) -> CharacterAgents {
    let mut options = AgentOptions::new(
        RoleModels::uniform(Arc::new(model.clone())),
        Arc::new(FakeEmbedder::new(256)),
    );
    options.data_dir = Some(data_dir.to_path_buf());
    options.memory_modules = Some(ModuleSet::all());
    options.memory_writes = MemoryWrites::Model;
    let agents = CharacterAgents::new(options);
    agents
        .attach("w", "holmes", holmes())
        .await
        .expect("attached");
    agents
}

fn speech(seq: u64, scene: &str, text: &str) -> Event {
    Event {
        world_id: "w".into(),
        seq,
        scene_id: scene.into(),
        speaker: "watson".into(),
        speaker_name: "Watson".into(),
        target: "holmes".into(),
        target_name: "Holmes".into(),
        kind: EventKind::Speech as i32,
        text: text.into(),
        perceivers: vec!["holmes".into(), "watson".into()],
        ..Event::default()
    }
}

fn scene_end(seq: u64, scene: &str) -> Event {
    Event {
        kind: EventKind::SceneEnd as i32,
        speaker: String::new(),
        text: String::new(),
        ..speech(seq, scene, "")
    }
}

fn frame(scene: &str) -> SceneFrame {
    SceneFrame {
        scene_id: scene.into(),
        location_name: "Baker Street".into(),
        present: vec![PresentCharacter {
            id: "watson".into(),
            name: "Watson".into(),
        }],
        ..SceneFrame::default()
    }
}

/// A finished scene about the ring, and a second one under way.
async fn lived_through(agents: &CharacterAgents) {
    let lines = [
        "The ring was found at Lauriston Gardens, Holmes.",
        "Lestrade thinks the ring belongs to a woman.",
        "The cabman waited outside the whole night.",
        "There was blood on the wall, a word written in it.",
        "Gregson has arrested the wrong man, I fear.",
        "Shall we go back to Brixton Road tomorrow?",
        "The ring was hidden in the gutter for an hour.",
    ];
    let mut events: Vec<Event> = lines
        .iter()
        .zip(1..)
        .map(|(line, seq)| speech(seq, "s1", line))
        .collect();
    events.push(scene_end(8, "s1"));
    events.push(speech(
        9,
        "s2",
        "Mrs Hudson says a woman called about the ring.",
    ));
    events.push(speech(10, "s2", "She would not leave her name."));
    agents
        .character("w", "holmes")
        .expect("attached")
        .perceive(&events)
        .await
        .expect("perceived");
}

/// Everything the character's memory holds, without the prompt audit: ReverieMem's
/// layers, mood and perceived events, every module (serialised), the items and counters
/// the wire shows.
async fn memory_state(agents: &CharacterAgents) -> String {
    let shard = agents.snapshot("w", "holmes").await.expect("shard");
    let mut stats: Vec<(String, f64)> = shard.modules().stats().into_iter().collect();
    stats.sort_by(|a, b| a.0.cmp(&b.0));
    let state = serde_json::json!({
        "layers": shard.layers(),
        "mood": shard.mood(),
        "perceived": shard.perceived(),
        "goal": shard.goal(),
        "modules": shard.modules(),
        "stats": stats,
    });
    format!("{state}\n{:?}", shard.memory())
}

/// What the character's store file holds, and the purposes of its audited prompts:
/// the character is detached (keeping its shard) to close the file, read, and attached
/// again.
async fn on_disk(agents: &CharacterAgents, data_dir: &Path) -> (Stored, Vec<String>) {
    agents.detach("w", "holmes", true).await.expect("detached");
    let path = data_dir.join("w").join("holmes.redb");
    let (stored, audit) = read_store_file(&path).expect("the store reads");
    agents
        .attach("w", "holmes", holmes())
        .await
        .expect("attached again");
    (stored, audit.into_iter().map(|e| e.purpose).collect())
}

const QUESTIONS: [&str; 3] = [
    "Where was the ring found?",
    "What do you make of ZEPHYRQUILL, Mr Holmes?",
    "Who wrote the word on the wall in blood?",
];

#[tokio::test]
async fn an_interview_changes_no_layer_no_module_and_no_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = model();
    let agents = attached(&model, dir.path()).await;
    lived_through(&agents).await;
    let (stored, purposes) = on_disk(&agents, dir.path()).await;
    let state = memory_state(&agents).await;
    let audited = purposes.len();
    assert!(audited > 0 && !stored.perceived.is_empty());

    for question in QUESTIONS {
        agents
            .character("w", "holmes")
            .expect("attached")
            .answer(question, &[])
            .await
            .expect("answer");
        agents
            .character("w", "holmes")
            .expect("attached")
            .recall_view(question, &[])
            .await
            .expect("recall view");
    }

    assert_eq!(memory_state(&agents).await, state, "memory changed");
    let (stored_after, purposes) = on_disk(&agents, dir.path()).await;
    assert_eq!(
        (
            &stored_after.state,
            &stored_after.perceived,
            &stored_after.transitions
        ),
        (&stored.state, &stored.perceived, &stored.transitions),
        "the store holds another state or other perceived events"
    );
    assert!(
        stored_after.episodic == stored.episodic
            && stored_after.semantic == stored.semantic
            && stored_after.patterns == stored.patterns,
        "the store holds other layers"
    );
    assert_eq!(
        stored_after.modules.as_deref().map(String::from_utf8_lossy),
        stored.modules.as_deref().map(String::from_utf8_lossy),
        "the store holds other modules"
    );
    // The audit is the one record that grows: every prompt the asks sent, in the store.
    let new = &purposes[audited..];
    assert_eq!(
        new.iter().filter(|p| *p == "answer").count(),
        QUESTIONS.len(),
        "{new:?}"
    );
    assert!(
        new.iter().any(|p| p == "bookmarks-propose"),
        "module steps of an ask are audited too: {new:?}"
    );
    let shard = agents.snapshot("w", "holmes").await.expect("shard");
    assert_eq!(shard.prompts().len(), purposes.len());
}

#[tokio::test]
async fn a_question_never_reaches_a_later_prompt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = model();
    let agents = attached(&model, dir.path()).await;
    lived_through(&agents).await;
    let question = "What do you make of ZEPHYRQUILL, Mr Holmes?";
    agents
        .character("w", "holmes")
        .expect("attached")
        .answer(question, &[])
        .await
        .expect("answer");
    agents
        .character("w", "holmes")
        .expect("attached")
        .recall_view(question, &[])
        .await
        .expect("recall view");
    let asked = model.prompts().len();
    assert!(
        model.prompts().iter().any(|p| p.text().contains(CANARY)),
        "the ask's own prompts hold the question"
    );

    // The story goes on: turns, more lines, a scene end (modules write and sync), a
    // new scene.
    let mut seq = 10;
    let mut next = |scene: &str, text: &str| {
        seq += 1;
        speech(seq, scene, text)
    };
    for (scene, text) in [
        ("s2", "Where could the ring be hidden now?"),
        ("s2", "Someone must have hidden it well."),
        (
            "s3",
            "A telegram from Gregson: the ring is hidden no longer.",
        ),
    ] {
        let line = next(scene, text);
        agents
            .character("w", "holmes")
            .expect("attached")
            .perceive(&[line])
            .await
            .expect("perceived");
        agents
            .character("w", "holmes")
            .expect("attached")
            .turn(&frame(scene), None)
            .await
            .expect("acted");
    }
    let end = scene_end(seq + 1, "s3");
    agents
        .character("w", "holmes")
        .expect("attached")
        .perceive(&[end])
        .await
        .expect("perceived");
    agents
        .character("w", "holmes")
        .expect("attached")
        .turn(&frame("s4"), None)
        .await
        .expect("acted");

    let prompts = model.prompts();
    assert!(prompts.len() > asked + 4, "the turns called the model");
    for (i, prompt) in prompts.iter().enumerate().skip(asked) {
        assert!(
            !prompt.text().contains(CANARY),
            "prompt {i} after the interview holds the question's word:\n{}",
            prompt.text()
        );
    }
    let shard = agents.snapshot("w", "holmes").await.expect("shard");
    assert!(
        !shard.memory().iter().any(|item| item.text.contains(CANARY)),
        "no memory item holds the question's word"
    );
}
