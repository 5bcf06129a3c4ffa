//! `dramatis-proto` owns the wire: the `dramatis.v1` protocol (generated at build time),
//! conversions between wire and domain values, and the single mapping from domain
//! errors to `tonic::Status`. It holds no service logic.

pub mod audit;
pub mod codec;
mod modules;
pub mod status;
mod usage;

/// Generated types, clients and servers of the `dramatis.v1` package.
#[allow(clippy::all, clippy::pedantic, missing_docs)]
pub mod v1 {
    tonic::include_proto!("dramatis.v1");

    /// Encoded file descriptor set, for gRPC server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("dramatis_v1_descriptor");

    /// The `.proto` sources by import path, for clients that read them at run time
    /// (the web viewer parses them in the browser).
    pub const PROTO_SOURCES: &[(&str, &str)] = &[
        (
            "dramatis/v1/common.proto",
            include_str!("../dramatis/v1/common.proto"),
        ),
        (
            "dramatis/v1/agent.proto",
            include_str!("../dramatis/v1/agent.proto"),
        ),
        (
            "dramatis/v1/world.proto",
            include_str!("../dramatis/v1/world.proto"),
        ),
    ];
}

pub use status::{DomainError, ErrorKind};
