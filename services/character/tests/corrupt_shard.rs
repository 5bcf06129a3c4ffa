//! A shard store whose bytes are damaged (a header overwritten, a file cut short, a row
//! that no longer decodes) is set aside, not fatal: the character attaches with a new,
//! empty shard that says it holds nothing (`last_seq` 0), so its world sends it its
//! story again from the log. The damaged file is kept beside it for a post-mortem, and
//! goes when the character's shard is deleted, attached or not.

mod common;

use std::path::{Path, PathBuf};

use dramatis_proto::v1::agent_client::AgentClient;
use dramatis_proto::v1::{
    AttachRequest, AttachResponse, CharacterProfile, CharacterRef, DetachRequest, Event, EventKind,
    PerceiveRequest,
};
use dramatis_runtime::Shutdown;
use redb::{ReadableDatabase as _, ReadableTable as _};

const WORLD: &str = "torn";

type Client = AgentClient<tonic::transport::Channel>;

async fn agent_on(data_dir: &std::path::Path, shutdown: &Shutdown) -> common::Served {
    common::agent_on(data_dir, shutdown, None).await
}

fn watson() -> CharacterRef {
    CharacterRef {
        world_id: WORLD.into(),
        character_id: "watson".into(),
    }
}

async fn attach(agent: &mut Client) -> AttachResponse {
    agent
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
        .into_inner()
}

fn lines(seqs: std::ops::RangeInclusive<u64>) -> Vec<Event> {
    seqs.map(|seq| Event {
        seq,
        world_id: WORLD.into(),
        scene_id: "s1".into(),
        speaker: "holmes".into(),
        kind: EventKind::Speech as i32,
        text: format!("Holmes says line {seq}."),
        perceivers: vec!["holmes".into(), "watson".into()],
        ..Event::default()
    })
    .collect()
}

async fn perceive(agent: &mut Client, seqs: std::ops::RangeInclusive<u64>) -> (u32, u64) {
    let answer = agent
        .perceive(PerceiveRequest {
            character: Some(watson()),
            events: lines(seqs),
        })
        .await
        .expect("perceive")
        .into_inner();
    (answer.accepted, answer.last_seq)
}

fn store(data: &Path) -> PathBuf {
    data.join(WORLD).join("watson.redb")
}

/// The copies of Watson's store that were set aside.
fn set_aside(data: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(data.join(WORLD))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("watson.redb.corrupt-"))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found
}

/// Watson with six lines saved, by an agent that then stopped cleanly.
async fn saved_watson(data: &Path) {
    let shutdown = Shutdown::new();
    let (mut agent, served) = agent_on(data, &shutdown).await;
    assert_eq!(attach(&mut agent).await.last_seq, 0);
    assert_eq!(perceive(&mut agent, 1..=6).await, (6, 6));
    shutdown.trigger();
    drop(agent);
    served.await.expect("joined").expect("stopped cleanly");
}

/// Damage done to a saved store.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// Its first 4 KiB (redb's header) overwritten.
    Header,
    /// Cut to half its length.
    Truncated,
    /// A row rewritten with bytes that are not the JSON the agent wrote.
    Row,
}

/// The agent's table of small state, and the row written over its state.
const CORE: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("core");
const BROKEN_STATE: &[u8] = b"{\"format\": ";

fn damage(path: &Path, how: Damage) {
    match how {
        Damage::Header => {
            let mut bytes = std::fs::read(path).expect("read store");
            let end = bytes.len().min(4096);
            bytes[..end].fill(0xA5);
            std::fs::write(path, bytes).expect("write store");
        }
        Damage::Truncated => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .expect("open store");
            let len = file.metadata().expect("metadata").len();
            file.set_len(len / 2).expect("truncate");
        }
        Damage::Row => {
            let db = redb::Database::open(path).expect("a store");
            let write = db.begin_write().expect("write");
            {
                let mut core = write.open_table(CORE).expect("core table");
                let held = core.get("state").expect("read").is_some();
                assert!(held, "the saved shard has a state row");
                core.insert("state", BROKEN_STATE).expect("insert");
            }
            write.commit().expect("commit");
        }
    }
}

#[tokio::test]
async fn a_store_with_its_header_overwritten_is_set_aside_and_the_character_starts_over() {
    set_aside_and_started_over(Damage::Header).await;
}

#[tokio::test]
async fn a_store_cut_short_is_set_aside_and_the_character_starts_over() {
    set_aside_and_started_over(Damage::Truncated).await;
}

