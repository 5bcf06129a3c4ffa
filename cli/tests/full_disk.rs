//! A disk that fills up under a running service. `dramatis serve` runs in a mount
//! namespace of its own (`unshare`) with its data directory on small tmpfs mounts,
//! which the test fills and empties through `/proc/PID/root`. The story must stop
//! before logging a line its characters cannot store, say why, and go on once space
//! returns, without a restart, with every event in every perceiver's shard.

mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{AdvanceRequest, GetWorldRequest, WorldStatus, advance_request};
use tokio::io::{AsyncBufReadExt, BufReader};
use tonic::transport::Channel;

const WORLD: &str = "disk";

/// A service whose data directory (`/data` inside its namespace) is a tmpfs of
/// `data_mb`, with `shards/` a tmpfs of its own of `shards_mb` when given; the agents
/// keep a reserve of `reserve_mb`.
struct Confined {
    server: tokio::process::Child,
    world: WorldClient<Channel>,
    /// The data directory as the test sees it.
    data: PathBuf,
    _scratch: tempfile::TempDir,
}

impl Confined {
    async fn start(data_mb: u32, shards_mb: Option<u32>, reserve_mb: u32) -> Self {
        let scratch = tempfile::tempdir().expect("temp dir");
        let inside = scratch.path().join("data");
        std::fs::create_dir_all(&inside).expect("mount point");
        let mut mounts = format!("mount -t tmpfs -o size={data_mb}m,mode=0700 disk \"$1\"");
        if let Some(mb) = shards_mb {
            mounts.push_str(&format!(
                " && mkdir \"$1/shards\" && mount -t tmpfs -o size={mb}m,mode=0700 shards \"$1/shards\""
            ));
        }
        let script = format!("{mounts} && shift && exec \"$@\"");
        let log = std::fs::File::create(scratch.path().join("serve.log")).expect("log");
        let mut server = tokio::process::Command::new("unshare")
            .args([
                "--user",
                "--map-root-user",
                "--mount",
                "--propagation",
                "private",
            ])
            .args(["sh", "-c", &script, "sh"])
            .arg(&inside)
            .arg(common::EXE)
            .args(["serve", "--listen", "127.0.0.1:0", "--scripted", "builtin"])
            .args(["--no-viewer", "--agents", "character", "--data-dir"])
            .arg(&inside)
            .env(dramatis_runtime::disk::RESERVE_VAR, reserve_mb.to_string())
            .current_dir(common::repo())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("unshare started");
        let mut out = BufReader::new(server.stdout.take().expect("stdout")).lines();
        let mut seen = String::new();
        let ready = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            while let Ok(Some(line)) = out.next_line().await {
                if line.contains("DRAMATIS_READY") {
                    return Some(line);
                }
                seen.push_str(&line);
            }
            None
        })
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| {
            let log = std::fs::read_to_string(scratch.path().join("serve.log"));
            panic!("serve in its namespace did not start: {seen}\n{log:?}")
        });
        let url = format!("http://{}", ready.split_whitespace().nth(1).expect("addr"));
        let pid = server.id().expect("the service's pid");
        let data = PathBuf::from(format!("/proc/{pid}/root"))
            .join(inside.strip_prefix("/").expect("an absolute temp dir"));
        let mut world = WorldClient::connect(url).await.expect("connect");
        world
            .create_world(common::scarlet(WORLD))
            .await
            .expect("create");
        Self {
            server,
            world,
            data,
            _scratch: scratch,
        }
    }

    fn shards(&self) -> PathBuf {
        self.data.join("shards")
    }

    async fn advance(&mut self, turns: u32) -> Result<u64, tonic::Status> {
        self.world
            .advance(AdvanceRequest {
                world_id: WORLD.into(),
                until: Some(advance_request::Until::Turns(turns)),
            })
            .await
            .map(|r| r.into_inner().events.len() as u64)
    }

    /// The last event logged.
    async fn logged(&mut self) -> u64 {
        common::replay(&mut self.world, WORLD)
            .await
            .last()
            .map_or(0, |e| e.seq)
    }

    async fn finish_and_check(&mut self) {
        let mut calls = 0;
        loop {
            let info = self
                .world
                .get_world(GetWorldRequest {
                    world_id: WORLD.into(),
                })
                .await
                .expect("get world")
                .into_inner();
            if info.status == WorldStatus::Finished as i32 {
                break;
            }
            calls += 1;
            assert!(calls < 100, "the story does not end");
            self.advance(20).await.expect("advance once there is room");
        }
        let events = common::replay(&mut self.world, WORLD).await;
        common::assert_whole(&events, &self.shards().join(WORLD));
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._scratch.path().join("serve.log")).unwrap_or_default()
    }
}

