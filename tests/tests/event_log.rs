//! The event log's contract, held by both backends: the embedded redb file and a real
//! three-node NATS JetStream cluster on loopback. Appends name the sequence they follow
//! and a stale writer is refused by the log; reads and follows give a world's events
//! once, in order; delete removes a world and its name can be used again.

use std::sync::Arc;
use std::time::Duration;

use dramatis_proto::v1::Event;
use dramatis_tests::nats::NatsCluster;
use dramatis_world::WorldError;
use dramatis_world::log::{EventLog, RedbLog, WorldRecord};
use futures::StreamExt as _;

fn event(world: &str, seq: u64, text: &str) -> Event {
    Event {
        world_id: world.into(),
        seq,
        text: text.into(),
        timestamp_ms: i64::try_from(seq * 1000 + text.len() as u64).expect("small"),
        ..Event::default()
    }
}

fn texts(events: &[Event]) -> Vec<(u64, String)> {
    events.iter().map(|e| (e.seq, e.text.clone())).collect()
}

fn is_fenced<T: std::fmt::Debug>(result: &Result<T, WorldError>) -> bool {
    matches!(result, Err(WorldError::Fenced { .. }))
}

async fn next_event(feed: &mut dramatis_world::log::EventFeed) -> Event {
    tokio::time::timeout(Duration::from_secs(10), feed.next())
        .await
        .expect("an event in time")
        .expect("the feed goes on")
        .expect("a readable event")
}

/// What every backend must do. `other` is a second handle on the same log, as a second
/// process holds one (for redb, a clone: one file has one process).
async fn contract(log: Arc<dyn EventLog>, other: Arc<dyn EventLog>) {
    // Two worlds, interleaved.
    log.append("a", 0, vec![event("a", 1, "one"), event("a", 2, "two")])
        .await
        .expect("append a 1-2");
    log.append("b", 0, vec![event("b", 1, "other")])
        .await
        .expect("append b 1");
    log.append("a", 2, vec![event("a", 3, "three")])
        .await
        .expect("append a 3");
    assert_eq!(
        texts(&other.read("a", 1).await.expect("read a")),
        [(1, "one".into()), (2, "two".into()), (3, "three".into())]
    );
    assert_eq!(
        texts(&other.read("a", 2).await.expect("read a from 2")),
        [(2, "two".into()), (3, "three".into())]
    );
    assert_eq!(
        texts(&other.read("a", 3).await.expect("read a from 3")),
        [(3, "three".into())]
    );
    assert!(
        other
            .read("a", 4)
            .await
            .expect("read past the end")
            .is_empty()
    );
    assert!(other.read("nobody", 1).await.expect("read none").is_empty());
    assert_eq!(
        texts(&log.read("b", 1).await.expect("read b")),
        [(1, "other".into())]
    );

    // A run that does not continue the log is refused, and nothing of it is logged.
    assert!(is_fenced(
        &log.append("a", 2, vec![event("a", 3, "fork")]).await
    ));
    assert!(is_fenced(
        &log.append("a", 5, vec![event("a", 6, "gap")]).await
    ));
    assert!(matches!(
        log.append("a", 3, vec![event("a", 5, "skips")]).await,
        Err(WorldError::Log(_))
    ));
    assert!(is_fenced(
        &log.append("b", 0, vec![event("b", 1, "again")]).await
    ));
    // A second writer continues the log; the first, whose view ends at 3, is refused
    // and the log holds one history.
    other
        .append("a", 3, vec![event("a", 4, "by the other")])
        .await
        .expect("the other appends 4");
    assert!(is_fenced(
        &log.append("a", 3, vec![event("a", 4, "stale four")]).await
    ));
    log.append("a", 4, vec![event("a", 5, "five")])
        .await
        .expect("continues once it sees 4");
    assert_eq!(
        texts(&log.read("a", 3).await.expect("read")),
        [
            (3, "three".into()),
            (4, "by the other".into()),
            (5, "five".into())
        ]
    );

    // Following: the history from a point, then what either handle appends.
    let mut feed = other.follow("a", 4).await.expect("follow");
    assert_eq!(next_event(&mut feed).await.text, "by the other");
    assert_eq!(next_event(&mut feed).await.text, "five");
    log.append("b", 1, vec![event("b", 2, "elsewhere")])
        .await
        .expect("append b 2");
    log.append("a", 5, vec![event("a", 6, "six")])
        .await
        .expect("append 6");
    let six = next_event(&mut feed).await;
    assert_eq!((six.seq, six.text.as_str()), (6, "six"));
    // A follow from past the end waits for the event.
    let mut waiting = log.follow("b", 3).await.expect("follow b");
    other
        .append("b", 2, vec![event("b", 3, "third")])
        .await
        .expect("append b 3");
    assert_eq!(next_event(&mut waiting).await.text, "third");

    // Records and notes.
    let record = |id: &str| WorldRecord {
        world_id: id.into(),
        scenario_path: format!("/scenarios/{id}.toml"),
        created_ms: 7,
        sandbox_toml: (id == "b").then(|| "name = \"b\"\n".to_owned()),
    };
    log.put_world(record("a")).await.expect("record a");
    log.put_world(record("b")).await.expect("record b");
    assert_eq!(other.world("a").await.expect("world a"), Some(record("a")));
    assert_eq!(other.world("zzz").await.expect("no world"), None);
    let mut all = other.worlds().await.expect("worlds");
    all.sort_by(|x, y| x.world_id.cmp(&y.world_id));
    assert_eq!(all, [record("a"), record("b")]);
    log.put_notes("a", b"first".to_vec()).await.expect("notes");
    log.put_notes("a", b"second".to_vec()).await.expect("notes");
    assert_eq!(
        other.notes("a").await.expect("notes"),
        Some(b"second".to_vec())
    );

    // Delete: events, record and notes go; the other world stays; the name is free.
    other.delete_world("a").await.expect("delete a");
    assert!(log.read("a", 1).await.expect("read a").is_empty());
    assert_eq!(log.world("a").await.expect("world a"), None);
    assert_eq!(log.notes("a").await.expect("notes a"), None);
    assert_eq!(log.read("b", 1).await.expect("read b").len(), 3);
    log.append("a", 0, vec![event("a", 1, "reborn")])
        .await
        .expect("a new world a");
    assert_eq!(
        texts(&other.read("a", 1).await.expect("read")),
        [(1, "reborn".into())]
    );
}

