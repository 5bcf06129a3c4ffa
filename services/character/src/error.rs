use dramatis_memory::modules::MindError;
use dramatis_proto::{DomainError, ErrorKind};

/// Why an agent operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("character {character:?} of world {world:?} is not attached to this agent")]
    NotAttached { world: String, character: String },
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    #[error("event {seq} was not perceived by {character:?}; refusing it")]
    NotPerceived { seq: u64, character: String },
    #[error("language model: {0}")]
    Model(#[from] dramatis_llm::LlmError),
    #[error("embedder: {0}")]
    Embed(#[from] dramatis_embed::EmbedError),
    /// A memory step that needs the embedder or the model failed (ReverieMem's read).
    #[error(transparent)]
    Mind(#[from] dramatis_memory::modules::MindError),
    #[error("{0}")]
    Shard(#[from] dramatis_memory::ShardError),
    #[error("shard storage: {0}")]
    Storage(String),
    /// The shard's store holds bytes that are not a store, or rows that do not decode:
    /// it is set aside and the character rebuilt from what the world sends again.
    #[error("shard store is corrupt: {0}")]
    Corrupt(String),
    /// The shard store refused a save: another agent has written this character
    /// since this one read it (it was moved while this agent was thought dead).
    #[error("shard storage refused a save: {0}")]
    Fenced(String),
    /// A save to the shard store failed, so this agent's copy of the shard is no
    /// longer known to match it: the character must be attached again (read anew).
    #[error("the character's shard must be read again: {0}")]
    ShardLost(String),
    /// The disk holding the shard has no room for a save: nothing was written, and the
    /// call may be made again once there is room.
    #[error("shard storage: {0}")]
    DiskFull(String),
}

impl DomainError for AgentError {
    fn kind(&self) -> ErrorKind {
        match self {
            // As for a character never attached: the world attaches it again.
            Self::NotAttached { .. } | Self::ShardLost(_) => ErrorKind::NotFound,
            Self::InvalidArgument(_) | Self::NotPerceived { .. } => ErrorKind::InvalidArgument,
            Self::Model(e) if e.is_retryable() => ErrorKind::Unavailable,
            Self::Mind(MindError::Model {
                retryable: true, ..
            }) => ErrorKind::Unavailable,
            Self::Fenced(_) => ErrorKind::Aborted,
            Self::DiskFull(_) => ErrorKind::ResourceExhausted,
            Self::Model(_)
            | Self::Mind(_)
            | Self::Embed(_)
            | Self::Shard(_)
            | Self::Storage(_)
            | Self::Corrupt(_) => ErrorKind::Internal,
        }
    }
}

impl From<AgentError> for tonic::Status {
    fn from(error: AgentError) -> Self {
        dramatis_proto::status::to_status(&error)
    }
}
