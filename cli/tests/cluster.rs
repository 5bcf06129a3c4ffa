//! Several world-service replicas over one JetStream log (a real three-node NATS
//! cluster on loopback), each a real `dramatis serve` process on the scripted model,
//! sharing two real agent processes: worlds created, advanced and watched through
//! different replicas; an owner killed mid-story and taken over; a paused owner fenced
//! by the log.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{
    AdvanceRequest, CreateWorldRequest, Event, GetWorldRequest, ListWorldsRequest, WatchRequest,
    advance_request, create_world_request, watch_response,
};
use dramatis_tests::nats::NatsCluster;
use tokio::io::{AsyncBufReadExt, BufReader};
use tonic::transport::Channel;

mod common;
use common::{EXE, line_with, repo};

/// A `dramatis agent` on the scripted model; its endpoint.
async fn agent(dir: &std::path::Path) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(EXE)
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--no-tls",
            "--scripted",
            "builtin",
        ])
        .arg("--data-dir")
        .arg(dir)
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("agent starts");
    let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let ready = line_with(&mut out, "DRAMATIS_READY", &mut String::new()).await;
    let addr = ready.split_whitespace().nth(1).expect("addr").to_owned();
    (child, format!("http://{addr}"))
}

/// One world-service replica.
struct Replica {
    child: tokio::process::Child,
    url: String,
    /// Where it serves its Prometheus metrics.
    metrics: std::net::SocketAddr,
}

impl Replica {
    async fn start(name: &str, dir: &std::path::Path, agents: &str, log: &str) -> Self {
        let data = dir.join(name);
        std::fs::create_dir_all(&data).expect("data dir");
        let stderr = std::fs::File::create(data.join("serve.log")).expect("serve log");
        let metrics = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let mut child = tokio::process::Command::new(EXE)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--scripted",
                "builtin",
                "--no-viewer",
            ])
            .args([
                "--agent-endpoint",
                agents,
                "--log",
                log,
                "--lease-ms",
                "1500",
            ])
            .args(["--replica-id", name])
            .arg(format!("--metrics-listen={metrics}"))
            .arg("--data-dir")
            .arg(&data)
            .current_dir(repo())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("serve starts");
        let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let ready = line_with(&mut out, "DRAMATIS_READY", &mut String::new()).await;
        let url = format!("http://{}", ready.split_whitespace().nth(1).expect("addr"));
        Self {
            child,
            url,
            metrics,
        }
    }

    /// The value of the Prometheus series `series` (name and labels as printed).
    async fn metric(&self, series: &str) -> f64 {
        let text = dramatis_runtime::metrics::scrape(self.metrics)
            .await
            .expect("metrics reachable");
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in {text}"))
    }

    async fn client(&self) -> WorldClient<Channel> {
        WorldClient::connect(self.url.clone())
            .await
            .expect("replica reachable")
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.child.id().expect("running")).expect("pid")
    }
}

/// Everything a test needs: NATS, two agents, two replicas.
struct Stack {
    _nats: NatsCluster,
    _agents: Vec<tokio::process::Child>,
    replicas: Vec<Replica>,
    _dir: tempfile::TempDir,
}

async fn stack() -> Option<Stack> {
    let nats = NatsCluster::start().await?;
    let dir = tempfile::tempdir().expect("tempdir");
    let (a1, e1) = agent(&dir.path().join("agent1")).await;
    let (a2, e2) = agent(&dir.path().join("agent2")).await;
    let agents = format!("{e1},{e2}");
    let url = nats.url();
    let r1 = Replica::start("r1", dir.path(), &agents, &url).await;
    let r2 = Replica::start("r2", dir.path(), &agents, &url).await;
    Some(Stack {
        _nats: nats,
        _agents: vec![a1, a2],
        replicas: vec![r1, r2],
        _dir: dir,
    })
}

