//! The `dramatis.v1.World` gRPC service: converts requests, calls [`Worlds`], maps
//! errors through `dramatis_proto::status`. No story logic lives here.
//!
//! [`Worlds`]: crate::registry::Worlds

mod api;
mod handle;
mod steer;
mod streams;

pub use handle::WorldGrpc;
