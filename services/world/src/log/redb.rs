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

use futures::StreamExt as _;

use super::{EventFeed, EventLog, WorldRecord, check_run};
use crate::error::WorldError;

const EVENTS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("events");
const WORLDS: TableDefinition<&str, &[u8]> = TableDefinition::new("worlds");
/// The narrator's latest judgement per world (JSON), which no event records yet.
const NOTES: TableDefinition<&str, &[u8]> = TableDefinition::new("narrator_notes");
/// Worlds a repair cut short, and the last sequence it kept of each.
const CUT: TableDefinition<&str, u64> = TableDefinition::new("cut_short");

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

/// Runs `work`, turning a panic inside it (redb meeting a page it cannot make sense of)
/// into an error that names what panicked.
fn unwound<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    quiet_panics();
    let was = UNWINDING.replace(true);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    UNWINDING.set(was);
    result.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with no message".to_owned())
    })
}

thread_local! {
    /// Set while this thread runs storage work under [`unwound`]: a panic there is
    /// caught and reported as an error, so the process-wide hook stays quiet about it.
    static UNWINDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Puts a panic hook in front of the one installed, once, that says nothing of a panic
/// [`unwound`] catches.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !UNWINDING.get() {
                before(info);
            }
        }));
    });
}

/// The way out of a damaged log, for its messages.
fn way_out(path: &Path) -> String {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    format!(
        "stop the service and run `dramatis repair --data-dir {}`: it keeps every event \
         before the damage in a new log, sets this file aside and names the worlds that \
         lost events",
        dir.display()
    )
}

/// Opens the file at `path` as redb and checks every page of it against its checksum:
/// the database, or what is damaged in it (`Ok(Err(why))`).
fn open_checked(path: &Path) -> Result<Result<Database, String>, WorldError> {
    // Checked as it opens: a plain open reads the file's free-space map unverified,
    // and may panic on a damaged one.
    let opened = unwound(|| {
        Database::builder()
            .set_check_integrity_on_open(true)
            .create(path)
    });
    match opened {
        Ok(Ok(db)) => Ok(Ok(db)),
        Ok(Err(redb::DatabaseError::Storage(redb::StorageError::Corrupted(why)))) => Ok(Err(why)),
        Ok(Err(e)) => Err(WorldError::Log(format!("open {}: {e}", path.display()))),
        Err(panic) => Ok(Err(format!("redb panicked opening it: {panic}"))),
    }
}

impl RedbLog {
    /// Opens (or creates) the log file. Every page is checked against its checksum
    /// first: a damaged file is refused with the way out, before any world reads it.
    pub fn open(path: &Path) -> Result<Self, WorldError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| WorldError::Log(format!("create {}: {e}", dir.display())))?;
        }
        let db = open_checked(path)?.map_err(|why| {
            WorldError::Log(format!(
                "the event log {} is damaged ({why}); nothing was changed: {}",
                path.display(),
                way_out(path)
            ))
        })?;
        let txn = db.begin_write().map_err(log_err)?;
        txn.open_table(EVENTS).map_err(log_err)?;
        txn.open_table(WORLDS).map_err(log_err)?;
        txn.open_table(NOTES).map_err(log_err)?;
        txn.open_table(CUT).map_err(log_err)?;
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
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            unwound(|| work(&db)).unwrap_or_else(|panic| {
                tracing::error!(log = %path.display(), %panic, "redb panicked inside a call");
                Err(WorldError::Log(format!(
                    "{} could not be read (redb panicked: {panic}); {}",
                    path.display(),
                    way_out(&path)
                )))
            })
        })
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
        let appended = self.appended.subscribe();
        let world: Arc<str> = Arc::from(world_id);
        let start = (self.clone(), world, from_seq.max(1), appended);
        // Reads what is logged past `next`, then waits for an append to this world past
        // it (a lagged receiver reads again, which is always safe).
        let batches = futures::stream::unfold(Some(start), |state| async move {
            let (log, world, next, mut appended) = state?;
            loop {
                match log.read(&world, next).await {
                    Err(error) => return Some((vec![Err(error)], None)),
                    Ok(events) if !events.is_empty() => {
                        let after = events.last().map_or(next, |e| e.seq + 1);
                        let batch = events.into_iter().map(Ok).collect();
                        return Some((batch, Some((log, world, after, appended))));
                    }
                    Ok(_) => {}
                }
                loop {
                    match appended.recv().await {
                        Ok((w, last)) if w == world && last >= next => break,
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(_)) => break,
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            }
        });
        Ok(super::in_order(
            from_seq,
            batches.flat_map(futures::stream::iter),
        ))
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
                txn.open_table(CUT)
                    .map_err(log_err)?
                    .remove(world_id.as_str())
                    .map_err(log_err)?;
            }
            txn.commit().map_err(log_err)
        })
        .await
    }

    async fn cut_short(&self, world_id: &str) -> Result<Option<u64>, WorldError> {
        let world_id = world_id.to_owned();
        self.blocking(move |db| {
            let txn = db.begin_read().map_err(log_err)?;
            let table = txn.open_table(CUT).map_err(log_err)?;
            Ok(table
                .get(world_id.as_str())
                .map_err(log_err)?
                .map(|v| v.value()))
        })
        .await
    }

    fn describe(&self) -> String {
        format!("redb file {}", self.path.display())
    }
}

