//! Where a shard is kept on disk: its state as one JSON file, replaced atomically on
//! every save, and its prompt audit as an append-only JSON-lines file beside it
//! (`<character>.audit.jsonl`), so a save writes only the prompts new since the last.
//!
//! Saves leave the async runtime: under the shard's lock the caller only serialises
//! (see [`Shard::save`](super::Shard::save)) and hands the bytes to the shard's writer
//! task, which writes on a blocking thread, in submission order, and answers each save
//! once it is on disk. The caller waits for that answer after releasing the lock.
//! When several saves queue up, the audit lines of all are appended in order and only
//! the newest state is written. A save may carry audit lines only (an interview, which
//! changes nothing else): the state file is then left as it is.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use tokio::sync::{mpsc, oneshot};

use super::AuditEntry;
use crate::AgentError;

/// The audit file beside the shard file `shard_path` (`watson.json` →
/// `watson.audit.jsonl`).
#[must_use]
pub fn audit_path(shard_path: &Path) -> PathBuf {
    shard_path.with_extension("audit.jsonl")
}

/// Reads an audit file; a missing file is an empty audit. A last line cut short by a
/// crash mid-append is skipped with a warning; a bad line elsewhere is an error.
pub fn read_audit(path: &Path) -> Result<Vec<AuditEntry>, AgentError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(storage(path, &e)),
    };
    let lines: Vec<String> = std::io::BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(|e| storage(path, &e))?;
    let mut entries = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str::<AuditEntry>(line) {
            Ok(entry) => entries.push(entry),
            Err(e) if i + 1 == lines.len() => {
                tracing::warn!(path = %path.display(), error = %e, "skipping a torn last audit line");
            }
            Err(e) => {
                return Err(AgentError::Storage(format!(
                    "{}: line {}: {e}",
                    path.display(),
                    i + 1
                )));
            }
        }
    }
    Ok(entries)
}

/// `entries` as JSON lines, each ending in a newline.
pub fn audit_lines(entries: &[AuditEntry]) -> Result<Vec<u8>, AgentError> {
    let mut out = Vec::new();
    for entry in entries {
        serde_json::to_writer(&mut out, entry)
            .map_err(|e| AgentError::Storage(format!("audit entry: {e}")))?;
        out.push(b'\n');
    }
    Ok(out)
}

/// Replaces the audit file with `entries` (used once, to move an old shard's audit out
/// of its JSON).
pub fn write_audit(path: &Path, entries: &[AuditEntry]) -> Result<(), AgentError> {
    dramatis_memory::write_atomic(path, &audit_lines(entries)?)?;
    Ok(())
}

fn storage(path: &Path, error: &impl std::fmt::Display) -> AgentError {
    AgentError::Storage(format!("{}: {error}", path.display()))
}

struct Job {
    /// The state's JSON; `None` for a save that only appends to the audit.
    state: Option<Vec<u8>>,
    audit: Vec<u8>,
    done: oneshot::Sender<Result<(), String>>,
}

/// The writer of one shard's files.
#[derive(Debug, Clone)]
pub struct ShardFiles {
    path: PathBuf,
    jobs: mpsc::UnboundedSender<Job>,
}

impl ShardFiles {
    /// Starts the writer task of the shard saved at `path` (on the current runtime);
    /// it ends when the last handle is dropped.
    #[must_use]
    pub fn start(path: PathBuf) -> Self {
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(path.clone(), queue));
        Self { path, jobs }
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues a save: the state's JSON (none: the state file is left as it is) and the
    /// audit lines to append.
    pub fn submit(&self, state: Option<Vec<u8>>, audit: Vec<u8>) -> PendingSave {
        let (done, answer) = oneshot::channel();
        if let Err(mpsc::error::SendError(job)) = self.jobs.send(Job { state, audit, done }) {
            let stopped = format!("{}: the shard's writer has stopped", self.path.display());
            let _ = job.done.send(Err(stopped));
        }
        PendingSave(Some(answer))
    }
}

/// A save in flight; [`PendingSave::wait`] returns once it is on disk.
#[must_use = "a save is only known to be on disk once waited for"]
pub struct PendingSave(Option<oneshot::Receiver<Result<(), String>>>);

impl PendingSave {
    /// Nothing to write (the agent keeps no files).
    pub fn none() -> Self {
        Self(None)
    }

