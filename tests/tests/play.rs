//! A person plays a character over `World.Play`: the world waits for their action on
//! that character's turns, the line reaches those present like an agent's, the player
//! receives only what the character perceives, and a late player hands the turn back.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

use std::time::Duration;

use dramatis_proto::v1::{
    ActionKind, AdvanceRequest, EventKind, PlayActRequest, PlayAction, PlayClaim, PlayRequest,
    advance_request, play_request, play_response,
};
use dramatis_tests::Cluster;
use tokio_stream::StreamExt as _;

const CAST: [&str; 4] = ["holmes", "lestrade", "stamford", "watson"];
const PLAYER_CANARY: &str = "PLAYER-CANARY-8817";

/// Opens a Play stream with `claim` as its first message; returns where to send the
/// person's actions and the stream to them.
async fn open_play(
    world: &mut dramatis_proto::v1::world_client::WorldClient<tonic::transport::Channel>,
    claim: PlayRequest,
) -> (
    tokio::sync::mpsc::Sender<PlayRequest>,
    tonic::Streaming<dramatis_proto::v1::PlayResponse>,
) {
    let (requests, inbound) = tokio::sync::mpsc::channel(8);
    requests.send(claim).await.expect("send");
    let stream = world
        .play(tokio_stream::wrappers::ReceiverStream::new(inbound))
        .await
        .expect("play")
        .into_inner();
    (requests, stream)
}

/// Runs the current scene of `world_id` on a task; resolves to its events.
fn scene_in_background(
    world: &dramatis_proto::v1::world_client::WorldClient<tonic::transport::Channel>,
    world_id: &str,
) -> tokio::task::JoinHandle<Vec<dramatis_proto::v1::Event>> {
    let mut driver = world.clone();
    let world_id = world_id.to_owned();
    tokio::spawn(async move {
        driver
            .advance(AdvanceRequest {
                world_id,
                until: Some(advance_request::Until::SceneEnd(true)),
            })
            .await
            .expect("advance")
            .into_inner()
            .events
    })
}