/// What `dramatis repair` did to a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repaired {
    /// Where the damaged file was set aside (`None`: it passed its check, and nothing
    /// was changed).
    pub aside: Option<std::path::PathBuf>,
    /// Every world whose record could be read, in id order.
    pub worlds: Vec<RepairedWorld>,
}

/// One world after a repair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairedWorld {
    pub world_id: String,
    /// Its events 1..=`kept` are in the new log.
    pub kept: u64,
    /// Why its events stop at `kept`; `None` when every event it had was read.
    pub lost: Option<String>,
}

/// Reads what it can of the damaged log at `path` and writes it to a new log in its
/// place: every world record that reads, and each world's events in order up to the
/// first one that does not (a read that fails or panics, a gap, an event that is not
/// the one its key names). The damaged file is set aside beside it (`<file>.damaged-<ms
/// since the epoch>`). Worlds whose events end before the damage are whole again;
/// the others are marked cut short, and the service shows them FAILED with the
/// sequence where they end. A log that passes its check is left as it is. Blocking.
pub fn repair(path: &Path) -> Result<Repaired, WorldError> {
    if !path.exists() {
        return Err(WorldError::Log(format!(
            "no event log at {}",
            path.display()
        )));
    }
    if let Ok(sound) = open_checked(path)? {
        let worlds = read_all(&sound)?.into_iter().map(|w| w.summary).collect();
        return Ok(Repaired {
            aside: None,
            worlds,
        });
    }
    // Read only: nothing of the damaged file is written, or trusted to be written.
    let damaged = unwound(|| redb::ReadOnlyDatabase::open(path))
        .map_err(|panic| {
            WorldError::Log(format!(
                "{}: nothing in it can be read: the damage is in the pages every read \
                 starts from (redb: {panic}); the file is left as it was",
                path.display()
            ))
        })?
        .map_err(|e| {
            WorldError::Log(format!(
                "{}: nothing in it can be read ({e}); the file is left as it was",
                path.display()
            ))
        })?;
    let worlds = read_all(&damaged)?;
    drop(damaged);

    let mut fresh_name = path.file_name().unwrap_or_default().to_os_string();
    fresh_name.push(".repairing");
    let fresh_path = path.with_file_name(fresh_name);
    // A repair cut short before leaves its half-written copy; none is the usual case.
    let _ = std::fs::remove_file(&fresh_path);
    {
        let fresh = Database::create(&fresh_path)
            .map_err(|e| WorldError::Log(format!("create {}: {e}", fresh_path.display())))?;
        let txn = fresh.begin_write().map_err(log_err)?;
        {
            let mut records = txn.open_table(WORLDS).map_err(log_err)?;
            let mut events = txn.open_table(EVENTS).map_err(log_err)?;
            let mut notes = txn.open_table(NOTES).map_err(log_err)?;
            let mut cut = txn.open_table(CUT).map_err(log_err)?;
            for world in &worlds {
                let id = world.summary.world_id.as_str();
                records
                    .insert(id, world.record.as_slice())
                    .map_err(log_err)?;
                for event in &world.events {
                    events
                        .insert((id, event.seq), event.encode_to_vec().as_slice())
                        .map_err(log_err)?;
                }
                if let Some(n) = &world.notes {
                    notes.insert(id, n.as_slice()).map_err(log_err)?;
                }
                if world.summary.lost.is_some() {
                    cut.insert(id, world.summary.kept).map_err(log_err)?;
                }
            }
        }
        txn.commit().map_err(log_err)?;
    }
    let mut aside_name = path.file_name().unwrap_or_default().to_os_string();
    aside_name.push(format!(".damaged-{}", dramatis_runtime::now_ms()));
    let aside = path.with_file_name(aside_name);
    std::fs::rename(path, &aside)
        .map_err(|e| WorldError::Log(format!("set {} aside: {e}", path.display())))?;
    std::fs::rename(&fresh_path, path)
        .map_err(|e| WorldError::Log(format!("put the new log at {}: {e}", path.display())))?;
    Ok(Repaired {
        aside: Some(aside),
        worlds: worlds.into_iter().map(|w| w.summary).collect(),
    })
}

