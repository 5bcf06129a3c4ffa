//! The embedded backend: one redb file holding every world's events (keyed by world and
//! sequence number), the record each world was created from, and the narrator's notes.
//! Followers are woken by an in-process broadcast, so only this process's appends are
//! seen live, which is all there is for a file one process holds.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use dramatis_proto::v1::Event;
use prost::Message;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::broadcast;

use super::{EventFeed, EventLog, WorldRecord, check_run};
use crate::error::WorldError;

const EVENTS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("events");
const WORLDS: TableDefinition<&str, &[u8]> = TableDefinition::new("worlds");
/// The narrator's latest judgement per world (JSON), which no event records yet.
const NOTES: TableDefinition<&str, &[u8]> = TableDefinition::new("narrator_notes");

/// A handle to the log file; clones share it.
#[derive(Clone)]
pub struct RedbLog {
    db: Arc<Database>,
    path: std::path::PathBuf,
    /// (world, last sequence) after each committed append, for followers.
    appended: broadcast::Sender<(Arc<str>, u64)>,
}

impl std::fmt::Debug for RedbLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbLog")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn log_err(e: impl std::fmt::Display) -> WorldError {
    WorldError::Log(e.to_string())
}

impl RedbLog {
    /// Opens (or creates) the log file.
    pub fn open(path: &Path) -> Result<Self, WorldError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| WorldError::Log(format!("create {}: {e}", dir.display())))?;
        }
        let db = Database::create(path)
            .map_err(|e| WorldError::Log(format!("open {}: {e}", path.display())))?;
        let txn = db.begin_write().map_err(log_err)?;
        txn.open_table(EVENTS).map_err(log_err)?;
        txn.open_table(WORLDS).map_err(log_err)?;
        txn.open_table(NOTES).map_err(log_err)?;
        txn.commit().map_err(log_err)?;
        Ok(Self {
            db: Arc::new(db),
            path: path.to_path_buf(),
            appended: broadcast::channel(1024).0,
        })
    }

    /// Refuses a write that would leave less than the disk reserve
    /// ([`dramatis_runtime::disk`]): redb left without space mid-commit is unusable
    /// until reopened. Deleting needs no room, and frees some.
    fn room(&self) -> Result<(), WorldError> {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        dramatis_runtime::disk::ensure_room(dir).map_err(|problem| {
            tracing::error!(log = %self.path.display(), %problem, "event log write refused");
            WorldError::Full(format!("event log: {problem}"))
        })
    }

    /// Runs blocking store work off the async runtime.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Database) -> Result<T, WorldError> + Send + 'static,
    ) -> Result<T, WorldError> {
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || work(&db))
            .await
            .map_err(log_err)?
    }
}

/// The last sequence logged for `world_id` (0: none).
fn last_seq(
    table: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    world_id: &str,
) -> Result<u64, WorldError> {
    Ok(table
        .range((world_id, 0)..=(world_id, u64::MAX))
        .map_err(log_err)?
        .next_back()
        .transpose()
        .map_err(log_err)?
        .map_or(0, |(key, _)| key.value().1))
}

#[async_trait]
impl EventLog for RedbLog {
    async fn put_world(&self, record: WorldRecord) -> Result<(), WorldError> {
        self.room()?;
        self.blocking(move |db| {
            let bytes = serde_json::to_vec(&record).map_err(log_err)?;
            let txn = db.begin_write().map_err(log_err)?;
            txn.open_table(WORLDS)
                .map_err(log_err)?
                .insert(record.world_id.as_str(), bytes.as_slice())
                .map_err(log_err)?;
            txn.commit().map_err(log_err)
        })
        .await
    }