    pub async fn wait(self) -> Result<(), AgentError> {
        let Some(answer) = self.0 else {
            return Ok(());
        };
        answer
            .await
            .map_err(|_| AgentError::Storage("the shard's writer stopped mid-save".into()))?
            .map_err(AgentError::Storage)
    }
}

async fn write_loop(path: PathBuf, mut queue: mpsc::UnboundedReceiver<Job>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while let Ok(more) = queue.try_recv() {
            batch.push(more);
        }
        let path = path.clone();
        let mut audit = Vec::new();
        let mut state = None;
        let mut answers = Vec::with_capacity(batch.len());
        for job in batch {
            audit.extend_from_slice(&job.audit);
            state = job.state.or(state);
            answers.push(job.done);
        }
        let written =
            tokio::task::spawn_blocking(move || write_files(&path, state.as_deref(), &audit))
                .await
                .unwrap_or_else(|e| Err(format!("the write task failed: {e}")));
        if let Err(e) = &written {
            tracing::error!(error = %e, "cannot save a shard");
        }
        for answer in answers {
            let _ = answer.send(written.clone());
        }
    }
}

/// Appends the audit lines (synced), then replaces the state file (when a state is
/// given).
fn write_files(path: &Path, state: Option<&[u8]>, audit: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    if !audit.is_empty() {
        let audit_file = audit_path(path);
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&audit_file)
            .map_err(|e| format!("{}: {e}", audit_file.display()))?;
        file.write_all(audit)
            .and_then(|()| file.sync_data())
            .map_err(|e| format!("{}: {e}", audit_file.display()))?;
    }
    match state {
        Some(state) => dramatis_memory::write_atomic(path, state).map_err(|e| e.to_string()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(purpose: &str) -> AuditEntry {
        AuditEntry {
            purpose: purpose.into(),
            prompt: format!("prompt of {purpose}"),
            items: vec![("fact:1".into(), "semantic".into())],
            timestamp_ms: 7,
            flagged: Vec::new(),
        }
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_a_bad_middle_line_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.audit.jsonl");
        let mut text = audit_lines(&[entry("act"), entry("answer")]).expect("lines");
        text.extend_from_slice(b"{\"purpose\":\"ac");
        std::fs::write(&path, &text).expect("written");
        let read = read_audit(&path).expect("reads");
        assert_eq!(read, [entry("act"), entry("answer")]);

        std::fs::write(&path, b"not json\n{}\n").expect("written");
        let error = read_audit(&path).expect_err("a bad first line");
        assert!(error.to_string().contains("line 1"), "{error}");
        assert_eq!(
            read_audit(&dir.path().join("missing")).expect("none"),
            Vec::<AuditEntry>::new()
        );
    }

    #[tokio::test]
    async fn queued_saves_append_every_audit_line_in_order_and_keep_the_newest_state() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w").join("watson.json");
        let files = ShardFiles::start(path.clone());
        let pending: Vec<PendingSave> = (0..20)
            .map(|i| {
                let lines = audit_lines(&[entry(&format!("step {i}"))]).expect("lines");
                files.submit(Some(format!("{{\"n\":{i}}}").into_bytes()), lines)
            })
            .collect();
        for save in pending {
            save.wait().await.expect("saved");
        }
        assert_eq!(std::fs::read_to_string(&path).expect("state"), "{\"n\":19}");
        let audit = read_audit(&audit_path(&path)).expect("audit");
        let purposes: Vec<String> = audit.into_iter().map(|e| e.purpose).collect();
        let want: Vec<String> = (0..20).map(|i| format!("step {i}")).collect();
        assert_eq!(purposes, want);
    }

    #[tokio::test]
    async fn an_audit_only_save_appends_and_leaves_the_state_file_as_it_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("watson.json");
        let files = ShardFiles::start(path.clone());
        let lines = |purpose: &str| audit_lines(&[entry(purpose)]).expect("lines");
        files
            .submit(Some(b"{\"n\":1}".to_vec()), lines("act"))
            .wait()
            .await
            .expect("saved");
        let first = files.submit(None, lines("answer"));
        let second = files.submit(None, lines("answer"));
        first.wait().await.expect("saved");
        second.wait().await.expect("saved");
        assert_eq!(std::fs::read_to_string(&path).expect("state"), "{\"n\":1}");
        let audit = read_audit(&audit_path(&path)).expect("audit");
        assert_eq!(audit, [entry("act"), entry("answer"), entry("answer")]);
    }
}
