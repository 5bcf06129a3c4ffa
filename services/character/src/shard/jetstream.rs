//! Shards kept in NATS JetStream (`agent --shards nats://…`) instead of on the agent's
//! disk, so that a character whose agent died goes on, whole, on another agent.
//!
//! Each character has one subject, `<prefix>.shards.<world>.<character>`, in the
//! replicated stream `<PREFIX>_SHARDS`. Every save publishes what it changes (a
//! [`ShardDelta`]: rows put, by table and key) before it counts as saved; replaying a
//! subject in order rebuilds the store. The agent that attaches the character reads
//! the subject into a store in memory and writes after the last message it read: a
//! publish names that message as the subject's expected last, so a second agent
//! still writing the same character (one that was thought dead) is refused by the
//! stream. Every [`COMPACT_AFTER`] messages the whole store is published again and
//! the messages before it are purged, so an attach reads about one shard's worth.
//!
//! The invariant is untouched: a subject holds only what the character's own agent
//! saved of it, and only the agent that hosts the character reads it.

use std::time::Duration;

use async_nats::jetstream::{self, stream};
use bytes::Bytes;
use dramatis_nats::{NatsError, NatsOptions};
use dramatis_proto::v1::{ShardDelta, ShardRow};
use prost::Message as _;

use super::rows::{Delta, Row};
use crate::error::AgentError;

/// Messages published for a character after which its whole store is published
/// again and the older messages purged.
pub const COMPACT_AFTER: u64 = 400;

/// The most one message carries (rows are split across messages beyond it), well
/// under the server's default largest message (1 MiB).
const MESSAGE_BYTES: usize = 256 * 1024;

impl From<NatsError> for AgentError {
    fn from(error: NatsError) -> Self {
        match error {
            NatsError::Invalid(message) => Self::InvalidArgument(format!("shards: {message}")),
            NatsError::Fenced(message) => Self::Fenced(message),
            other => Self::Storage(other.to_string()),
        }
    }
}

/// The agent's connection to the shard stream. Clones share it.
#[derive(Clone)]
pub struct ShardStream {
    context: jetstream::Context,
    stream: stream::Stream,
    prefix: String,
    timeout: Duration,
    servers: String,
}

impl std::fmt::Debug for ShardStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardStream")
            .field("servers", &self.servers)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl ShardStream {
    /// Connects and makes sure the stream exists (with `options.replicas` copies).
    pub async fn connect(options: &NatsOptions) -> Result<Self, AgentError> {
        let context = dramatis_nats::connect(options, "dramatis agent").await?;
        let prefix = &options.prefix;
        let stream = dramatis_nats::keyed_stream(
            &context,
            options,
            "SHARDS",
            "shards",
            "Dramatis character shards, one subject per character",
        )
        .await?;
        Ok(Self {
            context,
            stream,
            prefix: prefix.clone(),
            timeout: options.timeout,
            servers: dramatis_nats::redacted(&options.servers),
        })
    }

    /// The subject of `character` in `world`.
    #[must_use]
    pub fn subject(&self, world: &str, character: &str) -> String {
        format!(
            "{}.shards.{}.{}",
            self.prefix,
            dramatis_nats::subject_token(world),
            dramatis_nats::subject_token(character)
        )
    }

    /// Reads everything saved of `character` in `world`, in order, and returns it with
    /// the handle that saves after it.
    pub async fn open(
        &self,
        world: &str,
        character: &str,
    ) -> Result<(RemoteShard, Vec<Delta>), AgentError> {
        let subject = self.subject(world, character);
        let last = dramatis_nats::last_message(&self.stream, &subject, self.timeout).await?;
        let mut deltas = Vec::new();
        let mut messages = 0;
        if let Some((last, _)) = last {
            let saved = dramatis_nats::SubjectFeed::open(&self.stream, &subject, 1, self.timeout)
                .await?
                .read_to(last)
                .await?;
            for (_, payload) in saved {
                let delta = ShardDelta::decode(payload.as_ref()).map_err(|e| {
                    AgentError::Storage(format!("{subject}: a saved delta does not decode: {e}"))
                })?;
                deltas.push(delta_of(delta));
                messages += 1;
            }
        }
        let mut remote = RemoteShard {
            stream: self.clone(),
            subject,
            tail: last.map_or(0, |(seq, _)| seq),
            writer: uuid::Uuid::new_v4().simple().to_string(),
            published: 0,
            since_compaction: messages,
            owed_purge: None,
        };
        // The claim: an empty message after what was read. From now on an agent that
        // hosted the character before (thought dead, still writing) is refused, and
        // so is this one once another attaches it.
        remote.publish(&ShardDelta::default()).await?;
        Ok((remote, deltas))
    }

    /// Deletes everything saved of `character` in `world`.
    pub async fn remove(&self, world: &str, character: &str) -> Result<(), AgentError> {
        let subject = self.subject(world, character);
        self.stream
            .purge()
            .filter(&subject)
            .await
            .map_err(|e| dramatis_nats::failed(&format!("purge {subject}"), e))?;
        Ok(())
    }
}