#[tokio::test]
async fn the_redb_log_keeps_the_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log: Arc<dyn EventLog> =
        Arc::new(RedbLog::open(&dir.path().join("events.redb")).expect("open"));
    contract(Arc::clone(&log), log).await;
}

#[tokio::test]
async fn the_jetstream_log_keeps_the_contract_on_a_three_node_cluster() {
    let Some(cluster) = NatsCluster::start().await else {
        return;
    };
    let log: Arc<dyn EventLog> = Arc::new(cluster.log("contract").await);
    let other: Arc<dyn EventLog> = Arc::new(cluster.log("contract").await);
    contract(log, other).await;
}

#[tokio::test]
async fn two_writers_racing_for_a_new_world_leave_one_history() {
    let Some(cluster) = NatsCluster::start().await else {
        return;
    };
    let one = cluster.log("race").await;
    let two = cluster.log("race").await;
    for round in 0..5 {
        let world = format!("w{round}");
        let (a, b) = tokio::join!(
            one.append(&world, 0, vec![event(&world, 1, "by one")]),
            two.append(&world, 0, vec![event(&world, 1, "by two, longer")]),
        );
        assert!(
            a.is_ok() != b.is_ok(),
            "exactly one first event is accepted: {a:?} / {b:?}"
        );
        assert!(is_fenced(&a) || is_fenced(&b), "the loser is fenced");
        assert_eq!(one.read(&world, 1).await.expect("read").len(), 1);
    }
}

#[tokio::test]
async fn a_stale_owner_cannot_overwrite_the_narrator_s_notes() {
    let Some(cluster) = NatsCluster::start().await else {
        return;
    };
    let old = cluster.log("notes").await;
    let new = cluster.log("notes").await;
    old.put_notes("w", b"one".to_vec())
        .await
        .expect("first notes");
    // The new owner reads them as it takes the world over, then writes its own.
    assert_eq!(
        new.notes("w").await.expect("read").as_deref(),
        Some(&b"one"[..])
    );
    new.put_notes("w", b"two".to_vec())
        .await
        .expect("the new owner's notes");
    // The old owner, unaware, writes after what it last saw: refused.
    let refused = old.put_notes("w", b"stale".to_vec()).await;
    assert!(is_fenced(&refused), "{refused:?}");
    assert_eq!(
        old.notes("w").await.expect("read").as_deref(),
        Some(&b"two"[..])
    );
    new.put_notes("w", b"three".to_vec())
        .await
        .expect("the owner goes on");
    // A handle that never read them writes after what is there (none, here).
    let fresh = cluster.log("notes").await;
    fresh
        .put_notes("x", b"first".to_vec())
        .await
        .expect("new notes");
    assert_eq!(
        new.notes("x").await.expect("read").as_deref(),
        Some(&b"first"[..])
    );
    // Deleted and made again under the same name.
    new.delete_world("w").await.expect("deleted");
    assert!(new.notes("w").await.expect("read").is_none());
    new.put_notes("w", b"again".to_vec())
        .await
        .expect("notes of the new world");
    assert_eq!(
        fresh.notes("w").await.expect("read").as_deref(),
        Some(&b"again"[..])
    );
}

#[tokio::test]
async fn a_story_survives_one_nats_node_killed_mid_way() {
    let Some(mut cluster) = NatsCluster::start().await else {
        return;
    };
    let log = cluster.log("survive").await;
    let mut appended = 0;
    for seq in 1..=200u64 {
        if seq == 60 {
            cluster.kill_node(0);
        }
        if seq == 140 {
            cluster.start_node(0);
        }
        log.append("story", seq - 1, vec![event("story", seq, "line")])
            .await
            .unwrap_or_else(|e| panic!("append {seq} with a node down: {e}\n{}", cluster.logs()));
        appended += 1;
    }
    let events = log.read("story", 1).await.expect("read");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (1..=appended).collect::<Vec<_>>(),
        "every event once, in order"
    );
    // And from a fresh connection, with the killed node back.
    let fresh = cluster.log("survive").await;
    assert_eq!(fresh.read("story", 150).await.expect("read").len(), 51);
}