#[tokio::test]
async fn a_store_whose_state_row_does_not_decode_is_set_aside_and_the_character_starts_over() {
    set_aside_and_started_over(Damage::Row).await;
}

async fn set_aside_and_started_over(how: Damage) {
    let data = tempfile::tempdir().expect("tempdir");
    saved_watson(data.path()).await;
    let path = store(data.path());
    damage(&path, how);
    let damaged = std::fs::read(&path).expect("damaged store");

    let shutdown = Shutdown::new();
    let (mut agent, _served) = agent_on(data.path(), &shutdown).await;
    let attached = attach(&mut agent).await;
    assert!(
        !attached.resumed,
        "{how:?}: nothing was read from the damaged store"
    );
    assert_eq!(
        attached.last_seq, 0,
        "{how:?}: the world is told to send everything"
    );
    let aside = set_aside(data.path());
    assert_eq!(aside.len(), 1, "{how:?}: the damaged store is kept once");
    let kept = std::fs::read(&aside[0]).expect("set-aside copy");
    if matches!(how, Damage::Row) {
        // redb opened it (it is a store) and may have compacted it on close: it still
        // holds the row that did not decode.
        let db = redb::Database::open(&aside[0]).expect("the kept store opens");
        let read = db.begin_read().expect("read");
        let core = read.open_table(CORE).expect("core table");
        let state = core.get("state").expect("get").expect("a state row");
        assert_eq!(state.value(), BROKEN_STATE, "{how:?}: the kept row");
    } else {
        assert!(kept == damaged, "{how:?}: kept byte for byte");
    }
    // The story sent again from the start is taken whole, and saved in a new store.
    assert_eq!(perceive(&mut agent, 1..=8).await, (8, 8), "{how:?}");
    let (stored, _) =
        dramatis_character::shard::read_store_file(&path).expect("the new store reads");
    assert_eq!(
        stored.perceived.len(),
        8,
        "{how:?}: the new store holds the story"
    );

    // Deleting the shard removes the set-aside copy with it.
    agent
        .detach(DetachRequest {
            character: Some(watson()),
            keep_shard: false,
        })
        .await
        .expect("detach");
    assert!(!path.exists(), "{how:?}: the store is removed");
    assert_eq!(set_aside(data.path()), Vec::<PathBuf>::new(), "{how:?}");
}

/// A world that could not be restored never attached its characters; deleting it
/// still removes their shards.
#[tokio::test]
async fn a_shard_never_attached_since_the_restart_is_removed_by_a_detach_that_drops_it() {
    let data = tempfile::tempdir().expect("tempdir");
    saved_watson(data.path()).await;
    let path = store(data.path());
    assert!(path.is_file());
    let shutdown = Shutdown::new();
    let (mut agent, _served) = agent_on(data.path(), &shutdown).await;
    agent
        .detach(DetachRequest {
            character: Some(watson()),
            keep_shard: false,
        })
        .await
        .expect("a detach that drops the shard needs no attach first");
    assert!(!path.exists(), "the store is removed");
    assert!(
        !data.path().join(WORLD).exists(),
        "the world's folder went with its last shard"
    );
    // Keeping a shard that is not attached is still refused: there is nothing to save.
    let status = agent
        .detach(DetachRequest {
            character: Some(watson()),
            keep_shard: true,
        })
        .await
        .expect_err("not attached");
    assert_eq!(status.code(), tonic::Code::NotFound);
}

/// A store that cannot be opened for a reason that is not its bytes (here a folder
/// where the file should be) is not set aside: the attach fails and says why.
#[tokio::test]
async fn a_store_that_cannot_be_opened_is_left_alone_and_the_attach_fails() {
    let data = tempfile::tempdir().expect("tempdir");
    let path = store(data.path());
    std::fs::create_dir_all(&path).expect("a folder in the store's place");
    let shutdown = Shutdown::new();
    let (mut agent, _served) = agent_on(data.path(), &shutdown).await;
    let status = agent
        .attach(AttachRequest {
            character: Some(watson()),
            profile: Some(CharacterProfile {
                id: "watson".into(),
                ..CharacterProfile::default()
            }),
        })
        .await
        .expect_err("the store cannot be opened");
    assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
    assert!(status.message().contains("watson.redb"), "{status:?}");
    assert!(path.is_dir(), "left where it was");
    assert_eq!(set_aside(data.path()), Vec::<PathBuf>::new());
}
