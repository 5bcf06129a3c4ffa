//! Connections that never become calls. Before, a server set no idle timeout,
//! keepalive or connection cap: about 1,000 connections that sent only the HTTP/2
//! preface used up a 1,024-descriptor limit and locked out every new client.

mod common;

use std::time::Duration;

use dramatis_proto::v1::ListWorldsRequest;
use dramatis_proto::v1::world_client::WorldClient;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the service's descriptors")
        .count()
}

/// 120 connections that send the HTTP/2 preface and then nothing, against a cap of
/// 50: those over the cap are closed at once, the rest once their first seconds pass
/// without the bytes a real client sends, and a real client is served throughout.
#[tokio::test]
async fn silent_connections_are_capped_and_closed_and_clients_still_get_in() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) =
        common::serve_scripted_with(&data.path().to_string_lossy(), &["--max-connections", "50"])
            .await;
    let pid = server.id().expect("pid");
    let addr = url.trim_start_matches("http://").to_owned();
    let before = descriptors(pid);

    let mut silent = Vec::new();
    for _ in 0..120 {
        let mut stream = tokio::net::TcpStream::connect(&addr)
            .await
            .expect("connect");
        stream
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .expect("preface");
        silent.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = descriptors(pid);
    assert!(
        held <= before + 50 + 5,
        "the service holds {held} descriptors ({before} before 120 silent connections, cap 50)"
    );

    // While the cap is full, a new client is refused at once, not left hanging.
    let early = tokio::time::timeout(Duration::from_secs(10), async {
        let mut client = WorldClient::connect(url.clone()).await.ok()?;
        client.list_worlds(ListWorldsRequest::default()).await.ok()
    })
    .await;
    assert!(early.is_ok(), "a client waited while the cap was full");
    // Past their first seconds, the silent ones are gone and clients are served.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let mut client = WorldClient::connect(url.clone())
        .await
        .expect("a real client connects");
    client
        .list_worlds(ListWorldsRequest::default())
        .await
        .expect("served once the silent connections are closed");
    let mut closed = 0;
    for stream in &mut silent {
        let mut buf = [0u8; 256];
        // The server's settings frame may come first; then the end.
        let ended = tokio::time::timeout(Duration::from_secs(2), async {
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return true,
                    Ok(_) => {}
                }
            }
        })
        .await
        .unwrap_or(false);
        if ended {
            closed += 1;
        }
    }
    assert_eq!(
        closed, 120,
        "every silent connection was closed by the service"
    );
    let after = descriptors(pid);
    assert!(
        after <= before + 5,
        "{after} descriptors held after ({before} before)"
    );
    let _ = server.kill().await;
}
