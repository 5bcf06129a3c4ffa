//! Reading one subject of a stream in order, from a stream position, through node
//! deaths: a feed that notices when its consumer has stopped delivering and makes a
//! new one from the next message.
//!
//! The client's ordered consumer is an ephemeral, unreplicated consumer that lives on
//! one node of the stream's group. When the node the client is connected to dies, the
//! client reconnects and the consumer reports an error at once. But when another node
//! dies, the one that hosts the consumer, nothing arrives: no message, no error, no
//! heartbeat. The client only gives up on the consumer after two missed idle
//! heartbeats of 15 s each, with a pull request's 35 s expiry between them, so about a
//! minute passes before delivery resumes. A watcher saw exactly that stall.
//!
//! The feed does not wait for the client to notice. When it has been quiet for
//! [`QUIET`], it asks the stream (a direct get, answered by any live replica) whether
//! the subject holds a message at or after the feed's position. If it does, and after
//! another quiet period nothing has arrived, the consumer is taken to be dead: the
//! feed drops it. Until it has a new one, made from its position, it reads the
//! subject by direct get, which any live replica answers. A consumer needs the
//! cluster's meta leader to be made, and when the dead node led the cluster that
//! takes an election (seconds); direct gets need no leader. So a message logged while
//! a node dies is delivered within two quiet periods and one direct get.

use std::time::Duration;

use tokio::time::Instant;

use async_nats::jetstream::consumer::pull::Ordered;
use async_nats::jetstream::stream::{DirectGetErrorKind, Stream};
use bytes::Bytes;
use futures::StreamExt as _;

use crate::NatsError;

/// How long a feed waits for a message before it asks the stream whether one is owed.
pub const QUIET: Duration = Duration::from_secs(2);

/// How long a feed without a consumer waits between attempts to make one (reading by
/// direct get meanwhile).
const RETRY: Duration = Duration::from_millis(250);

/// One subject's messages in stream order, from a stream position.
pub struct SubjectFeed {
    stream: Stream,
    subject: String,
    /// The stream sequence of the next message wanted (every earlier one was given).
    next: u64,
    /// How long one consumer creation may wait for the cluster.
    within: Duration,
    /// How long a quiet period lasts.
    quiet: Duration,
    consumer: Option<Ordered>,
    /// The last quiet period found a message owed: one more, and the consumer is dead.
    owed: bool,
    /// Since when the feed has had no consumer and failed to make one.
    lost_since: Option<Instant>,
}

impl std::fmt::Debug for SubjectFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubjectFeed")
            .field("subject", &self.subject)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

impl SubjectFeed {
    /// A feed of `subject`'s messages from stream sequence `start` (at least 1). Its
    /// first consumer is made now, waiting at most `within` for the cluster.
    pub async fn open(
        stream: &Stream,
        subject: &str,
        start: u64,
        within: Duration,
    ) -> Result<Self, NatsError> {
        Self::open_with(stream, subject, start, within, QUIET).await
    }

    /// As [`SubjectFeed::open`], with a quiet period of `quiet` (tests shorten it).
    pub async fn open_with(
        stream: &Stream,
        subject: &str,
        start: u64,
        within: Duration,
        quiet: Duration,
    ) -> Result<Self, NatsError> {
        let mut feed = Self {
            stream: stream.clone(),
            subject: subject.to_owned(),
            next: start.max(1),
            within,
            quiet,
            consumer: None,
            owed: false,
            lost_since: None,
        };
        feed.consumer = Some(feed.consumer_from_next().await?);
        Ok(feed)
    }

