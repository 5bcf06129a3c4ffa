//! Several world-service replicas over one JetStream log (a real three-node NATS
//! cluster on loopback), each a real `dramatis serve` process on the scripted model,
//! sharing two real agent processes: worlds created, advanced and watched through
//! different replicas; an owner killed mid-story and taken over; a paused owner fenced
//! by the log; a line's live words on a replica that does not own the world; an agent
//! killed and its characters going on, whole, on another agent from their shards in
//! JetStream.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::{Duration, Instant};

use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{
    AdvanceRequest, CreateWorldRequest, Event, GetAuditRequest, GetWorldRequest, ListWorldsRequest,
    WatchRequest, advance_request, create_world_request, watch_response,
};
use dramatis_tests::nats::NatsCluster;
use tokio::io::{AsyncBufReadExt, BufReader};
use tonic::transport::Channel;

mod common;
use common::{EXE, ledger, line_with, repo};

/// A `dramatis agent` on the scripted model, keeping shards in JetStream at `shards`
/// when given; its endpoint.
async fn agent(dir: &std::path::Path, shards: Option<&str>) -> (tokio::process::Child, String) {
    let mut child = tokio::process::Command::new(EXE)
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--no-tls",
            "--scripted",
            "builtin",
        ])
        .args(shards.map(|url| format!("--shards={url}")))
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
    /// The CA its TLS certificate chains to, when it serves TLS.
    ca: Option<std::path::PathBuf>,
}

impl Replica {
    async fn start(name: &str, dir: &std::path::Path, agents: &str, log: &str) -> Self {
        Self::start_with(name, dir, agents, log, None).await
    }

    /// A replica serving TLS with the deployment certificates in `certs` (written by
    /// `dramatis certs`) and trusting their CA for its peers, when given.
    async fn start_with(
        name: &str,
        dir: &std::path::Path,
        agents: &str,
        log: &str,
        certs: Option<&std::path::Path>,
    ) -> Self {
        let tls: Vec<std::ffi::OsString> = certs.map_or_else(Vec::new, |certs| {
            vec![
                "--tls-cert".into(),
                certs.join("world.pem").into(),
                "--tls-key".into(),
                certs.join("world.key").into(),
                "--peer-ca".into(),
                certs.join("ca.pem").into(),
            ]
        });
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
            .args(&tls)
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
        let scheme = if certs.is_some() { "https" } else { "http" };
        let url = format!(
            "{scheme}://{}",
            ready.split_whitespace().nth(1).expect("addr")
        );
        Self {
            child,
            url,
            metrics,
            ca: certs.map(|c| c.join("ca.pem")),
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
        let mut endpoint = Channel::from_shared(self.url.clone()).expect("url");
        if let Some(ca) = &self.ca {
            let tls = dramatis_runtime::pki::client_tls(Some(ca)).expect("the CA");
            endpoint = endpoint.tls_config(tls).expect("tls");
        }
        WorldClient::new(endpoint.connect().await.expect("replica reachable"))
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.child.id().expect("running")).expect("pid")
    }
}

/// Everything a test needs: NATS, two agents, two replicas.
struct Stack {
    _nats: NatsCluster,
    agents: Agents,
    replicas: Vec<Replica>,
    _dir: tempfile::TempDir,
    /// Held while the stack runs, and let go last: one at a time, since each is a
    /// whole cluster (three NATS nodes, agents, replicas) on a machine of two cores.
    _one: tokio::sync::MutexGuard<'static, ()>,
}

impl Drop for Stack {
    /// A failing test shows the end of each replica's log.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        eprintln!("---- NATS\n{}", self._nats.logs());
        if let Ok(dirs) = std::fs::read_dir(self._dir.path()) {
            for dir in dirs.flatten() {
                let log = dir.path().join("serve.log");
                if let Ok(text) = std::fs::read_to_string(&log) {
                    let lines: Vec<&str> = text.lines().collect();
                    let tail = lines[lines.len().saturating_sub(60)..].join("\n");
                    eprintln!("---- {} (last 60 lines)\n{tail}", log.display());
                }
            }
        }
    }
}

/// Agents, each with a data directory of its own; their endpoints.
struct Agents {
    children: Vec<tokio::process::Child>,
    endpoints: Vec<String>,
}

async fn stack() -> Option<Stack> {
    stack_of(2, 2, false).await
}

