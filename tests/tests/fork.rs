//! `World.Fork` on the shipped scenario, over loopback with the scripted model, on the
//! redb log and on JetStream: a fork's characters hold, item for item, what a fresh
//! world's hold after the same events, nothing said after the fork point reaches the
//! fork, and both worlds go on to their ends.

use dramatis_llm::ScriptRule;
use dramatis_proto::v1::{
    Event, ForkRequest, ListWorldsRequest, MemoryItem, RegenerateRequest, WorldStatus,
    advance_request,
};
use dramatis_tests::nats::NatsCluster;
use dramatis_tests::{
    Cluster, advance, assert_refused, holmes_in_the_lab_says, replay_as, world_info,
};

const CAST: [&str; 4] = ["holmes", "lestrade", "stamford", "watson"];
/// Holmes says it in the second scene, after the fork point.
const LATER_CANARY: &str = "FORK-CANARY-4471";

fn rules() -> Vec<ScriptRule> {
    vec![holmes_in_the_lab_says(&format!(
        "You have been in Afghanistan, I perceive. {LATER_CANARY}"
    ))]
}

async fn last_seq(cluster: &Cluster, id: &str) -> u64 {
    world_info(&mut cluster.world().await, id).await.next_seq - 1
}

async fn transcript(cluster: &Cluster, id: &str) -> Vec<Event> {
    replay_as(&mut cluster.world().await, id, "").await
}

async fn memories(cluster: &Cluster, id: &str, character: &str) -> Vec<MemoryItem> {
    cluster.snapshot(id, character).await.memory
}