/// One character's subject as its writer sees it. Owned by the shard's writer task.
#[derive(Debug)]
pub struct RemoteShard {
    stream: ShardStream,
    subject: String,
    /// The stream sequence of the subject's last message (0: none): the next publish
    /// expects it.
    tail: u64,
    /// This writer's name in message ids, so a resend is a duplicate of its own
    /// message and never of another writer's.
    writer: String,
    /// Messages this writer has sent (each id is used for one message only, even one
    /// whose publish failed).
    published: u64,
    /// Messages on the subject since the last compaction (or ever).
    since_compaction: u64,
    /// Where a compaction's whole store starts, while the purge before it is still
    /// owed (it failed).
    owed_purge: Option<u64>,
}

impl RemoteShard {
    #[must_use]
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// Publishes `deltas`, in order, after the subject's last message; returns the
    /// stream sequence of the first message published. [`AgentError::Fenced`] when
    /// another writer has published since. After any failure this handle's view of
    /// the subject may be wrong: the character must be read again.
    pub async fn put(&mut self, deltas: &[Delta]) -> Result<u64, AgentError> {
        let mut first = None;
        for message in messages_of(deltas) {
            let at = self.publish(&message).await?;
            first.get_or_insert(at);
        }
        Ok(first.unwrap_or(self.tail + 1))
    }

    /// Publishes one message after the subject's last; its stream sequence.
    async fn publish(&mut self, message: &ShardDelta) -> Result<u64, AgentError> {
        let payload = Bytes::from(message.encode_to_vec());
        let id = format!("{}.{}", self.writer, self.published);
        self.published += 1;
        let ack = dramatis_nats::publish_after(
            &self.stream.context,
            &self.stream.stream,
            &self.subject,
            &payload,
            &id,
            self.tail,
            self.stream.timeout,
        )
        .await?;
        self.tail = ack.sequence;
        self.since_compaction += 1;
        Ok(ack.sequence)
    }

    /// Whether the subject has grown enough to be compacted.
    #[must_use]
    pub fn wants_compaction(&self) -> bool {
        self.since_compaction > COMPACT_AFTER
    }

    /// Publishes `whole` (every row of the store) and purges the messages before it.
    /// A compaction cut short leaves both: replaying them gives the same store. A
    /// purge that failed is tried again, alone, by the next compaction.
    pub async fn compact(&mut self, whole: &Delta) -> Result<(), AgentError> {
        let first = match self.owed_purge {
            Some(first) => first,
            None => {
                let first = self.put(std::slice::from_ref(whole)).await?;
                self.owed_purge = Some(first);
                first
            }
        };
        self.stream
            .stream
            .purge()
            .filter(&self.subject)
            .sequence(first)
            .await
            .map_err(|e| dramatis_nats::failed(&format!("compact {}", self.subject), e))?;
        self.owed_purge = None;
        self.since_compaction = 0;
        tracing::debug!(subject = %self.subject, from = first, "shard compacted");
        Ok(())
    }
}

/// Where a message keeps one table's rows.
type TableOf = fn(&mut ShardDelta) -> &mut Vec<ShardRow>;

