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
    // every save, in order (and the empty claim the first made as it attached).
    let (mut second, saved) = stream.open("w.1", "holmes").await.expect("open again");
    let saves: Vec<Delta> = saved.into_iter().filter(|d| !d.is_empty()).collect();
    assert_eq!(saves.len(), 30);
    let (keys, state) = replayed(&saves);
    assert_eq!(keys, (0..30).collect::<Vec<_>>());
    assert_eq!(state.as_deref(), Some("{\"last\":29}"));
    assert_eq!(saves[7].semantic[0].0, 7);

    // Its attach claimed the subject: the first is refused at once, before the
    // second has saved anything, and the second goes on.
    let refused = first.put(&[save(30)]).await;
    assert!(
        matches!(refused, Err(AgentError::Fenced(_))),
        "the stale agent is fenced: {refused:?}"
    );
    second.put(&[save(30)]).await.expect("the new host saves");
    let again = first.put(&[save(31)]).await;
    assert!(matches!(again, Err(AgentError::Fenced(_))), "{again:?}");

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
    assert!(
        saved.iter().all(|d| !d.is_empty()),
        "the claims went with the purge"
    );
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

fn speech(seq: u64, text: &str) -> dramatis_proto::v1::Event {
    dramatis_proto::v1::Event {
        world_id: "w".into(),
        seq,
        scene_id: "s1".into(),
        speaker: "watson".into(),
        speaker_name: "Watson".into(),
        kind: dramatis_proto::v1::EventKind::Speech as i32,
        text: text.into(),
        perceivers: vec!["holmes".into(), "watson".into()],
        ..dramatis_proto::v1::Event::default()
    }
}

/// An agent process keeping shards in `stream`, on the scripted model and the fake
/// embedder.
fn agent(stream: &ShardStream) -> dramatis_character::CharacterAgents {
    let mut options = dramatis_character::AgentOptions::new(
        dramatis_llm::RoleModels::uniform(std::sync::Arc::new(
            dramatis_llm::ScriptedModel::default(),
        )),
        std::sync::Arc::new(dramatis_embed::FakeEmbedder::new(64)),
    );
    options.shard_stream = Some(stream.clone());
    dramatis_character::CharacterAgents::new(options)
}

#[tokio::test]
async fn an_agent_refused_by_the_stream_reads_its_character_again() {
    use dramatis_proto::DomainError as _;
    let Some(nats) = NatsCluster::start().await else {
        return;
    };
    let mut options = NatsOptions::new(nats.url());
    options.prefix = "shardagents".into();
    let stream = ShardStream::connect(&options).await.expect("connect");
    let profile = dramatis_proto::v1::CharacterProfile {
        id: "holmes".into(),
        name: "Holmes".into(),
        profile: "A consulting detective.".into(),
        ..dramatis_proto::v1::CharacterProfile::default()
    };
    let (old, new) = (agent(&stream), agent(&stream));
    old.attach("w", "holmes", profile.clone())
        .await
        .expect("attached to the first agent");
    old.character("w", "holmes")
        .expect("attached")
        .perceive(&[speech(1, "A ring was found.")])
        .await
        .expect("perceived");
    // The character is attached elsewhere (its first agent thought dead): the new
    // agent reads line 1 and perceives line 2.
    let (_, resumed) = new
        .attach("w", "holmes", profile.clone())
        .await
        .expect("attached to the second agent");
    assert!(resumed, "the second agent resumed the saved shard");
    assert_eq!(new.last_seq("w", "holmes").await.expect("seq"), 1);
    new.character("w", "holmes")
        .expect("attached")
        .perceive(&[speech(2, "The cab waited outside.")])
        .await
        .expect("perceived on the new agent");
    // The first agent's next save is refused: its copy is lost, the call says so as
    // NOT_FOUND (the world then attaches the character again), and the next call
    // finds it detached.
    let refused = old
        .character("w", "holmes")
        .expect("attached")
        .perceive(&[speech(3, "A stale line.")])
        .await
        .expect_err("a stale agent's save");
    assert!(matches!(refused, AgentError::ShardLost(_)), "{refused:?}");
    assert_eq!(refused.kind(), dramatis_proto::ErrorKind::NotFound);
    let detached = old.last_seq("w", "holmes").await;
    assert!(
        matches!(detached, Err(AgentError::NotAttached { .. })),
        "{detached:?}"
    );
    // Attached again, it reads what the other agent saved.
    old.attach("w", "holmes", profile)
        .await
        .expect("attached again");
    assert_eq!(old.last_seq("w", "holmes").await.expect("seq"), 2);
}
