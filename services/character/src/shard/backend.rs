//! Where a shard's saves count. A [`ShardBackend`] is one character's durable store as
//! the shard's writer task (`saver.rs`) sees it: saves go through it one batch at a
//! time, in order, and its `db` serves the reads. Two backends:
//!
//! - [`DiskShard`]: a redb file per character (`store.rs`). A save counts once its
//!   transaction is committed to the file.
//! - [`JetStreamShard`]: a JetStream subject per character (`jetstream.rs`), read back
//!   into a store in memory on attach. A save counts once the stream has it; the
//!   store in memory then holds it for reads.
//!
//! `tests/tests/shard_stream.rs` runs one contract on both, as `tests/tests/event_log.rs`
//! does for the world's event log.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::Database;

use super::jetstream::{RemoteShard, ShardStream};
use super::rows::{Delta, Stored};
use super::store::{apply, open, open_in_memory, read_all, read_rows};
use crate::error::AgentError;

/// A save the backend could not make. `lost` says this copy of the shard no longer
/// knows where its store ends: its rows are marked saved and may not be, so the
/// character must be read again.
#[derive(Debug)]
pub struct SaveError {
    pub error: AgentError,
    pub lost: bool,
}

impl SaveError {
    fn lost(error: AgentError) -> Self {
        Self { error, lost: true }
    }
}

/// One character's durable store.
pub trait ShardBackend: Send + 'static {
    /// What logs and errors call the store: its file, or `jetstream:<subject>`.
    fn name(&self) -> &Path;

    /// The store that serves reads: it holds every save that counted.
    fn db(&self) -> &Arc<Database>;

    /// Makes `deltas` count, in order, as one batch; then audit entries beyond the
    /// newest `audit_keep` are dropped from reads. Once an error says `lost`, no later
    /// save may be tried on this handle.
    fn save(
        &mut self,
        deltas: Vec<Delta>,
        audit_keep: Option<u64>,
    ) -> impl Future<Output = Result<(), SaveError>> + Send;
}

/// Applies `deltas` to `db` on a blocking thread.
async fn apply_blocking(
    db: &Arc<Database>,
    name: &Path,
    deltas: Vec<Delta>,
    audit_keep: Option<u64>,
) -> Result<(), AgentError> {
    let (db, name) = (Arc::clone(db), name.to_path_buf());
    tokio::task::spawn_blocking(move || apply(&db, &name, &deltas, audit_keep))
        .await
        .unwrap_or_else(|e| Err(AgentError::Storage(format!("write task: {e}"))))
}

/// Below this many bytes free after a failed write, the disk is what failed it.
const ALMOST_FULL: u64 = 1024 * 1024;

/// A shard in its own redb file.
#[derive(Debug)]
pub struct DiskShard {
    db: Arc<Database>,
    path: PathBuf,
}

impl DiskShard {
    /// The store `db`, opened from `path`.
    #[must_use]
    pub fn new(db: Arc<Database>, path: PathBuf) -> Self {
        Self { db, path }
    }

    /// Opens the file at `path` (created when absent) and reads what it holds.
    /// [`AgentError::Corrupt`] when its bytes are not a store. Blocking.
    pub fn open(path: &Path) -> Result<(Self, Stored), AgentError> {
        let db = open(path)?;
        let stored = read_all(db.as_ref(), path)?;
        Ok((Self::new(db, path.to_path_buf()), stored))
    }
}

impl ShardBackend for DiskShard {
    fn name(&self) -> &Path {
        &self.path
    }

    fn db(&self) -> &Arc<Database> {
        &self.db
    }

    async fn save(&mut self, deltas: Vec<Delta>, audit_keep: Option<u64>) -> Result<(), SaveError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        // Refused before redb starts: the store stays usable, but these rows are
        // marked saved in the shard, so it is read again once there is room.
        if let Err(problem) = dramatis_runtime::disk::ensure_room(dir) {
            tracing::error!(store = %self.path.display(), %problem, "shard save refused");
            return Err(SaveError::lost(AgentError::DiskFull(problem)));
        }
        if let Err(error) = apply_blocking(&self.db, &self.path, deltas, audit_keep).await {
            // redb refuses every later write to a store whose commit failed: the
            // character is read again, from a store opened anew.
            if dramatis_runtime::disk::free_bytes(dir).is_ok_and(|free| free < ALMOST_FULL) {
                tracing::error!(%error, "shard save failed on a full disk");
                return Err(SaveError::lost(AgentError::DiskFull(
                    "the disk is full; free space and try again".into(),
                )));
            }
            return Err(SaveError::lost(error));
        }
        Ok(())
    }
}

/// A shard in a JetStream subject, with a store in memory for reads.
#[derive(Debug)]
pub struct JetStreamShard {
    db: Arc<Database>,
    name: PathBuf,
    remote: RemoteShard,
}

impl JetStreamShard {
    /// Reads everything saved of `character` in `world` from `stream` into a store in
    /// memory (keeping the newest `audit_keep` audit entries), and claims the subject:
    /// from now on a writer that held it before is refused.
    pub async fn open(
        stream: &ShardStream,
        world: &str,
        character: &str,
        audit_keep: Option<u64>,
    ) -> Result<(Self, Stored), AgentError> {
        let (remote, deltas) = stream.open(world, character).await?;
        let name = PathBuf::from(format!("jetstream:{}", remote.subject()));
        let failed = format!("{}: the read task failed", name.display());
        let (db, stored) = {
            let name = name.clone();
            tokio::task::spawn_blocking(move || {
                let db = open_in_memory()?;
                if !deltas.is_empty() {
                    apply(&db, &name, &deltas, audit_keep)?;
                }
                let stored = read_all(db.as_ref(), &name)?;
                Ok::<_, AgentError>((db, stored))
            })
            .await
            .map_err(|e| AgentError::Storage(format!("{failed}: {e}")))??
        };
        Ok((Self { db, name, remote }, stored))
    }

    /// Publishes the whole store again and drops the history before it, once the
    /// subject has grown. A compaction that fails is tried again after the next save.
    async fn compact_if_grown(&mut self) {
        if !self.remote.wants_compaction() {
            return;
        }
        let (db, name) = (Arc::clone(&self.db), self.name.clone());
        let whole = tokio::task::spawn_blocking(move || read_rows(db.as_ref(), &name, true))
            .await
            .unwrap_or_else(|e| Err(AgentError::Storage(format!("read task: {e}"))));
        if let Err(error) = async { self.remote.compact(&whole?.0).await }.await {
            tracing::warn!(subject = self.remote.subject(), %error, "cannot compact a shard");
        }
    }
}

impl ShardBackend for JetStreamShard {
    fn name(&self) -> &Path {
        &self.name
    }

    fn db(&self) -> &Arc<Database> {
        &self.db
    }

    async fn save(&mut self, deltas: Vec<Delta>, audit_keep: Option<u64>) -> Result<(), SaveError> {
        // A refused publish leaves the subject as it was; but whether any of the
        // batch landed is unknown, and the rows are already marked saved in the
        // shard: only reading the subject again is right.
        self.remote.put(&deltas).await.map_err(SaveError::lost)?;
        apply_blocking(&self.db, &self.name, deltas, audit_keep)
            .await
            .map_err(|error| SaveError { error, lost: false })?;
        self.compact_if_grown().await;
        Ok(())
    }
}
