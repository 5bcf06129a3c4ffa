//! A turn's own state (its audited prompts, the feeling behind its line) reaches the
//! character's store with the character's own event, so a line costs one durable write
//! per character; a detach that keeps the shard saves a last turn no event followed.

use std::sync::Arc;

use dramatis_character::shard::read_store_file;
use dramatis_character::{AgentOptions, CharacterAgents};
use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptedModel};
use dramatis_proto::v1::{CharacterProfile, Event, EventKind, PresentCharacter, SceneFrame};

fn event(seq: u64, speaker: (&str, &str), text: &str) -> Event {
    Event {
        world_id: "w".into(),
        seq,
        scene_id: "s1".into(),
        speaker: speaker.0.into(),
        speaker_name: speaker.1.into(),
        kind: EventKind::Speech as i32,
        text: text.into(),
        perceivers: vec!["holmes".into(), "watson".into()],
        ..Event::default()
    }
}

fn frame() -> SceneFrame {
    SceneFrame {
        scene_id: "s1".into(),
        location_name: "Baker Street".into(),
        present: vec![PresentCharacter {
            id: "watson".into(),
            name: "Watson".into(),
        }],
        ..SceneFrame::default()
    }
}

/// How many turn prompts the store file holds, and how many events.
fn on_disk(path: &std::path::Path) -> (usize, usize) {
    let (stored, audit) = read_store_file(path).expect("the store reads");
    let turns = audit.iter().filter(|e| e.purpose == "act").count();
    (turns, stored.perceived.len())
}

#[tokio::test]
async fn a_turn_is_saved_with_its_own_event_and_a_detach_saves_the_last_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = AgentOptions::new(
        RoleModels::uniform(Arc::new(ScriptedModel::new(Vec::new()))),
        Arc::new(FakeEmbedder::new(64)),
    );
    options.data_dir = Some(dir.path().to_path_buf());
    let agents = CharacterAgents::new(options);
    let profile = CharacterProfile {
        id: "holmes".into(),
        name: "Holmes".into(),
        profile: "A consulting detective.".into(),
        ..CharacterProfile::default()
    };
    agents
        .attach("w", "holmes", profile)
        .await
        .expect("attached");
    let path = dir.path().join("w").join("holmes.redb");
    let watson = ("watson", "Watson");
    agents
        .perceive(
            "w",
            "holmes",
            &[event(1, watson, "You have been in Afghanistan?")],
        )
        .await
        .expect("perceived");
    assert_eq!(on_disk(&path), (0, 1));

    let first = agents
        .act("w", "holmes", &frame(), None)
        .await
        .expect("act");
    let own = event(2, ("holmes", "Holmes"), &first.action.text);
    agents
        .perceive("w", "holmes", &[own])
        .await
        .expect("own event");
    assert_eq!(
        on_disk(&path),
        (1, 2),
        "the turn's prompt came with its event"
    );

    agents
        .act("w", "holmes", &frame(), None)
        .await
        .expect("act");
    let shown = agents.snapshot("w", "holmes").await.expect("snapshot");
    let audited = shown
        .prompts()
        .iter()
        .filter(|p| p.purpose == "act")
        .count();
    assert_eq!(audited, 2, "a snapshot shows the turn not saved yet");
    agents.detach("w", "holmes", true).await.expect("detached");
    assert_eq!(on_disk(&path), (2, 2), "the detach saved the last turn");
}
