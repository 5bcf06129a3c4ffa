//! Characters hosted by one agent process share the embedding of every line they all
//! perceived: a line's words are embedded once per process, however many of its
//! characters write it to memory or recall with it, and each character's view of who
//! spoke is embedded apart from them.

use std::sync::Arc;

use dramatis_character::{AgentOptions, CharacterAgents};
use dramatis_embed::RecordingEmbedder;
use dramatis_llm::{RoleModels, ScriptedModel};
use dramatis_proto::v1::{CharacterProfile, Event, EventKind, PresentCharacter, SceneFrame};

const CAST: [(&str, &str); 3] = [
    ("holmes", "Sherlock Holmes"),
    ("watson", "John Watson"),
    ("lestrade", "Inspector Lestrade"),
];

const LINES: [&str; 3] = [
    "The ring was found in the gutter on Brixton Road",
    "Somebody came back for it after the constable left",
    "Then the cabman is the man we want",
];

fn event(seq: u64, scene: &str, kind: EventKind, speaker: usize, text: &str) -> Event {
    Event {
        world_id: "w".into(),
        seq,
        scene_id: scene.into(),
        kind: kind as i32,
        speaker: CAST[speaker].0.into(),
        speaker_name: CAST[speaker].1.into(),
        text: text.into(),
        perceivers: CAST.iter().map(|(id, _)| (*id).to_owned()).collect(),
        ..Event::default()
    }
}

/// The three characters attached to one process whose embedder records every text.
async fn cast() -> (CharacterAgents, Arc<RecordingEmbedder>) {
    let recording = Arc::new(RecordingEmbedder::new(64));
    let agents = CharacterAgents::new(AgentOptions::new(
        RoleModels::uniform(Arc::new(ScriptedModel::new(Vec::new()))),
        recording.clone(),
    ));
    for (id, name) in CAST {
        let profile = CharacterProfile {
            id: id.into(),
            name: name.into(),
            profile: format!("{name}, of London."),
            ..CharacterProfile::default()
        };
        agents.attach("w", id, profile).await.expect("attached");
    }
    (agents, recording)
}

/// `events`, perceived by all three.
async fn perceive_all(agents: &CharacterAgents, events: &[Event]) {
    for (id, _) in CAST {
        agents
            .character("w", id)
            .expect("attached")
            .perceive(events)
            .await
            .expect("perceived");
    }
}

/// A turn's frame in `scene` at `place`, with all three present.
fn frame(scene: &str, place: &str) -> SceneFrame {
    SceneFrame {
        scene_id: scene.into(),
        location_name: place.into(),
        present: CAST
            .iter()
            .map(|(id, name)| PresentCharacter {
                id: (*id).into(),
                name: (*name).into(),
            })
            .collect(),
        ..SceneFrame::default()
    }
}

#[tokio::test]
async fn a_line_is_embedded_once_per_process_for_all_who_perceived_it() {
    let (agents, recording) = cast().await;
    // A scene all three lived through, then a turn of each in the next one.
    let mut events = vec![event(1, "s1", EventKind::SceneStart, 0, "Brixton Road")];
    for (i, line) in LINES.iter().enumerate() {
        events.push(event(i as u64 + 2, "s1", EventKind::Speech, i, line));
    }
    events.push(event(5, "s1", EventKind::SceneEnd, 0, ""));
    events.push(event(6, "s2", EventKind::SceneStart, 0, "Baker Street"));
    events.push(event(7, "s2", EventKind::Speech, 1, LINES[0]));
    perceive_all(&agents, &events).await;
    let frame = frame("s2", "Baker Street");
    for (id, _) in CAST {
        agents
            .character("w", id)
            .expect("attached")
            .turn(&frame, None)
            .await
            .expect("act");
    }

    let texts = recording.asked();
    for line in LINES {
        let asked: Vec<&String> = texts.iter().filter(|t| t.contains(line)).collect();
        assert_eq!(asked, [line], "the words alone, once: {texts:#?}");
    }
    // Who said it, as each character knows them, is embedded apart: once per view.
    let frames = texts.iter().filter(|t| t.ends_with(" said:")).count();
    assert!(frames >= 2, "{texts:#?}");
    let total = texts.len();
    assert_eq!(
        texts.iter().collect::<std::collections::HashSet<_>>().len(),
        total,
        "no text embedded twice: {texts:#?}"
    );
}

#[tokio::test]
async fn a_lines_words_are_embedded_as_it_is_made_and_not_again_when_perceived() {
    let (agents, recording) = cast().await;
    let start = event(1, "s1", EventKind::SceneStart, 0, "Brixton Road");
    perceive_all(&agents, &[start]).await;
    let frame = frame("s1", "Brixton Road");
    let made = agents
        .character("w", CAST[0].0)
        .expect("attached")
        .turn(&frame, None)
        .await
        .expect("act");
    let words = made.action.text.trim().to_owned();
    assert!(!words.is_empty());
    let times = |texts: &[String]| texts.iter().filter(|t| **t == words).count();
    // Started before the turn returned: the embedding runs while the world logs it.
    for _ in 0..1_000 {
        if times(&recording.asked()) > 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    let asked = recording.asked();
    assert_eq!(times(&asked), 1, "before anyone perceived it: {asked:#?}");
    // Logged and delivered, then the next turn recalls with it: the vector is reused.
    perceive_all(&agents, &[event(2, "s1", EventKind::Speech, 0, &words)]).await;
    agents
        .character("w", CAST[1].0)
        .expect("attached")
        .turn(&frame, None)
        .await
        .expect("act");
    let asked = recording.asked();
    assert_eq!(times(&asked), 1, "embedded once in all: {asked:#?}");
}
