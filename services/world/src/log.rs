//! The durable event log: one embedded redb file holding every world's events (keyed
//! by world and sequence number) and the record each world was created from. An event
//! is committed here before anyone sees it.

use std::path::Path;
use std::sync::Arc;

use dramatis_proto::v1::Event;
use prost::Message;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};

use crate::WorldError;

const EVENTS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("events");
const WORLDS: TableDefinition<&str, &[u8]> = TableDefinition::new("worlds");
/// The narrator's latest judgement per world (JSON), which no event records yet.
const NOTES: TableDefinition<&str, &[u8]> = TableDefinition::new("narrator_notes");

/// What a world was created from, so it can be rebuilt after a restart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldRecord {
    pub world_id: String,
    pub scenario_path: String,
    pub created_ms: i64,
}

/// A handle to the log file; clones share it.
#[derive(Clone)]
pub struct EventLog {
    db: Arc<Database>,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog").finish_non_exhaustive()
    }
}

fn log_err(e: impl std::fmt::Display) -> WorldError {
    WorldError::Log(e.to_string())
}

impl EventLog {
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
        Ok(Self { db: Arc::new(db) })
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

    /// Records a new world.
    pub async fn put_world(&self, record: WorldRecord) -> Result<(), WorldError> {
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

    /// Every recorded world.
    pub async fn worlds(&self) -> Result<Vec<WorldRecord>, WorldError> {
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

    /// Appends events durably (one transaction, committed before returning).
    pub async fn append(&self, events: Vec<Event>) -> Result<(), WorldError> {
        self.blocking(move |db| {
            let txn = db.begin_write().map_err(log_err)?;
            {
                let mut table = txn.open_table(EVENTS).map_err(log_err)?;
                for event in &events {
                    let key = (event.world_id.as_str(), event.seq);
                    if table.get(key).map_err(log_err)?.is_some() {
                        return Err(WorldError::Log(format!(
                            "event {} of world {:?} is already logged",
                            event.seq, event.world_id
                        )));
                    }
                    table
                        .insert(key, event.encode_to_vec().as_slice())
                        .map_err(log_err)?;
                }
            }
            txn.commit().map_err(log_err)
        })
        .await
    }

    /// Keeps the narrator's notes of a world (replacing the previous ones).
    pub async fn put_notes(&self, world_id: &str, notes: Vec<u8>) -> Result<(), WorldError> {
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

    /// The narrator's notes of a world, if any were kept.
    pub async fn notes(&self, world_id: &str) -> Result<Option<Vec<u8>>, WorldError> {
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

    /// Events of a world from `from_seq` on, in order.
    pub async fn read(&self, world_id: &str, from_seq: u64) -> Result<Vec<Event>, WorldError> {
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

    /// Removes a world and all its events.
    pub async fn delete_world(&self, world_id: &str) -> Result<(), WorldError> {
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
            let log = EventLog::open(&path).expect("open");
            log.append(vec![event("a", 1, "one"), event("a", 2, "two")])
                .await
                .expect("append");
            log.append(vec![event("b", 1, "other")])
                .await
                .expect("append b");
            let dup = log.append(vec![event("a", 2, "again")]).await;
            assert!(matches!(dup, Err(WorldError::Log(m)) if m.contains("already logged")));
        }
        let log = EventLog::open(&path).expect("reopen");
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
