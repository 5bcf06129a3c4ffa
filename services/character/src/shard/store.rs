//! Where a shard is kept on disk: one redb file per character
//! (`<data>/<world>/<character>.redb`) with a table per layer, so that a save writes
//! only what changed since the last one.
//!
//! | table | key | value |
//! |---|---|---|
//! | `core` | `"state"` | the small state as JSON (scene under way, mood, names, goal, …) |
//! | `modules` | `"modules"` | the memory modules beside ReverieMem, as JSON (written when changed) |
//! | `perceived` | position | one perceived event, JSON |
//! | `episodic`, `semantic`, `patterns` | position | (item JSON, vector as little-endian f32) |
//! | `transitions` | position | one emotion transition, JSON |
//! | `audit` | number | one audited prompt, JSON; the oldest dropped past `audit_keep` |
//!
//! How saves reach this file is `saver.rs`'s, through `backend.rs`'s `DiskShard`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use redb::{ConcurrencyMode, Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::AuditEntry;
use super::rows::{Delta, Row, Stored};
use crate::error::AgentError;

const CORE: TableDefinition<&str, &[u8]> = TableDefinition::new("core");
const MODULES: TableDefinition<&str, &[u8]> = TableDefinition::new("modules");
const PERCEIVED: TableDefinition<u64, &[u8]> = TableDefinition::new("perceived");
const EPISODIC: TableDefinition<u64, (&[u8], &[u8])> = TableDefinition::new("episodic");
const SEMANTIC: TableDefinition<u64, (&[u8], &[u8])> = TableDefinition::new("semantic");
const PATTERNS: TableDefinition<u64, (&[u8], &[u8])> = TableDefinition::new("patterns");
const TRANSITIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("transitions");
const AUDIT: TableDefinition<u64, &[u8]> = TableDefinition::new("audit");

const STATE_KEY: &str = "state";
const MODULES_KEY: &str = "modules";

/// Page cache of one shard's database. Reads happen once, when a character is
/// attached; writes touch a few pages. A small cache keeps an idle character cheap.
const CACHE_BYTES: usize = 256 * 1024;

/// The store file of a character whose old JSON shard was `json_path`
/// (`watson.json` → `watson.redb`).
#[must_use]
pub fn store_path(json_path: &Path) -> PathBuf {
    json_path.with_extension("redb")
}

pub(super) fn storage(path: &Path, error: &impl std::fmt::Display) -> AgentError {
    AgentError::Storage(format!("{}: {error}", path.display()))
}

/// A failure of redb on the store at `path`: [`AgentError::Corrupt`] when the file's
/// bytes are not a store (redb found them inconsistent, or the file ends where its
/// header says it goes on), a plain storage error otherwise (the disk, permissions).
pub(super) fn failed(path: &Path, error: impl Into<redb::Error>) -> AgentError {
    let error: redb::Error = error.into();
    let corrupt = match &error {
        redb::Error::Corrupted(_) => true,
        redb::Error::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData
        ),
        _ => false,
    };
    if corrupt {
        AgentError::Corrupt(format!("{}: {error}", path.display()))
    } else {
        storage(path, &error)
    }
}

/// The stores open in this process, by path. redb locks a file for one opener, and a
/// character detached and attached again at once (or read for inspection) finds its
/// file still open by the writer that is finishing: it shares that handle.
static OPEN: std::sync::LazyLock<std::sync::Mutex<HashMap<PathBuf, Weak<Database>>>> =
    std::sync::LazyLock::new(Default::default);

/// Opens (creating when absent) the store at `path`, or shares the handle this process
/// already has open. A file left by a killed process is repaired by redb on open.
/// Blocking.
pub fn open(path: &Path) -> Result<Arc<Database>, AgentError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| storage(dir, &e))?;
    }
    // The last handle's owner may be closing the file right now (its count is zero,
    // its lock not yet released): wait for that, briefly.
    let mut waited = std::time::Duration::ZERO;
    loop {
        let mut open = dramatis_runtime::lock(&OPEN);
        open.retain(|_, db| db.strong_count() > 0);
        if let Some(db) = open.get(path).and_then(Weak::upgrade) {
            return Ok(db);
        }
        let opened = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .set_concurrency_mode(ConcurrencyMode::SingleWriter)
            .create(path);
        match opened {
            Ok(db) => {
                let db = Arc::new(db);
                open.insert(path.to_path_buf(), Arc::downgrade(&db));
                return Ok(db);
            }
            Err(redb::DatabaseError::DatabaseAlreadyOpen) if waited < CLOSE_WAIT => {
                drop(open);
                std::thread::sleep(CLOSE_POLL);
                waited += CLOSE_POLL;
            }
            Err(e) => return Err(failed(path, e)),
        }
    }
}

