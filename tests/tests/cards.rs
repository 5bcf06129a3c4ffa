//! Two character cards, each with its own lorebook, imported and played as a sandbox on
//! the scripted model: each book's canaries reach its own character's prompts and no
//! one else's, nor the other's point of view; and a character exported from the world
//! as a card keeps its card's fields and holds only its own book.

use dramatis_llm::ScriptRule;
use dramatis_proto::v1::{
    AdvanceRequest, CreateWorldRequest, ExportCharacterRequest, WatchRequest, advance_request,
    create_world_request, watch_response,
};
use dramatis_tests::Cluster;
use serde_json::json;
use tokio_stream::StreamExt as _;

const ANA_KEYED: &str = "ANA-CANARY-KEYED-5521";
const ANA_ALWAYS: &str = "ANA-CANARY-ALWAYS-5522";
const BRAM_KEYED: &str = "BRAM-CANARY-KEYED-7731";
const BRAM_ALWAYS: &str = "BRAM-CANARY-ALWAYS-7732";

fn card(name: &str, keyed: &str, always: &str) -> serde_json::Value {
    json!({
        "spec": "chara_card_v3",
        "spec_version": "3.0",
        "data": {
            "name": name,
            "description": format!("{name} keeps the lighthouse with {{{{user}}}}."),
            "personality": "wary",
            "scenario": "A storm shuts the lighthouse road.",
            "first_mes": format!("*{name} trims the wick.* The lantern holds."),
            "mes_example": format!("<START>\n{{{{user}}}}: Hello.\n{{{{char}}}}: The sea is loud tonight."),
            "alternate_greetings": ["Rain again."],
            "tags": ["lighthouse"],
            "extensions": { "someone/else": { "kept": true } },
            "character_book": {
                "name": format!("{name}'s book"),
                "entries": [
                    { "id": 1, "keys": ["lantern"], "content": format!("{keyed}: the spare lantern is in the cellar."),
                      "enabled": true, "insertion_order": 10, "extensions": { "depth": 4 } },
                    { "id": 2, "keys": [], "content": format!("{always}: {{{{char}}}} swore never to leave the light."),
                      "enabled": true, "constant": true, "insertion_order": 20 }
                ]
            }
        }
    })
}

