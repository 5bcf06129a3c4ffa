//! Shards as earlier builds saved them, read once to move them into the store: the state
//! as one JSON file (`<character>.json`), with the prompt audit inside it (the first
//! layout) or in a JSON-lines file beside it (`<character>.audit.jsonl`, the second).

use std::io::BufRead as _;
use std::path::{Path, PathBuf};

use super::AuditEntry;
use crate::error::AgentError;

/// The audit file beside the JSON shard `json_path` (`watson.json` →
/// `watson.audit.jsonl`).
#[must_use]
pub fn audit_path(json_path: &Path) -> PathBuf {
    json_path.with_extension("audit.jsonl")
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

/// The whole audit of a JSON shard: the entries its JSON held (first layout), then those
/// of its audit file (second layout). A move from the first layout to the second that
/// was cut short left the file starting with the JSON's entries: they count once.
pub fn merge_audit(inside: Vec<AuditEntry>, in_file: Vec<AuditEntry>) -> Vec<AuditEntry> {
    if in_file.starts_with(&inside) {
        in_file
    } else {
        let mut all = inside;
        all.extend(in_file);
        all
    }
}

/// Removes a JSON shard's files (once the store holds it); missing files are fine.
pub fn remove(json_path: &Path) {
    for file in [audit_path(json_path), json_path.to_path_buf()] {
        if let Err(e) = std::fs::remove_file(&file)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %file.display(), error = %e, "cannot remove an old shard file");
        }
    }
}

fn storage(path: &Path, error: &impl std::fmt::Display) -> AgentError {
    AgentError::Storage(format!("{}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::shard::test_entry as entry;

    fn lines(entries: &[AuditEntry]) -> Vec<u8> {
        let mut out = Vec::new();
        for entry in entries {
            serde_json::to_writer(&mut out, entry).expect("json");
            out.push(b'\n');
        }
        out
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_a_bad_middle_line_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.audit.jsonl");
        let mut text = lines(&[entry("act"), entry("answer")]);
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

    #[test]
    fn entries_moved_to_the_file_before_a_crash_count_once() {
        let inside = vec![entry("a"), entry("b")];
        let moved = vec![entry("a"), entry("b"), entry("c")];
        assert_eq!(merge_audit(inside.clone(), moved.clone()), moved);
        let merged = merge_audit(inside, vec![entry("c")]);
        assert_eq!(merged, [entry("a"), entry("b"), entry("c")]);
    }
}
