use std::time::Duration;

/// Why a language-model call failed.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The endpoint could not be reached (connection refused, reset, DNS).
    #[error("language model endpoint {endpoint} unreachable: {message}")]
    Unreachable { endpoint: String, message: String },
    /// The endpoint answered with a non-success HTTP status.
    #[error("language model endpoint {endpoint} answered {status}: {body}")]
    Status {
        endpoint: String,
        status: u16,
        body: String,
    },
    /// No answer (or no next chunk) arrived in time.
    #[error("language model endpoint {endpoint} timed out after {after:?}")]
    Timeout { endpoint: String, after: Duration },
    /// The endpoint spoke, but not the chat-completions protocol.
    #[error("language model endpoint {endpoint} sent a malformed response: {message}")]
    Protocol { endpoint: String, message: String },
    /// The local model failed to load or run.
    #[error("local model: {0}")]
    Local(String),
    /// The request itself is invalid (for instance an unusable response schema).
    #[error("invalid completion request: {0}")]
    InvalidRequest(String),
}

impl LlmError {
    /// Whether trying the same request again may succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Unreachable { .. } | Self::Timeout { .. } | Self::Protocol { .. } => true,
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            Self::Local(_) | Self::InvalidRequest(_) => false,
        }
    }
}
