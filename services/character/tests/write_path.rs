//! The write path with model-written memories: each scene's memory is written when the
//! scene ends, in a call of its own whose prompt holds that scene's lines and nothing
//! the character lived through later (no hindsight), even when several scenes end in one
//! delivery.

use std::sync::Arc;

use dramatis_character::{AgentOptions, CharacterAgents, MemoryWrites};
use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptedModel};
use dramatis_proto::v1::{CharacterProfile, Event, EventKind};

/// One word per scene, found nowhere else.
const CANARIES: [&str; 3] = ["TANGERINE", "OBSIDIAN", "MARZIPAN"];

fn event(seq: u64, scene: &str, kind: EventKind, text: &str) -> Event {
    Event {
        world_id: "w".into(),
        seq,
        scene_id: scene.into(),
        speaker: "watson".into(),
        speaker_name: "Watson".into(),
        target: "holmes".into(),
        target_name: "Holmes".into(),
        kind: kind as i32,
        text: text.into(),
        perceivers: vec!["holmes".into(), "watson".into()],
        ..Event::default()
    }
}

/// Scene `n` (0-based): two lines, the second holding the scene's canary, and its end.
fn scene(n: usize) -> Vec<Event> {
    let id = format!("s{}", n + 1);
    let seq = 3 * n as u64;
    let mut end = event(seq + 3, &id, EventKind::SceneEnd, "");
    end.speaker = String::new();
    vec![
        event(seq + 1, &id, EventKind::Speech, "Good morning, Holmes."),
        event(
            seq + 2,
            &id,
            EventKind::Speech,
            &format!("I keep thinking of the {}.", CANARIES[n]),
        ),
        end,
    ]
}

#[tokio::test]
async fn each_scene_memory_is_written_from_that_scene_alone() {
    let model = ScriptedModel::default();
    let mut options = AgentOptions::new(
        RoleModels::uniform(Arc::new(model.clone())),
        Arc::new(FakeEmbedder::new(64)),
    );
    options.memory_writes = MemoryWrites::Model;
    let agents = CharacterAgents::new(options);
    let profile = CharacterProfile {
        id: "holmes".into(),
        name: "Holmes".into(),
        ..CharacterProfile::default()
    };
    agents
        .attach("w", "holmes", profile)
        .await
        .expect("attached");

    // The first scene alone; then two that end in one delivery (a catch-up).
    agents
        .character("w", "holmes")
        .expect("attached")
        .perceive(&scene(0))
        .await
        .expect("perceived");
    let after_first = model.calls();
    let later: Vec<Event> = scene(1).into_iter().chain(scene(2)).collect();
    agents
        .character("w", "holmes")
        .expect("attached")
        .perceive(&later)
        .await
        .expect("perceived");
    let prompts: Vec<String> = model
        .prompts()
        .iter()
        .filter(|p| p.schema.as_deref() == Some("scene_memory"))
        .map(dramatis_llm::RecordedPrompt::text)
        .collect();
    for (n, prompt) in prompts.iter().enumerate() {
        assert!(
            prompt.contains(CANARIES[n]),
            "scene {n}'s own lines: {prompt}"
        );
        for later in &CANARIES[n + 1..] {
            assert!(
                !prompt.contains(later),
                "the memory of scene {n} was written knowing {later}: {prompt}"
            );
        }
    }
    assert_eq!(
        prompts.len(),
        CANARIES.len(),
        "one scene-memory prompt per scene"
    );
    assert_eq!(
        (after_first, model.calls()),
        (1, 3),
        "a call per scene, as it ends"
    );

    let shard = agents.snapshot("w", "holmes").await.expect("shard");
    let episodes: Vec<(String, String)> = shard
        .layers()
        .episodic
        .items()
        .iter()
        .map(|m| (m.id.clone(), m.text.clone()))
        .collect();
    assert_eq!(
        episodes
            .iter()
            .map(|(id, _)| id.as_str())
            .collect::<Vec<_>>(),
        ["episode:s1", "episode:s2", "episode:s3"]
    );
    assert!(
        episodes
            .iter()
            .all(|(_, text)| text.starts_with("Scripted line")),
        "every digest was replaced by the model's memory: {episodes:?}"
    );
    let audit = shard.prompts();
    assert_eq!(audit.len(), 3);
    for (n, record) in audit.iter().enumerate() {
        assert_eq!(record.purpose, "scene_memory");
        let seq = 3 * n as u64;
        assert_eq!(
            record.memory_ids,
            [format!("event:{}", seq + 1), format!("event:{}", seq + 2)],
            "the audit names exactly the scene's lines"
        );
    }
}
