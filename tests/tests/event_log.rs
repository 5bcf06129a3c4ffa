//! The event log's contract, held by both backends: the embedded redb file and a real
//! three-node NATS JetStream cluster on loopback. Appends name the sequence they follow
//! and a stale writer is refused by the log; reads and follows give a world's events
//! once, in order; delete removes a world and its name can be used again. On the
//! cluster, a follow goes on within a stated bound when any one node dies: the one
//! hosting its consumer, the stream's leader, or the one its client is connected to.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

use std::sync::Arc;
use std::time::Duration;

use dramatis_proto::v1::Event;
use dramatis_tests::nats::NatsCluster;
use dramatis_world::WorldError;
use dramatis_world::log::{EventLog, ForkPoint, Newcomer, RedbLog, WorldRecord};
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
        forked_from: (id == "b").then(|| ForkPoint {
            world_id: "a".into(),
            at_seq: 3,
        }),
        newcomers: if id == "b" {
            vec![Newcomer {
                after_seq: 5,
                character: dramatis_proto::v1::SandboxCharacter {
                    id: "agnes".into(),
                    name: "Agnes Pell".into(),
                    profile: "A carter.".into(),
                    known_as: "a carter with a lantern".into(),
                    knows: vec!["tom".into()],
                    ..Default::default()
                },
            }]
        } else {
            Vec::new()
        },
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

/// How long after an event is logged a follower gets it, though one node of the
/// cluster died just before. The feed asks after each quiet period whether a message
/// is owed, drops its consumer when one is owed twice, and reads by direct get until it
/// has a new one: two quiet periods (4 s) and one direct get (which waits at most 2 s
/// for a replica), about 6 s; twice that here, for a loaded machine. No leader election
/// is waited for. docs/cluster.md, "A follow through a node's death", states it.
const RESUMED_WITHIN: Duration = Duration::from_secs(12);

/// Where a follow's pieces are: node indexes of the cluster.
#[derive(Debug, Clone, Copy)]
struct Placement {
    /// The node the follower's client connects to.
    client: usize,
    /// The node that hosts the follow's consumer.
    consumer: usize,
    /// The node that leads the events stream.
    stream_leader: usize,
}

fn node_index(server_name: &str) -> usize {
    server_name
        .strip_prefix('n')
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("a node of the test cluster: {server_name}"))
}

/// The stream `stream` as a plain client on `url` sees it: its leader's node, and the
/// node hosting each of its consumers, by name.
async fn placement_of(
    url: &str,
    stream: &str,
) -> (usize, std::collections::BTreeMap<String, usize>) {
    let client = async_nats::connect(url).await.expect("a plain client");
    let js = async_nats::jetstream::new(client);
    let mut handle = js.get_stream(stream).await.expect("the events stream");
    let leader = handle
        .info()
        .await
        .expect("stream info")
        .cluster
        .as_ref()
        .and_then(|c| c.leader.clone())
        .expect("a stream leader");
    let mut hosts = std::collections::BTreeMap::new();
    let mut consumers = handle.consumers();
    while let Some(info) = consumers.next().await {
        let info = info.expect("consumer info");
        if let Some(host) = info.cluster.and_then(|c| c.leader) {
            hosts.insert(info.name, node_index(&host));
        }
    }
    (node_index(&leader), hosts)
}

/// Which node of a follow dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Victim {
    /// The node hosting the follow's consumer, not the one its client is on.
    ConsumerHost,
    /// The node leading the stream, not the one the follower's client is on.
    StreamLeader,
    /// The node the follower's client is connected to.
    ClientNode,
}