/// Moves the corrupt store at `path` aside (to `<file>.corrupt-<ms since the epoch>`
/// beside it), so a new one can take its place and the old bytes stay for whoever
/// wants to look at them. Returns where it went. Blocking.
pub fn set_aside(path: &Path) -> Result<PathBuf, AgentError> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".corrupt-{}", dramatis_runtime::now_ms()));
    let aside = path.with_file_name(name);
    std::fs::rename(path, &aside).map_err(|e| storage(path, &e))?;
    Ok(aside)
}

/// Removes every copy of the store at `path` that [`set_aside`] kept. Blocking.
pub fn remove_set_aside(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let mut prefix = name.to_os_string();
    prefix.push(".corrupt-");
    let prefix = prefix.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix)
            && let Err(e) = std::fs::remove_file(entry.path())
        {
            tracing::warn!(path = %entry.path().display(), error = %e, "cannot remove a set-aside shard");
        }
    }
}

/// A store in memory, for a shard whose saves go elsewhere ([`super::jetstream`]): it
/// holds what was read back and what is saved since, for reads.
pub fn open_in_memory() -> Result<Arc<Database>, AgentError> {
    // Exclusive (the default): nothing outside this process can see it anyway, and
    // the modes that share a file need file locks, which memory has not.
    Database::builder()
        .set_cache_size(CACHE_BYTES)
        .create_with_backend(redb::backends::InMemoryBackend::new())
        .map(Arc::new)
        .map_err(|e| AgentError::Storage(format!("a store in memory: {e}")))
}

/// How long [`open`] waits for a handle of this process to close, and how often it
/// looks.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
const CLOSE_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// Reads everything `db` holds. Blocking.
pub fn read_all(db: &impl ReadableDatabase, path: &Path) -> Result<Stored, AgentError> {
    let (rows, audit_next) = read_rows(db, path, false)?;
    let values = |rows: Vec<(u64, Vec<u8>)>| rows.into_iter().map(|(_, v)| v).collect();
    let items = |rows: Vec<(u64, Row)>| rows.into_iter().map(|(_, r)| r).collect();
    Ok(Stored {
        state: rows.state,
        modules: rows.modules,
        perceived: values(rows.perceived),
        episodic: items(rows.episodic),
        semantic: items(rows.semantic),
        patterns: items(rows.patterns),
        transitions: values(rows.transitions),
        audit_next,
    })
}

/// Every row `db` holds, by table and key, as one delta that puts them all (the
/// audit's rows only `with_audit`), and the number the next audited prompt gets.
/// Blocking.
pub fn read_rows(
    db: &impl ReadableDatabase,
    path: &Path,
    with_audit: bool,
) -> Result<(Delta, u64), AgentError> {
    let read = db.begin_read().map_err(|e| failed(path, e))?;
    let mut out = Delta::default();
    // A table never written is absent: it reads as empty.
    macro_rules! table {
        ($def:expr) => {
            match read.open_table($def) {
                Ok(table) => Some(table),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(failed(path, e)),
            }
        };
    }
    if let Some(core) = table!(CORE) {
        out.state = core
            .get(STATE_KEY)
            .map_err(|e| failed(path, e))?
            .map(|v| v.value().to_vec());
    }
    if let Some(modules) = table!(MODULES) {
        out.modules = modules
            .get(MODULES_KEY)
            .map_err(|e| failed(path, e))?
            .map(|v| v.value().to_vec());
    }
    let mut plain = vec![
        (PERCEIVED, &mut out.perceived),
        (TRANSITIONS, &mut out.transitions),
    ];
    if with_audit {
        plain.push((AUDIT, &mut out.audit));
    }
    for (def, into) in plain {
        if let Some(table) = table!(def) {
            for row in table.iter().map_err(|e| failed(path, e))? {
                let (key, value) = row.map_err(|e| failed(path, e))?;
                into.push((key.value(), value.value().to_vec()));
            }
        }
    }
    for (def, into) in [
        (EPISODIC, &mut out.episodic),
        (SEMANTIC, &mut out.semantic),
        (PATTERNS, &mut out.patterns),
    ] {
        if let Some(table) = table!(def) {
            for row in table.iter().map_err(|e| failed(path, e))? {
                let (key, value) = row.map_err(|e| failed(path, e))?;
                let (item, vector) = value.value();
                into.push((key.value(), (item.to_vec(), vector.to_vec())));
            }
        }
    }
    let mut audit_next = 0;
    if let Some(audit) = table!(AUDIT) {
        audit_next = audit
            .last()
            .map_err(|e| failed(path, e))?
            .map_or(0, |(key, _)| key.value() + 1);
    }
    Ok((out, audit_next))
}

