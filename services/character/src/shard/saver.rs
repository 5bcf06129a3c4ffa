//! Saves leave the async runtime: under the shard's lock the caller only serialises
//! what changed (a [`Delta`]) and hands it to the shard's writer task, which saves it
//! through the shard's backend (`backend.rs`: a redb file, or a JetStream subject) in
//! submission order, and answers each save once it counts (durably: it survives
//! `kill -9` and power loss). Saves that queue up are applied together in one
//! transaction. A read of the audit goes through the same queue, so it sees every save
//! submitted before it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{mpsc, oneshot};

use super::AuditEntry;
use super::backend::ShardBackend;
use super::rows::Delta;
use super::store::read_audit;
use crate::error::AgentError;

enum Job {
    Save(Delta, oneshot::Sender<Result<(), SaveFailure>>),
    ReadAudit(oneshot::Sender<Result<Vec<AuditEntry>, String>>),
}

/// The writer of one shard's store. Cheap to clone; the writer task ends (and the file
/// is closed) when the last handle is dropped.
#[derive(Debug, Clone)]
pub struct ShardStore {
    path: PathBuf,
    jobs: mpsc::UnboundedSender<Job>,
    lost: Arc<AtomicBool>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Save(..) => "Save",
            Self::ReadAudit(_) => "ReadAudit",
        })
    }
}

impl ShardStore {
    /// Starts the writer task of `backend` (on the current runtime), keeping at most
    /// `audit_keep` audited prompts (all when `None`).
    #[must_use]
    pub fn start(backend: impl ShardBackend, audit_keep: Option<u64>) -> Self {
        let (jobs, queue) = mpsc::unbounded_channel();
        let lost = Arc::new(AtomicBool::new(false));
        let path = backend.name().to_path_buf();
        let writer = Writer {
            backend,
            audit_keep,
            lost: Arc::clone(&lost),
        };
        tokio::spawn(writer.run(queue));
        Self { path, jobs, lost }
    }

    /// Set once a save failed: this copy of the shard no longer knows where its store
    /// ends (rows are marked saved that may not be, and a store on disk may be left
    /// unusable by the failure), so the character must be read again (attached anew,
    /// which opens the file anew). Every later save is refused meanwhile.
    #[must_use]
    pub fn lost(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.lost)
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues a save of `delta`.
    pub fn submit(&self, delta: Delta) -> PendingSave {
        let (done, answer) = oneshot::channel();
        if let Err(mpsc::error::SendError(Job::Save(_, done))) =
            self.jobs.send(Job::Save(delta, done))
        {
            // Cannot fail: the receiver is still here, handed back below.
            let _ = done.send(Err(SaveFailure::other(self.stopped())));
        }
        PendingSave {
            answer: Some(answer),
            lost: Some(Arc::clone(&self.lost)),
        }
    }

    /// Every audited prompt saved so far. The read is queued at once, behind every save
    /// already submitted; the returned future waits for its answer.
    pub fn audit(
        &self,
    ) -> impl std::future::Future<Output = Result<Vec<AuditEntry>, AgentError>> + Send + 'static
    {
        let (done, answer) = oneshot::channel();
        let sent = self.jobs.send(Job::ReadAudit(done)).is_ok();
        let stopped = self.stopped();
        async move {
            if !sent {
                return Err(AgentError::Storage(stopped));
            }
            answer
                .await
                .map_err(|_| AgentError::Storage(stopped))?
                .map_err(AgentError::Storage)
        }
    }

    fn stopped(&self) -> String {
        format!("{}: the shard's writer has stopped", self.path.display())
    }
}

/// A save in flight; [`PendingSave::wait`] returns once it is committed.
#[must_use = "a save is only known to be on disk once waited for"]
pub struct PendingSave {
    answer: Option<oneshot::Receiver<Result<(), SaveFailure>>>,
    /// The store's flag: a failed save with it set means the shard was lost.
    lost: Option<Arc<AtomicBool>>,
}

impl PendingSave {
    /// Nothing to write (the agent keeps no files, or nothing changed).
    pub fn none() -> Self {
        Self {
            answer: None,
            lost: None,
        }
    }

    pub async fn wait(self) -> Result<(), AgentError> {
        let Some(answer) = self.answer else {
            return Ok(());
        };
        let failed = match answer.await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(SaveFailure {
                message,
                disk_full: true,
            })) => return Err(AgentError::DiskFull(message)),
            Ok(Err(failure)) => failure.message,
            Err(_) => "the shard's writer stopped mid-save".into(),
        };
        if self.lost.is_some_and(|lost| lost.load(Ordering::Relaxed)) {
            Err(AgentError::ShardLost(failed))
        } else {
            Err(AgentError::Storage(failed))
        }
    }
}

/// Why a save failed, as its waiters learn it.
#[derive(Debug, Clone)]
struct SaveFailure {
    message: String,
    /// The disk had no room for it: the client may try again once it has.
    disk_full: bool,
}

impl SaveFailure {
    fn other(message: String) -> Self {
        Self {
            message,
            disk_full: false,
        }
    }
}

/// The task that applies one store's saves, in order.
struct Writer<B> {
    backend: B,
    audit_keep: Option<u64>,
    lost: Arc<AtomicBool>,
}

impl<B: ShardBackend> Writer<B> {
    async fn run(mut self, mut queue: mpsc::UnboundedReceiver<Job>) {
        let mut next = queue.recv().await;
        while let Some(job) = next.take() {
            match job {
                Job::ReadAudit(answer) => {
                    let db = Arc::clone(self.backend.db());
                    let path = self.backend.name().to_path_buf();
                    let read = tokio::task::spawn_blocking(move || read_audit(db.as_ref(), &path))
                        .await
                        .unwrap_or_else(|e| Err(AgentError::Storage(format!("read task: {e}"))))
                        .map_err(|e| e.to_string());
                    // A reader that gave up needs no answer.
                    let _ = answer.send(read);
                }
                Job::Save(first, done) => {
                    // Every save already queued joins this transaction, up to a read.
                    let (mut deltas, mut answers) = (vec![first], vec![done]);
                    while let Ok(more) = queue.try_recv() {
                        match more {
                            Job::Save(delta, done) => {
                                deltas.push(delta);
                                answers.push(done);
                            }
                            read @ Job::ReadAudit(_) => {
                                next = Some(read);
                                break;
                            }
                        }
                    }
                    let written = self.save(deltas).await.map_err(|e| SaveFailure {
                        disk_full: matches!(e, AgentError::DiskFull(_)),
                        message: e.to_string(),
                    });
                    if let Err(e) = &written {
                        tracing::error!(error = %e.message, "cannot save a shard");
                    }
                    for answer in answers {
                        // A saver that gave up waiting needs no answer; the save stands.
                        let _ = answer.send(written.clone());
                    }
                }
            }
            if next.is_none() {
                next = queue.recv().await;
            }
        }
    }

    /// Saves `deltas` through the backend; a failure that loses this copy of the shard
    /// refuses every later save.
    async fn save(&mut self, deltas: Vec<Delta>) -> Result<(), AgentError> {
        if self.lost.load(Ordering::Relaxed) {
            return Err(AgentError::ShardLost(format!(
                "{}: an earlier save failed",
                self.backend.name().display()
            )));
        }
        self.backend
            .save(deltas, self.audit_keep)
            .await
            .map_err(|failure| {
                if failure.lost {
                    self.lost.store(true, Ordering::Relaxed);
                }
                failure.error
            })
    }
}