    /// The next message, as (stream sequence, payload). Waits while there is none; an
    /// error only when no consumer could be made within the feed's `within`.
    pub async fn next(&mut self) -> Result<(u64, Bytes), NatsError> {
        loop {
            let consumer = match self.consumer.take() {
                Some(consumer) => consumer,
                None => {
                    // Without a consumer, what the stream already holds comes by direct
                    // get: any live replica answers, with no leader to wait for.
                    if let Some(message) = self.direct_next().await {
                        return Ok(message);
                    }
                    match self.consumer_once().await {
                        Ok(consumer) => {
                            self.lost_since = None;
                            consumer
                        }
                        Err(error) => {
                            let since = *self.lost_since.get_or_insert_with(Instant::now);
                            if since.elapsed() >= self.within {
                                return Err(error);
                            }
                            tracing::debug!(subject = %self.subject, %error, "no consumer yet; reading by direct get meanwhile");
                            tokio::time::sleep(RETRY).await;
                            continue;
                        }
                    }
                }
            };
            let consumer = self.consumer.insert(consumer);
            match tokio::time::timeout(self.quiet, consumer.next()).await {
                Ok(Some(Ok(message))) => {
                    let at = match message.info() {
                        Ok(info) => info.stream_sequence,
                        Err(error) => {
                            return Err(crate::failed(&format!("read {}", self.subject), error));
                        }
                    };
                    self.owed = false;
                    if at < self.next {
                        continue;
                    }
                    self.next = at + 1;
                    return Ok((at, message.message.payload));
                }
                // The consumer broke (the node the client was connected to died, the
                // consumer was deleted): another, from the next message.
                Ok(Some(Err(error))) => self.drop_consumer(&error.to_string()).await,
                Ok(None) => self.drop_consumer("the consumer ended").await,
                Err(_quiet) => {
                    if !self.is_owed().await {
                        self.owed = false;
                    } else if self.owed {
                        self.drop_consumer("it delivered nothing for two quiet periods while the stream held a message for it")
                            .await;
                    } else {
                        self.owed = true;
                    }
                }
            }
        }
    }

    /// Every message up to and including stream sequence `last` (a position the
    /// subject was seen to reach), in order. Each may take at most the feed's `within`:
    /// a subject purged meanwhile would leave the read waiting for ever.
    pub async fn read_to(&mut self, last: u64) -> Result<Vec<(u64, Bytes)>, NatsError> {
        let mut out = Vec::new();
        while self.next <= last {
            let message = tokio::time::timeout(self.within, self.next())
                .await
                .map_err(|_| NatsError::Failed {
                    what: format!("read {}", self.subject),
                    detail: format!("stopped before stream sequence {last}, at {}", self.next),
                })??;
            out.push(message);
        }
        Ok(out)
    }

    /// The subject's first message at or after the feed's position, by direct get
    /// (the feed moves past it); `None` when there is none or no replica answered.
    async fn direct_next(&mut self) -> Option<(u64, Bytes)> {
        match self
            .stream
            .direct_get_next_for_subject(self.subject.as_str(), Some(self.next))
            .await
        {
            Ok(message) => {
                self.next = message.sequence + 1;
                Some((message.sequence, message.payload))
            }
            Err(error) => {
                if !matches!(error.kind(), DirectGetErrorKind::NotFound) {
                    tracing::debug!(subject = %self.subject, %error, "a direct get failed");
                }
                None
            }
        }
    }

    /// Whether the stream holds a message of the subject at or after the feed's
    /// position (asked of any replica; one that is behind, or no answer at all, says
    /// no, which only delays the verdict to a later quiet period).
    async fn is_owed(&mut self) -> bool {
        match self
            .stream
            .direct_get_last_for_subject(self.subject.as_str())
            .await
        {
            Ok(last) => last.sequence >= self.next,
            Err(error) if matches!(error.kind(), DirectGetErrorKind::NotFound) => false,
            Err(error) => {
                tracing::debug!(subject = %self.subject, %error, "could not ask the stream for the subject's last message");
                false
            }
        }
    }

    async fn drop_consumer(&mut self, why: &str) {
        tracing::debug!(subject = %self.subject, next = self.next, why, "making the feed's consumer again");
        self.consumer = None;
        self.owed = false;
        // A consumer that broke at once would be made again in a tight loop.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    async fn consumer_from_next(&mut self) -> Result<Ordered, NatsError> {
        crate::ordered_from(&self.stream, &self.subject, self.next, self.within).await
    }

    /// One attempt at a consumer from the feed's position.
    async fn consumer_once(&mut self) -> Result<Ordered, NatsError> {
        crate::ordered_once(&self.stream, &self.subject, self.next).await
    }
}
