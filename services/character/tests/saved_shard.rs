//! Shards written by earlier builds still load, and move into the store:
//! - `fixtures/watson-shard-format1.json` was saved by the agent before the restructure
//!   of the character crate (Watson after the first scene of *A Study in Scarlet* on the
//!   scripted model, every memory module on, the fake embedder at 8 dimensions, one
//!   interview), its prompt audit inside the JSON;
//! - `fixtures/json-store/fixture/` is the same shard as the build before the store
//!   kept it: the state as JSON, the audit in a JSON-lines file beside it.
//!
//! Attached from disk, the agent must show the same memory items, perceived lines and
//! prompt audit the files hold, keep them in `watson.redb` with the old files removed,
//! and go on from there.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

mod common;

use dramatis_character::shard::read_store_file;
use dramatis_memory::modules::ModuleSet;
use dramatis_proto::v1::{
    ActRequest, AttachRequest, CharacterProfile, CharacterRef, PresentCharacter, SceneFrame,
    SnapshotRequest,
};
use dramatis_runtime::Shutdown;
use serde_json::Value;

const WORLD: &str = "fixture";

/// A JSON shard: its files (name, contents) and its whole audit.
struct OldShard {
    files: Vec<(&'static str, &'static str)>,
    saved: Value,
    audit: Vec<Value>,
}

/// The first layout: the audit inside the JSON.
fn format1() -> OldShard {
    let text = include_str!("fixtures/watson-shard-format1.json");
    let saved: Value = serde_json::from_str(text).expect("fixture is JSON");
    let audit = saved["audit"].as_array().expect("audit").clone();
    OldShard {
        files: vec![("watson.json", text)],
        saved,
        audit,
    }
}

/// The second layout: the state as JSON, the audit as JSON lines beside it.
fn json_and_audit_file() -> OldShard {
    let text = include_str!("fixtures/json-store/fixture/watson.json");
    let lines = include_str!("fixtures/json-store/fixture/watson.audit.jsonl");
    let saved: Value = serde_json::from_str(text).expect("fixture is JSON");
    assert!(saved.get("audit").is_none(), "the audit is beside the JSON");
    OldShard {
        files: vec![("watson.json", text), ("watson.audit.jsonl", lines)],
        saved,
        audit: lines
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect(),
    }
}

async fn agent_on(data_dir: &std::path::Path, shutdown: &Shutdown) -> common::Served {
    common::agent_on(data_dir, shutdown, Some(ModuleSet::all())).await
}

fn watson() -> CharacterRef {
    CharacterRef {
        world_id: WORLD.into(),
        character_id: "watson".into(),
    }
}

