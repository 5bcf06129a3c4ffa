use dramatis_embed::FakeEmbedder;
use dramatis_memory::reverie::writer::{Author, episode_id, write_scene};
use dramatis_proto::v1::KnownFact;

use super::*;
use crate::mind::AgentMind;
use dramatis_proto::v1::EventKind;

const WATSON: Author<'static> = Author {
    id: "watson",
    name: "John Watson",
};

async fn shard() -> Shard {
    Shard::new(
        CharacterProfile {
            id: "watson".into(),
            name: "John Watson".into(),
            knowledge: vec![KnownFact {
                id: "wound".into(),
                text: "I was wounded at Maiwand.".into(),
                ..KnownFact::default()
            }],
            ..CharacterProfile::default()
        },
        &FakeEmbedder::new(16),
    )
    .await
    .expect("shard")
}

fn event(seq: u64, kind: EventKind, speaker: &str, perceivers: &[&str], thought: &str) -> Event {
    Event {
        seq,
        scene_id: "s1".into(),
        speaker: speaker.into(),
        kind: kind as i32,
        text: format!("line {seq}"),
        perceivers: perceivers.iter().map(|p| (*p).to_owned()).collect(),
        thought: thought.into(),
        ..Event::default()
    }
}

fn speech(seq: u64, speaker: &str, perceivers: &[&str], thought: &str) -> Event {
    event(seq, EventKind::Speech, speaker, perceivers, thought)
}

#[tokio::test]
async fn stores_perceived_events_once_and_refuses_foreign_ones() {
    let mut shard = shard().await;
    let batch = [
        speech(1, "holmes", &["holmes", "watson"], ""),
        speech(2, "watson", &["watson"], "tired"),
    ];
    assert_eq!(shard.perceive(&batch).expect("accepted").0, 2);
    assert_eq!(
        shard.perceive(&batch).expect("replayed").0,
        0,
        "duplicates are skipped"
    );
    let not_mine = shard.perceive(&[speech(3, "holmes", &["holmes"], "")]);
    assert!(matches!(
        not_mine,
        Err(AgentError::NotPerceived { seq: 3, .. })
    ));
    let leaked_thought = shard.perceive(&[speech(4, "holmes", &["watson"], "secret")]);
    assert!(matches!(
        leaked_thought,
        Err(AgentError::NotPerceived { seq: 4, .. })
    ));
    let texts: Vec<(String, String)> = shard
        .memory()
        .into_iter()
        .map(|m| (m.source, m.text))
        .collect();
    assert_eq!(
        texts,
        [
            (SEMANTIC.to_owned(), "I was wounded at Maiwand.".to_owned()),
            (PERCEIVED.to_owned(), "holmes: \"line 1\"".to_owned()),
            (
                PERCEIVED.to_owned(),
                "You: \"line 2\" (you thought: tired)".to_owned()
            )
        ]
    );
    assert_eq!(shard.last_seq(), 2);
}

