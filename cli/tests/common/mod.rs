//! What the binary's test files share: the binary, the repository, and a way to run
//! one command to its end, a served scripted stack, and reading a child's output.

#![allow(dead_code)]

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

pub const EXE: &str = env!("CARGO_BIN_EXE_dramatis");

pub fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `dramatis ARGS` to completion; returns (success, stdout, stderr).
pub async fn dramatis(args: &[&str]) -> (bool, String, String) {
    dramatis_env(args, &[]).await
}

/// [`dramatis`] with `env` added to the environment (and no token from the caller's).
pub async fn dramatis_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let output = tokio::process::Command::new(EXE)
        .args(args)
        .env_remove("DRAMATIS_TOKEN")
        .env_remove("DRAMATIS_AUTH_TOKENS")
        .envs(env.iter().copied())
        .current_dir(repo())
        .output()
        .await
        .expect("dramatis ran");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The next line of `lines` that contains `needle` (within 60 s), with what came before.
pub async fn line_with(
    lines: &mut tokio::io::Lines<BufReader<impl tokio::io::AsyncRead + Unpin>>,
    needle: &str,
    seen: &mut String,
) -> String {
    let found = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("readable") {
            seen.push_str(&line);
            seen.push('\n');
            if line.contains(needle) {
                return Some(line);
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(line)) => line,
        _ => panic!("no line with {needle:?} in:\n{seen}"),
    }
}

/// A `dramatis serve` on the scripted model; returns it and its URL. Its log is
/// appended to `serve.log` in the data directory.
pub async fn serve_scripted(data_dir: &str) -> (tokio::process::Child, String) {
    serve_scripted_with(data_dir, &[]).await
}

/// [`serve_scripted`] with more arguments.
pub async fn serve_scripted_with(
    data_dir: &str,
    extra: &[&str],
) -> (tokio::process::Child, String) {
    serve_on(&["--scripted", "builtin"], data_dir, extra).await
}

/// A `dramatis serve` on the built-in model (llama.cpp, started by the service).
pub async fn serve_builtin(data_dir: &str) -> (tokio::process::Child, String) {
    serve_on(&[], data_dir, &[]).await
}

/// A `dramatis serve` with `model` (its model flags) and `extra` arguments; returns it
/// and its URL. Its log is appended to `serve.log` in the data directory.
pub async fn serve_on(
    model: &[&str],
    data_dir: &str,
    extra: &[&str],
) -> (tokio::process::Child, String) {
    std::fs::create_dir_all(data_dir).expect("data dir");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(std::path::Path::new(data_dir).join("serve.log"))
        .expect("serve log");
    let mut server = tokio::process::Command::new(EXE)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(model)
        .args(["--data-dir", data_dir, "--no-viewer"])
        .args(extra)
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .expect("serve started");
    let mut server_out = BufReader::new(server.stdout.take().expect("stdout")).lines();
    let ready = line_with(&mut server_out, "DRAMATIS_READY", &mut String::new()).await;
    let url = format!("http://{}", ready.split_whitespace().nth(1).expect("addr"));
    (server, url)
}

/// A small deterministic generator; the seed is printed so a failure can be replayed.
pub struct Dice(u64);

impl Dice {
    pub fn seeded() -> Self {
        let seed = std::env::var("DRAMATIS_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(7, |d| d.as_nanos() as u64)
            });
        eprintln!("DRAMATIS_TEST_SEED={seed}");
        Self(seed | 1)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// The shipped open story as an inline spec, with `rounds` rounds.
pub fn ledger(rounds: u32) -> dramatis_proto::v1::SandboxSpec {
    let path = repo().join("scenarios/lamplighters-ledger/scenario.toml");
    let scenario = dramatis_scenario::Scenario::load(&path).expect("shipped sandbox");
    let mut spec = dramatis_scenario::sandbox::scenario_to_spec(&scenario).expect("an open story");
    spec.rounds = rounds;
    spec
}

/// The whole log of world `id`, replayed through `client` (no follow).
pub async fn replay(
    client: &mut dramatis_proto::v1::world_client::WorldClient<tonic::transport::Channel>,
    id: &str,
) -> Vec<dramatis_proto::v1::Event> {
    replay_as(client, id, "").await
}

pub use dramatis_tests::replay_as;

/// `seq`s of the events each character's saved shard in `world_shards` (a world's
/// shard folder) holds, by character.
pub fn shard_seqs(world_shards: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u64>> {
    let mut seqs = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(world_shards)
        .expect("the world's shard folder")
        .flatten()
    {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("redb") {
            continue;
        }
        let character = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("name")
            .to_owned();
        // Read-only, beside the agent that may still be writing it.
        let (stored, _) = dramatis_character::shard::read_store_file(&path).expect("read shard");
        let held = stored
            .perceived
            .iter()
            .map(|p| {
                let p: serde_json::Value = serde_json::from_slice(p).expect("json");
                p["seq"].as_u64().expect("seq")
            })
            .collect();
        seqs.insert(character, held);
    }
    seqs
}

/// The log is 1..=N, and each of the four characters' shards in `world_shards` holds
/// exactly the events whose perceivers name it, in order.
pub fn assert_whole(events: &[dramatis_proto::v1::Event], world_shards: &std::path::Path) {
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "the log is every event once, in order");
    let held = shard_seqs(world_shards);
    assert_eq!(held.len(), 4, "four characters' shards: {:?}", held.keys());
    for (character, held) in held {
        let perceived: Vec<u64> = events
            .iter()
            .filter(|e| e.perceivers.contains(&character))
            .map(|e| e.seq)
            .collect();
        assert!(!perceived.is_empty(), "{character} perceived something");
        assert_eq!(held, perceived, "{character}'s shard");
    }
}

/// A request for a world `id` of the shipped Study in Scarlet.
pub fn scarlet(id: &str) -> dramatis_proto::v1::CreateWorldRequest {
    dramatis_proto::v1::CreateWorldRequest {
        source: Some(
            dramatis_proto::v1::create_world_request::Source::ScenarioName(
                "study-in-scarlet".into(),
            ),
        ),
        world_id: id.into(),
        ..Default::default()
    }
}

/// Process ids of the agents running on `shards` (their lock files).
pub fn agent_pids(shards: &std::path::Path) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir(shards.join(".agents")) else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = entries
        .flatten()
        .filter_map(|e| e.path().file_stem()?.to_str()?.parse().ok())
        .filter(|pid| alive(*pid))
        .collect();
    pids.sort_unstable();
    pids
}

/// True while `pid` runs (a zombie does not count).
pub fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}