/// `deltas` as messages of at most [`MESSAGE_BYTES`] (a row larger than that goes
/// alone): the same puts in the same order. Every row is a put by table and key, and
/// puts to different tables do not interact, so deltas merge into one message as
/// long as each table keeps its order (a later put of a key wins, as it would).
fn messages_of(deltas: &[Delta]) -> Vec<ShardDelta> {
    fn plain(rows: &[(u64, Vec<u8>)]) -> impl Iterator<Item = ShardRow> + '_ {
        rows.iter().map(|(key, value)| ShardRow {
            key: *key,
            value: value.clone(),
            vector: Vec::new(),
        })
    }
    fn items(rows: &[(u64, Row)]) -> impl Iterator<Item = ShardRow> + '_ {
        rows.iter().map(|(key, (value, vector))| ShardRow {
            key: *key,
            value: value.clone(),
            vector: vector.clone(),
        })
    }
    let mut out = Vec::new();
    let mut current = ShardDelta::default();
    let mut size = 0;
    // The small state (which says how far the shard has perceived) and the modules go
    // in the last message: a save cut short between its messages leaves rows without
    // a state that counts them, never a state that counts rows not saved.
    let state = deltas.iter().rev().find_map(|d| d.state.clone());
    let modules = deltas.iter().rev().find_map(|d| d.modules.clone());
    for delta in deltas {
        let tables: [(TableOf, Vec<ShardRow>); 6] = [
            (|d| &mut d.perceived, plain(&delta.perceived).collect()),
            (|d| &mut d.episodic, items(&delta.episodic).collect()),
            (|d| &mut d.semantic, items(&delta.semantic).collect()),
            (|d| &mut d.patterns, items(&delta.patterns).collect()),
            (|d| &mut d.transitions, plain(&delta.transitions).collect()),
            (|d| &mut d.audit, plain(&delta.audit).collect()),
        ];
        for (table, rows) in tables {
            for row in rows {
                let bytes = row.value.len() + row.vector.len() + 16;
                if size > 0 && size + bytes > MESSAGE_BYTES {
                    out.push(std::mem::take(&mut current));
                    size = 0;
                }
                size += bytes;
                table(&mut current).push(row);
            }
        }
    }
    let small = state.as_ref().map_or(0, Vec::len) + modules.as_ref().map_or(0, Vec::len);
    if size > 0 && size + small > MESSAGE_BYTES {
        out.push(std::mem::take(&mut current));
    }
    current.state = state;
    current.modules = modules;
    if current != ShardDelta::default() {
        out.push(current);
    }
    out
}

/// A saved message as the store's delta.
fn delta_of(message: ShardDelta) -> Delta {
    let plain = |rows: Vec<ShardRow>| rows.into_iter().map(|r| (r.key, r.value)).collect();
    let items = |rows: Vec<ShardRow>| {
        rows.into_iter()
            .map(|r| (r.key, (r.value, r.vector)))
            .collect()
    };
    Delta {
        state: message.state,
        modules: message.modules,
        perceived: plain(message.perceived),
        episodic: items(message.episodic),
        semantic: items(message.semantic),
        patterns: items(message.patterns),
        transitions: plain(message.transitions),
        audit: plain(message.audit),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(n: u64, size: usize) -> Delta {
        Delta {
            state: Some(format!("state {n}").into_bytes()),
            perceived: vec![(n, vec![b'p'; size])],
            semantic: vec![(n, (vec![b's'; size], vec![1, 2, 3, 4]))],
            audit: vec![(n, b"prompt".to_vec())],
            ..Delta::default()
        }
    }

    #[test]
    fn deltas_merge_into_a_message_that_decodes_to_the_same_puts_in_order() {
        let deltas: Vec<Delta> = (0..3).map(|n| delta(n, 10)).collect();
        let messages = messages_of(&deltas);
        assert_eq!(messages.len(), 1, "small deltas share a message");
        let bytes = messages[0].encode_to_vec();
        let back = delta_of(ShardDelta::decode(bytes.as_slice()).expect("decodes"));
        assert_eq!(
            back.state.as_deref(),
            Some(&b"state 2"[..]),
            "the last state"
        );
        let all = |f: fn(&Delta) -> Vec<u64>| deltas.iter().flat_map(f).collect::<Vec<_>>();
        assert_eq!(
            back.perceived.iter().map(|r| r.0).collect::<Vec<_>>(),
            all(|d| d.perceived.iter().map(|r| r.0).collect())
        );
        assert_eq!(back.semantic[1], deltas[1].semantic[0]);
        assert_eq!(back.audit.len(), 3);
    }

    #[test]
    fn a_large_delta_is_split_below_the_message_limit_and_keeps_every_row() {
        let big = Delta {
            state: Some(b"s".to_vec()),
            perceived: (0..40).map(|k| (k, vec![b'x'; 20_000])).collect(),
            ..Delta::default()
        };
        let messages = messages_of(std::slice::from_ref(&big));
        assert!(messages.len() >= 3, "{} messages", messages.len());
        for message in &messages {
            assert!(message.encoded_len() <= MESSAGE_BYTES + 1024);
        }
        let keys: Vec<u64> = messages
            .iter()
            .flat_map(|m| m.perceived.iter().map(|r| r.key))
            .collect();
        assert_eq!(keys, (0..40).collect::<Vec<_>>());
        let last = messages.last().expect("messages");
        assert_eq!(
            last.state.as_deref(),
            Some(&b"s"[..]),
            "the state goes last"
        );
        assert!(
            messages[..messages.len() - 1]
                .iter()
                .all(|m| m.state.is_none())
        );
    }
}
