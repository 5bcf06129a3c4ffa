//! ReverieMem's three layers of one character, together: what the agent's shard store
//! keeps a table of each (serde here; the rows are the agent's), and the JSON of
//! shards earlier builds wrote, read once to migrate.

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

/// Reads a JSON file (a shard of the format before the store, read once to migrate it).
pub fn load_json<T: DeserializeOwned>(path: &Path) -> Result<T, ShardError> {
    let bytes = std::fs::read(path).map_err(|e| io_error(path, &e))?;
    serde_json::from_slice(&bytes).map_err(|e| io_error(path, &e))
}