/// Plays a finished story in `cluster` and forks it at the event a fresh world (in
/// `fresh`, with the fork's id) reaches after three turns; then checks the fork.
async fn fork_matches_a_fresh_world(cluster: &Cluster, fresh: &Cluster) {
    let mut world = cluster.world().await;
    let parent = cluster.create("study-in-scarlet", "parent").await;
    advance(&mut world, &parent, advance_request::Until::ScriptEnd(true)).await;
    let whole = transcript(cluster, &parent).await;
    assert!(whole.iter().any(|e| e.text.contains(LATER_CANARY)));

    let mut fresh_world = fresh.world().await;
    let id = fresh.create("study-in-scarlet", "branch").await;
    advance(&mut fresh_world, &id, advance_request::Until::Turns(3)).await;
    let k = last_seq(fresh, &id).await;
    let spoken = whole
        .iter()
        .find(|e| e.text.contains(LATER_CANARY))
        .map_or(0, |e| e.seq);
    assert!(
        k > 0 && k < spoken,
        "the fork point {k} is before the canary at {spoken}"
    );

    let info = world
        .fork(ForkRequest {
            world_id: parent.clone(),
            at_seq: k,
            new_world_id: "branch".into(),
        })
        .await
        .expect("fork")
        .into_inner();
    assert_eq!(info.world_id, "branch");
    assert_eq!(
        (info.forked_from.as_str(), info.fork_seq),
        ("parent", k),
        "a branch says where it left its world"
    );
    let listed = world
        .list_worlds(ListWorldsRequest {})
        .await
        .expect("list")
        .into_inner()
        .worlds;
    let branches: Vec<(&str, &str, u64)> = listed
        .iter()
        .map(|w| (w.world_id.as_str(), w.forked_from.as_str(), w.fork_seq))
        .collect();
    assert_eq!(branches, [("branch", "parent", k), ("parent", "", 0)]);
    assert_eq!(
        info.next_seq,
        k + 1,
        "the fork's log is the first {k} events"
    );
    let kept = transcript(cluster, "branch").await;
    let keep = |events: &[Event]| -> Vec<(u64, String)> {
        events.iter().map(|e| (e.seq, e.text.clone())).collect()
    };
    assert_eq!(keep(&kept), keep(&whole[..kept.len()]));
    assert!(kept.iter().all(|e| e.world_id == "branch"));

    for character in CAST {
        let forked = memories(cluster, "branch", character).await;
        let fresh_items = memories(fresh, "branch", character).await;
        assert!(!forked.is_empty(), "{character} remembers the first scene");
        assert_eq!(forked, fresh_items, "{character}'s shard, item for item");
        let snapshot = cluster.snapshot("branch", character).await;
        assert!(
            snapshot.prompts.is_empty(),
            "{character}'s audit starts empty"
        );
        assert!(
            !cluster
                .shard_text("branch", character)
                .await
                .contains(LATER_CANARY),
            "{character} heard nothing after the fork point"
        );
    }

    // Both go on: the fork to its own end, the parent untouched.
    let more = advance(
        &mut world,
        "branch",
        advance_request::Until::ScriptEnd(true),
    )
    .await;
    assert_eq!(more.first().map(|e| e.seq), Some(k + 1));
    let ended = transcript(cluster, "branch").await;
    let seqs: Vec<u64> = ended.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=ended.len() as u64).collect::<Vec<_>>());
    let status = |id: &'static str| {
        let mut world = world.clone();
        async move { world_info(&mut world, id).await.status() }
    };
    assert_eq!(status("branch").await, WorldStatus::Finished);
    assert_eq!(status("parent").await, WorldStatus::Finished);
    assert_eq!(keep(&transcript(cluster, "parent").await), keep(&whole));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_holds_what_a_fresh_world_holds_after_the_same_events() {
    let cluster = Cluster::start(&CAST, &rules()).await;
    let fresh = Cluster::start(&CAST, &rules()).await;
    fork_matches_a_fresh_world(&cluster, &fresh).await;

    let mut world = cluster.world().await;
    let ask = |at_seq: u64, new_world_id: &str| ForkRequest {
        world_id: "parent".into(),
        at_seq,
        new_world_id: new_world_id.into(),
    };
    assert_refused(
        world.fork(ask(100_000, "far")).await,
        tonic::Code::InvalidArgument,
        "past the last event",
    );
    assert_refused(
        world.fork(ask(1, "branch")).await,
        tonic::Code::AlreadyExists,
        "already exists",
    );
    assert_refused(
        world
            .fork(ForkRequest {
                world_id: "nowhere".into(),
                ..ask(1, "x")
            })
            .await,
        tonic::Code::NotFound,
        "not found",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_on_jetstream_holds_what_a_fresh_world_holds() {
    let Some(nats) = NatsCluster::start().await else {
        return;
    };
    let log = std::sync::Arc::new(nats.log("fork").await);
    let cluster = Cluster::start_on_log(&CAST, &rules(), log).await;
    let fresh = Cluster::start(&CAST, &rules()).await;
    fork_matches_a_fresh_world(&cluster, &fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regenerate_asks_the_last_line_again_in_a_fork_and_rewrites_nothing() {
    let mut cluster = Cluster::start(&CAST, &rules()).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "story").await;
    let ask = |world_id: &str, new_world_id: &str| RegenerateRequest {
        world_id: world_id.into(),
        new_world_id: new_world_id.into(),
    };
    assert_refused(
        world.regenerate(ask(&id, "early")).await,
        tonic::Code::InvalidArgument,
        "no line yet",
    );
    advance(&mut world, &id, advance_request::Until::Turns(3)).await;
    let before = transcript(&cluster, &id).await;
    let last = before
        .iter()
        .rev()
        .find(|e| e.turn > 0)
        .cloned()
        .expect("a line");

    let answer = world
        .regenerate(ask(&id, "again"))
        .await
        .expect("regenerate")
        .into_inner();
    assert_eq!(answer.world.map(|w| w.world_id).as_deref(), Some("again"));
    let line = answer
        .events
        .iter()
        .rev()
        .find(|e| e.turn > 0)
        .expect("a new line");
    assert_eq!(line.seq, last.seq, "the same turn");
    assert_eq!(line.speaker, last.speaker, "asked of the same character");
    assert_ne!(line.text, last.text, "the model was asked again");

    let branch = transcript(&cluster, "again").await;
    let seqs: Vec<u64> = branch.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=branch.len() as u64).collect::<Vec<_>>());
    let texts = |events: &[Event]| events.iter().map(|e| e.text.clone()).collect::<Vec<_>>();
    let kept = usize::try_from(last.seq - 1).expect("small");
    assert_eq!(texts(&branch[..kept]), texts(&before[..kept]));
    assert_eq!(
        texts(&transcript(&cluster, &id).await),
        texts(&before),
        "the world itself is as it was"
    );
    assert!(
        !cluster
            .shard_text("again", &last.speaker)
            .await
            .contains(&last.text),
        "the line asked again is not remembered in the fork"
    );

    // A restart rebuilds the branch as a branch.
    cluster.restart_world().await;
    let info = world_info(&mut cluster.world().await, "again").await;
    assert_eq!(
        (info.forked_from.as_str(), info.fork_seq),
        (id.as_str(), last.seq - 1)
    );
}
