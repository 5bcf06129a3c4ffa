//! A character's shard damaged while `dramatis serve` was down. A store whose bytes
//! are broken is set aside by its agent and the shard rebuilt from the world's log, so
//! the world comes back whole. A store that cannot be read for another reason (here one
//! written by a newer build) leaves its world FAILED: shown with why, refused to
//! advance, deletable, and rebuilt by a later call once the cause is gone.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{agent_pids, replay, scarlet, serve_scripted_with, shard_seqs};
use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{
    AdvanceRequest, DeleteWorldRequest, Event, GetWorldRequest, ListWorldsRequest, WorldInfo,
    WorldStatus, advance_request,
};
use redb::ReadableDatabase as _;
use tonic::transport::Channel;

/// One agent per character, so each shard's file belongs to one process.
const AGENTS: &[&str] = &["--agents", "character"];

async fn connect(url: &str) -> WorldClient<Channel> {
    WorldClient::connect(url.to_owned())
        .await
        .expect("service reachable")
}

async fn advance(
    world: &mut WorldClient<Channel>,
    id: &str,
    turns: u32,
) -> Result<(), tonic::Status> {
    world
        .advance(AdvanceRequest {
            world_id: id.into(),
            until: Some(advance_request::Until::Turns(turns)),
        })
        .await
        .map(|_| ())
}

async fn info(world: &mut WorldClient<Channel>, id: &str) -> Result<WorldInfo, tonic::Status> {
    world
        .get_world(GetWorldRequest {
            world_id: id.into(),
        })
        .await
        .map(tonic::Response::into_inner)
}

/// Stops the service on `data` as an operator does (SIGTERM), and waits for it and its
/// agents to end.
async fn stop(mut server: tokio::process::Child, data: &Path) {
    if let Some(pid) = server.id().and_then(|p| i32::try_from(p).ok()) {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).expect("pid"),
            rustix::process::Signal::TERM,
        );
    }
    tokio::time::timeout(Duration::from_secs(60), server.wait())
        .await
        .expect("serve stopped within a minute")
        .expect("serve stopped");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !agent_pids(&data.join("shards")).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "agents outlived their service"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn shards(data: &Path, world: &str) -> PathBuf {
    data.join("shards").join(world)
}

/// Each character's shard holds exactly the events of `log` that it perceived.
fn assert_shards_hold(log: &[Event], folder: &Path, what: &str) {
    let held = shard_seqs(folder);
    assert!(held.contains_key("watson"), "{what}: {:?}", held.keys());
    for (character, seqs) in held {
        let perceived: Vec<u64> = log
            .iter()
            .filter(|e| e.perceivers.contains(&character))
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, perceived, "{what}: {character}'s shard");
    }
}

