//! One character's shard: the three layers, saved as one JSON file beside the agent and
//! read back on restart.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{EpisodicLayer, PersonalityLayer, SemanticLayer};

/// File format version of a saved shard.
const SHARD_VERSION: u32 = 1;

/// Why a shard could not be saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("shard file {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("shard file {}: version {found}, this build reads {SHARD_VERSION}", path.display())]
    Version { path: PathBuf, found: u32 },
}

/// The memory of one character.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReverieLayers {
    version: u32,
    pub character: String,
    pub episodic: EpisodicLayer,
    pub semantic: SemanticLayer,
    pub personality: PersonalityLayer,
}

impl ReverieLayers {
    #[must_use]
    pub fn new(character: impl Into<String>) -> Self {
        Self {
            version: SHARD_VERSION,
            character: character.into(),
            episodic: EpisodicLayer::default(),
            semantic: SemanticLayer::default(),
            personality: PersonalityLayer::default(),
        }
    }

    /// Writes the shard atomically (a temporary file renamed over the old one).
    pub fn save(&self, path: &Path) -> Result<(), ShardError> {
        save_json(path, self)
    }

    /// Reads a saved shard.
    pub fn load(path: &Path) -> Result<Self, ShardError> {
        let shard: Self = load_json(path)?;
        shard.validate(path)?;
        Ok(shard)
    }

    /// Checks that a shard read from `path` is in the format this build writes.
    pub fn validate(&self, path: &Path) -> Result<(), ShardError> {
        if self.version == SHARD_VERSION {
            Ok(())
        } else {
            Err(ShardError::Version {
                path: path.to_path_buf(),
                found: self.version,
            })
        }
    }
}

fn io_error(path: &Path, message: &impl ToString) -> ShardError {
    ShardError::Io {
        path: path.to_path_buf(),
        message: message.to_string(),
    }
}

/// Writes `value` as JSON atomically: a temporary file renamed over the old one, so a
/// crash mid-write leaves the previous file intact.
pub fn save_json<T: Serialize>(path: &Path, value: &T) -> Result<(), ShardError> {
    let bytes = serde_json::to_vec(value).map_err(|e| io_error(path, &e))?;
    write_atomic(path, &bytes)
}

/// Writes `bytes` to `path` atomically (a temporary file beside it, renamed over it),
/// creating the directory when needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ShardError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io_error(path, &e))?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    std::fs::write(&temporary, bytes).map_err(|e| io_error(path, &e))?;
    std::fs::rename(&temporary, path).map_err(|e| io_error(path, &e))
}

/// Reads JSON written by [`save_json`].
pub fn load_json<T: DeserializeOwned>(path: &Path) -> Result<T, ShardError> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, &e))?;
    serde_json::from_slice(&bytes).map_err(|e| io_error(path, &e))
}
