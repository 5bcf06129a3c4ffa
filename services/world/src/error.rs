use dramatis_proto::{DomainError, ErrorKind};

use dramatis_runtime::quote;
use dramatis_scenario::ScenarioError;

/// Why a world operation failed.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    #[error("world {} not found", quote(.0))]
    WorldNotFound(String),
    #[error("world {} already exists", quote(.0))]
    WorldExists(String),
    #[error("no shipped scenario named {} (see ListScenarios)", quote(.0))]
    ScenarioNotFound(String),
    #[error("no scenario file at {0:?}")]
    ScenarioFileNotFound(String),
    #[error("{0}")]
    PathNotAllowed(String),
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    #[error("world {} has no character {}", quote(world), quote(character))]
    CharacterNotFound { world: String, character: String },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("agent for {character:?} failed: {message}")]
    Agent {
        character: String,
        kind: ErrorKind,
        message: String,
    },
    #[error("event log: {0}")]
    Log(String),
    /// The log refused an append: another writer (another owner of the world) appended
    /// first. This writer's view of the world is stale and must not go on.
    #[error("event log refused the append to world {}: {detail}", quote(world))]
    Fenced { world: String, detail: String },
    #[error("world {0:?} was deleted")]
    Deleted(String),
    /// The story is over: nothing more can happen in it.
    #[error("world {} has finished its story", quote(.0))]
    Finished(String),
    /// The world is in the log but could not be rebuilt after a restart.
    #[error(
        "world {} could not be rebuilt after a restart: {reason}. Fix the cause and call \
         again, or delete the world",
        quote(world)
    )]
    Unrestored { world: String, reason: String },
    /// Another replica owns the world now; the call may be sent again (to any replica).
    #[error("world {} moved to another replica; try again", quote(.0))]
    Moved(String),
    #[error("{0} is already played by someone")]
    SeatTaken(String),
    /// The world is not in the state the call needs (a replay that left its log or
    /// played it out, a character brought in that is in the story already).
    #[error("{0}")]
    NotNow(String),
    /// A limit of the service is reached.
    #[error("{0}")]
    Full(String),
    /// A story moment that is not there: not yet played, or before the character's first
    /// event.
    #[error("{0}")]
    OutOfRange(String),
    /// A run failed after it had logged events: they stay logged and watchable.
    #[error(
        "{source} (events {first}–{last} were logged before the failure; watch from {first} to read them)"
    )]
    Interrupted {
        first: u64,
        last: u64,
        source: Box<WorldError>,
    },
}

impl From<WorldError> for tonic::Status {
    fn from(error: WorldError) -> Self {
        dramatis_proto::status::to_status(&error)
    }
}

impl DomainError for WorldError {
    fn kind(&self) -> ErrorKind {
        match self {
            Self::WorldNotFound(_)
            | Self::ScenarioNotFound(_)
            | Self::ScenarioFileNotFound(_)
            | Self::CharacterNotFound { .. } => ErrorKind::NotFound,
            Self::PathNotAllowed(_) => ErrorKind::PermissionDenied,
            Self::WorldExists(_) | Self::SeatTaken(_) => ErrorKind::AlreadyExists,
            Self::Scenario(_) | Self::InvalidArgument(_) => ErrorKind::InvalidArgument,
            Self::Agent { kind, .. } => match kind {
                ErrorKind::InvalidArgument | ErrorKind::NotFound => ErrorKind::Internal,
                other => *other,
            },
            Self::Log(_) => ErrorKind::Internal,
            Self::Fenced { .. } => ErrorKind::Aborted,
            Self::Deleted(_) | Self::Finished(_) | Self::Unrestored { .. } | Self::NotNow(_) => {
                ErrorKind::FailedPrecondition
            }
            Self::Moved(_) => ErrorKind::Unavailable,
            Self::Full(_) => ErrorKind::ResourceExhausted,
            Self::OutOfRange(_) => ErrorKind::OutOfRange,
            Self::Interrupted { source, .. } => source.kind(),
        }
    }
}

impl WorldError {
    pub(crate) fn agent(character: &str, status: &tonic::Status) -> Self {
        Self::Agent {
            character: character.to_owned(),
            kind: ErrorKind::from_code(status.code()),
            message: format!("{}: {}", status.code(), status.message()),
        }
    }
}
