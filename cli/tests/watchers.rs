//! Viewers that do not read. Before, each `Watch` copied the whole history it had yet
//! to send and waited on its viewer without end, with no limit per world or service:
//! 1,000 watchers that read nothing of a 5,249-event world added 1.9 GB.

mod common;

use std::time::Duration;

use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{
    AdvanceRequest, CreateWorldRequest, WatchRequest, advance_request, create_world_request,
    watch_response,
};
use tonic::Code;

const WORLD: &str = "watched";

/// A viewer's connection that takes no more than HTTP/2's default 64 KB window ahead
/// of what it reads (the client library would otherwise take megabytes, and hold them
/// itself).
async fn viewer(url: &str) -> WorldClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_owned())
        .expect("url")
        .initial_stream_window_size(65_535)
        .initial_connection_window_size(65_535)
        .connect()
        .await
        .expect("connect");
    WorldClient::new(channel)
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

/// An open story of about a thousand events; 100 watchers that read nothing cost a
/// bounded, small amount each; one more than the world allows is refused; and a
/// watcher that leaves its buffer full past the stall time is cut off: it reads what
/// was buffered, then RESOURCE_EXHAUSTED saying why.
#[tokio::test]
async fn watchers_that_do_not_read_are_bounded_and_cut_off() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) = common::serve_scripted_with(
        &data.path().to_string_lossy(),
        &[
            "--agents",
            "world",
            "--watcher-stall",
            "3",
            "--max-watchers-per-world",
            "101",
        ],
    )
    .await;
    let pid = server.id().expect("pid");
    let mut world = WorldClient::connect(url.clone()).await.expect("connect");
    let path = common::repo().join("scenarios/lamplighters-ledger/scenario.toml");
    let scenario = dramatis_scenario::Scenario::load(&path).expect("shipped sandbox");
    let mut spec = dramatis_scenario::sandbox::scenario_to_spec(&scenario).expect("spec");
    spec.rounds = 400;
    world
        .create_world(CreateWorldRequest {
            source: Some(create_world_request::Source::Sandbox(spec)),
            world_id: WORLD.into(),
            ..Default::default()
        })
        .await
        .expect("create");
    let events = world
        .advance(AdvanceRequest {
            world_id: WORLD.into(),
            until: Some(advance_request::Until::Turns(1_500)),
        })
        .await
        .expect("advance")
        .into_inner()
        .events
        .len();
    assert!(events > 1_500, "{events} events");

    let watch = || WatchRequest {
        world_id: WORLD.into(),
        from_seq: 1,
        ..WatchRequest::default()
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = rss_kb(pid);
    let mut idle = Vec::new();
    for _ in 0..100 {
        // A connection each, as separate viewers have.
        let mut client = viewer(&url).await;
        idle.push(client.watch(watch()).await.expect("watch").into_inner());
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let grown = rss_kb(pid).saturating_sub(before);
    eprintln!(
        "100 watchers that read nothing of {events} events: {grown} KB ({} KB each)",
        grown / 100
    );
    assert!(grown / 100 < 512, "{} KB per watcher", grown / 100);

    // The world's 101st watcher is the last it takes.
    let mut last = viewer(&url)
        .await
        .watch(watch())
        .await
        .expect("the 101st")
        .into_inner();
    let refused = world.watch(watch()).await.expect_err("the 102nd");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused}");
    assert!(
        refused.message().contains("this world has 101 watchers"),
        "{refused}"
    );

    // Past the stall time, a watcher that read nothing finds its stream cut.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let mut read = 0;
    let ended = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match last.message().await {
                Ok(Some(item)) => {
                    if let Some(watch_response::Item::Event(_)) = item.item {
                        read += 1;
                    }
                }
                Ok(None) => break None,
                Err(status) => break Some(status),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("read {read} events and the stream neither ended nor was cut"));
    let status = ended.expect("cut off, not ended as if the story were over");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status}");
    assert!(
        status.message().contains("read nothing for 3 s"),
        "{status}"
    );
    assert!(read < events, "{read} of {events} events before the cut");
    drop(idle);
    let _ = server.kill().await;
}
