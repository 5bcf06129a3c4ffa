//! The files that keep one service per data directory and let a restarted service find
//! the agents an earlier one left behind: a lock on the data directory, and a lock file
//! per running agent in its shard directory (held while it runs; a killed agent's is
//! found free and its process ended by [`end_stale_agents`]). Files a service writes
//! are private to its user.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

/// Where agents keep their lock files, in their shard directory.
fn lock_dir(shards: &Path) -> PathBuf {
    shards.join(".agents")
}

/// An agent process's lock file, locked while the process runs and removed when it
/// ends normally (a killed agent's file is cleaned up by [`end_stale_agents`]).
#[derive(Debug)]
pub struct AgentLock {
    _file: std::fs::File,
    path: PathBuf,
}

impl Drop for AgentLock {
    fn drop(&mut self) {
        // A lock file left behind is taken over by the next start (`end_stale_agents`).
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The lock a world service holds on its data directory while it runs (the kernel lets
/// it go when the process ends, by any means).
#[derive(Debug)]
pub struct DataDirLock {
    _file: std::fs::File,
}

/// Makes what this process (and every process it starts) creates from here on private
/// to its user: files 0600, folders 0700. A service's data (shards, the event log,
/// logs) is characters' private memory.
pub fn private_files() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
}

/// Makes `dir` (made if missing) private to this user (0700), whatever made it before.
pub fn private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("make {} private", dir.display()))
}

/// Takes `data_dir`'s lock (`serve.lock`), before anything in the directory is touched:
/// a second service on it would write a new CA into `pki/` and end the first one's
/// agents as stale. Refused, naming the process that holds it, when another service
/// does.
pub fn hold_data_dir(data_dir: &Path) -> anyhow::Result<DataDirLock> {
    use std::io::{Read as _, Seek as _, Write as _};
    private_files();
    private_dir(data_dir)?;
    let path = data_dir.join("serve.lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            // Who holds the lock is only for the message; an unreadable file leaves it
            // blank.
            let _ = file.read_to_string(&mut holder);
            anyhow::bail!(
                "another dramatis service (pid {}) is using the data directory {}: stop it, \
                 or give this one another --data-dir",
                holder.trim(),
                data_dir.display()
            );
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("lock {}", path.display()));
        }
    }
    file.set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| write!(file, "{}", std::process::id()))
        .with_context(|| format!("write {}", path.display()))?;
    Ok(DataDirLock { _file: file })
}

/// In an agent process: takes this process's lock file in `shards`, held until the
/// returned guard is dropped.
pub fn hold_agent_lock(shards: &Path) -> anyhow::Result<AgentLock> {
    let dir = lock_dir(shards);
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join(format!("{}.lock", std::process::id()));
    let file =
        std::fs::File::create(&path).with_context(|| format!("create {}", path.display()))?;
    file.try_lock()
        .with_context(|| format!("lock {}", path.display()))?;
    Ok(AgentLock { _file: file, path })
}

/// How long [`end_stale_agents`] lets stale agents exit by themselves.
const STALE_GRACE: Duration = Duration::from_secs(5);

/// Before a service starts agents on `shards`: finds agents that an earlier service
/// left running there (their lock files are still locked) and ends them, first by
/// letting their lifelines act, then with SIGKILL. Removes the lock files of agents
/// that are gone. Returns how many live agents it ended.
pub async fn end_stale_agents(shards: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(lock_dir(shards)) else {
        return 0;
    };
    let mut held = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let pid = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<i32>().ok());
        match (pid, lock_free(&path)) {
            (_, true) | (None, false) => {
                // A lock file that cannot be removed is looked at again by the next start.
                let _ = std::fs::remove_file(&path);
            }
            (Some(pid), false) => held.push((pid, path)),
        }
    }
    let mut ended = 0;
    for (pid, path) in held {
        let deadline = tokio::time::Instant::now() + STALE_GRACE;
        while !lock_free(&path) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if !lock_free(&path) {
            tracing::warn!(
                pid,
                "an earlier service's agent still runs on this data directory; killing it"
            );
            if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                // Gone already, or not ours: the lock, not the signal, says whether it
                // still runs.
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
            let deadline = tokio::time::Instant::now() + STALE_GRACE;
            while !lock_free(&path) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        ended += 1;
        // A lock file that cannot be removed is looked at again by the next start.
        let _ = std::fs::remove_file(&path);
    }
    ended
}

/// The pids of the agents running on `shards` now: those whose lock file is held.
pub fn running_agents(shards: &Path) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir(lock_dir(shards)) else {
        return Vec::new();
    };
    let mut pids: Vec<i32> = entries
        .flatten()
        .filter(|e| !lock_free(&e.path()))
        .filter_map(|e| e.path().file_stem()?.to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids
}

/// True when nobody holds the lock on `path` (or it cannot be opened).
fn lock_free(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return true;
    };
    match file.try_lock() {
        Ok(()) => true,
        Err(std::fs::TryLockError::WouldBlock) => false,
        Err(std::fs::TryLockError::Error(_)) => true,
    }
}
