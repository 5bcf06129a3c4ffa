//! The world service's input limits: each refused with its exact status code and a
//! message that quotes at most a short prefix of what was sent; and a finished world's
//! characters detached when idle, then attached again when asked.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

use std::time::Duration;

use dramatis_proto::v1::{
    ActionKind, AdvanceRequest, AskRequest, CreateWorldRequest, GetWorldRequest, PlayActRequest,
    PlayAction, PlayClaim, SnapshotRequest, advance_request, create_world_request, play_response,
};
use dramatis_tests::{Cluster, assert_refused};
use dramatis_world::Limits;
use tokio_stream::StreamExt as _;
use tonic::Code;

const CAST: [&str; 4] = ["holmes", "lestrade", "stamford", "watson"];

fn scarlet(id: &str) -> CreateWorldRequest {
    CreateWorldRequest {
        source: Some(create_world_request::Source::ScenarioName(
            "study-in-scarlet".into(),
        )),
        world_id: id.into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_limit_is_refused_with_its_code_and_a_short_message() {
    let limits = Limits {
        max_worlds: 2,
        max_seats: 1,
        max_characters: 4,
        max_facts: 5,
        ..Limits::default()
    };
    let cluster = Cluster::start_limited(&CAST, &[], limits).await;
    let mut world = cluster.world().await;
    world
        .create_world(scarlet("w1"))
        .await
        .expect("first world");

    // A world id longer than 64 characters, valid characters or not.
    let long_id = "a".repeat(255);
    assert_refused(
        world.create_world(scarlet(&long_id)).await,
        Code::InvalidArgument,
        "world_id has 255 characters; the limit is 64",
    );
    // Names that do not exist are quoted, never whole.
    assert_refused(
        world
            .get_world(GetWorldRequest {
                world_id: "z".repeat(100_000),
            })
            .await,
        Code::NotFound,
        "… (100000 characters) not found",
    );

    // An open story asking for 4,294,967,295 rounds.
    let path = dramatis_tests::scenarios_dir().join("lamplighters-ledger/scenario.toml");
    let scenario = dramatis_scenario::Scenario::load(&path).expect("shipped sandbox");
    let mut spec = dramatis_scenario::sandbox::scenario_to_spec(&scenario).expect("spec");
    // An inline spec with more characters, or facts, than the service allows: refused
    // before it is read any further (before, a 1 MB spec could hold 53,000 characters,
    // about 5 GB of agent memory).
    let mut too_many_facts = spec.clone();
    while too_many_facts.facts.len() <= 5 {
        let mut fact = too_many_facts.facts[0].clone();
        fact.id = format!("extra-{}", too_many_facts.facts.len());
        too_many_facts.facts.push(fact);
    }
    let mut too_many_people = spec.clone();
    let mut fifth = too_many_people.characters[0].clone();
    fifth.id = "fifth".into();
    too_many_people.characters.push(fifth);
    for (crowded, refusal) in [
        (
            too_many_facts,
            "the sandbox spec has 6 facts; this service allows at most 5 (serve --max-facts)",
        ),
        (
            too_many_people,
            "the sandbox spec has 5 characters; this service allows at most 4 (serve --max-characters)",
        ),
    ] {
        assert_refused(
            world
                .create_world(CreateWorldRequest {
                    source: Some(create_world_request::Source::Sandbox(crowded)),
                    world_id: "crowded".into(),
                    ..Default::default()
                })
                .await,
            Code::ResourceExhausted,
            refusal,
        );
    }
    spec.rounds = u32::MAX;
    assert_refused(
        world
            .create_world(CreateWorldRequest {
                source: Some(create_world_request::Source::Sandbox(spec)),
                world_id: "huge".into(),
                ..Default::default()
            })
            .await,
        Code::InvalidArgument,
        "open.rounds is 4294967295; this service allows at most 1000 (serve --max-rounds)",
    );

    // Too many turns in one Advance.
    assert_refused(
        world
            .advance(AdvanceRequest {
                world_id: "w1".into(),
                until: Some(advance_request::Until::Turns(10_001)),
            })
            .await,
        Code::InvalidArgument,
        "turns is 10001; this service allows at most 10000",
    );

    // A question of 2,001 characters, and one of 2 MB (over the message size).
    let ask = |question: String| AskRequest {
        world_id: "w1".into(),
        character: "holmes".into(),
        question,
        recall_only: true,
        options: Vec::new(),
        as_of: None,
    };
    assert_refused(
        world.ask(ask("why ".repeat(500) + "?")).await,
        Code::InvalidArgument,
        "question has 2001 characters; the limit is 2000",
    );
    assert_refused(
        world.ask(ask("x".repeat(2 * 1024 * 1024))).await,
        Code::OutOfRange,
        "the limit is: 1048576 bytes",
    );
    let snapshot = cluster.snapshot("w1", "holmes").await;
    let stored: usize = snapshot.memory.iter().map(|m| m.text.len()).sum();
    assert!(stored < 100_000, "a refused question is not stored");

    // Worlds: the service holds two.
    world
        .create_world(scarlet("w2"))
        .await
        .expect("second world");
    assert_refused(
        world.create_world(scarlet("w3")).await,
        Code::ResourceExhausted,
        "this service holds 2 worlds, its limit (serve --max-worlds)",
    );

    // Seats: one person per world; a line over 400 characters.
    let claim = |character: &str| PlayClaim {
        world_id: "w1".into(),
        character: character.into(),
        timeout_ms: 5_000,
        from_seq: 1,
    };
    let mut seat = world
        .claim_seat(claim("watson"))
        .await
        .expect("the first seat")
        .into_inner();
    seat.next().await.expect("claimed").expect("ok");
    let Some(play_response::Item::Seat(token)) = seat.next().await.expect("seat").expect("ok").item
    else {
        panic!("the seat token comes second");
    };
    assert_refused(
        world.claim_seat(claim("holmes")).await,
        Code::ResourceExhausted,
        "1 people play in this world already, its limit (serve --max-seats)",
    );
    assert_refused(
        world
            .play_act(PlayActRequest {
                world_id: "w1".into(),
                seat: token,
                action: Some(PlayAction {
                    kind: ActionKind::Speech as i32,
                    text: "I say ".repeat(100),
                    ..PlayAction::default()
                }),
            })
            .await,
        Code::InvalidArgument,
        "action.text has 600 characters; the limit is 400",
    );
}

/// A message that is not the request it claims to be (field 1 of `GetWorldRequest` is
/// a string; this sends a fixed64 there) is the caller's error, not the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_that_do_not_decode_are_invalid_argument() {
    #[derive(Clone, PartialEq, prost::Message)]
    struct NotARequest {
        #[prost(fixed64, tag = "1")]
        field: u64,
    }
    let cluster = Cluster::start(&CAST, &[]).await;
    let channel = tonic::transport::Channel::from_shared(cluster.world_endpoint.clone())
        .expect("uri")
        .connect()
        .await
        .expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/dramatis.v1.World/GetWorld");
    let result: Result<tonic::Response<dramatis_proto::v1::WorldInfo>, _> = grpc
        .unary(
            tonic::Request::new(NotARequest { field: 7 }),
            path,
            dramatis_proto::codec::StrictCodec::default(),
        )
        .await;
    assert_refused(
        result,
        Code::InvalidArgument,
        "the message is not a valid GetWorldRequest",
    );
}

/// With `idle_detach` short, a finished world's characters leave their agents (a
/// snapshot finds none), and an interview brings them back from their saved shards
/// with everything they perceived.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_idle_world_is_detached_and_attached_again_when_asked() {
    let limits = Limits {
        idle_detach: Some(Duration::from_secs(1)),
        ..Limits::default()
    };
    let cluster = Cluster::start_limited(&CAST, &[], limits).await;
    let mut world = cluster.world().await;
    world.create_world(scarlet("idle")).await.expect("world");
    dramatis_tests::advance(&mut world, "idle", advance_request::Until::ScriptEnd(true)).await;
    // A watcher that follows a finished world gets the whole log, then the stream ends.
    let mut follow = world
        .watch(dramatis_proto::v1::WatchRequest {
            world_id: "idle".into(),
            from_seq: 1,
            no_follow: false,
            pov: String::new(),
        })
        .await
        .expect("watch")
        .into_inner();
    let mut seen = 0;
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(item) = follow.message().await.expect("stream") {
            seen += usize::from(matches!(
                item.item,
                Some(dramatis_proto::v1::watch_response::Item::Event(_))
            ));
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "Watch on a finished world ended (after {seen} events)"
    );
    let info = world
        .get_world(GetWorldRequest {
            world_id: "idle".into(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(seen as u64, info.next_seq - 1, "the whole log was sent");
    let before = cluster.snapshot("idle", "holmes").await;
    assert!(before.last_seq > 0, "holmes perceived the story");

    let mut agent = cluster.agent("holmes").client().await;
    detached(&mut agent).await;

    let answer = world
        .ask(AskRequest {
            world_id: "idle".into(),
            character: "holmes".into(),
            question: "Who did you meet at the laboratory?".into(),
            recall_only: true,
            options: Vec::new(),
            as_of: None,
        })
        .await
        .expect("asked after the detach")
        .into_inner();
    assert_eq!(answer.character, "holmes");
    let after = cluster.snapshot("idle", "holmes").await;
    assert_eq!(after.last_seq, before.last_seq, "the shard came back whole");
    assert_eq!(after.memory.len(), before.memory.len());

    // Deleting a sleeping world deletes its shards and their folder.
    detached(&mut agent).await;
    let folder = cluster.data.path().join("agents/holmes/idle");
    assert!(folder.join("holmes.redb").is_file(), "kept while asleep");
    world
        .delete_world(dramatis_proto::v1::DeleteWorldRequest {
            world_id: "idle".into(),
        })
        .await
        .expect("deleted");
    assert!(!folder.exists(), "{} is gone", folder.display());
}

/// Waits (up to 10 s) until holmes of world "idle" is no longer attached to `agent`.
async fn detached(
    agent: &mut dramatis_proto::v1::agent_client::AgentClient<tonic::transport::Channel>,
) {
    let snapshot = || SnapshotRequest {
        character: Some(dramatis_proto::v1::CharacterRef {
            world_id: "idle".into(),
            character_id: "holmes".into(),
        }),
        ..Default::default()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        match agent.snapshot(snapshot()).await {
            Err(status) if status.code() == Code::NotFound => break,
            Ok(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => panic!("holmes was not detached: {other:?}"),
        }
    }
}
