//! Path confinement: a client's `scenario_path` is read only inside the scenario
//! directories, checked by name before the filesystem is touched and again after it is
//! resolved; and reads of scenario files off the async runtime.

use std::path::{Component, Path, PathBuf};

use super::Worlds;
use crate::error::WorldError;

impl Worlds {
    /// The file a client's `scenario_path` names, if it lies inside one of the scenario
    /// directories. A path outside them is refused before the filesystem is touched, so
    /// the answer says nothing about what exists there; a symlink out is refused too.
    pub(super) fn confined(&self, path: &Path) -> Result<PathBuf, WorldError> {
        let shown: String = path.to_string_lossy().chars().take(80).collect();
        let inside = |p: &Path| self.inner.roots.iter().any(|r| p.starts_with(r));
        let denied = || {
            WorldError::PathNotAllowed(format!(
                "scenario_path {shown:?} is outside the scenario directories this service reads \
                 (serve --scenarios-dir, --scenario-root); send a shipped name or an inline spec"
            ))
        };
        let absolute = lexical(path);
        if !inside(&absolute) {
            return Err(denied());
        }
        let canonical = std::fs::canonicalize(&absolute)
            .map_err(|_| WorldError::ScenarioFileNotFound(shown.clone()))?;
        if !inside(&canonical) {
            return Err(denied());
        }
        Ok(canonical)
    }
}

/// `path` made absolute (against the current directory) with `.` and `..` resolved by
/// name alone, without reading the filesystem.
pub(super) fn lexical(path: &Path) -> PathBuf {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Runs a blocking file read on tokio's blocking pool, so a slow disk never holds up
/// the other RPCs.
pub(super) async fn read_off_runtime<T: Send + 'static>(
    read: impl FnOnce() -> Result<T, WorldError> + Send + 'static,
) -> Result<T, WorldError> {
    tokio::task::spawn_blocking(read)
        .await
        .map_err(|e| WorldError::Log(format!("scenario read failed: {e}")))?
}
