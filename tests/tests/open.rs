//! An open story (the shipped sandbox) end to end: the narrator proposes events, a
//! character travels (and is nowhere for the journey), scenes happen where people are,
//! and nobody perceives an event at a place they were not at.

use std::collections::BTreeMap;

use dramatis_llm::ScriptRule;
use dramatis_proto::v1::{
    AdvanceRequest, CharacterRef, CreateWorldRequest, Event, EventKind, SnapshotRequest,
    advance_request, create_world_request,
};
use dramatis_tests::Cluster;

const CAST: [&str; 4] = ["ada", "coyle", "tom", "varga"];
const NARRATOR_CANARY: &str = "NARRATOR-CANARY-3391";

fn rules() -> Vec<ScriptRule> {
    vec![
        ScriptRule {
            when: vec!["narrator of an open story".into()],
            reply: format!(
                r#"{{"scene_over":false,"event":{{"location":"police-station","text":"A runner bursts in with a note: {NARRATOR_CANARY}."}}}}"#
            ),
        },
        ScriptRule {
            when: vec!["Character: Tom Reddy".into(), "You can go to:".into()],
            reply: r#"{"kind":"move","target":"","text":"Tom slips off toward the river.","thought":"","emotion":"fear","intensity":2,"intent":"hide","goal":"reach the barge","destination":"river-steps"}"#.into(),
        },
    ]
}