/// Fills the file system of `dir` with `dir/filler` until `leave` bytes are free
/// (or none); returns the file.
fn fill(dir: &Path, leave: u64) -> PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).expect("filler");
    let chunk = vec![7u8; 1 << 20];
    loop {
        let free = dramatis_runtime::disk::free_bytes(dir).expect("statvfs");
        if free <= leave {
            break;
        }
        let step = usize::try_from((free - leave).min(chunk.len() as u64)).expect("size");
        if file.write_all(&chunk[..step]).is_err() {
            break;
        }
    }
    let _ = file.sync_all();
    path
}

/// With the default kind of reserve, a nearly full disk refuses the line before it is
/// logged: every `Advance` answers RESOURCE_EXHAUSTED saying the disk is full, and
/// the log does not grow. Once the filler is removed, the same service finishes the
/// story, and every character holds every event it perceived.
#[tokio::test]
async fn a_nearly_full_disk_refuses_the_line_before_logging_it() {
    let mut confined = Confined::start(96, None, 16).await;
    confined.advance(2).await.expect("advance with room");
    let before = confined.logged().await;
    let filler = fill(&confined.data, 8 << 20);
    for attempt in 0..5 {
        let refused = confined
            .advance(1)
            .await
            .expect_err("no room for the next line");
        assert_eq!(
            refused.code(),
            tonic::Code::ResourceExhausted,
            "attempt {attempt}: {refused}"
        );
        assert!(refused.message().contains("the disk is full"), "{refused}");
        assert!(!refused.message().contains("/data"), "no path: {refused}");
    }
    assert_eq!(confined.logged().await, before, "nothing logged while full");
    std::fs::remove_file(filler).expect("free the space");
    confined.finish_and_check().await;
    let _ = confined.server.kill().await;
}

/// With no reserve, the agents' stores themselves run out of space mid-write (redb
/// then refuses every later write to that file). No event is logged while one its
/// perceivers could not store is still undelivered, however often the client tries
/// again (before, every retry logged one more); once space returns the agents open their stores anew and
/// the story goes on without a restart, every event in every perceiver's shard.
#[tokio::test]
async fn agents_whose_disk_filled_recover_when_space_returns() {
    let mut confined = Confined::start(128, Some(48), 0).await;
    confined.advance(2).await.expect("advance with room");
    let filler = fill(&confined.shards(), 0);
    // A store may still have pages free inside its file, so some calls succeed. But no
    // call logs an event while an earlier one is missing from a perceiver's shard:
    // after each call, every event but the last logged is where it belongs.
    let mut failures = 0;
    for call in 0..12 {
        if confined.advance(1).await.is_err() {
            failures += 1;
        }
        let events = common::replay(&mut confined.world, WORLD).await;
        let held = common::shard_seqs(&confined.shards().join(WORLD));
        let last = events.last().map_or(0, |e| e.seq);
        for event in events.iter().filter(|e| e.seq < last) {
            for perceiver in &event.perceivers {
                let holds = held.get(perceiver).is_some_and(|h| h.contains(&event.seq));
                if !holds {
                    eprintln!("{}", confined.log());
                }
                assert!(
                    holds,
                    "call {call}: event {} is logged, and so is {last} after it, but \
                     {perceiver}'s shard lacks it",
                    event.seq
                );
            }
        }
    }
    assert!(
        failures >= 6,
        "only {failures} of 12 calls failed on a full disk"
    );
    std::fs::remove_file(filler).expect("free the space");
    confined.finish_and_check().await;
    assert!(!confined.log().contains("panicked"), "{}", confined.log());
    let _ = confined.server.kill().await;
}