/// NATS, `agents` agents (keeping shards in JetStream when `shards`) and `replicas`
/// replicas over the JetStream log.
async fn stack_of(agents: usize, replicas: usize, shards: bool) -> Option<Stack> {
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let one = ONE_AT_A_TIME.lock().await;
    let nats = NatsCluster::start().await?;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = nats.url();
    let mut started = Agents {
        children: Vec::new(),
        endpoints: Vec::new(),
    };
    for i in 1..=agents {
        let data = dir.path().join(format!("agent{i}"));
        let (child, endpoint) = agent(&data, shards.then_some(url.as_str())).await;
        started.children.push(child);
        started.endpoints.push(endpoint);
    }
    let list = started.endpoints.join(",");
    let mut running = Vec::new();
    for i in 1..=replicas {
        running.push(Replica::start(&format!("r{i}"), dir.path(), &list, &url).await);
    }
    Some(Stack {
        _one: one,
        _nats: nats,
        agents: started,
        replicas: running,
        _dir: dir,
    })
}

async fn create(client: &mut WorldClient<Channel>, id: &str, rounds: u32) {
    client
        .create_world(CreateWorldRequest {
            source: Some(create_world_request::Source::Sandbox(ledger(rounds))),
            world_id: id.into(),
            ..Default::default()
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

/// A watch of `id` through `client` from event 1, live after the history when
/// `follow`.
async fn watch_stream(
    client: &mut WorldClient<Channel>,
    id: &str,
    follow: bool,
) -> tonic::Streaming<dramatis_proto::v1::WatchResponse> {
    client
        .watch(WatchRequest {
            world_id: id.into(),
            from_seq: 1,
            no_follow: !follow,
            pov: String::new(),
        })
        .await
        .unwrap_or_else(|s| panic!("watch {id}: {s}"))
        .into_inner()
}

/// Watches `id` through `client` from event 1, live after the history when
/// `follow`, handing each event to `each` until it returns false or the watch ends;
/// the events seen.
async fn watch_events(
    client: &mut WorldClient<Channel>,
    id: &str,
    follow: bool,
    mut each: impl FnMut(&Event) -> bool,
) -> Vec<Event> {
    let mut stream = watch_stream(client, id, follow).await;
    let mut events = Vec::new();
    while let Some(item) = tokio::time::timeout(Duration::from_secs(60), stream.message())
        .await
        .expect("the next item in time")
        .expect("watch item")
    {
        if let Some(watch_response::Item::Event(event)) = item.item {
            let more = each(&event);
            events.push(event);
            if !more {
                break;
            }
        }
    }
    events
}

/// Every event of `id` as `client` replays it (no follow).
async fn replay(client: &mut WorldClient<Channel>, id: &str) -> Vec<Event> {
    watch_events(client, id, false, |_| true).await
}

fn seqs(events: &[Event]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

/// Follows `id` through `client` from the start until event `last`; the events.
async fn follow_until(mut client: WorldClient<Channel>, id: String, last: u64) -> Vec<Event> {
    watch_events(&mut client, &id, true, |event| event.seq < last).await
}

/// The owner filters its own copy, the other replica the shared log: from the point of
/// view of the character who perceived least of world `id` (`all`, its events), both
/// give what that character perceived, named as it knew people then.
async fn points_of_view_agree(clients: &mut [WorldClient<Channel>], id: &str, all: &[Event]) {
    let mut counts: BTreeMap<&String, usize> = BTreeMap::new();
    for perceiver in all.iter().flat_map(|e| &e.perceivers) {
        *counts.entry(perceiver).or_default() += 1;
    }
    let pov = counts
        .iter()
        .min_by_key(|(_, n)| **n)
        .map(|(who, _)| (*who).clone())
        .expect("someone perceived the story");
    let pov = &pov;
    let mut views = Vec::new();
    for client in clients.iter_mut() {
        views.push(common::replay_as(client, id, pov).await);
    }
    let raw: Vec<&Event> = all.iter().filter(|e| e.perceivers.contains(pov)).collect();
    let perceived: Vec<u64> = raw.iter().map(|e| e.seq).collect();
    assert_eq!(seqs(&views[0]), perceived, "{pov}'s view of {id}");
    assert!(
        views[0].iter().zip(&raw).any(|(view, raw)| view != *raw),
        "{pov}'s copy of {id} is its own (no one else's usage or thoughts)"
    );
    assert_eq!(views[0], views[1], "both replicas show {id} to {pov} alike");
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
        points_of_view_agree(&mut clients, id, &seen[0]).await;
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
    a_follow_from_the_middle_ends_with_the_story(&mut clients, "w00").await;
}

/// World `id`, owned by the first replica, played to its end: a follower on the
/// other replica that starts after a scene's end (and asks for no point of view) gets
/// the rest of it, and its stream ends with the story.
async fn a_follow_from_the_middle_ends_with_the_story(
    clients: &mut [WorldClient<Channel>],
    id: &str,
) {
    advance(&mut clients[0], id, advance_request::Until::ScriptEnd(true))
        .await
        .unwrap_or_else(|s| panic!("advance {id} to its end: {s}"));
    let all = replay(&mut clients[0], id).await;
    let last = all.len() as u64;
    // From after the first scene's end: the follower sees the story end only if it
    // counts the scenes that ended before it started.
    let from = all
        .iter()
        .find(|e| e.kind() == dramatis_proto::v1::EventKind::SceneEnd)
        .map_or(3, |e| e.seq + 1);
    assert!(from < last, "{id} has more than one scene");
    let mut stream = clients[1]
        .watch(WatchRequest {
            world_id: id.into(),
            from_seq: from,
            no_follow: false,
            pov: String::new(),
        })
        .await
        .expect("watch from the middle")
        .into_inner();
    let mut seen = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(item) = stream.message().await.expect("watch item") {
            if let Some(watch_response::Item::Event(event)) = item.item {
                seen.push(event.seq);
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the follow of {id} from event {from} ended with the story"
    );
    assert_eq!(seen, (from..=last).collect::<Vec<_>>());
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
    let mut watch = watch_stream(&mut other, "long", true).await;
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
    // The client goes on as a client would: an Advance that fails while the cluster
    // elects new leaders (its appends or its owner's lease waited too long, which a
    // loaded machine can make happen) is sent again, through either replica. What
    // is checked is that nothing is lost or repeated.
    let running = tokio::spawn({
        let mut clients = [owner.clone(), other.clone()];
        async move {
            let mut failures = 0;
            loop {
                let client = &mut clients[failures % 2];
                match advance(client, "steady", advance_request::Until::ScriptEnd(true)).await {
                    Ok(events) => return Ok(events),
                    Err(status) if failures < 10 => {
                        eprintln!("advance failed during the outage ({status}); sending it again");
                        failures += 1;
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Err(status) => return Err(status),
                }
            }
        }
    });
    // Once the story is under way, one of the three NATS nodes dies (the stream keeps
    // a quorum of two), and comes back later.
    let nats = &mut stack._nats;
    let seen = seqs(
        &watch_events(&mut other, "steady", true, |event| {
            match event.seq {
                20 => nats.kill_node(0),
                120 => nats.start_node(0),
                _ => {}
            }
            true
        })
        .await,
    );
    running
        .await
        .expect("joined")
        .expect("the story finished with a node down");
    let last = replay(&mut other, "steady")
        .await
        .last()
        .expect("events")
        .seq;
    assert!(seen.len() > 120, "the story ran on past the node's death");
    assert_eq!(
        seen,
        (1..=last).collect::<Vec<_>>(),
        "every event once, in order"
    );
    assert_eq!(seqs(&replay(&mut owner, "steady").await), seen);
}

/// The prompts `character`'s agent audited in `id`, as (purpose, time) in order.
async fn audit_of(
    client: &mut WorldClient<Channel>,
    id: &str,
    character: &str,
) -> Vec<(String, i64)> {
    let audits = dramatis_proto::audit::read_all_pages(|page_token| {
        let mut client = client.clone();
        let request = GetAuditRequest {
            world_id: id.into(),
            character: character.into(),
            page_token,
            ..GetAuditRequest::default()
        };
        async move { client.get_audit(request).await.map(|r| r.into_inner()) }
    })
    .await
    .unwrap_or_else(|s| panic!("audit of {character}: {s}"));
    assert_eq!(audits.len(), 1, "one character's audit");
    audits[0]
        .prompts
        .iter()
        .map(|p| (p.purpose.clone(), p.timestamp_ms))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_agent_s_characters_go_on_whole_on_another_agent() {
    let Some(mut stack) = stack_of(2, 1, true).await else {
        return;
    };
    let mut world = stack.replicas[0].client().await;
    create(&mut world, "moving", 12).await;
    let first = advance(&mut world, "moving", advance_request::Until::Turns(8))
        .await
        .expect("the first turns");
    // The agent that hosts the first character to speak, and every character it
    // hosts: placed as the world places them.
    let placement =
        dramatis_world::agent_clients::StaticAgents::new(stack.agents.endpoints.clone())
            .expect("agents");
    let host_of = |character: &str| placement.ranked("moving", character)[0].to_owned();
    let speaker = first
        .iter()
        .find(|e| !e.speaker.is_empty())
        .expect("a line")
        .speaker
        .clone();
    let victim = host_of(&speaker);
    let moved: Vec<String> = ledger(12)
        .characters
        .iter()
        .map(|c| c.id.clone())
        .filter(|c| host_of(c) == victim)
        .collect();
    let mut before = BTreeMap::new();
    for character in &moved {
        before.insert(
            character.clone(),
            audit_of(&mut world, "moving", character).await,
        );
    }
    assert!(
        !before[&speaker].is_empty(),
        "{speaker} audited its turn before the kill"
    );
    // kill -9 the agent: the world finds it gone and moves its characters to the
    // other agent, which reads their shards from JetStream.
    let index = stack
        .agents
        .endpoints
        .iter()
        .position(|e| *e == victim)
        .expect("the victim is listed");
    stack.agents.children[index].start_kill().expect("kill");
    let _ = stack.agents.children[index].wait().await;
    let rest = advance(
        &mut world,
        "moving",
        advance_request::Until::ScriptEnd(true),
    )
    .await
    .expect("the story goes on after the agent died");
    assert!(
        rest.iter().any(|e| e.speaker == speaker),
        "{speaker} speaks again after its agent died"
    );
    let all = replay(&mut world, "moving").await;
    let last = all.last().expect("events").seq;
    assert_eq!(seqs(&all), (1..=last).collect::<Vec<_>>());
    for character in &moved {
        // The audit lives only in the shard: the prompts audited by the dead agent
        // are still there, in order, and the new agent's follow them.
        let after = audit_of(&mut world, "moving", character).await;
        let earlier = &before[character];
        assert_eq!(
            &after[..earlier.len()],
            earlier.as_slice(),
            "{character}'s audit from before the kill survived the move"
        );
        if *character == speaker {
            assert!(
                after.len() > earlier.len(),
                "{character}'s new agent audits its later turns too"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_on_another_replica_sees_each_line_stream_before_it_settles() {
    let Some(stack) = stack().await else {
        return;
    };
    let mut owner = stack.replicas[0].client().await;
    let mut other = stack.replicas[1].client().await;
    create(&mut owner, "chunks", 4).await;
    let mut stream = watch_stream(&mut other, "chunks", true).await;
    // A first turn, and its events seen by the watcher: the mirror subscribes to the
    // chunks before it follows the log, so from here on no chunk can pass it by,
    // however slowly a loaded machine starts it. (A fixed sleep here failed under load.)
    let first = advance(&mut owner, "chunks", advance_request::Until::Turns(1))
        .await
        .expect("first turn");
    let first_last = first.last().expect("events").seq;
    let mut streamed: BTreeMap<u64, String> = BTreeMap::new();
    let mut events = Vec::new();
    while events.last().is_none_or(|e: &Event| e.seq < first_last) {
        let item = tokio::time::timeout(Duration::from_secs(30), stream.message())
            .await
            .expect("in time")
            .expect("item")
            .expect("the watch goes on");
        if let Some(watch_response::Item::Event(event)) = item.item {
            events.push(event);
        }
    }
    let produced = advance(&mut owner, "chunks", advance_request::Until::Turns(4))
        .await
        .expect("advance");
    let last = produced.last().expect("events").seq;
    while events.last().is_none_or(|e: &Event| e.seq < last) {
        let item = tokio::time::timeout(Duration::from_secs(30), stream.message())
            .await
            .expect("in time")
            .expect("item")
            .expect("the watch goes on");
        match item.item {
            Some(watch_response::Item::Token(token)) => {
                assert!(
                    events.last().is_none_or(|e: &Event| e.seq < token.seq),
                    "chunks of event {} came after it settled",
                    token.seq
                );
                streamed.entry(token.seq).or_default().push_str(&token.text);
            }
            Some(watch_response::Item::Event(event)) => events.push(event),
            None => {}
        }
    }
    assert_eq!(seqs(&events), (1..=last).collect::<Vec<_>>());
    // Chunks are a preview on a subject of their own, not the log: one that comes
    // after its line settled is dropped, so a line may show only its first words.
    // What does come is the start of the line, and a line streams whole when nothing
    // lags.
    let lines: Vec<&Event> = produced.iter().filter(|e| e.turn > 0).collect();
    assert_eq!(lines.len(), 4, "four turns");
    let mut whole = 0;
    for line in lines {
        let Some(words) = streamed.get(&line.seq) else {
            continue;
        };
        assert!(
            line.text.starts_with(words.as_str()),
            "the streamed words of event {} begin its line: {words:?} / {:?}",
            line.seq,
            line.text
        );
        if *words == line.text || format!("{words}.") == line.text {
            whole += 1;
        }
    }
    assert!(
        whole > 0,
        "a line streamed whole to the other replica: {streamed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_that_serve_tls_forward_to_each_other_over_tls() {
    let Some(mut stack) = stack_of(1, 0, false).await else {
        return;
    };
    let certs = stack._dir.path().join("certs");
    let status = tokio::process::Command::new(EXE)
        .args(["certs", "--out"])
        .arg(&certs)
        .current_dir(repo())
        .stdout(Stdio::null())
        .status()
        .await
        .expect("dramatis certs");
    assert!(status.success());
    let (agents, url) = (stack.agents.endpoints.join(","), stack._nats.url());
    for name in ["t1", "t2"] {
        let replica =
            Replica::start_with(name, stack._dir.path(), &agents, &url, Some(&certs)).await;
        assert!(replica.url.starts_with("https://"));
        stack.replicas.push(replica);
    }
    let mut one = stack.replicas[0].client().await;
    let mut two = stack.replicas[1].client().await;
    create(&mut one, "sealed", 2).await;
    // Through the replica that does not own it: forwarded to the owner over TLS.
    let events = advance(&mut two, "sealed", advance_request::Until::Turns(3))
        .await
        .expect("a call forwarded over TLS");
    assert!(!events.is_empty());
    let last = events.last().expect("events").seq;
    assert_eq!(
        seqs(&replay(&mut two, "sealed").await),
        (1..=last).collect::<Vec<_>>()
    );
    let info = two
        .get_world(GetWorldRequest {
            world_id: "sealed".into(),
        })
        .await
        .expect("get, forwarded")
        .into_inner();
    assert_eq!(info.next_seq, last + 1);
}

/// A newcomer the director brings in on the owner is masked in a point of view that
/// another replica serves from the shared log, and has followed since before she
/// joined: that replica reads the cast again from the world's record before the
/// first event that names her.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_is_masked_in_a_point_of_view_served_by_another_replica() {
    use dramatis_proto::v1::{BringIn, InterveneRequest, SandboxCharacter, intervene_request};
    let Some(stack) = stack().await else {
        return;
    };
    let mut owner = stack.replicas[0].client().await;
    let mut other = stack.replicas[1].client().await;
    create(&mut owner, "guests", 3).await;
    advance(&mut owner, "guests", advance_request::Until::SceneEnd(true))
        .await
        .expect("a first scene");
    let info = owner
        .get_world(GetWorldRequest {
            world_id: "guests".into(),
        })
        .await
        .expect("world")
        .into_inner();
    let pov = info
        .characters
        .iter()
        .find(|c| c.location == "gasworks-lane")
        .map(|c| c.id.clone())
        .expect("someone at Gasworks Lane");
    let mut seen = other
        .watch(WatchRequest {
            world_id: "guests".into(),
            from_seq: info.next_seq,
            no_follow: false,
            pov: pov.clone(),
        })
        .await
        .expect("watch on the other replica")
        .into_inner();
    let entrance = owner
        .intervene(InterveneRequest {
            world_id: "guests".into(),
            intervention: Some(intervene_request::Intervention::BringIn(BringIn {
                location: "gasworks-lane".into(),
                newcomer: Some(SandboxCharacter {
                    id: "agnes".into(),
                    name: "Agnes Pell".into(),
                    profile: "A night-soil carter who hears everything said on the lanes.".into(),
                    known_as: "a carter with a lantern on her cart".into(),
                    ..SandboxCharacter::default()
                }),
                ..BringIn::default()
            })),
        })
        .await
        .expect("brought in")
        .into_inner()
        .event
        .expect("the event");
    assert_eq!(entrance.text, "Agnes Pell arrives at Gasworks Lane.");
    let shown = loop {
        let item = tokio::time::timeout(Duration::from_secs(60), seen.message())
            .await
            .expect("in time")
            .expect("item")
            .expect("the watch goes on");
        if let Some(watch_response::Item::Event(event)) = item.item
            && event.seq == entrance.seq
        {
            break event;
        }
    };
    assert_eq!(
        shown.text, "A carter with a lantern on her cart arrives at Gasworks Lane.",
        "{pov}'s view on the other replica"
    );
    assert_ne!(shown.speaker, "agnes", "her id is a name too");
}
