//! Clients that give up: `Advance`, `CreateWorld` and `DeleteWorld` calls cut off by short
//! deadlines at random points (as a client with a deadline, or Ctrl-C on `dramatis
//! advance`, does). Each call's work runs to its end whatever the caller does, so every
//! world stays whole: the story goes on, its log holds each event once and in order, a
//! world whose creation was cut off exists, and one whose deletion was cut off stays
//! gone after a restart.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

mod common;

use std::time::Duration;

use common::{Dice, ledger, serve_scripted};
use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{
    AdvanceRequest, CreateWorldRequest, DeleteWorldRequest, GetWorldRequest, ListWorldsRequest,
    advance_request, create_world_request,
};
use tonic::transport::Channel;
use tonic::{Code, Request};

const STORY: &str = "cut";

fn create(world_id: &str) -> CreateWorldRequest {
    CreateWorldRequest {
        source: Some(create_world_request::Source::ScenarioName(
            "study-in-scarlet".into(),
        )),
        world_id: world_id.into(),
        ..Default::default()
    }
}

/// An open story given inline: its spec is kept as a file beside the log.
fn create_sandbox(world_id: &str) -> CreateWorldRequest {
    CreateWorldRequest {
        source: Some(create_world_request::Source::Sandbox(ledger(2))),
        world_id: world_id.into(),
        ..Default::default()
    }
}

fn turns(n: u32) -> AdvanceRequest {
    AdvanceRequest {
        world_id: STORY.into(),
        until: Some(advance_request::Until::Turns(n)),
    }
}

/// Whether a call ended because its deadline passed (on the client, tonic says
/// Cancelled; the server says DeadlineExceeded).
fn timed_out(status: &tonic::Status) -> bool {
    matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled)
}

/// `message` with a deadline of `ms` milliseconds.
fn cut<T>(message: T, ms: u64) -> Request<T> {
    let mut request = Request::new(message);
    request.set_timeout(Duration::from_millis(ms));
    request
}

/// Whether `world_id` is there, asked until `want` holds (the cut-off call's work may
/// still be running), at most 60 s.
async fn settles(client: &mut WorldClient<Channel>, world_id: &str, want: bool) -> bool {
    for _ in 0..600 {
        let got = client
            .get_world(GetWorldRequest {
                world_id: world_id.into(),
            })
            .await;
        match got {
            Ok(_) if want => return true,
            Err(status) if !want && status.code() == Code::NotFound => return true,
            Ok(_) | Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    false
}

/// The seqs of the story's whole log, replayed.
async fn logged(client: &mut WorldClient<Channel>) -> Vec<u64> {
    common::replay(client, STORY)
        .await
        .iter()
        .map(|e| e.seq)
        .collect()
}

#[tokio::test]
async fn calls_cut_off_by_their_deadlines_leave_every_world_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let data = data.to_str().expect("utf-8");
    let (server, url) = serve_scripted(data).await;
    let mut client = WorldClient::connect(url).await.expect("connect");
    let mut dice = Dice::seeded();
    client.create_world(create(STORY)).await.expect("create");

    // Twenty-five Advance calls given 2 to 60 ms each: most are cut off mid-turn.
    let mut cut_off = 0;
    for _ in 0..25 {
        match client.advance(cut(turns(1), 2 + dice.below(59))).await {
            Ok(_) => {}
            Err(status) if timed_out(&status) => cut_off += 1,
            Err(status) => panic!("an Advance failed otherwise: {status:?}"),
        }
    }
    assert!(
        cut_off > 0,
        "no call was cut off; the deadlines are too long"
    );
    // The story goes on, and its log holds each event once, in order.
    let after = client
        .advance(turns(3))
        .await
        .expect("the world goes on after calls cut off")
        .into_inner();
    // (The script may have ended meanwhile: every cut-off call finished its turn.)
    let seqs = logged(&mut client).await;
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "the log's seqs");
    let info = after.world.expect("world info");
    assert_eq!(info.next_seq, seqs.len() as u64 + 1, "{info:?}");

    // Creations and deletions cut off: each still happens, whole.
    for i in 0..10 {
        let id = format!("made-{i}");
        let created = client
            .create_world(cut(
                if i % 2 == 0 {
                    create(&id)
                } else {
                    create_sandbox(&id)
                },
                2 + dice.below(40),
            ))
            .await;
        assert!(
            created.is_ok() || created.as_ref().is_err_and(timed_out),
            "{created:?}"
        );
        assert!(
            settles(&mut client, &id, true).await,
            "{id} was never created"
        );
        let deleted = client
            .delete_world(cut(
                DeleteWorldRequest {
                    world_id: id.clone(),
                },
                1 + dice.below(10),
            ))
            .await;
        assert!(
            deleted.is_ok() || deleted.as_ref().is_err_and(timed_out),
            "{deleted:?}"
        );
        assert!(
            settles(&mut client, &id, false).await,
            "{id} was never deleted"
        );
    }
    // No shard folders or sandbox files of deleted worlds are left once their deletions
    // end (a world leaves its log and the service's table first, then its characters
    // are detached).
    let left = || -> Vec<String> {
        ["shards", "sandboxes"]
            .iter()
            .flat_map(|d| std::fs::read_dir(std::path::Path::new(data).join(d)))
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("made-"))
            .collect()
    };
    for _ in 0..300 {
        if left().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left().is_empty(), "left of deleted worlds: {:?}", left());

    // After a restart, only the story is there, and it goes on.
    drop(server);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_server, url) = serve_scripted(data).await;
    let mut client = WorldClient::connect(url).await.expect("connect");
    let worlds: Vec<String> = client
        .list_worlds(ListWorldsRequest::default())
        .await
        .expect("list")
        .into_inner()
        .worlds
        .into_iter()
        .map(|w| w.world_id)
        .collect();
    assert_eq!(worlds, [STORY], "worlds after a restart");
    client
        .advance(turns(1))
        .await
        .expect("the story goes on after a restart");
    let seqs = logged(&mut client).await;
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "the log's seqs after a restart");
}

