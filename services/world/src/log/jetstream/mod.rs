//! The replicated backend: NATS JetStream. One stream holds every world's events, one
//! subject per world (`<prefix>.events.<world>`), replicated over the cluster; world
//! records and narrator notes are two key-value buckets beside it.
//!
//! An append carries a message id (world and sequence), so a retried publish is stored
//! once, and the stream sequence of the world's last message as the expected last
//! subject sequence, so a writer that has missed another's append is refused by the
//! stream's leader: the log fences a stale owner itself.

mod event_log;
mod handle;
mod relay;

pub use handle::{JetStreamLog, JetStreamOptions};
