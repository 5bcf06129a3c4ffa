//! Child processes of the `dramatis` binary: the built-in model server and agent
//! services. Each child prints `DRAMATIS_READY <addr>` on stdout once it listens; its
//! log goes to a file under the data directory. Children die with their parent.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{Context as _, bail};
use async_trait::async_trait;
use dramatis_world::WorldError;
use dramatis_world::agent_clients::AgentDirectory;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::args::ModelArgs;

/// The line a child prints when it is ready.
pub const READY: &str = "DRAMATIS_READY";

/// Prints the ready line for a parent to read.
pub fn announce(addr: SocketAddr) {
    println!("{READY} {addr}");
}

/// A running child and the address it listens on.
#[derive(Debug)]
pub struct Spawned {
    pub child: Child,
    pub addr: SocketAddr,
}

/// Starts `dramatis <args>` with `env` added to its environment and waits (up to
/// `wait`) for its ready line.
pub async fn spawn_self(
    args: &[String],
    env: &[(&str, String)],
    log_file: &Path,
    wait: Duration,
) -> anyhow::Result<Spawned> {
    let exe = std::env::current_exe().context("cannot find the dramatis executable")?;
    if let Some(dir) = log_file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let log = std::fs::File::create(log_file)
        .with_context(|| format!("create {}", log_file.display()))?;
    let mut child = Command::new(exe)
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start dramatis {}", args.join(" ")))?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(wait, async {
        while let Some(line) = lines.next_line().await? {
            if let Some(addr) = line.strip_prefix(READY) {
                return Ok::<_, std::io::Error>(Some(addr.trim().to_owned()));
            }
        }
        Ok(None)
    })
    .await;
    let addr = match ready {
        Ok(Ok(Some(addr))) => addr
            .parse()
            .with_context(|| format!("child announced a bad address {addr:?}"))?,
        Ok(Ok(None) | Err(_)) | Err(_) => {
            let _ = child.start_kill();
            let tail = std::fs::read_to_string(log_file).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            bail!(
                "dramatis {} did not become ready (log: {}):\n{}",
                args.first().map_or("", String::as_str),
                log_file.display(),
                tail.join("\n")
            );
        }
    };
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok(Spawned { child, addr })
}

/// Starts the built-in model server; returns it with its `/v1` endpoint.
pub async fn start_builtin_llm(logs: &Path) -> anyhow::Result<(Spawned, String)> {
    let model = dramatis_runtime::models::model_path(dramatis_runtime::models::DEFAULT_LLM_FILE);
    if !model.is_file() {
        bail!("{}", dramatis_runtime::models::missing_message(&model));
    }
    let args = vec![
        "llm".to_owned(),
        "--listen".to_owned(),
        "127.0.0.1:0".to_owned(),
        "--model-file".to_owned(),
        model.to_string_lossy().into_owned(),
    ];
    let spawned = spawn_self(&args, &[], &logs.join("llm.log"), Duration::from_secs(120)).await?;
    let endpoint = format!("http://{}/v1", spawned.addr);
    Ok((spawned, endpoint))
}

/// Starts agent processes as worlds need them: one per character, or one per world.
#[derive(Debug)]
pub struct SpawnedAgents {
    model: ModelArgs,
    logs: PathBuf,
    shards: PathBuf,
    per_world: bool,
    running: Mutex<HashMap<String, Vec<Spawned>>>,
}

impl SpawnedAgents {
    pub fn new(model: ModelArgs, logs: PathBuf, shards: PathBuf, per_world: bool) -> Self {
        Self {
            model,
            logs,
            shards,
            per_world,
            running: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Spawned>>> {
        dramatis_runtime::lock(&self.running)
    }
}

#[async_trait]
impl AgentDirectory for SpawnedAgents {
    async fn endpoint_for(&self, world_id: &str, character_id: &str) -> Result<String, WorldError> {
        if self.per_world
            && let Some(first) = self.lock().get(world_id).and_then(|v| v.first())
        {
            return Ok(format!("http://{}", first.addr));
        }
        let mut args = vec![
            "agent".to_owned(),
            "--listen".to_owned(),
            "127.0.0.1:0".to_owned(),
            "--data-dir".to_owned(),
            self.shards.to_string_lossy().into_owned(),
        ];
        args.extend(crate::models::child_args(&self.model));
        let name = if self.per_world {
            "agent"
        } else {
            character_id
        };
        let log = self.logs.join(format!("{world_id}-{name}.log"));
        let spawned = spawn_self(
            &args,
            &crate::models::child_env(&self.model),
            &log,
            Duration::from_secs(30),
        )
        .await
        .map_err(|e| WorldError::Agent {
            character: character_id.to_owned(),
            kind: dramatis_proto::ErrorKind::Unavailable,
            message: format!("{e:#}"),
        })?;
        let endpoint = format!("http://{}", spawned.addr);
        self.lock()
            .entry(world_id.to_owned())
            .or_default()
            .push(spawned);
        Ok(endpoint)
    }

    async fn release(&self, world_id: &str) {
        let children = self.lock().remove(world_id).unwrap_or_default();
        for mut spawned in children {
            let _ = spawned.child.kill().await;
        }
    }
}