/// Creates a world for each id, all at once.
async fn at_once(
    client: &WorldClient<Channel>,
    ids: impl Iterator<Item = String>,
) -> Vec<Result<tonic::Response<dramatis_proto::v1::WorldInfo>, tonic::Status>> {
    let mut set = tokio::task::JoinSet::new();
    for id in ids {
        let mut client = client.clone();
        set.spawn(async move { client.create_world(create(&id)).await });
    }
    set.join_all().await
}

/// Fifty creations at once against `--max-worlds 4` make four worlds, and ten at once
/// with one id make one; the rest are refused, and no agent of a refused world is left
/// attached (the service's world count says so).
#[tokio::test]
async fn the_world_limit_and_ids_hold_under_concurrent_creations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let (_server, url) =
        common::serve_scripted_with(data.to_str().expect("utf-8"), &["--max-worlds", "4"]).await;
    let client = WorldClient::connect(url).await.expect("connect");
    let results = at_once(&client, (0..50).map(|i| format!("many-{i}"))).await;
    let made = results.iter().filter(|r| r.is_ok()).count();
    let full = results
        .iter()
        .filter(|r| {
            r.as_ref()
                .is_err_and(|s| s.code() == Code::ResourceExhausted)
        })
        .count();
    assert_eq!((made, full), (4, 46), "{results:?}");
    let mut lister = client.clone();
    let listed = lister
        .list_worlds(ListWorldsRequest::default())
        .await
        .expect("list")
        .into_inner()
        .worlds
        .len();
    assert_eq!(listed, 4);

    // One id, ten creations at once (after room is made).
    for w in results.iter().flatten() {
        lister
            .delete_world(DeleteWorldRequest {
                world_id: w.get_ref().world_id.clone(),
            })
            .await
            .expect("delete");
    }
    let results = at_once(&client, (0..10).map(|_| "one-id".to_owned())).await;
    let made = results.iter().filter(|r| r.is_ok()).count();
    let exists = results
        .iter()
        .filter(|r| r.as_ref().is_err_and(|s| s.code() == Code::AlreadyExists))
        .count();
    assert_eq!((made, exists), (1, 9), "{results:?}");
}
