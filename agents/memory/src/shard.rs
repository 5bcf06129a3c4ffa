//! One character's shard: the three layers, saved as one JSON file beside the agent and
//! read back on restart.

use std::path::{Path, PathBuf};

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
pub struct MemoryShard {
    version: u32,
    pub character: String,
    pub episodic: EpisodicLayer,
    pub semantic: SemanticLayer,
    pub personality: PersonalityLayer,
}

impl MemoryShard {
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
        let io = |e: std::io::Error| ShardError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let bytes = serde_json::to_vec(self).map_err(|e| ShardError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let temporary = path.with_extension("json.tmp");
        std::fs::write(&temporary, bytes).map_err(io)?;
        std::fs::rename(&temporary, path).map_err(io)
    }

    /// Reads a saved shard.
    pub fn load(path: &Path) -> Result<Self, ShardError> {
        let bytes = std::fs::read(path).map_err(|e| ShardError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        let shard: Self = serde_json::from_slice(&bytes).map_err(|e| ShardError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        if shard.version != SHARD_VERSION {
            return Err(ShardError::Version {
                path: path.to_path_buf(),
                found: shard.version,
            });
        }
        Ok(shard)
    }
}