/// Everything the store file at `path` holds, and its audit, as last committed: read
/// through this process's handle when it has the store open, read-only otherwise (an
/// agent process may be writing it meanwhile); a file a killed writer left is repaired
/// first. Blocking: for inspection and tests.
pub fn read_file(path: &Path) -> Result<(Stored, Vec<AuditEntry>), AgentError> {
    if !path.is_file() {
        return Err(storage(path, &"no such store"));
    }
    let shared = dramatis_runtime::lock(&OPEN)
        .get(path)
        .and_then(Weak::upgrade);
    if let Some(db) = shared {
        return Ok((read_all(db.as_ref(), path)?, read_audit(db.as_ref(), path)?));
    }
    match Database::builder()
        .set_concurrency_mode(ConcurrencyMode::SingleWriter)
        .open_read_only(path)
    {
        Ok(db) => Ok((read_all(&db, path)?, read_audit(&db, path)?)),
        // A file its writer left without closing (a killed agent) needs a repair, which
        // only a writer may make: open it as one when nobody else has it.
        Err(redb::DatabaseError::RepairAborted) => {
            let db = open(path)?;
            Ok((read_all(db.as_ref(), path)?, read_audit(db.as_ref(), path)?))
        }
        Err(e) => Err(failed(path, e)),
    }
}

/// Every audited prompt `db` holds, oldest first. Blocking.
pub(super) fn read_audit(
    db: &impl ReadableDatabase,
    path: &Path,
) -> Result<Vec<AuditEntry>, AgentError> {
    let read = db.begin_read().map_err(|e| failed(path, e))?;
    let table = match read.open_table(AUDIT) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(failed(path, e)),
    };
    let mut out = Vec::new();
    for row in table.iter().map_err(|e| failed(path, e))? {
        let (key, value) = row.map_err(|e| failed(path, e))?;
        let entry = serde_json::from_slice(value.value()).map_err(|e| {
            AgentError::Corrupt(format!(
                "{}: audit entry {}: {e}",
                path.display(),
                key.value()
            ))
        })?;
        out.push(entry);
    }
    Ok(out)
}