/// Where each character is (None: on the road), from the scenario's start.
fn starting_places() -> BTreeMap<String, Option<String>> {
    [
        ("ada", "gasworks-lane"),
        ("coyle", "police-station"),
        ("tom", "gasworks-lane"),
        ("varga", "police-station"),
    ]
    .into_iter()
    .map(|(c, l)| (c.to_owned(), Some(l.to_owned())))
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_story_moves_people_and_tells_each_only_what_happens_where_they_are() {
    let cluster = Cluster::start(&CAST, &rules()).await;
    let mut world = cluster.world().await;
    let id = cluster.create("lamplighters-ledger", "sandbox").await;
    let events: Vec<Event> = world
        .advance(AdvanceRequest {
            world_id: id.clone(),
            until: Some(advance_request::Until::ScriptEnd(true)),
        })
        .await
        .expect("advanced")
        .into_inner()
        .events;
    let rounds = events
        .iter()
        .filter(|e| e.kind() == EventKind::SceneStart)
        .count();
    assert_eq!(rounds, 6, "one scene per round");

    // Tom set off (distance 1) and arrived one round later; he was nowhere between.
    let departure = events
        .iter()
        .find(|e| e.kind() == EventKind::Movement && e.speaker == "tom" && e.travel_rounds > 0)
        .expect("Tom set off");
    assert_eq!(
        (departure.location.as_str(), departure.destination.as_str()),
        ("gasworks-lane", "river-steps")
    );
    assert_eq!(departure.travel_rounds, 1);
    let arrival = events
        .iter()
        .find(|e| {
            e.kind() == EventKind::Movement
                && e.speaker == "tom"
                && e.travel_rounds == 0
                && e.seq > departure.seq
        })
        .expect("Tom arrived");
    assert_eq!(arrival.location, "river-steps");
    assert_eq!(
        arrival.scene_index,
        departure.scene_index + 1,
        "the journey took one round"
    );
    assert!(
        events
            .iter()
            .filter(|e| e.seq > departure.seq && e.seq < arrival.seq)
            .all(|e| !e.perceivers.contains(&"tom".to_owned())),
        "on the road, Tom perceives nothing"
    );

    // Scenes happened at several places.
    let mut places: Vec<&str> = events
        .iter()
        .filter(|e| e.kind() == EventKind::SceneStart)
        .map(|e| e.location.as_str())
        .collect();
    places.sort_unstable();
    places.dedup();
    assert!(places.len() >= 2, "{places:?}");

    // Nobody perceives an event at a place they are not at (the arriving traveller
    // excepted, who perceives his own arrival).
    let mut at = starting_places();
    for event in &events {
        for who in &event.perceivers {
            let here = at.get(who).cloned().flatten();
            let arriving = event.kind() == EventKind::Movement
                && event.travel_rounds == 0
                && &event.speaker == who;
            assert!(
                arriving || here.as_deref() == Some(event.location.as_str()),
                "{who} at {here:?} perceived event {} at {}",
                event.seq,
                event.location
            );
        }
        if event.kind() == EventKind::Movement {
            let place = (event.travel_rounds == 0).then(|| event.location.clone());
            at.insert(event.speaker.clone(), place);
        }
    }

    // The narrator's event reached only those at the police station.
    let told = events
        .iter()
        .find(|e| e.kind() == EventKind::Narration && e.text.contains(NARRATOR_CANARY))
        .expect("the narrator's event happened");
    assert_eq!(told.location, "police-station");
    assert_eq!(told.perceivers, ["coyle", "varga"]);
    assert!(cluster.narrator.calls() >= 1);
    for character in CAST {
        let snapshot = cluster.snapshot(&id, character).await;
        let knows = snapshot
            .memory
            .iter()
            .any(|m| m.text.contains(NARRATOR_CANARY));
        let prompted = cluster
            .agent(character)
            .model
            .prompts()
            .iter()
            .any(|p| p.text().contains(NARRATOR_CANARY));
        let there = ["coyle", "varga"].contains(&character);
        assert_eq!(knows, there, "{character}'s shard");
        assert!(!prompted || there, "{character}'s prompts");
    }
}

fn ledger_spec() -> dramatis_proto::v1::SandboxSpec {
    let path = dramatis_tests::scenarios_dir().join("lamplighters-ledger/scenario.toml");
    let scenario = dramatis_scenario::Scenario::load(&path).expect("shipped sandbox");
    dramatis_scenario::sandbox::scenario_to_spec(&scenario).expect("an open story")
}

async fn create_inline(
    world: &mut dramatis_proto::v1::world_client::WorldClient<tonic::transport::Channel>,
    id: &str,
    spec: dramatis_proto::v1::SandboxSpec,
) -> Result<String, tonic::Status> {
    world
        .create_world(CreateWorldRequest {
            source: Some(create_world_request::Source::Sandbox(spec)),
            world_id: id.into(),
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner().world_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxes_run_side_by_side_and_deleting_one_leaves_the_others_alone() {
    let cluster = Cluster::start(&CAST, &[]).await;
    let mut world = cluster.world().await;
    for id in ["s1", "s2", "s3"] {
        assert_eq!(
            create_inline(&mut world, id, ledger_spec())
                .await
                .expect("created"),
            id
        );
    }
    // A bad inline spec is refused, naming the field.
    let mut bad = ledger_spec();
    bad.characters[0].location = "attic".into();
    let refused = create_inline(&mut world, "bad", bad)
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(
        refused.message().contains("characters[0].location"),
        "{}",
        refused.message()
    );

    // s2 is mid-story when it is deleted while s1 and s3 run to their ends.
    let advance = |id: &'static str, until: advance_request::Until| {
        let mut client = world.clone();
        async move {
            client
                .advance(AdvanceRequest {
                    world_id: id.into(),
                    until: Some(until),
                })
                .await
                .map(|r| r.into_inner().events)
        }
    };
    let s2_start = advance("s2", advance_request::Until::Turns(3))
        .await
        .expect("s2 started");
    assert!(s2_start.iter().any(|e| e.turn > 0));
    let mut deleter = world.clone();
    let (s1, s3, deleted) = tokio::join!(
        advance("s1", advance_request::Until::ScriptEnd(true)),
        advance("s3", advance_request::Until::ScriptEnd(true)),
        deleter.delete_world(dramatis_proto::v1::DeleteWorldRequest {
            world_id: "s2".into()
        }),
    );
    deleted.expect("s2 deleted");
    for events in [s1.expect("s1 ran"), s3.expect("s3 ran")] {
        let rounds = events
            .iter()
            .filter(|e| e.kind() == EventKind::SceneStart)
            .count();
        assert_eq!(rounds, 6, "the others run all their rounds");
    }
    let gone = world
        .get_world(dramatis_proto::v1::GetWorldRequest {
            world_id: "s2".into(),
        })
        .await
        .expect_err("s2 is gone");
    assert_eq!(gone.code(), tonic::Code::NotFound);
    for character in CAST {
        let mut agent = cluster.agent(character).client().await;
        let snapshot = |world: &str| SnapshotRequest {
            character: Some(CharacterRef {
                world_id: world.into(),
                character_id: character.into(),
            }),
            ..Default::default()
        };
        let freed = agent.snapshot(snapshot("s2")).await.expect_err("detached");
        assert_eq!(freed.code(), tonic::Code::NotFound, "{character} in s2");
        let kept = agent
            .snapshot(snapshot("s1"))
            .await
            .expect("still attached");
        assert!(kept.into_inner().last_seq > 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inline_sandbox_survives_a_restart_of_the_world_service() {
    let mut cluster = Cluster::start(&CAST, &[]).await;
    let mut world = cluster.world().await;
    create_inline(&mut world, "kept", ledger_spec())
        .await
        .expect("created");
    let before = world
        .advance(AdvanceRequest {
            world_id: "kept".into(),
            until: Some(advance_request::Until::Turns(3)),
        })
        .await
        .expect("advanced")
        .into_inner()
        .events;
    cluster.restart_world().await;
    let mut world = cluster.world().await;
    let info = world
        .get_world(dramatis_proto::v1::GetWorldRequest {
            world_id: "kept".into(),
        })
        .await
        .expect("restored")
        .into_inner();
    assert_eq!(info.title, "The Lamplighter's Ledger");
    assert_eq!(info.next_seq, before.last().expect("events").seq + 1);
    let rest = world
        .advance(AdvanceRequest {
            world_id: "kept".into(),
            until: Some(advance_request::Until::ScriptEnd(true)),
        })
        .await
        .expect("advanced after the restart")
        .into_inner()
        .events;
    assert_eq!(
        rest.first().map(|e| e.seq),
        Some(info.next_seq),
        "no gap, no repeat"
    );
    let rounds = before
        .iter()
        .chain(&rest)
        .filter(|e| e.kind() == EventKind::SceneStart)
        .count();
    assert_eq!(rounds, 6);
}

/// The narrator's proposal for the next round is made at a judgement and told at the
/// next round's start; a restart in between must neither lose it nor tell it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_narrators_next_event_survives_a_restart() {
    let mut cluster = Cluster::start(&CAST, &rules()).await;
    let id = cluster.create("lamplighters-ledger", "noted").await;
    let scene_end = || AdvanceRequest {
        world_id: "noted".into(),
        until: Some(advance_request::Until::SceneEnd(true)),
    };
    let told = |events: &[Event]| {
        events
            .iter()
            .filter(|e| e.kind() == EventKind::Narration && e.text.contains(NARRATOR_CANARY))
            .map(|e| (e.scene_index, e.location.clone()))
            .collect::<Vec<_>>()
    };
    // Round 1 ends with Ada alone (no judgement); round 2's scene is judged, and the
    // narrator proposes an event for round 3.
    let mut world = cluster.world().await;
    let mut before = Vec::new();
    for _ in 0..2 {
        before.extend(
            world
                .advance(scene_end())
                .await
                .expect("round")
                .into_inner()
                .events,
        );
    }
    assert!(told(&before).is_empty(), "proposed, not yet told");
    let calls = |events: &[Event]| -> u32 {
        events
            .iter()
            .filter_map(|e| e.usage.as_ref())
            .map(|u| u.llm_calls)
            .sum()
    };

    cluster.restart_world().await;
    let mut world = cluster.world().await;
    let after = world
        .advance(scene_end())
        .await
        .expect("round 3 after the restart")
        .into_inner()
        .events;
    assert_eq!(told(&after), [(3, "police-station".to_owned())]);
    // Every call is counted once, the narrator's included.
    let info = world
        .get_world(dramatis_proto::v1::GetWorldRequest {
            world_id: id.clone(),
        })
        .await
        .expect("world")
        .into_inner();
    assert_eq!(
        info.usage.expect("usage").llm_calls,
        calls(&before) + calls(&after)
    );
    // Restarting after it was told does not tell it again.
    cluster.restart_world().await;
    let mut world = cluster.world().await;
    let last = world
        .advance(scene_end())
        .await
        .expect("round 4")
        .into_inner()
        .events;
    assert!(
        told(&last).iter().all(|(round, _)| *round == 4),
        "round 3's event told again: {:?}",
        told(&last)
    );
}

/// The narrator sees the whole world; what it proposes is told at one place. A proposal
/// that names someone who is not there, or repeats a fact someone there does not know
/// (here, Tom's hiding place, proposed at the police station), is refused by the
/// boundary guard: no event carries it, and the story goes on. Before, the narrator's
/// text was delivered as it came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_narrators_words_pass_the_boundary_guard() {
    const LEAK: &str = "rope locker";
    let rules = vec![ScriptRule {
        when: vec!["narrator of an open story".into()],
        reply: r#"{"scene_over":false,"event":{"location":"police-station","text":"A boatman swears a small black book full of names and sums lies in a barge's rope locker."}}"#.into(),
    }];
    let cluster = Cluster::start(&CAST, &rules).await;
    let mut world = cluster.world().await;
    let id = cluster.create("lamplighters-ledger", "guarded").await;
    let events: Vec<Event> = world
        .advance(AdvanceRequest {
            world_id: id.clone(),
            until: Some(advance_request::Until::ScriptEnd(true)),
        })
        .await
        .expect("the story goes on without the proposal")
        .into_inner()
        .events;
    assert!(cluster.narrator.calls() >= 1, "the narrator was asked");
    let rounds = events
        .iter()
        .filter(|e| e.kind() == EventKind::SceneStart)
        .count();
    assert_eq!(rounds, 6, "one scene per round");
    let leaked: Vec<u64> = events
        .iter()
        .filter(|e| e.text.contains(LEAK))
        .map(|e| e.seq)
        .collect();
    assert!(leaked.is_empty(), "events {leaked:?} told Tom's secret");
    for character in ["coyle", "varga"] {
        let snapshot = cluster.snapshot(&id, character).await;
        assert!(
            snapshot.memory.iter().all(|m| !m.text.contains(LEAK)),
            "{character} holds Tom's secret"
        );
    }
}
