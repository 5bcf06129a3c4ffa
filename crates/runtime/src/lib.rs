//! `dramatis-runtime` holds what every Dramatis binary shares: telemetry set-up and
//! flushing, graceful shutdown, the gRPC health and reflection services, and where
//! model files live. It holds no story logic.

pub mod client;
pub mod grpc;
pub mod models;
pub mod shutdown;
mod small;
pub mod telemetry;

pub use shutdown::Shutdown;
pub use small::{lock, now_ms, saturating_u32};
