//! The one place where domain errors become gRPC statuses.
//!
//! Every crate keeps its own `thiserror` enum; each implements [`DomainError`] to say
//! which class of failure it is. Services convert with [`to_status`] so the same kind of
//! failure always reaches clients with the same code.

use tonic::{Code, Status};

/// The classes of failure a client can tell apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request was malformed or named an invalid value.
    InvalidArgument,
    /// The named world, character or scenario does not exist.
    NotFound,
    /// The thing to create exists already.
    AlreadyExists,
    /// The request is valid but the target is not in a state to serve it.
    FailedPrecondition,
    /// A dependency (agent, language model, store) could not be reached.
    Unavailable,
    /// A deadline passed.
    DeadlineExceeded,
    /// The caller may not do this (a path outside the allowed directories).
    PermissionDenied,
    /// A limit of the service is reached (worlds, seats).
    ResourceExhausted,
    /// Another writer changed the target first (a world's log was appended by another
    /// owner); the caller's view is stale.
    Aborted,
    /// A point named past what exists (a story moment not yet played, or before the
    /// character's first event).
    OutOfRange,
    /// A bug or an unexpected failure.
    Internal,
}

impl ErrorKind {
    /// The gRPC status code for this class.
    #[must_use]
    pub fn code(self) -> Code {
        match self {
            Self::InvalidArgument => Code::InvalidArgument,
            Self::NotFound => Code::NotFound,
            Self::AlreadyExists => Code::AlreadyExists,
            Self::FailedPrecondition => Code::FailedPrecondition,
            Self::Unavailable => Code::Unavailable,
            Self::DeadlineExceeded => Code::DeadlineExceeded,
            Self::PermissionDenied => Code::PermissionDenied,
            Self::ResourceExhausted => Code::ResourceExhausted,
            Self::Aborted => Code::Aborted,
            Self::OutOfRange => Code::OutOfRange,
            Self::Internal => Code::Internal,
        }
    }

    /// The class of a status received from a peer, so errors keep their class across hops.
    #[must_use]
    pub fn from_code(code: Code) -> Self {
        match code {
            Code::InvalidArgument => Self::InvalidArgument,
            Code::OutOfRange => Self::OutOfRange,
            Code::NotFound => Self::NotFound,
            Code::AlreadyExists => Self::AlreadyExists,
            Code::FailedPrecondition => Self::FailedPrecondition,
            Code::Aborted => Self::Aborted,
            Code::Unavailable => Self::Unavailable,
            Code::ResourceExhausted => Self::ResourceExhausted,
            Code::DeadlineExceeded | Code::Cancelled => Self::DeadlineExceeded,
            Code::PermissionDenied | Code::Unauthenticated => Self::PermissionDenied,
            _ => Self::Internal,
        }
    }
}

/// A domain error that knows its class.
pub trait DomainError: std::error::Error {
    /// Which class of failure this is.
    fn kind(&self) -> ErrorKind;
}

/// Converts any domain error to the status clients receive; the message is the error's
/// own lowercase description.
pub fn to_status<E: DomainError + ?Sized>(error: &E) -> Status {
    Status::new(error.kind().code(), error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("world \"w1\" not found")]
    struct Missing;

    impl DomainError for Missing {
        fn kind(&self) -> ErrorKind {
            ErrorKind::NotFound
        }
    }

    #[test]
    fn status_carries_code_and_message() {
        let status = to_status(&Missing);
        assert_eq!(status.code(), Code::NotFound);
        assert_eq!(status.message(), "world \"w1\" not found");
    }

    #[test]
    fn codes_round_trip_through_kinds() {
        for kind in [
            ErrorKind::InvalidArgument,
            ErrorKind::NotFound,
            ErrorKind::AlreadyExists,
            ErrorKind::FailedPrecondition,
            ErrorKind::Unavailable,
            ErrorKind::DeadlineExceeded,
            ErrorKind::PermissionDenied,
            ErrorKind::ResourceExhausted,
            ErrorKind::Aborted,
            ErrorKind::Internal,
        ] {
            assert_eq!(ErrorKind::from_code(kind.code()), kind);
        }
    }
}
