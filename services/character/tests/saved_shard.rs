//! A shard file written by an earlier build still loads: `fixtures/watson-shard-format1.json`
//! was saved by the agent before the restructure of the character crate (Watson after
//! the first scene of *A Study in Scarlet* on the scripted model, every memory module on,
//! the fake embedder at 8 dimensions, one interview). Attached from disk, the agent must
//! show the same memory items, perceived lines and prompt audit the file holds, and go
//! on from there.

use std::sync::Arc;

use dramatis_character::{AgentOptions, CharacterAgents};
use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptedModel};
use dramatis_memory::modules::ModuleSet;
use dramatis_proto::v1::agent_client::AgentClient;
use dramatis_proto::v1::{
    ActRequest, AttachRequest, CharacterProfile, CharacterRef, PresentCharacter, SceneFrame,
    SnapshotRequest,
};
use dramatis_runtime::Shutdown;
use serde_json::Value;

const WORLD: &str = "fixture";

fn fixture() -> (Value, &'static str) {
    let text = include_str!("fixtures/watson-shard-format1.json");
    (serde_json::from_str(text).expect("fixture is JSON"), text)
}

async fn agent_on(
    data_dir: &std::path::Path,
    shutdown: &Shutdown,
) -> AgentClient<tonic::transport::Channel> {
    let mut options = AgentOptions::new(
        RoleModels::uniform(Arc::new(ScriptedModel::new(Vec::new()))),
        Arc::new(FakeEmbedder::new(8)),
    );
    options.data_dir = Some(data_dir.to_path_buf());
    options.memory_modules = Some(ModuleSet::all());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(dramatis_character::run(
        listener,
        CharacterAgents::new(options),
        dramatis_runtime::grpc::Security::open(),
        shutdown.clone(),
    ));
    AgentClient::connect(endpoint)
        .await
        .expect("agent reachable")
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
async fn a_shard_saved_by_the_earlier_build_loads_whole_and_goes_on() {
    let (saved, text) = fixture();
    let data = tempfile::tempdir().expect("tempdir");
    let file = data.path().join(WORLD).join("watson.json");
    std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&file, text).expect("fixture copied");
    let shutdown = Shutdown::new();
    let mut agent = agent_on(data.path(), &shutdown).await;

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
    let audit = saved["audit"].as_array().expect("audit");
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
    let again = Shutdown::new();
    let mut agent = agent_on(data.path(), &again).await;
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

    // On disk, the audit left the shard's JSON for the append-only file beside it: the
    // old prompts first, in order, then the new turn's.
    let rewritten: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("shard file")).expect("JSON");
    assert!(
        rewritten.get("audit").is_none(),
        "the shard JSON keeps no audit"
    );
    assert_eq!(rewritten["last_seq"], saved["last_seq"]);
    let lines: Vec<Value> =
        std::fs::read_to_string(data.path().join(WORLD).join("watson.audit.jsonl"))
            .expect("audit file")
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
    assert_eq!(lines.len(), audit.len() + 1);
    for (line, want) in lines.iter().zip(audit) {
        assert_eq!(line["prompt"], want["prompt"]);
        assert_eq!(line["purpose"], want["purpose"]);
    }
    assert_eq!(lines[audit.len()]["purpose"], "act");
}
