//! The token relay of a JetStream log: core NATS subjects (`<prefix>.tokens.<world>`)
//! on a connection of their own, so a burst of chunks while a node is down never queues
//! ahead of an append.

use async_trait::async_trait;
use bytes::Bytes;
use dramatis_proto::v1::TokenChunk;
use futures::StreamExt as _;
use prost::Message as _;

use crate::error::WorldError;
use crate::log::relay::{TokenFeed, TokenRelay};

/// Token chunks waiting to be published, at most.
const TOKEN_QUEUE: usize = 4096;

/// Token chunks over core NATS. Clones share the connection and the publishing task.
#[derive(Clone)]
pub struct NatsRelay {
    live: async_nats::Client,
    /// Chunks to publish, in order, by one task: (subject, encoded chunk).
    queue: tokio::sync::mpsc::Sender<(String, Bytes)>,
    prefix: String,
}

impl std::fmt::Debug for NatsRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsRelay")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl NatsRelay {
    /// A relay over `live`, with subjects under `prefix`. Starts the task that
    /// publishes chunks one after another (so a world's chunks keep their order). A
    /// chunk is dropped while the connection is down or the queue is full.
    pub(super) fn new(live: async_nats::Client, prefix: &str) -> Self {
        let (queue, mut rx) = tokio::sync::mpsc::channel::<(String, Bytes)>(TOKEN_QUEUE);
        let client = live.clone();
        tokio::spawn(async move {
            while let Some((subject, payload)) = rx.recv().await {
                if client.connection_state() != async_nats::connection::State::Connected {
                    continue;
                }
                if let Err(error) = client.publish(subject, payload).await {
                    tracing::debug!(%error, "a token chunk was not published");
                }
            }
        });
        Self {
            live,
            queue,
            prefix: prefix.to_owned(),
        }
    }

    fn subject(&self, world_id: &str) -> String {
        format!("{}.tokens.{world_id}", self.prefix)
    }
}

#[async_trait]
impl TokenRelay for NatsRelay {
    fn publish(&self, world_id: &str, token: &TokenChunk) {
        // A live token is best-effort: with the queue full or closed, watchers on other
        // replicas get the line whole from the log.
        let _ = self
            .queue
            .try_send((self.subject(world_id), Bytes::from(token.encode_to_vec())));
    }

    async fn follow(&self, world_id: &str) -> Result<TokenFeed, WorldError> {
        let subscriber = self
            .live
            .subscribe(self.subject(world_id))
            .await
            .map_err(|e| WorldError::Log(format!("JetStream subscribe to token chunks: {e}")))?;
        Ok(Box::pin(subscriber.filter_map(|message| async move {
            TokenChunk::decode(message.payload.as_ref()).ok()
        })))
    }
}
