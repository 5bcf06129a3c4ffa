//! `dramatis-runtime` holds what every Dramatis binary shares: telemetry set-up and
//! flushing, graceful shutdown, the gRPC health and reflection services, and where
//! model files live. It holds no story logic.

pub mod grpc;
pub mod models;
pub mod shutdown;
pub mod telemetry;

pub use shutdown::Shutdown;