/// The shipped open story as an inline spec, with `rounds` rounds.
fn ledger(rounds: u32) -> dramatis_proto::v1::SandboxSpec {
    let path = repo().join("scenarios/lamplighters-ledger/scenario.toml");
    let scenario = dramatis_world::scenario::Scenario::load(&path).expect("shipped sandbox");
    let mut spec =
        dramatis_world::scenario::sandbox::scenario_to_spec(&scenario).expect("an open story");
    spec.rounds = rounds;
    spec
}

async fn create(client: &mut WorldClient<Channel>, id: &str, rounds: u32) {
    client
        .create_world(CreateWorldRequest {
            source: Some(create_world_request::Source::Sandbox(ledger(rounds))),
            world_id: id.into(),
        })
        .await
        .unwrap_or_else(|s| panic!("create {id}: {s}"));
}

async fn advance(
    client: &mut WorldClient<Channel>,
    id: &str,
    until: advance_request::Until,
) -> Result<Vec<Event>, tonic::Status> {
    client
        .advance(AdvanceRequest {
            world_id: id.into(),
            until: Some(until),
        })
        .await
        .map(|r| r.into_inner().events)
}

/// Every event of `id` as `client` replays it (no follow).
async fn replay(client: &mut WorldClient<Channel>, id: &str) -> Vec<Event> {
    let mut stream = client
        .watch(WatchRequest {
            world_id: id.into(),
            from_seq: 1,
            no_follow: true,
            pov: String::new(),
        })
        .await
        .unwrap_or_else(|s| panic!("watch {id}: {s}"))
        .into_inner();
    let mut events = Vec::new();
    while let Some(item) = stream.message().await.expect("watch item") {
        if let Some(watch_response::Item::Event(event)) = item.item {
            events.push(event);
        }
    }
    events
}

