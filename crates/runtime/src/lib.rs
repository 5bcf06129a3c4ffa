//! `dramatis-runtime` holds what every Dramatis binary shares: telemetry set-up and
//! flushing, graceful shutdown, the gRPC health and reflection services, who may call
//! them (tokens, certificates), and where model files live. It holds no story logic.

pub mod auth;
pub mod client;
pub mod connection;
pub mod disk;
pub mod grpc;
pub mod memory_use;
pub mod metrics;
pub mod models;
pub mod pki;
pub mod shutdown;
pub mod telemetry;

pub use dramatis_base::{
    QUOTE_CHARS, clip_tokens, estimate_tokens, lock, now_ms, prefix, push, quote, saturating_u32,
};
pub use shutdown::Shutdown;