fn ids(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_shard_with_its_audit_inside_its_json_moves_into_the_store_and_goes_on() {
    loads_whole_and_goes_on(format1()).await;
}

#[tokio::test]
async fn a_shard_with_its_audit_beside_its_json_moves_into_the_store_and_goes_on() {
    loads_whole_and_goes_on(json_and_audit_file()).await;
}

async fn loads_whole_and_goes_on(old: OldShard) {
    let OldShard {
        files,
        saved,
        audit,
    } = old;
    let audit = &audit;
    let data = tempfile::tempdir().expect("tempdir");
    let folder = data.path().join(WORLD);
    std::fs::create_dir_all(&folder).expect("mkdir");
    for (name, text) in &files {
        std::fs::write(folder.join(name), text).expect("fixture copied");
    }
    let shutdown = Shutdown::new();
    let (mut agent, served) = agent_on(data.path(), &shutdown).await;

    let attached = agent
        .attach(AttachRequest {
            character: Some(watson()),
            profile: Some(CharacterProfile {
                id: "watson".into(),
                name: "John Watson".into(),
                ..CharacterProfile::default()
            }),
        })
        .await
        .expect("attach")
        .into_inner();
    assert!(
        attached.resumed,
        "the saved shard was read, not a new one made"
    );

    let snapshot = agent
        .snapshot(SnapshotRequest {
            character: Some(watson()),
            ..Default::default()
        })
        .await
        .expect("snapshot")
        .into_inner();
    assert_eq!(
        snapshot.last_seq,
        saved["last_seq"].as_u64().expect("last_seq")
    );
    // Every ReverieMem item of the file, by layer, and every perceived line.
    let memory = &saved["memory"];
    for (layer, items) in [
        ("episodic", &memory["episodic"]["memories"]["items"]),
        ("semantic", &memory["semantic"]["facts"]["items"]),
        ("personality", &memory["personality"]["patterns"]["items"]),
    ] {
        let expected = ids(items);
        assert!(!expected.is_empty(), "the fixture has {layer} items");
        let got: Vec<String> = snapshot
            .memory
            .iter()
            .filter(|m| m.source == layer)
            .map(|m| m.id.clone())
            .collect();
        assert_eq!(got, expected, "{layer} items");
    }
    // Perceived lines, by sequence number (a scene's end marker is not a line).
    let perceived: Vec<u64> = snapshot
        .memory
        .iter()
        .filter(|m| m.source == "perceived")
        .map(|m| m.seq)
        .collect();
    let lines: Vec<u64> = saved["perceived"]
        .as_array()
        .expect("perceived")
        .iter()
        .filter(|p| p["kind"] != "scene_end")
        .filter_map(|p| p["seq"].as_u64())
        .collect();
    assert_eq!(perceived, lines);
    assert!(perceived.len() > 5);
    for module in ["dualmem.", "moom.", "bookmarks."] {
        assert!(
            snapshot.memory.iter().any(|m| m.source.starts_with(module)),
            "{module} items survive"
        );
    }
    // The prompt audit, in order, word for word.
    assert!(!audit.is_empty());
    assert_eq!(snapshot.prompts.len(), audit.len());
    for (got, want) in snapshot.prompts.iter().zip(audit) {
        assert_eq!(Some(got.purpose.as_str()), want["purpose"].as_str());
        assert_eq!(Some(got.prompt.as_str()), want["prompt"].as_str());
    }

    // It goes on: one more turn is audited after the old prompts, and all of it is
    // read back by a new agent on the same directory.
    let mut turn = agent
        .act(ActRequest {
            character: Some(watson()),
            frame: Some(SceneFrame {
                location_id: "criterion".into(),
                location_name: "the Criterion Bar".into(),
                present: vec![PresentCharacter {
                    id: "stamford".into(),
                    name: "Stamford".into(),
                }],
                ..SceneFrame::default()
            }),
        })
        .await
        .expect("act")
        .into_inner();
    while turn.message().await.expect("act stream").is_some() {}
    shutdown.trigger();
    drop(agent);
    served
        .await
        .expect("joined")
        .expect("the agent stopped cleanly");
    let again = Shutdown::new();
    let (mut agent, _) = agent_on(data.path(), &again).await;
    agent
        .attach(AttachRequest {
            character: Some(watson()),
            profile: Some(CharacterProfile {
                id: "watson".into(),
                ..CharacterProfile::default()
            }),
        })
        .await
        .expect("attach again");
    let reread = agent
        .snapshot(SnapshotRequest {
            character: Some(watson()),
            ..Default::default()
        })
        .await
        .expect("snapshot")
        .into_inner();
    assert_eq!(reread.prompts.len(), audit.len() + 1);
    assert_eq!(
        reread.prompts.last().map(|p| p.purpose.as_str()),
        Some("act")
    );
    assert_eq!(
        reread.prompts[..audit.len()]
            .iter()
            .map(|p| p.prompt.as_str())
            .collect::<Vec<_>>(),
        audit
            .iter()
            .filter_map(|a| a["prompt"].as_str())
            .collect::<Vec<_>>()
    );
    again.trigger();

    // On disk: the old files are gone, and the store holds the old prompts first, in
    // order, then the new turn's.
    for (name, _) in &files {
        assert!(!folder.join(name).exists(), "{name} was removed");
    }
    let store = folder.join("watson.redb");
    let (stored, prompts) = read_store_file(&store).expect("the store reads");
    assert_eq!(prompts.len(), audit.len() + 1);
    for (entry, want) in prompts.iter().zip(audit) {
        assert_eq!(Some(entry.prompt.as_str()), want["prompt"].as_str());
        assert_eq!(Some(entry.purpose.as_str()), want["purpose"].as_str());
    }
    assert_eq!(prompts[audit.len()].purpose, "act");
    assert!(stored.perceived.len() >= lines.len());
}