/// Applies `deltas`, in order, in one durable transaction; then drops audit entries
/// beyond the newest `audit_keep`. Blocking.
pub(crate) fn apply(
    db: &Database,
    path: &Path,
    deltas: &[Delta],
    audit_keep: Option<u64>,
) -> Result<(), AgentError> {
    let fail = |e: &dyn std::fmt::Display| storage(path, &e);
    let write = db.begin_write().map_err(|e| fail(&e))?;
    {
        let mut core = write.open_table(CORE).map_err(|e| fail(&e))?;
        let mut modules = write.open_table(MODULES).map_err(|e| fail(&e))?;
        let mut perceived = write.open_table(PERCEIVED).map_err(|e| fail(&e))?;
        let mut episodic = write.open_table(EPISODIC).map_err(|e| fail(&e))?;
        let mut semantic = write.open_table(SEMANTIC).map_err(|e| fail(&e))?;
        let mut patterns = write.open_table(PATTERNS).map_err(|e| fail(&e))?;
        let mut transitions = write.open_table(TRANSITIONS).map_err(|e| fail(&e))?;
        let mut audit = write.open_table(AUDIT).map_err(|e| fail(&e))?;
        for delta in deltas {
            if let Some(state) = &delta.state {
                core.insert(STATE_KEY, state.as_slice())
                    .map_err(|e| fail(&e))?;
            }
            if let Some(bytes) = &delta.modules {
                modules
                    .insert(MODULES_KEY, bytes.as_slice())
                    .map_err(|e| fail(&e))?;
            }
            for (table, rows) in [
                (&mut perceived, &delta.perceived),
                (&mut transitions, &delta.transitions),
                (&mut audit, &delta.audit),
            ] {
                for (key, value) in rows {
                    table.insert(*key, value.as_slice()).map_err(|e| fail(&e))?;
                }
            }
            for (table, rows) in [
                (&mut episodic, &delta.episodic),
                (&mut semantic, &delta.semantic),
                (&mut patterns, &delta.patterns),
            ] {
                for (key, (item, vector)) in rows {
                    table
                        .insert(*key, (item.as_slice(), vector.as_slice()))
                        .map_err(|e| fail(&e))?;
                }
            }
        }
        if let Some(keep) = audit_keep {
            let next = audit
                .last()
                .map_err(|e| fail(&e))?
                .map_or(0, |(key, _)| key.value() + 1);
            let cut = next.saturating_sub(keep);
            if cut > 0 {
                // Only the entries below the cut remain to drop: earlier saves dropped
                // the rest, so this visits what it removes and nothing more.
                audit.retain_in(..cut, |_, _| false).map_err(|e| fail(&e))?;
            }
        }
    }
    write.commit().map_err(|e| fail(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::backend::DiskShard;
    use crate::shard::saver::{PendingSave, ShardStore};

    use crate::shard::rows::{vector_bytes, vector_of};
    use crate::shard::test_entry as entry;

    fn audit_rows(from: u64, purposes: &[&str]) -> Vec<(u64, Vec<u8>)> {
        purposes
            .iter()
            .zip(from..)
            .map(|(p, k)| (k, serde_json::to_vec(&entry(p)).expect("json")))
            .collect()
    }

    #[tokio::test]
    async fn queued_saves_apply_in_order_and_a_read_sees_every_earlier_save() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("w").join("watson.redb");
        let store = ShardStore::start(
            DiskShard::new(open(&path).expect("open"), path.clone()),
            None,
        );
        let pending: Vec<PendingSave> = (0..20u64)
            .map(|i| {
                store.submit(Delta {
                    state: Some(format!("{{\"n\":{i}}}").into_bytes()),
                    perceived: vec![(i, format!("p{i}").into_bytes())],
                    semantic: vec![(i, (b"f".to_vec(), vector_bytes(&[i as f32, 0.5])))],
                    audit: audit_rows(i, &[&format!("step {i}")]),
                    ..Delta::default()
                })
            })
            .collect();
        let audit = store.audit().await.expect("audit");
        let purposes: Vec<String> = audit.into_iter().map(|e| e.purpose).collect();
        let want: Vec<String> = (0..20).map(|i| format!("step {i}")).collect();
        assert_eq!(purposes, want, "the read came after all 20 saves");
        for save in pending {
            save.wait().await.expect("saved");
        }
        drop(store);
        let db = open(&path).expect("open again");
        let stored = read_all(db.as_ref(), &path).expect("read");
        assert_eq!(stored.state.as_deref(), Some(&b"{\"n\":19}"[..]));
        assert_eq!(stored.perceived.len(), 20);
        assert_eq!(stored.perceived[7], b"p7");
        assert_eq!(vector_of(&stored.semantic[3].1), [3.0, 0.5]);
        assert_eq!(stored.audit_next, 20);
        assert!(stored.modules.is_none() && stored.episodic.is_empty());
    }

    #[tokio::test]
    async fn the_audit_keeps_only_the_newest_entries_when_capped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("holmes.redb");
        let store = ShardStore::start(
            DiskShard::new(open(&path).expect("open"), path.clone()),
            Some(3),
        );
        for i in 0..5u64 {
            store
                .submit(Delta {
                    audit: audit_rows(i * 2, &[&format!("a{i}"), &format!("b{i}")]),
                    ..Delta::default()
                })
                .wait()
                .await
                .expect("saved");
        }
        let kept: Vec<String> = store
            .audit()
            .await
            .expect("audit")
            .into_iter()
            .map(|e| e.purpose)
            .collect();
        assert_eq!(kept, ["b3", "a4", "b4"]);
    }

    #[test]
    fn a_missing_store_reads_as_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("new.redb");
        let db = open(&path).expect("created");
        let stored = read_all(db.as_ref(), &path).expect("read");
        assert!(stored.state.is_none() && stored.perceived.is_empty());
        assert_eq!(stored.audit_next, 0);
    }
}