fn rules() -> Vec<ScriptRule> {
    vec![
        ScriptRule {
            when: vec!["narrator of an open story".into()],
            reply: r#"{"scene_over":false,"event":{"location":"meeting-place","text":"Thunder rolls over the rocks."}}"#.into(),
        },
        ScriptRule {
            when: vec!["Character: Ana".into()],
            reply: r#"{"kind":"speech","target":"","text":"Where did we put the lantern?","thought":"","emotion":"fear","intensity":1,"intent":"find light","goal":"","destination":""}"#.into(),
        },
        ScriptRule {
            when: vec!["Character: Bram".into()],
            reply: r#"{"kind":"speech","target":"","text":"The lantern? Ask the sea.","thought":"","emotion":"anger","intensity":1,"intent":"deflect","goal":"","destination":""}"#.into(),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_cards_books_reach_only_their_own_characters_and_come_back_out() {
    // The scenario is written inside the repository: the world reads files under it.
    let root = tempfile::tempdir_in(dramatis_tests::repo_root()).expect("a folder");
    let (ana, bram) = (root.path().join("ana.json"), root.path().join("bram.json"));
    std::fs::write(&ana, card("Ana", ANA_KEYED, ANA_ALWAYS).to_string()).expect("written");
    std::fs::write(&bram, card("Bram", BRAM_KEYED, BRAM_ALWAYS).to_string()).expect("written");
    let done = dramatis_ingest::card::import(
        &dramatis_ingest::card::CardImport {
            cards: vec![ana.clone(), bram],
            user: "the keeper".into(),
            ..Default::default()
        },
        &root.path().join("story"),
    )
    .expect("imported");
    assert_eq!((done.characters, done.facts), (2, 4));

    let cluster = Cluster::start(&["ana", "bram"], &rules()).await;
    let mut world = cluster.world().await;
    let id = create_from(&mut world, &done.scenario).await;
    world
        .advance(AdvanceRequest {
            world_id: id.clone(),
            until: Some(advance_request::Until::Turns(6)),
        })
        .await
        .expect("advanced");

    for (me, mine, theirs) in [
        ("ana", [ANA_KEYED, ANA_ALWAYS], [BRAM_KEYED, BRAM_ALWAYS]),
        ("bram", [BRAM_KEYED, BRAM_ALWAYS], [ANA_KEYED, ANA_ALWAYS]),
    ] {
        let prompts: Vec<String> = cluster
            .agent(me)
            .model
            .prompts()
            .iter()
            .map(|p| p.text())
            .collect();
        assert!(!prompts.is_empty(), "{me} acted");
        for canary in mine {
            assert!(
                prompts.iter().any(|p| p.contains(canary)),
                "{canary} (its own book) never reached {me}'s prompts"
            );
        }
        // The keyed entry came in by its key: a turn prompt that shows it names the lantern.
        assert!(
            prompts
                .iter()
                .filter(|p| p.contains(mine[0]))
                .all(|p| p.to_lowercase().contains("lantern")),
        );
        for canary in theirs {
            assert!(
                prompts.iter().all(|p| !p.contains(canary)),
                "{canary} reached {me}'s prompts"
            );
            assert!(
                !cluster.shard_text(&id, me).await.contains(canary),
                "{canary} in {me}'s shard"
            );
        }
        // What a watcher sees as this character holds none of the other's book.
        let mut seen = world
            .watch(WatchRequest {
                world_id: id.clone(),
                from_seq: 1,
                no_follow: true,
                pov: me.into(),
            })
            .await
            .expect("watch")
            .into_inner();
        let mut events = 0;
        while let Some(item) = seen.next().await {
            if let Some(watch_response::Item::Event(event)) = item.expect("an item").item {
                events += 1;
                for canary in theirs {
                    assert!(!event.text.contains(canary) && !event.thought.contains(canary));
                }
            }
        }
        assert!(events > 0);
    }
    // Nobody's line carried a canary (the scripted lines hold none): no one can have
    // learned another's book by hearing it.
    assert!(
        cluster
            .narrator
            .prompts()
            .iter()
            .all(|p| [ANA_KEYED, ANA_ALWAYS, BRAM_KEYED, BRAM_ALWAYS]
                .iter()
                .all(|c| !p.text().contains(c))),
        "the narrator saw a character's book"
    );

    ana_comes_back_out(&mut world, &id, &ana).await;
}

/// Ana, exported from the world, is her card again with her own book only.
async fn ana_comes_back_out(
    world: &mut dramatis_proto::v1::world_client::WorldClient<tonic::transport::Channel>,
    id: &str,
    ana: &std::path::Path,
) {
    let view = world
        .export_character(ExportCharacterRequest {
            world_id: id.to_owned(),
            character: "Ana".into(),
        })
        .await
        .expect("exported")
        .into_inner();
    let profile = view.profile.clone().unwrap_or_default();
    assert_eq!(profile.knowledge.len(), 2);
    assert!(profile.knowledge.iter().all(|f| f.text.starts_with("ANA-")));
    let original =
        dramatis_formats::card::read(&std::fs::read(ana).expect("read"), "ana").expect("a card");
    let standing = dramatis_ingest::card::Standing::from_export(&view);
    let back = dramatis_ingest::card::export(&standing);
    for (field, value) in &original.data {
        if field != "character_book" {
            assert_eq!(back.data.get(field), Some(value), "{field}");
        }
    }
    let entries = back.data["character_book"]["entries"]
        .as_array()
        .expect("entries")
        .clone();
    let mut contents: Vec<&str> = entries
        .iter()
        .filter_map(|e| e["content"].as_str())
        .collect();
    contents.sort_unstable();
    assert_eq!(contents.len(), 2);
    assert!(
        contents.iter().all(|c| c.starts_with("ANA-")),
        "{contents:?}"
    );
    assert_eq!(
        entries.iter().find(|e| e["id"] == 1).expect("entry 1")["extensions"]["depth"],
        4
    );
}

/// A world of the scenario file at `path` (under the repository, where the world reads).
async fn create_from(
    world: &mut dramatis_proto::v1::world_client::WorldClient<tonic::transport::Channel>,
    path: &std::path::Path,
) -> String {
    world
        .create_world(CreateWorldRequest {
            source: Some(create_world_request::Source::ScenarioPath(
                path.display().to_string(),
            )),
            world_id: "lighthouse".into(),
            ..Default::default()
        })
        .await
        .expect("created")
        .into_inner()
        .world_id
}