fn claim(world: &str, character: &str, timeout_ms: u32) -> PlayRequest {
    PlayRequest {
        item: Some(play_request::Item::Claim(PlayClaim {
            world_id: world.into(),
            character: character.into(),
            timeout_ms,
            from_seq: 1,
        })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_plays_watson_and_only_those_present_hear_him() {
    let cluster = Cluster::start(&CAST, &[]).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "played").await;

    let (requests, mut stream) = open_play(&mut world, claim(&id, "watson", 5_000)).await;
    let first = stream.next().await.expect("a reply").expect("ok");
    assert_eq!(
        first.item,
        Some(play_response::Item::Claimed("watson".into()))
    );

    // A second person cannot take Watson.
    let (second_tx, second_rx) = tokio::sync::mpsc::channel(1);
    second_tx
        .send(claim(&id, "watson", 1_000))
        .await
        .expect("send");
    let taken = world
        .play(tokio_stream::wrappers::ReceiverStream::new(second_rx))
        .await
        .expect_err("already played");
    assert_eq!(taken.code(), tonic::Code::AlreadyExists);

    // Run the first scene (Watson and Stamford at the Criterion) while playing.
    let advancing = scene_in_background(&world, "played");
    let mut received = Vec::new();
    let mut turns = 0;
    while let Some(message) = stream.next().await {
        match message.expect("stream healthy").item {
            Some(play_response::Item::YourTurn(turn)) => {
                turns += 1;
                let frame = turn.frame.expect("a frame");
                assert_eq!(frame.location_id, "criterion");
                assert!(frame.present.iter().any(|p| p.id == "stamford"));
                requests
                    .send(PlayRequest {
                        item: Some(play_request::Item::Action(PlayAction {
                            kind: ActionKind::Speech as i32,
                            text: format!("I am a person at the keyboard. {PLAYER_CANARY}"),
                            target: "stamford".into(),
                            ..PlayAction::default()
                        })),
                    })
                    .await
                    .expect("send action");
            }
            Some(play_response::Item::Event(event)) => {
                let end = event.kind() == EventKind::SceneEnd;
                received.push(event);
                if end {
                    break;
                }
            }
            _ => {}
        }
    }
    let events = advancing.await.expect("advance task");
    assert_eq!(
        turns, 3,
        "Watson's three turns in a six-turn scene were the person's"
    );
    let his_lines: Vec<_> = events
        .iter()
        .filter(|e| e.speaker == "watson" && e.turn > 0)
        .collect();
    assert_eq!(his_lines.len(), 3);
    assert!(his_lines.iter().all(|e| e.text.contains(PLAYER_CANARY)));
    assert!(
        his_lines
            .iter()
            .all(|e| e.perceivers == ["stamford", "watson"] && e.target == "stamford")
    );
    // The player's stream is exactly what Watson perceived.
    let expected: Vec<u64> = events
        .iter()
        .filter(|e| e.perceivers.iter().any(|p| p == "watson"))
        .map(|e| e.seq)
        .collect();
    let got: Vec<u64> = received.iter().map(|e| e.seq).collect();
    assert_eq!(got, expected);
    // Stamford heard him; Holmes and Lestrade, elsewhere, did not.
    assert!(
        cluster
            .shard_text(&id, "stamford")
            .await
            .contains(PLAYER_CANARY)
    );
    for absent in ["holmes", "lestrade"] {
        assert!(
            !cluster
                .shard_text(&id, absent)
                .await
                .contains(PLAYER_CANARY)
        );
        assert!(
            cluster
                .agent(absent)
                .model
                .prompts()
                .iter()
                .all(|p| !p.text().contains(PLAYER_CANARY))
        );
    }
    // Watson's own agent perceived the person's lines too (it can take over).
    assert!(
        cluster
            .shard_text(&id, "watson")
            .await
            .contains(PLAYER_CANARY)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_player_hands_the_turn_back_to_the_agent() {
    let cluster = Cluster::start(&CAST, &[]).await;
    let mut world = cluster.world().await;
    cluster.create("study-in-scarlet", "late").await;
    let (requests, mut stream) = open_play(&mut world, claim("late", "stamford", 200)).await;
    let events = world
        .advance(AdvanceRequest {
            world_id: "late".into(),
            until: Some(advance_request::Until::Turns(2)),
        })
        .await
        .expect("advance")
        .into_inner()
        .events;
    let stamford_line = events
        .iter()
        .find(|e| e.speaker == "stamford" && e.turn > 0)
        .expect("Stamford spoke");
    assert!(
        stamford_line.text.starts_with("Scripted line"),
        "his agent acted: {}",
        stamford_line.text
    );
    let mut offered = false;
    let mut told = false;
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_secs(2), stream.next()).await
    {
        match message.expect("healthy").item {
            Some(play_response::Item::YourTurn(_)) => offered = true,
            Some(play_response::Item::Notice(n)) if n.contains("agent took this turn") => {
                told = true;
                break;
            }
            _ => {}
        }
    }
    assert!(offered && told, "offered {offered}, told {told}");
    drop(requests);
}

/// Browsers cannot stream requests: `ClaimSeat` opens the seat's stream and gives a
/// token, `PlayAct` sends each action with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_claimed_without_a_request_stream_plays_through_play_act() {
    let cluster = Cluster::start(&CAST, &[]).await;
    let mut world = cluster.world().await;
    cluster.create("study-in-scarlet", "seated").await;
    let seat_claim = PlayClaim {
        world_id: "seated".into(),
        character: "John Watson".into(),
        timeout_ms: 5_000,
        from_seq: 1,
    };
    let mut stream = world
        .claim_seat(seat_claim.clone())
        .await
        .expect("claim")
        .into_inner();
    let claimed = stream.next().await.expect("reply").expect("ok").item;
    assert_eq!(claimed, Some(play_response::Item::Claimed("watson".into())));
    let Some(play_response::Item::Seat(seat)) =
        stream.next().await.expect("reply").expect("ok").item
    else {
        panic!("the second message is the seat token");
    };
    let act = |seat: &str, text: &str| PlayActRequest {
        world_id: "seated".into(),
        seat: seat.into(),
        action: Some(PlayAction {
            kind: ActionKind::Speech as i32,
            text: text.into(),
            target: "stamford".into(),
            ..PlayAction::default()
        }),
    };
    // Out of turn, with a wrong token, in another world, or with no action.
    let early = world
        .play_act(act(&seat, "Too soon."))
        .await
        .expect_err("not yet");
    assert_eq!(early.code(), tonic::Code::FailedPrecondition, "{early:?}");
    let unknown = world
        .play_act(act("no-such-seat", "Hello."))
        .await
        .expect_err("unknown");
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    let mut elsewhere = act(&seat, "Hello.");
    elsewhere.world_id = "another".into();
    assert_eq!(
        world
            .play_act(elsewhere)
            .await
            .expect_err("other world")
            .code(),
        tonic::Code::NotFound
    );
    let mut empty = act(&seat, "");
    empty.action = None;
    assert_eq!(
        world.play_act(empty).await.expect_err("no action").code(),
        tonic::Code::InvalidArgument
    );

    let advancing = scene_in_background(&world, "seated");
    let mut turns = 0;
    let mut received = Vec::new();
    while let Some(message) = stream.next().await {
        match message.expect("healthy").item {
            Some(play_response::Item::YourTurn(_)) => {
                turns += 1;
                world
                    .play_act(act(&seat, &format!("Typed in a browser, turn {turns}.")))
                    .await
                    .expect("accepted on my turn");
            }
            Some(play_response::Item::Event(event)) => {
                let end = event.kind() == EventKind::SceneEnd;
                received.push(event.seq);
                if end {
                    break;
                }
            }
            _ => {}
        }
    }
    let events = advancing.await.expect("advance task");
    let his: Vec<&str> = events
        .iter()
        .filter(|e| e.speaker == "watson" && e.turn > 0)
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(
        his,
        [
            "Typed in a browser, turn 1.",
            "Typed in a browser, turn 2.",
            "Typed in a browser, turn 3."
        ]
    );
    let perceived: Vec<u64> = events
        .iter()
        .filter(|e| e.perceivers.iter().any(|p| p == "watson"))
        .map(|e| e.seq)
        .collect();
    assert_eq!(received, perceived);

    // Closing the stream frees the seat and retires the token.
    drop(stream);
    let mut reclaimed = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if let Ok(response) = world.claim_seat(seat_claim.clone()).await {
            reclaimed = Some(response.into_inner());
            break;
        }
    }
    let mut reclaimed = reclaimed.expect("the seat was freed");
    let stale = world
        .play_act(act(&seat, "Still here?"))
        .await
        .expect_err("retired");
    assert_eq!(stale.code(), tonic::Code::NotFound);

    // Deleting the world closes its seats: a last notice, then the stream ends.
    world
        .delete_world(dramatis_proto::v1::DeleteWorldRequest {
            world_id: "seated".into(),
        })
        .await
        .expect("deleted");
    let mut notices = Vec::new();
    let mut ended = false;
    while let Ok(next) = tokio::time::timeout(Duration::from_secs(5), reclaimed.next()).await {
        match next {
            Some(message) => {
                if let Some(play_response::Item::Notice(notice)) = message.expect("healthy").item {
                    notices.push(notice);
                }
            }
            None => {
                ended = true;
                break;
            }
        }
    }
    assert!(ended, "the seat's stream ended; notices: {notices:?}");
    assert_eq!(
        notices.last().map(String::as_str),
        Some("This world was deleted; your seat is closed.")
    );
}