#[tokio::test]
async fn a_scene_closes_at_its_end_or_when_another_begins() {
    let mut shard = shard().await;
    shard.expect_own(Annotation {
        emotion: "curiosity".into(),
        intensity: 0.66,
        intent: "learn more".into(),
        trigger: "line 1".into(),
        trigger_pieces: Vec::new(),
    });
    let (_, ended) = shard
        .perceive(&[
            speech(1, "holmes", &["holmes", "watson"], ""),
            speech(2, "watson", &["holmes", "watson"], ""),
        ])
        .expect("accepted");
    assert!(ended.is_empty());
    assert_eq!(shard.current_scene().len(), 2);
    let (_, ended) = shard
        .perceive(&[event(3, EventKind::SceneEnd, "", &["holmes", "watson"], "")])
        .expect("accepted");
    assert_eq!(ended.len(), 1);
    assert_eq!(
        ended[0].events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(
        ended[0].moments.len(),
        1,
        "own line paired with its annotation"
    );
    assert_eq!(ended[0].moments[0].seq, 2);
    assert!(shard.current_scene().is_empty());
    let mut next = speech(4, "holmes", &["watson"], "");
    next.scene_id = "s2".into();
    let mut later = speech(5, "holmes", &["watson"], "");
    later.scene_id = "s3".into();
    let (_, ended) = shard.perceive(&[next, later]).expect("accepted");
    assert_eq!(ended.len(), 1, "s2 closed when s3 began");
    assert_eq!(ended[0].scene_id, "s2");
}

#[tokio::test]
async fn a_file_holding_an_earlier_builds_rewrite_queue_still_loads() {
    // Earlier builds queued scenes for a batched model rewrite in `rewrites`; the queue
    // is dropped on load (those scenes keep their digests) and not saved again.
    let mut shard = shard().await;
    let (_, ended) = shard
        .perceive(&[
            speech(1, "holmes", &["holmes", "watson"], ""),
            event(2, EventKind::SceneEnd, "", &["holmes", "watson"], ""),
        ])
        .expect("accepted");
    assert_eq!(ended.len(), 1);
    let mut saved = serde_json::to_value(&shard.state).expect("JSON");
    saved["rewrites"] = serde_json::to_value(&ended).expect("JSON");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("watson.json");
    std::fs::write(&path, saved.to_string()).expect("written");
    let loaded = Shard::load_json(shard.profile.clone(), &path).expect("loads");
    assert_eq!(loaded.state, shard.state);
    let again = serde_json::to_value(&loaded.state).expect("JSON");
    assert!(again.get("rewrites").is_none(), "{again}");
}

/// Saves `shard` to a new store at `path` and returns it with the store kept.
async fn stored(mut shard: Shard, path: &std::path::Path) -> Shard {
    let db = store::open(path).expect("store");
    shard.keep_store(ShardStore::start(
        super::DiskShard::new(db, path.to_path_buf()),
        None,
    ));
    shard.save().expect("delta").wait().await.expect("saved");
    shard
}

/// Writes `delta` (taken from `shard`) to the shard's store.
async fn commit_delta(shard: &Shard, delta: Delta) {
    let store = shard.store().expect("a store");
    store.submit(delta).wait().await.expect("saved");
}

/// The shard the store at `path` holds, read back as an attach reads it.
async fn reopened(profile: CharacterProfile, path: &std::path::Path) -> Shard {
    let db = store::open(path).expect("open again");
    let all = store::read_all(db.as_ref(), path).expect("read");
    Shard::from_store(profile, &all, path)
        .expect("decodes")
        .expect("holds a shard")
}

#[tokio::test]
async fn a_store_gives_back_the_same_shard_after_appends_and_a_rewrite_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("w").join("watson.redb");
    let mut shard = stored(shard().await, &path).await;
    let (_, ended) = shard
        .perceive(&[
            speech(1, "holmes", &["holmes", "watson"], ""),
            event(2, EventKind::SceneEnd, "", &["holmes", "watson"], ""),
        ])
        .expect("accepted");
    let embedder = FakeEmbedder::new(16);
    let mind = AgentMind::new(&embedder, None);
    let written = write_scene(WATSON, &ended[0], &mind)
        .await
        .expect("written");
    let episode_id = written.episode.0.id.clone();
    shard.commit(written);
    shard.record_prompt(AuditEntry {
        purpose: "act".into(),
        prompt: "p1".into(),
        items: Vec::new(),
        timestamp_ms: 1,
        flagged: Vec::new(),
        guard: Vec::new(),
    });
    shard.save().expect("delta").wait().await.expect("saved");
    // A model rewrite replaces the saved episode in place; the next save writes that
    // row again and nothing it already holds.
    shard.commit_rewrite(Rewritten {
        episode: Some((
            EpisodicMemory {
                id: episode_id.clone(),
                scene_id: "s1".into(),
                text: "rewritten".into(),
            },
            vec![0.5; 16],
        )),
        ..Rewritten::default()
    });
    let delta = shard.delta().expect("delta");
    assert_eq!(delta.episodic.len(), 1, "only the rewritten row");
    assert!(delta.perceived.is_empty() && delta.semantic.is_empty() && delta.audit.is_empty());
    assert!(delta.state.is_none(), "the small state did not change");
    commit_delta(&shard, delta).await;
    let expected = shard.state.clone();
    let audit = shard.store().expect("store").audit().await.expect("audit");
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].prompt, "p1");
    let profile = shard.profile.clone();
    drop(shard);
    let back = reopened(profile, &path).await;
    assert_eq!(back.state, expected);
    assert_eq!(
        back.layers()
            .episodic
            .items()
            .last()
            .map(|m| m.text.as_str()),
        Some("rewritten")
    );
    assert_eq!(
        back.layers().episodic.vector_of(&episode_id),
        Some(&[0.5; 16][..])
    );
}

#[tokio::test]
async fn a_save_writes_only_what_is_new_however_long_the_story() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("watson.redb");
    let mut shard = stored(shard().await, &path).await;
    for seq in 1..=200 {
        shard
            .perceive(&[speech(seq, "holmes", &["holmes", "watson"], "")])
            .expect("accepted");
        let delta = shard.delta().expect("delta");
        assert_eq!(delta.perceived.len(), 1, "line {seq}");
        assert_eq!(delta.perceived[0].0, seq - 1);
        commit_delta(&shard, delta).await;
    }
    let profile = shard.profile.clone();
    let expected = shard.state.clone();
    drop(shard);
    assert_eq!(reopened(profile, &path).await.state, expected);
}

#[tokio::test]
async fn the_vocabulary_kept_as_items_arrive_is_the_one_read_from_the_whole_shard() {
    let mut shard = shard().await;
    let mut lines = vec![
        speech(1, "holmes", &["holmes", "watson"], ""),
        speech(2, "watson", &["holmes", "watson"], "Maiwand again"),
        event(3, EventKind::SceneEnd, "", &["holmes", "watson"], ""),
    ];
    lines[0].text = "The Brixton Road affair, Doctor".into();
    let (_, ended) = shard.perceive(&lines).expect("accepted");
    let embedder = FakeEmbedder::new(16);
    let written = write_scene(WATSON, &ended[0], &AgentMind::new(&embedder, None))
        .await
        .expect("written");
    shard.commit(written);
    let kept = shard.vocabulary();
    assert!(
        kept.contains("brixton") && kept.contains("maiwand"),
        "{kept:?}"
    );
    shard.rebuild_vocabulary();
    assert_eq!(
        *kept,
        *shard.vocabulary(),
        "kept as items arrived = read anew"
    );
    // A rewritten episode adds its words; the old digest's stay (they were a source).
    shard.commit_rewrite(Rewritten {
        episode: Some((
            EpisodicMemory {
                id: episode_id("s1"),
                scene_id: "s1".into(),
                text: "Lauriston Gardens at dusk".into(),
            },
            vec![0.1; 16],
        )),
        ..Rewritten::default()
    });
    let after = shard.vocabulary();
    assert!(after.contains("lauriston") && after.is_superset(&kept));
}
