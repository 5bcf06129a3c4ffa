//! Connections that never become calls. First, a server set no idle timeout,
//! keepalive or connection cap: about 1,000 connections that sent only the HTTP/2
//! preface used up a 1,024-descriptor limit. Then a cap and a first-bytes deadline came,
//! but a connection that sent its preface and settings (or half a request line) passed
//! the deadline and kept its slot for a minute, and a full cap refused every newcomer:
//! 4,000 such connections answered a real `ListWorlds` with UNAVAILABLE.

mod common;

use std::time::{Duration, Instant};

use dramatis_proto::v1::ListWorldsRequest;
use dramatis_proto::v1::world_client::WorldClient;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the service's descriptors")
        .count()
}

/// The HTTP/2 preface and a SETTINGS frame of six settings: more than the first bytes a
/// real client sends, and still no request.
fn preface_and_settings() -> Vec<u8> {
    let mut bytes = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    bytes.extend_from_slice(&[0, 0, 36, 0x4, 0, 0, 0, 0, 0]);
    for id in 1u16..=6 {
        bytes.extend_from_slice(&id.to_be_bytes());
        bytes.extend_from_slice(&65_535u32.to_be_bytes());
    }
    bytes
}

/// Half an HTTP/1.1 request: a request line and some headers, never the blank line.
fn half_a_request() -> Vec<u8> {
    b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: a-slow-client/1.0\r\nAccept: */*\r\n"
        .to_vec()
}

/// Whether the service has closed `stream` (reading past what it sent, a settings
/// frame or an error page, comes to the end).
async fn closed_by_the_server(mut stream: tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 512];
    tokio::time::timeout(Duration::from_secs(3), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    })
    .await
    .unwrap_or(false)
}

/// 4,000 connections that send an HTTP/2 preface with its settings, or half an HTTP/1.1
/// request, and then nothing, against the default cap of 1,000. A real client is
/// answered within a second, every time of 20, while they are held; the service holds
/// no more descriptors than its cap; and every silent connection is closed once its
/// first seconds pass without a request.
#[tokio::test]
async fn four_thousand_silent_connections_do_not_lock_a_client_out() {
    dramatis_runtime::grpc::raise_file_limit();
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) = common::serve_scripted_with(&data.path().to_string_lossy(), &[]).await;
    let pid = server.id().expect("pid");
    let addr = url.trim_start_matches("http://").to_owned();
    let before = descriptors(pid);

    let (h2, h1) = (preface_and_settings(), half_a_request());
    let mut silent = Vec::with_capacity(4_000);
    for i in 0..4_000 {
        let mut stream = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        let first = if i % 2 == 0 { &h2 } else { &h1 };
        // A connection the service has already closed to make room may refuse this.
        let _ = stream.write_all(first).await;
        silent.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut waits = Vec::new();
    for attempt in 0..20 {
        let started = Instant::now();
        let answered = tokio::time::timeout(Duration::from_secs(1), async {
            let mut client = WorldClient::connect(url.clone()).await?;
            client
                .list_worlds(ListWorldsRequest::default())
                .await
                .map_err(Into::into)
        })
        .await;
        match answered {
            Ok(Ok(_)) => waits.push(started.elapsed()),
            Ok(Err(error)) => {
                let error: Box<dyn std::error::Error> = error;
                panic!("call {attempt} with 4,000 silent connections held was refused: {error}")
            }
            Err(_) => panic!("call {attempt} with 4,000 silent connections held waited over 1 s"),
        }
    }
    waits.sort();
    eprintln!(
        "20 calls beside 4,000 silent connections: median {:?}, slowest {:?}",
        waits[waits.len() / 2],
        waits[waits.len() - 1]
    );
    let held = descriptors(pid);
    assert!(
        held <= before + dramatis_runtime::grpc::DEFAULT_MAX_CONNECTIONS + 25,
        "the service holds {held} descriptors ({before} before 4,000 silent connections, cap {})",
        dramatis_runtime::grpc::DEFAULT_MAX_CONNECTIONS
    );

    // Past the first-request deadline, none of them is held.
    tokio::time::sleep(dramatis_runtime::grpc::FIRST_REQUEST_WITHIN + Duration::from_secs(2)).await;
    let checks: Vec<_> = silent
        .into_iter()
        .map(|stream| tokio::spawn(closed_by_the_server(stream)))
        .collect();
    let mut closed = 0;
    for check in checks {
        if check.await.expect("a check") {
            closed += 1;
        }
    }
    assert_eq!(
        closed, 4_000,
        "every silent connection was closed by the service"
    );
    let after = descriptors(pid);
    assert!(
        after <= before + 5,
        "{after} descriptors held after ({before} before)"
    );
    let _ = server.kill().await;
}
