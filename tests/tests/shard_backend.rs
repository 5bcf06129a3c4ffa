//! The shard store's contract, held by both backends: a redb file per character, and
//! a subject of a real three-node NATS JetStream cluster on loopback. A new store is
//! empty; saves count in order, a later state replacing an earlier one; the audit keeps
//! its newest entries; and a store opened again holds exactly what was saved, nothing
//! from a save that was refused.

use std::future::Future;

use dramatis_character::AgentError;
use dramatis_character::shard::{
    AuditEntry, Delta, DiskShard, JetStreamShard, ShardBackend, ShardStore, ShardStream, Stored,
};
use dramatis_nats::NatsOptions;
use dramatis_tests::nats::NatsCluster;

/// Save `n`: the state, perceived row `n`, a fact with a vector and audited prompt `n`.
fn save(n: u64) -> Delta {
    let entry = AuditEntry {
        purpose: format!("turn {n}"),
        prompt: format!("prompt {n}"),
        items: vec![(format!("fact-{n}"), "semantic".into())],
        timestamp_ms: i64::try_from(n).expect("small"),
        flagged: Vec::new(),
        guard: Vec::new(),
    };
    Delta {
        state: Some(format!("{{\"last\":{n}}}").into_bytes()),
        perceived: vec![(n, format!("line {n}").into_bytes())],
        semantic: vec![(n, (format!("fact {n}").into_bytes(), vec![0, 0, 128, 63]))],
        audit: vec![(n, serde_json::to_vec(&entry).expect("json"))],
        ..Delta::default()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

/// The perceived lines and the state a store holds.
fn lines_and_state(stored: &Stored) -> (Vec<String>, Option<String>) {
    (
        stored.perceived.iter().map(|p| text(p)).collect(),
        stored.state.as_deref().map(text),
    )
}

async fn purposes(store: &ShardStore) -> Vec<String> {
    store
        .audit()
        .await
        .expect("the audit")
        .into_iter()
        .map(|e| e.purpose)
        .collect()
}

/// What every backend must do. `open` opens the same character's store afresh, as an
/// agent does when it attaches the character again.
async fn contract<B, F, Fut>(open: F)
where
    B: ShardBackend,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<(B, Stored), AgentError>>,
{
    let (backend, stored) = open().await.expect("open a new store");
    assert_eq!(stored, Stored::default(), "a new store holds nothing");
    let store = ShardStore::start(backend, Some(3));
    for n in 0..5 {
        store.submit(save(n)).wait().await.expect("saved");
    }
    assert_eq!(
        purposes(&store).await,
        ["turn 2", "turn 3", "turn 4"],
        "the newest three audited prompts are kept"
    );
    drop(store);

    let (backend, stored) = open().await.expect("open again");
    let (lines, state) = lines_and_state(&stored);
    assert_eq!(
        lines,
        ["line 0", "line 1", "line 2", "line 3", "line 4"],
        "every save, in order"
    );
    assert_eq!(
        state.as_deref(),
        Some("{\"last\":4}"),
        "the last state wins"
    );
    assert_eq!(stored.semantic.len(), 5);
    assert_eq!(text(&stored.semantic[3].0), "fact 3");
    assert_eq!(
        stored.semantic[3].1,
        vec![0, 0, 128, 63],
        "vectors as saved"
    );
    assert_eq!(
        stored.audit_next, 5,
        "audit numbers go on after what was saved"
    );
    let store = ShardStore::start(backend, Some(3));
    assert_eq!(
        purposes(&store).await,
        ["turn 2", "turn 3", "turn 4"],
        "the kept audit reads back the same"
    );

    // Saves queued together count together, in the order they were submitted.
    let later = [save(5), save(6)].map(|d| store.submit(d));
    for pending in later {
        pending.wait().await.expect("saved");
    }
    drop(store);
    let (_, stored) = open().await.expect("open a third time");
    let (lines, state) = lines_and_state(&stored);
    assert_eq!(lines.len(), 7);
    assert_eq!(lines.last().map(String::as_str), Some("line 6"));
    assert_eq!(state.as_deref(), Some("{\"last\":6}"));
}

/// A shard stream on a new three-node cluster (kept running while the cluster is held),
/// or `None` when this machine has no `nats-server`.
async fn shard_stream(prefix: &str) -> Option<(NatsCluster, ShardStream)> {
    let nats = NatsCluster::start().await?;
    let mut options = NatsOptions::new(nats.url());
    options.prefix = prefix.into();
    let stream = ShardStream::connect(&options).await.expect("connect");
    Some((nats, stream))
}

#[tokio::test]
async fn a_shard_file_keeps_the_store_contract() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("w-1").join("holmes.redb");
    contract(|| {
        let path = path.clone();
        async move {
            tokio::task::spawn_blocking(move || DiskShard::open(&path))
                .await
                .expect("the open task")
        }
    })
    .await;
}

#[tokio::test]
async fn a_shard_subject_keeps_the_store_contract() {
    let Some((_nats, stream)) = shard_stream("contract").await else {
        return;
    };
    contract(|| JetStreamShard::open(&stream, "w.1", "holmes", Some(3))).await;
}

/// A second opener fences the first out on JetStream, and what the first tried to save
/// after that is in no store opened later. (A file has one opener per process; redb's
/// lock keeps a second process out.)
#[tokio::test]
async fn a_refused_save_is_lost_and_nothing_of_it_is_read_back() {
    let Some((_nats, stream)) = shard_stream("fence").await else {
        return;
    };
    let open = || JetStreamShard::open(&stream, "w.1", "watson", None);
    let (first, _) = open().await.expect("open");
    let first = ShardStore::start(first, None);
    first.submit(save(0)).wait().await.expect("saved");
    let (second, _) = open().await.expect("open again");
    let refused = first.submit(save(1)).wait().await;
    assert!(
        matches!(&refused, Err(AgentError::ShardLost(why)) if why.contains("refused a save")),
        "the first writer is fenced, and its copy lost: {refused:?}"
    );
    let again = first.submit(save(2)).wait().await;
    assert!(
        matches!(again, Err(AgentError::ShardLost(_))),
        "a lost copy refuses every later save: {again:?}"
    );
    let second = ShardStore::start(second, None);
    second
        .submit(save(3))
        .wait()
        .await
        .expect("the new writer saves");
    drop((first, second));
    let (_, stored) = open().await.expect("open a third time");
    assert_eq!(lines_and_state(&stored).0, ["line 0", "line 3"]);
}
