//! `CreateWorld` by path reads only regular, bounded files inside the scenario
//! directories. A path outside them is refused before the filesystem is touched, so the
//! answer is the same whether the file exists; a symlink out is refused; a FIFO or a
//! device is never opened; errors quote at most a short prefix of the path.

use std::path::Path;
use std::sync::Arc;

use dramatis_proto::{DomainError, ErrorKind};
use dramatis_world::agent_clients::StaticAgents;
use dramatis_world::{ScenarioSource, WorldError, WorldServiceOptions, Worlds};

fn worlds(root: &Path, data: &Path) -> Worlds {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let agents = StaticAgents::new(vec!["http://127.0.0.1:9".into()]).expect("an agent address");
    Worlds::open(&WorldServiceOptions {
        scenario_roots: vec![root.to_path_buf()],
        ..WorldServiceOptions::new(shipped, data.join("events.redb"), Arc::new(agents))
    })
    .expect("worlds")
}

async fn create(worlds: &Worlds, path: &Path) -> WorldError {
    match worlds
        .create(ScenarioSource::Path(path.to_path_buf()), None, Vec::new())
        .await
    {
        Ok(_) => panic!("{} was accepted", path.display()),
        Err(e) => e,
    }
}

#[tokio::test]
async fn paths_are_confined_bounded_and_never_block() {
    let root = tempfile::tempdir().expect("root");
    let data = tempfile::tempdir().expect("data");
    let worlds = worlds(root.path(), data.path());

    // Outside the roots: the same refusal for a file that exists and one that does not,
    // and for /dev/zero, which is never opened.
    let long = format!("/etc/{}", "x".repeat(300));
    for outside in [
        "/etc/shadow",
        "/etc/no-such-file",
        "/dev/zero",
        long.as_str(),
    ] {
        let e = create(&worlds, Path::new(outside)).await;
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{outside}: {e}");
        assert!(
            e.to_string().contains("outside the scenario directories"),
            "{e}"
        );
        assert!(e.to_string().len() < 300, "the path is quoted in full: {e}");
    }
    // `..` cannot climb out.
    let climb = root.path().join("../../etc/shadow");
    assert_eq!(
        create(&worlds, &climb).await.kind(),
        ErrorKind::PermissionDenied
    );

    // A symlink inside that points out.
    let link = root.path().join("link.toml");
    std::os::unix::fs::symlink("/etc/hostname", &link).expect("symlink");
    let e = create(&worlds, &link).await;
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");

    // A FIFO inside: refused as not a regular file, without blocking on open.
    let fifo = root.path().join("pipe.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let e = tokio::time::timeout(std::time::Duration::from_secs(10), create(&worlds, &fifo))
        .await
        .expect("a FIFO must not block CreateWorld");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("not a regular file"), "{e}");

    // Too large: refused by its size, not read.
    let big = root.path().join("big.toml");
    let file = std::fs::File::create(&big).expect("big");
    file.set_len(9 * 1024 * 1024).expect("sparse");
    let e = create(&worlds, &big).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("at most 8388608"), "{e}");

    // Missing inside the roots: not found. Binary: a clear error.
    let e = create(&worlds, &root.path().join("missing.toml")).await;
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    let binary = root.path().join("binary.toml");
    std::fs::write(&binary, b"name = \"\xff\xfe\"\n").expect("binary");
    let e = create(&worlds, &binary).await;
    assert!(
        e.to_string()
            .contains("not UTF-8 text (invalid bytes at offset 8)"),
        "{e}"
    );

    // Inside and readable: it is read and validated (this one has an unknown cast member).
    let broken = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/scenario/tests/broken/unknown-cast.toml");
    let copy = root.path().join("unknown-cast.toml");
    std::fs::copy(&broken, &copy).expect("copy");
    let e = create(&worlds, &copy).await;
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(
        e.to_string().contains("unknown character \"lestrade\""),
        "{e}"
    );
}