/// One world as read from a log that may be damaged.
struct ReadWorld {
    summary: RepairedWorld,
    record: Vec<u8>,
    events: Vec<Event>,
    notes: Option<Vec<u8>>,
}

/// Every world record of `db` that reads, and each one's events up to the first that
/// does not.
fn read_all(db: &impl ReadableDatabase) -> Result<Vec<ReadWorld>, WorldError> {
    let txn = db.begin_read().map_err(log_err)?;
    let mut records: Vec<(String, Vec<u8>)> = Vec::new();
    let listed = unwound(|| -> Result<(), String> {
        let table = txn.open_table(WORLDS).map_err(|e| e.to_string())?;
        for row in table.iter().map_err(|e| e.to_string())? {
            let (key, value) = row.map_err(|e| e.to_string())?;
            let bytes = value.value().to_vec();
            if serde_json::from_slice::<WorldRecord>(&bytes).is_ok() {
                records.push((key.value().to_owned(), bytes));
            }
        }
        Ok(())
    });
    if let Err(problem) | Ok(Err(problem)) = listed {
        tracing::warn!(%problem, "the list of worlds is damaged; the worlds read before it are kept");
    }
    let events = txn.open_table(EVENTS).ok();
    let notes = txn.open_table(NOTES).ok();
    let mut out = Vec::with_capacity(records.len());
    for (world_id, record) in records {
        let mut kept: Vec<Event> = Vec::new();
        let read = unwound(|| -> Result<(), String> {
            let table = events.as_ref().ok_or("the events table cannot be opened")?;
            let range = table
                .range((world_id.as_str(), 0)..=(world_id.as_str(), u64::MAX))
                .map_err(|e| e.to_string())?;
            for row in range {
                let (key, value) = row.map_err(|e| e.to_string())?;
                let seq = key.value().1;
                let next = kept.last().map_or(1, |e| e.seq + 1);
                let event = Event::decode(value.value())
                    .map_err(|e| format!("event {seq} does not decode: {e}"))?;
                if seq != next || event.seq != seq || event.world_id != world_id {
                    return Err(format!("event {next} is not where it should be"));
                }
                kept.push(event);
            }
            Ok(())
        });
        let lost = match read {
            Ok(Ok(())) => None,
            Ok(Err(problem)) => Some(problem),
            Err(panic) => Some(format!("redb panicked reading past it: {panic}")),
        };
        let world_notes = notes.as_ref().and_then(|table| {
            unwound(|| {
                table
                    .get(world_id.as_str())
                    .ok()
                    .flatten()
                    .map(|v| v.value().to_vec())
            })
            .ok()
            .flatten()
        });
        out.push(ReadWorld {
            summary: RepairedWorld {
                world_id,
                kept: kept.last().map_or(0, |e| e.seq),
                lost,
            },
            record,
            events: kept,
            notes: world_notes,
        });
    }
    Ok(out)
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

    /// Overwrites `len` bytes in the middle of the file at `path` with noise.
    fn damage(path: &Path, len: usize) {
        use std::io::{Seek as _, SeekFrom, Write as _};
        let size = std::fs::metadata(path).expect("size").len();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open");
        file.seek(SeekFrom::Start(size / 2)).expect("seek");
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let noise: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_le_bytes()[0]
            })
            .collect();
        file.write_all(&noise).expect("write");
        file.sync_all().expect("sync");
    }

    #[tokio::test]
    async fn a_log_damaged_in_the_middle_is_refused_at_open_and_repaired_up_to_the_damage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("events.redb");
        let sizes = [("a", 3_u64), ("m", 3000), ("z", 3)];
        let text = |world: &str, seq: u64| format!("{world}:{seq}:{}", "x".repeat(300));
        {
            let log = RedbLog::open(&path).expect("open");
            for (world, n) in sizes {
                log.put_world(WorldRecord {
                    world_id: world.into(),
                    scenario_path: "study-in-scarlet".into(),
                    created_ms: 1,
                    sandbox_toml: None,
                    forked_from: None,
                    newcomers: Vec::new(),
                })
                .await
                .expect("record");
                for from in (1..=n).step_by(100) {
                    let batch = (from..=n.min(from + 99))
                        .map(|seq| event(world, seq, &text(world, seq)))
                        .collect();
                    log.append(world, from - 1, batch).await.expect("append");
                }
            }
        }
        damage(&path, 16 * 1024);

        let refused = RedbLog::open(&path).expect_err("a damaged log opens");
        let message = refused.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("damaged"), "{message}");
        assert!(message.contains("dramatis repair --data-dir"), "{message}");

        let repaired = repair(&path).expect("repair");
        let aside = repaired
            .aside
            .clone()
            .expect("the damaged file is set aside");
        assert!(aside.exists(), "{}", aside.display());
        let log = RedbLog::open(&path).expect("the repaired log opens");
        let mut kept = 0;
        for world in &repaired.worlds {
            let (_, written) = sizes
                .iter()
                .find(|(w, _)| *w == world.world_id)
                .expect("a world that was written");
            let events = log.read(&world.world_id, 1).await.expect("read");
            // A prefix of what was written, in order, each event itself.
            let read: Vec<(u64, String)> = events.iter().map(|e| (e.seq, e.text.clone())).collect();
            let expected: Vec<(u64, String)> = (1..=world.kept)
                .map(|seq| (seq, text(&world.world_id, seq)))
                .collect();
            assert_eq!(read, expected, "world {}", world.world_id);
            let cut = log.cut_short(&world.world_id).await.expect("cut");
            if world.lost.is_some() {
                assert_eq!(cut, Some(world.kept), "world {}", world.world_id);
            } else {
                assert_eq!(world.kept, *written, "world {} is whole", world.world_id);
                assert_eq!(cut, None);
            }
            kept += world.kept;
        }
        let total: u64 = sizes.iter().map(|(_, n)| n).sum();
        assert!(
            kept < total || repaired.worlds.len() < sizes.len(),
            "the damage cost nothing: {repaired:?}"
        );
        assert!(kept > 0, "nothing was kept: {repaired:?}");
        drop(log);
        // A repaired log needs no more repair.
        let again = repair(&path).expect("repair again");
        assert_eq!(again.aside, None);
        assert_eq!(again.worlds.len(), repaired.worlds.len());
    }
}