fn files_in(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_whose_bytes_are_broken_is_rebuilt_from_the_log_when_its_world_comes_back() {
    let data = tempfile::tempdir().expect("temp dir");
    let dir = data.path().to_string_lossy().into_owned();
    let (server, url) = serve_scripted_with(&dir, AGENTS).await;
    let mut world = connect(&url).await;
    world.create_world(scarlet("torn")).await.expect("create");
    advance(&mut world, "torn", 10).await.expect("ten turns");
    let before = info(&mut world, "torn").await.expect("info");
    let log = replay(&mut world, "torn").await;
    let watson_saw = log
        .iter()
        .filter(|e| e.perceivers.iter().any(|p| p == "watson"))
        .count();
    assert!(watson_saw >= 5, "Watson perceived {watson_saw} events");
    stop(server, data.path()).await;

    // Watson's store loses its header.
    let folder = shards(data.path(), "torn");
    let store = folder.join("watson.redb");
    let mut bytes = std::fs::read(&store).expect("Watson's store");
    bytes[..4096].fill(0xA5);
    std::fs::write(&store, &bytes).expect("damaged");

    let (server, url) = serve_scripted_with(&dir, AGENTS).await;
    let mut world = connect(&url).await;
    let after = info(&mut world, "torn")
        .await
        .expect("the world is back after the restart");
    assert_eq!(after.status(), WorldStatus::Ready, "{:?}", after.failure);
    assert_eq!(after.next_seq, before.next_seq, "the log is whole");
    // Rebuilt at the restart, before any call needed it: Watson's new store holds every
    // event it perceived, and the broken one is kept beside it.
    assert_shards_hold(&log, &folder, "after the restart");
    let names = files_in(&folder);
    assert_eq!(
        names
            .iter()
            .filter(|n| n.starts_with("watson.redb.corrupt-"))
            .count(),
        1,
        "the damaged store is kept: {names:?}"
    );

    // The story goes on, and every shard keeps up.
    advance(&mut world, "torn", 4)
        .await
        .expect("four more turns");
    let log = replay(&mut world, "torn").await;
    assert!(
        log.len() as u64 >= before.next_seq + 3,
        "{} events",
        log.len()
    );
    assert_shards_hold(&log, &folder, "four turns later");

    // Deleting the world removes every shard, the set-aside copy included.
    world
        .delete_world(DeleteWorldRequest {
            world_id: "torn".into(),
        })
        .await
        .expect("delete");
    assert!(!folder.exists(), "left behind: {:?}", files_in(&folder));
    stop(server, data.path()).await;
}

/// Rewrites `store`'s state row as a newer build would have written it (format 999).
fn from_a_newer_build(store: &Path) {
    const CORE: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("core");
    // An agent drops its lock file a moment before its process lets go of its stores.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let db = loop {
        match redb::Database::open(store) {
            Err(redb::DatabaseError::DatabaseAlreadyOpen)
                if std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            opened => break opened.expect("a store"),
        }
    };
    let state: serde_json::Value = {
        let read = db.begin_read().expect("read");
        let core = read.open_table(CORE).expect("core");
        let row = core.get("state").expect("get").expect("a state row");
        serde_json::from_slice(row.value()).expect("JSON")
    };
    let mut state = state;
    state["format"] = serde_json::json!(999);
    let write = db.begin_write().expect("write");
    {
        let mut core = write.open_table(CORE).expect("core");
        let bytes = serde_json::to_vec(&state).expect("JSON");
        core.insert("state", bytes.as_slice()).expect("insert");
    }
    write.commit().expect("commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_world_that_cannot_be_rebuilt_is_shown_failed_can_be_deleted_and_comes_back_once_fixed() {
    let data = tempfile::tempdir().expect("temp dir");
    let dir = data.path().to_string_lossy().into_owned();
    let (server, url) = serve_scripted_with(&dir, AGENTS).await;
    let mut world = connect(&url).await;
    let mut next_seq = std::collections::BTreeMap::new();
    for id in ["stuck", "doomed"] {
        world.create_world(scarlet(id)).await.expect("create");
        advance(&mut world, id, 6).await.expect("six turns");
        next_seq.insert(id, info(&mut world, id).await.expect("info").next_seq);
    }
    stop(server, data.path()).await;
    for id in ["stuck", "doomed"] {
        from_a_newer_build(&shards(data.path(), id).join("watson.redb"));
    }

    let (server, url) = serve_scripted_with(&dir, AGENTS).await;
    let mut world = connect(&url).await;
    // Shown, with why, and what the log says of it.
    let stuck = info(&mut world, "stuck")
        .await
        .expect("a failed world is shown");
    assert_eq!(stuck.status(), WorldStatus::Failed);
    assert!(
        stuck.failure.contains("watson") && stuck.failure.contains("format 999"),
        "{}",
        stuck.failure
    );
    assert_eq!(
        stuck.title, "A Study in Scarlet — the opening",
        "read from its scenario"
    );
    assert_eq!(stuck.next_seq, next_seq["stuck"], "read from its log");
    let listed = world
        .list_worlds(ListWorldsRequest {})
        .await
        .expect("list")
        .into_inner()
        .worlds;
    let listed: Vec<(&str, WorldStatus)> = listed
        .iter()
        .map(|w| (w.world_id.as_str(), w.status()))
        .collect();
    assert_eq!(
        listed,
        vec![
            ("doomed", WorldStatus::Failed),
            ("stuck", WorldStatus::Failed)
        ]
    );
    // Refused with the reason, not lost.
    let refused = advance(&mut world, "stuck", 1).await.expect_err("refused");
    assert_eq!(
        refused.code(),
        tonic::Code::FailedPrecondition,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("could not be rebuilt"),
        "{refused:?}"
    );
    let taken = world
        .create_world(scarlet("stuck"))
        .await
        .expect_err("its id is taken");
    assert_eq!(taken.code(), tonic::Code::AlreadyExists);

    // The command line shows why.
    let (ok, out, err) = common::dramatis(&["worlds", "--server", &url]).await;
    assert!(ok, "{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("stuck\t"))
        .unwrap_or_else(|| panic!("no line for stuck in:\n{out}"));
    assert!(
        line.contains("FAILED: ") && line.contains("format 999"),
        "{line}"
    );

    // Deleted (from the command line): from the service, its log and its agents'
    // folders.
    let (ok, _, err) = common::dramatis(&["delete", "doomed", "--server", &url]).await;
    assert!(ok, "a failed world can be deleted: {err}");
    let gone = info(&mut world, "doomed").await.expect_err("gone");
    assert_eq!(gone.code(), tonic::Code::NotFound);
    let folder = shards(data.path(), "doomed");
    assert!(!folder.exists(), "left behind: {:?}", files_in(&folder));
    world
        .create_world(scarlet("doomed"))
        .await
        .expect("its id is free again");

    // The operator removes the store the newer build wrote; a later call rebuilds the
    // world, and Watson's shard from the log.
    std::fs::remove_file(shards(data.path(), "stuck").join("watson.redb")).expect("removed");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match advance(&mut world, "stuck", 1).await {
            Ok(()) => break,
            Err(status) if status.code() == tonic::Code::FailedPrecondition => {
                if tokio::time::Instant::now() >= deadline {
                    let log =
                        std::fs::read_to_string(data.path().join("serve.log")).unwrap_or_default();
                    std::fs::write("/tmp/damaged_serve.log", &log).ok();
                    panic!("not rebuilt within 30 s: {status:?}");
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(status) => panic!("{status:?}"),
        }
    }
    let stuck = info(&mut world, "stuck").await.expect("info");
    assert_eq!(stuck.status(), WorldStatus::Ready);
    assert!(stuck.next_seq > next_seq["stuck"], "the story went on");
    let log = replay(&mut world, "stuck").await;
    assert_shards_hold(&log, &shards(data.path(), "stuck"), "once rebuilt");
    stop(server, data.path()).await;
}