fn seqs(events: &[Event]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

/// Follows `id` through `client` from the start until event `last`; the events.
async fn follow_until(mut client: WorldClient<Channel>, id: String, last: u64) -> Vec<Event> {
    let mut stream = client
        .watch(WatchRequest {
            world_id: id,
            from_seq: 1,
            no_follow: false,
            pov: String::new(),
        })
        .await
        .expect("watch")
        .into_inner();
    let mut events = Vec::new();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(60), stream.message())
        .await
        .expect("the next item in time")
        .expect("watch item")
    {
        if let Some(watch_response::Item::Event(event)) = item.item {
            let seq = event.seq;
            events.push(event);
            if seq >= last {
                break;
            }
        }
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_worlds_created_advanced_and_watched_through_different_replicas() {
    let Some(stack) = stack().await else {
        return;
    };
    let mut clients = vec![
        stack.replicas[0].client().await,
        stack.replicas[1].client().await,
    ];
    let ids: Vec<String> = (0..20).map(|i| format!("w{i:02}")).collect();
    for (i, id) in ids.iter().enumerate() {
        create(&mut clients[i % 2], id, 2).await;
    }
    // Every replica lists all twenty, whoever created them.
    for client in &mut clients {
        let listed = client
            .list_worlds(ListWorldsRequest {})
            .await
            .expect("list")
            .into_inner()
            .worlds;
        let listed: Vec<&str> = listed.iter().map(|w| w.world_id.as_str()).collect();
        assert_eq!(listed, ids.iter().map(String::as_str).collect::<Vec<_>>());
    }
    // Followers on both replicas for the first world, before it moves.
    let mut produced: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for (i, id) in ids.iter().enumerate() {
        // Advanced through the replica that did not create it (forwarded to the owner).
        let other = (i + 1) % 2;
        let mut events = advance(&mut clients[other], id, advance_request::Until::Turns(3))
            .await
            .unwrap_or_else(|s| panic!("advance {id}: {s}"));
        events.extend(
            advance(&mut clients[i % 2], id, advance_request::Until::Turns(2))
                .await
                .unwrap_or_else(|s| panic!("advance {id} again: {s}")),
        );
        assert!(!events.is_empty());
        produced.insert(id.clone(), events);
    }
    for (id, events) in &produced {
        let last = events.last().map_or(0, |e| e.seq);
        let expected: Vec<u64> = (1..=last).collect();
        // Replayed and followed through both replicas: every event once, in order, the
        // same events.
        let mut seen = Vec::new();
        for client in &mut clients {
            let replayed = replay(client, id).await;
            assert_eq!(seqs(&replayed), expected, "replay of {id}");
            seen.push(replayed);
        }
        for replica in &stack.replicas {
            let followed = follow_until(replica.client().await, id.clone(), last).await;
            assert_eq!(seqs(&followed), expected, "follow of {id}");
        }
        assert_eq!(seen[0], seen[1], "both replicas tell {id} alike");
        for event in events {
            assert_eq!(
                &seen[0][usize::try_from(event.seq - 1).expect("seq")],
                event
            );
        }
        let info = clients[0]
            .get_world(GetWorldRequest {
                world_id: id.clone(),
            })
            .await
            .expect("get")
            .into_inner();
        assert_eq!(info.next_seq, last + 1, "{id} as its owner reports it");
    }
    // Each replica owns the ten worlds it created and played their turns (five each,
    // half of them forwarded to it); every lease was taken once.
    for replica in &stack.replicas {
        assert_eq!(replica.metric("dramatis_worlds").await, 10.0);
        assert_eq!(replica.metric("dramatis_turns_total").await, 50.0);
        assert_eq!(
            replica
                .metric("dramatis_lease_changes_total{change=\"taken\"}")
                .await,
            10.0
        );
        assert!(replica.metric("dramatis_log_append_seconds_count").await >= 50.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_owner_is_taken_over_and_the_story_ends_with_every_event_once() {
    let Some(mut stack) = stack().await else {
        return;
    };
    let mut owner = stack.replicas[0].client().await;
    let mut other = stack.replicas[1].client().await;
    create(&mut owner, "long", 60).await;
    // A watcher on the other replica sees the story from the shared log.
    let mut watch = other
        .watch(WatchRequest {
            world_id: "long".into(),
            from_seq: 1,
            no_follow: false,
            pov: String::new(),
        })
        .await
        .expect("watch")
        .into_inner();
    let running = tokio::spawn(async move {
        advance(&mut owner, "long", advance_request::Until::ScriptEnd(true)).await
    });
    let mut before = Vec::new();
    while before.len() < 40 {
        let item = watch.message().await.expect("item").expect("more");
        if let Some(watch_response::Item::Event(event)) = item.item {
            before.push(event.seq);
        }
    }
    // kill -9 the owner mid-Advance.
    let killed_at = Instant::now();
    stack.replicas[0].child.start_kill().expect("kill");
    let _ = stack.replicas[0].child.wait().await;
    assert!(
        running.await.expect("joined").is_err(),
        "the killed owner's advance did not finish"
    );
    // Through the other replica: it waits out the lease, takes the world over,
    // rebuilds it from the log and finishes the story. The watcher, read meanwhile,
    // times the failover: from the kill to the next event.
    let finishing = tokio::spawn({
        let mut other = other.clone();
        async move { advance(&mut other, "long", advance_request::Until::ScriptEnd(true)).await }
    });
    let mut after = Vec::new();
    let mut failover = None;
    loop {
        let item = tokio::time::timeout(Duration::from_secs(30), watch.message())
            .await
            .expect("in time")
            .expect("item");
        let Some(item) = item else { break };
        if let Some(watch_response::Item::Event(event)) = item.item {
            failover.get_or_insert_with(|| killed_at.elapsed());
            after.push(event.seq);
        }
    }
    let rest = finishing
        .await
        .expect("joined")
        .expect("advance after the owner died");
    assert!(!rest.is_empty(), "the story went on");
    let last = rest.last().expect("events").seq;
    let all: Vec<u64> = before.iter().chain(&after).copied().collect();
    assert_eq!(
        all,
        (1..=last).collect::<Vec<_>>(),
        "events 1..N exactly once"
    );
    assert_eq!(seqs(&replay(&mut other, "long").await), all);
    eprintln!(
        "failover: {} ms from kill to the next event",
        failover.expect("an event after the kill").as_millis()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_owner_is_fenced_by_the_log_and_the_history_does_not_fork() {
    let Some(stack) = stack().await else {
        return;
    };
    let mut owner = stack.replicas[0].client().await;
    let mut other = stack.replicas[1].client().await;
    create(&mut owner, "paused", 40).await;
    advance(&mut owner, "paused", advance_request::Until::Turns(2))
        .await
        .expect("advance on the owner");
    // Pause the owner past its lease, mid-advance.
    let stale = tokio::spawn({
        let mut owner = owner.clone();
        async move {
            advance(
                &mut owner,
                "paused",
                advance_request::Until::ScriptEnd(true),
            )
            .await
        }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let pid = stack.replicas[0].pid();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).expect("pid"),
        rustix::process::Signal::STOP,
    )
    .expect("SIGSTOP");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    // Meanwhile the other replica takes the world over and advances it.
    let taken = advance(&mut other, "paused", advance_request::Until::Turns(5))
        .await
        .expect("advance after the take-over");
    assert!(!taken.is_empty());
    // The stale owner wakes up: whatever it still tries to append is refused.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).expect("pid"),
        rustix::process::Signal::CONT,
    )
    .expect("SIGCONT");
    let stale = tokio::time::timeout(Duration::from_secs(30), stale)
        .await
        .expect("the stale advance ends")
        .expect("joined");
    if let Ok(events) = &stale {
        // It may have finished before the pause took hold; then nothing was stale.
        assert!(
            events.last().map_or(0, |e| e.seq) < taken[0].seq,
            "the stale owner finished only what it logged before the take-over"
        );
    } else if let Err(status) = &stale {
        assert!(
            matches!(
                status.code(),
                tonic::Code::Aborted | tonic::Code::Unavailable
            ),
            "refused, not failed otherwise: {status:?}"
        );
    }
    // One history: numbers without gap or repeat, and the take-over's events in it.
    let history = replay(&mut other, "paused").await;
    let last = history.last().expect("events").seq;
    assert_eq!(seqs(&history), (1..=last).collect::<Vec<_>>());
    for event in &taken {
        assert_eq!(
            &history[usize::try_from(event.seq - 1).expect("seq")],
            event
        );
    }
    // The stale owner answers for the world no more: calls to it are forwarded.
    let mut stale_client = stack.replicas[0].client().await;
    let more = advance(
        &mut stale_client,
        "paused",
        advance_request::Until::Turns(1),
    )
    .await
    .expect("forwarded to the new owner");
    assert_eq!(more.first().map(|e| e.seq), Some(last + 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_node_killed_mid_story_loses_nothing() {
    let Some(mut stack) = stack().await else {
        return;
    };
    let mut owner = stack.replicas[0].client().await;
    let mut other = stack.replicas[1].client().await;
    create(&mut owner, "steady", 30).await;
    let running = tokio::spawn({
        let mut owner = owner.clone();
        async move {
            advance(
                &mut owner,
                "steady",
                advance_request::Until::ScriptEnd(true),
            )
            .await
        }
    });
    // Once the story is under way, one of the three NATS nodes dies (the stream keeps
    // a quorum of two), and comes back later.
    let mut watch = other
        .watch(WatchRequest {
            world_id: "steady".into(),
            from_seq: 1,
            no_follow: false,
            pov: String::new(),
        })
        .await
        .expect("watch")
        .into_inner();
    let mut seen = Vec::new();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(60), watch.message())
        .await
        .expect("in time")
        .expect("item")
    {
        if let Some(watch_response::Item::Event(event)) = item.item {
            seen.push(event.seq);
            if seen.len() == 20 {
                stack._nats.kill_node(0);
            }
            if seen.len() == 120 {
                stack._nats.start_node(0);
            }
        }
    }
    let produced = running
        .await
        .expect("joined")
        .expect("the story finished with a node down");
    let last = produced.last().expect("events").seq;
    assert!(seen.len() > 120, "the story ran on past the node's death");
    assert_eq!(
        seen,
        (1..=last).collect::<Vec<_>>(),
        "every event once, in order"
    );
    assert_eq!(seqs(&replay(&mut owner, "steady").await), seen);
}