    async fn world(&self, world_id: &str) -> Result<Option<WorldRecord>, WorldError> {
        let world_id = world_id.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(log_err)?;
            let table = txn.open_table(WORLDS).map_err(log_err)?;
            table
                .get(world_id.as_str())
                .map_err(log_err)?
                .map(|v| serde_json::from_slice(v.value()).map_err(log_err))
                .transpose()
        })
        .await
    }

    async fn worlds(&self) -> Result<Vec<WorldRecord>, WorldError> {
        self.blocking(|db| {
            let txn = db.begin_read().map_err(log_err)?;
            let table = txn.open_table(WORLDS).map_err(log_err)?;
            let mut out = Vec::new();
            for row in table.iter().map_err(log_err)? {
                let (_, value) = row.map_err(log_err)?;
                out.push(serde_json::from_slice(value.value()).map_err(log_err)?);
            }
            Ok(out)
        })
        .await
    }

    async fn append(
        &self,
        world_id: &str,
        after: u64,
        events: Vec<Event>,
    ) -> Result<(), WorldError> {
        check_run(world_id, after, &events)?;
        let Some(last) = events.last().map(|e| e.seq) else {
            return Ok(());
        };
        self.room()?;
        let world: Arc<str> = Arc::from(world_id);
        let key_world = Arc::clone(&world);
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(log_err)?;
            {
                let mut table = txn.open_table(EVENTS).map_err(log_err)?;
                let found = last_seq(&table, &key_world)?;
                if found != after {
                    return Err(WorldError::Fenced {
                        world: key_world.to_string(),
                        detail: format!("expected it to end at event {after}, it ends at {found}"),
                    });
                }
                for event in &events {
                    table
                        .insert((&*key_world, event.seq), event.encode_to_vec().as_slice())
                        .map_err(log_err)?;
                }
            }
            txn.commit().map_err(log_err)
        })
        .await?;
        // No follower is not an error.
        let _ = self.appended.send((world, last));
        Ok(())
    }

    async fn read(&self, world_id: &str, from_seq: u64) -> Result<Vec<Event>, WorldError> {
        let world_id = world_id.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(log_err)?;
            let table = txn.open_table(EVENTS).map_err(log_err)?;
            let mut out = Vec::new();
            let range = table
                .range((world_id.as_str(), from_seq)..=(world_id.as_str(), u64::MAX))
                .map_err(log_err)?;
            for row in range {
                let (_, value) = row.map_err(log_err)?;
                out.push(Event::decode(value.value()).map_err(log_err)?);
            }
            Ok(out)
        })
        .await
    }

    async fn follow(&self, world_id: &str, from_seq: u64) -> Result<EventFeed, WorldError> {
        // Subscribed before the first read, so nothing appended in between is missed.
        let mut appended = self.appended.subscribe();
        let log = self.clone();
        let world: Arc<str> = Arc::from(world_id);
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        tokio::spawn(async move {
            let mut next = from_seq.max(1);
            loop {
                match log.read(&world, next).await {
                    Ok(events) => {
                        for event in events {
                            next = event.seq + 1;
                            if tx.send(Ok(event)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(error) => {
                        // The follower may have gone; then no one is left to tell.
                        let _ = tx.send(Err(error)).await;
                        return;
                    }
                }
                // Wait for an append to this world past what was read; a lagged
                // receiver reads again, which is always safe.
                loop {
                    tokio::select! {
                        () = tx.closed() => return,
                        got = appended.recv() => match got {
                            Ok((w, last)) if w == world && last >= next => break,
                            Ok(_) => {}
                            Err(broadcast::error::RecvError::Lagged(_)) => break,
                            Err(broadcast::error::RecvError::Closed) => return,
                        },
                    }
                }
            }
        });
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn put_notes(&self, world_id: &str, notes: Vec<u8>) -> Result<(), WorldError> {
        self.room()?;
        let world_id = world_id.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(log_err)?;
            txn.open_table(NOTES)
                .map_err(log_err)?
                .insert(world_id.as_str(), notes.as_slice())
                .map_err(log_err)?;
            txn.commit().map_err(log_err)
        })
        .await
    }

    async fn notes(&self, world_id: &str) -> Result<Option<Vec<u8>>, WorldError> {
        let world_id = world_id.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(log_err)?;
            let table = txn.open_table(NOTES).map_err(log_err)?;
            Ok(table
                .get(world_id.as_str())
                .map_err(log_err)?
                .map(|v| v.value().to_vec()))
        })
        .await
    }

    async fn delete_world(&self, world_id: &str) -> Result<(), WorldError> {
        let world_id = world_id.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(log_err)?;
            {
                let mut events = txn.open_table(EVENTS).map_err(log_err)?;
                events
                    .retain_in(
                        (world_id.as_str(), 0)..=(world_id.as_str(), u64::MAX),
                        |_, _| false,
                    )
                    .map_err(log_err)?;
                txn.open_table(WORLDS)
                    .map_err(log_err)?
                    .remove(world_id.as_str())
                    .map_err(log_err)?;
                txn.open_table(NOTES)
                    .map_err(log_err)?
                    .remove(world_id.as_str())
                    .map_err(log_err)?;
            }
            txn.commit().map_err(log_err)
        })
        .await
    }

    fn describe(&self) -> String {
        format!("redb file {}", self.path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(world: &str, seq: u64, text: &str) -> Event {
        Event {
            world_id: world.into(),
            seq,
            text: text.into(),
            ..Event::default()
        }
    }

    #[tokio::test]
    async fn events_survive_reopen_in_order_and_per_world() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("events.redb");
        {
            let log = RedbLog::open(&path).expect("open");
            log.append("a", 0, vec![event("a", 1, "one"), event("a", 2, "two")])
                .await
                .expect("append");
            log.append("b", 0, vec![event("b", 1, "other")])
                .await
                .expect("append b");
        }
        let log = RedbLog::open(&path).expect("reopen");
        let texts: Vec<String> = log
            .read("a", 1)
            .await
            .expect("read")
            .into_iter()
            .map(|e| e.text)
            .collect();
        assert_eq!(texts, ["one", "two"]);
        assert_eq!(log.read("a", 2).await.expect("read").len(), 1);
        log.delete_world("a").await.expect("delete");
        assert!(log.read("a", 1).await.expect("read").is_empty());
        assert_eq!(log.read("b", 1).await.expect("read b").len(), 1);
    }
}
