//! Shards kept in JetStream (`agent --shards nats://…`), on a real three-node cluster
//! on loopback: a character's subject replays to what was saved, in order; a second
//! agent that attaches the character fences the first out; compaction keeps the rows
//! and drops the history; characters and worlds are apart.

use dramatis_character::AgentError;
use dramatis_character::shard::{Delta, ShardStream};
use dramatis_nats::NatsOptions;
use dramatis_tests::nats::NatsCluster;

/// One save: the state, a perceived row `n` and an item with a vector.
fn save(n: u64) -> Delta {
    Delta {
        state: Some(format!("{{\"last\":{n}}}").into_bytes()),
        perceived: vec![(n, format!("line {n}").into_bytes())],
        semantic: vec![(n, (format!("fact {n}").into_bytes(), vec![0, 0, 128, 63]))],
        ..Delta::default()
    }
}

/// The perceived keys of `deltas` replayed in order, and the last state.
fn replayed(deltas: &[Delta]) -> (Vec<u64>, Option<String>) {
    let mut keys: Vec<u64> = deltas
        .iter()
        .flat_map(|d| d.perceived.iter().map(|(k, _)| *k))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let state = deltas
        .iter()
        .rev()
        .find_map(|d| d.state.clone())
        .map(|s| String::from_utf8(s).expect("utf-8"));
    (keys, state)
}

#[tokio::test]
async fn a_shard_subject_replays_fences_a_stale_writer_and_compacts() {
    let Some(nats) = NatsCluster::start().await else {
        return;
    };
    let mut options = NatsOptions::new(nats.url());
    options.prefix = "shardtest".into();
    let stream = ShardStream::connect(&options).await.expect("connect");

    let (mut first, saved) = stream.open("w.1", "holmes").await.expect("open");
    assert!(saved.is_empty(), "a new character has nothing saved");
    for n in 0..30 {
        first.put(&[save(n)]).await.expect("saved");
    }

    // Another agent attaches the character (the first one thought dead): it reads
    // every save, in order.
    let (mut second, saved) = stream.open("w.1", "holmes").await.expect("open again");
    assert_eq!(saved.len(), 30);
    let (keys, state) = replayed(&saved);
    assert_eq!(keys, (0..30).collect::<Vec<_>>());
    assert_eq!(state.as_deref(), Some("{\"last\":29}"));
    assert_eq!(saved[7].semantic[0].0, 7);

    // From then on only the second writes: the first is refused by the stream.
    second.put(&[save(30)]).await.expect("the new host saves");
    let refused = first.put(&[save(31)]).await;
    assert!(
        matches!(refused, Err(AgentError::Fenced(_))),
        "the stale agent is fenced: {refused:?}"
    );

    // Compaction: the whole store published again, the history before it purged.
    let whole = Delta {
        state: Some(b"{\"last\":30}".to_vec()),
        perceived: (0..=30)
            .map(|n| (n, format!("line {n}").into_bytes()))
            .collect(),
        ..Delta::default()
    };
    second.compact(&whole).await.expect("compacted");
    second
        .put(&[save(31)])
        .await
        .expect("a save after compaction");
    let (_, saved) = stream
        .open("w.1", "holmes")
        .await
        .expect("open after compaction");
    assert_eq!(saved.len(), 2, "the whole store and the one save after it");
    let (keys, state) = replayed(&saved);
    assert_eq!(keys, (0..=31).collect::<Vec<_>>());
    assert_eq!(state.as_deref(), Some("{\"last\":31}"));

    // Other characters, and the same name in another world, are apart.
    let (_, watson) = stream.open("w.1", "watson").await.expect("watson");
    assert!(watson.is_empty());
    let (_, elsewhere) = stream.open("w-2", "holmes").await.expect("another world");
    assert!(elsewhere.is_empty());

    stream.remove("w.1", "holmes").await.expect("removed");
    let (_, gone) = stream
        .open("w.1", "holmes")
        .await
        .expect("open after removal");
    assert!(gone.is_empty(), "a detached world's shard is gone");
}