/// On a cluster of its own, follows `world` (whose events 1..=3 are logged), kills the
/// node `victim` names,
/// logs the next events and checks they arrive within [`RESUMED_WITHIN`], once each,
/// in order. The node comes back before the last of them. Where the cluster places a
/// consumer is its choice: a follow whose consumer is not where the case needs it is
/// made again.
async fn a_follow_through_a_death(world: &str, victim: Victim) {
    let Some(mut cluster) = NatsCluster::start().await else {
        return;
    };
    let writer = cluster.log("death").await;
    writer
        .append(
            world,
            0,
            (1..=3).map(|seq| event(world, seq, "before")).collect(),
        )
        .await
        .expect("the first events");
    let (leader, _) = placement_of(&cluster.node_url(0), "DEATH_EVENTS").await;
    // The follower's client is on a node that does not lead the stream.
    let client = (leader + 1) % 3;
    let url = cluster.node_url(client);
    let mut chosen = None;
    for _ in 0..20 {
        let (_, before) = placement_of(&url, "DEATH_EVENTS").await;
        let follower = cluster.log_on("death", client).await;
        let mut feed = follower.follow(world, 1).await.expect("follow");
        for seq in 1..=3 {
            assert_eq!(next_event(&mut feed).await.seq, seq);
        }
        let (stream_leader, after) = placement_of(&url, "DEATH_EVENTS").await;
        let new: Vec<usize> = after
            .iter()
            .filter(|(name, _)| !before.contains_key(*name))
            .map(|(_, node)| *node)
            .collect();
        assert_eq!(new.len(), 1, "one consumer for the follow: {after:?}");
        let placement = Placement {
            client,
            consumer: new[0],
            stream_leader,
        };
        let node = match victim {
            Victim::ConsumerHost => {
                (placement.consumer != placement.client).then_some(placement.consumer)
            }
            Victim::StreamLeader => {
                (placement.stream_leader != placement.client).then_some(placement.stream_leader)
            }
            Victim::ClientNode => Some(placement.client),
        };
        if let Some(node) = node {
            chosen = Some((follower, feed, node, placement));
            break;
        }
    }
    let (_follower, mut feed, node, placement) =
        chosen.expect("the cluster placed a consumer as the case needs within 20 follows");
    eprintln!("{world}: {placement:?}; killing node {node}");
    cluster.kill_node(node);
    writer
        .append(world, 3, vec![event(world, 4, "after the death")])
        .await
        .expect("the log goes on with two nodes");
    let logged = std::time::Instant::now();
    let four = tokio::time::timeout(RESUMED_WITHIN, feed.next())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "{world}: no event {RESUMED_WITHIN:?} after it was logged, node {node} dead ({placement:?})"
            )
        })
        .expect("the feed goes on")
        .expect("a readable event");
    eprintln!("{world}: resumed {:?} after the append", logged.elapsed());
    assert_eq!((four.seq, four.text.as_str()), (4, "after the death"));
    for seq in 5..=8 {
        if seq == 7 {
            cluster.start_node(node);
        }
        writer
            .append(world, seq - 1, vec![event(world, seq, "later")])
            .await
            .expect("the log goes on");
        let next = tokio::time::timeout(RESUMED_WITHIN, feed.next())
            .await
            .expect("the next event in time")
            .expect("the feed goes on")
            .expect("a readable event");
        assert_eq!(next.seq, seq, "every event once, in order");
    }
}

#[tokio::test]
async fn a_follow_goes_on_after_the_node_hosting_its_consumer_dies() {
    // The stall of issue 29: nothing arrives and nothing fails (65 s on the old code).
    a_follow_through_a_death("consumer", Victim::ConsumerHost).await;
}

#[tokio::test]
async fn a_follow_goes_on_after_the_stream_leader_dies() {
    a_follow_through_a_death("leader", Victim::StreamLeader).await;
}

#[tokio::test]
async fn a_follow_goes_on_after_its_client_s_node_dies() {
    a_follow_through_a_death("client", Victim::ClientNode).await;
}

/// A world record written through one handle is found at once through another, though
/// a direct get may be answered by a replica that has not stored it yet (a world
/// created on one replica and watched on another a moment later was "not found" once
/// in about twenty runs of the cluster tests under load).
#[tokio::test]
async fn a_world_record_is_found_at_once_through_another_handle() {
    let Some(cluster) = NatsCluster::start().await else {
        return;
    };
    let writer = cluster.log("records").await;
    let readers = [
        cluster.log_on("records", 0).await,
        cluster.log_on("records", 1).await,
        cluster.log_on("records", 2).await,
    ];
    for i in 0..150 {
        let id = format!("w{i}");
        let record = WorldRecord {
            world_id: id.clone(),
            scenario_path: format!("/scenarios/{id}.toml"),
            created_ms: i,
            sandbox_toml: None,
            forked_from: None,
            newcomers: Vec::new(),
        };
        writer.put_world(record.clone()).await.expect("record");
        let reader = &readers[usize::try_from(i).expect("small") % 3];
        assert_eq!(
            reader.world(&id).await.expect("read"),
            Some(record),
            "record {i} read at once"
        );
    }
    assert_eq!(
        readers[0].world("no.such*world").await.expect("read"),
        None,
        "an id no world can have names none"
    );
}
