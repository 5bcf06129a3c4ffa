//! Worlds the log records but a restart could not rebuild: a scenario file that is
//! gone, an agent that refused a character or could not be reached. Such a world stays
//! known to the service, so it can be inspected (`GetWorld` shows it FAILED, with
//! why), deleted, and tried again: every other call for it tries to rebuild it (at
//! most every [`RETRY_EVERY`]) and, while that fails, answers FAILED_PRECONDITION.

use std::time::{Duration, Instant};

use dramatis_proto::v1::{self as pb, WorldStatus};

use crate::error::WorldError;
use crate::log::WorldRecord;

/// How often calls for an unrestored world try to rebuild it.
pub const RETRY_EVERY: Duration = Duration::from_secs(5);

/// A world recorded in the log that could not be rebuilt.
#[derive(Debug)]
pub(crate) struct Unrestored {
    pub record: WorldRecord,
    /// What clients are shown: what could be read of it, FAILED, and why.
    info: std::sync::Mutex<pb::WorldInfo>,
    /// When it was last tried. Held while it is tried again or deleted, so one call
    /// at a time does either.
    pub tried: tokio::sync::Mutex<Instant>,
}

impl Unrestored {
    /// `info` is what could be read of the world (its scenario and log, as far as they
    /// read); `error` is why it could not be rebuilt.
    pub fn new(record: WorldRecord, mut info: pb::WorldInfo, error: &WorldError) -> Self {
        info.world_id.clone_from(&record.world_id);
        info.status = WorldStatus::Failed as i32;
        info.failure = error.to_string();
        Self {
            record,
            info: std::sync::Mutex::new(info),
            tried: tokio::sync::Mutex::new(Instant::now()),
        }
    }

    /// The world as clients see it.
    pub fn info(&self) -> pb::WorldInfo {
        dramatis_runtime::lock(&self.info).clone()
    }

    /// Another try failed, with `error`.
    pub fn failed_again(&self, error: &WorldError) {
        dramatis_runtime::lock(&self.info).failure = error.to_string();
    }

    /// The answer to a call that needs the world.
    pub fn error(&self) -> WorldError {
        WorldError::Unrestored {
            world: self.record.world_id.clone(),
            reason: dramatis_runtime::lock(&self.info).failure.clone(),
        }
    }
}
