//! `dramatis-world` is the world service (the orchestrator): it loads scenarios, keeps
//! each world's state and durable event log, schedules scripted scenes turn by turn,
//! routes every event to exactly the characters who perceive it, and streams the
//! transcript to watchers.
//!
//! It reaches character agents only through `agent.proto` and never links their memory:
//! the world knows the truth, agents know what their characters perceived.

pub mod agent_clients;
mod channels;
pub mod cluster;
pub(crate) mod convert;
mod error;
pub(crate) mod grpc;
pub(crate) mod hub;
pub(crate) mod limits;
pub mod log;
pub(crate) mod metrics;
pub(crate) mod policy;
pub(crate) mod registry;
mod server;
pub(crate) mod transcript;
mod unrestored;
pub(crate) mod viewer;
pub(crate) mod world;

pub use error::WorldError;
pub use limits::Limits;
pub use registry::{ScenarioSource, WorldServiceOptions, Worlds};
pub use server::{ServeError, run, serve_worlds};
