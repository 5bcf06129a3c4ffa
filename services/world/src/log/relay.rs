//! Live token chunks of a line being spoken, passed from a world's owner to watchers on
//! other replicas. A preview: not logged, not waited for, dropped when the relay cannot
//! keep up; the event that follows carries the line whole. It travels beside the event
//! log, not in it: a log no other process shares has no relay.

use std::pin::Pin;

use async_trait::async_trait;
use dramatis_proto::v1::TokenChunk;
use futures::Stream;

use crate::error::WorldError;

/// A world's live token chunks, as its owner publishes them, without end.
pub type TokenFeed = Pin<Box<dyn Stream<Item = TokenChunk> + Send>>;

/// Where live token chunks go between replicas.
#[async_trait]
pub trait TokenRelay: Send + Sync + std::fmt::Debug {
    /// Passes `token`, a chunk of a line of world `world_id`, on: in order per world,
    /// and never waited for.
    fn publish(&self, world_id: &str, token: &TokenChunk);

    /// The chunks of `world_id` that its owner, on any replica, publishes from now on.
    async fn follow(&self, world_id: &str) -> Result<TokenFeed, WorldError>;
}
