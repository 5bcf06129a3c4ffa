//! The connection: the stream, its buckets, where each world's log ends, and the
//! reads and writes the event log is made of.

use async_nats::jetstream::stream::{DirectGetErrorKind, Stream as JsStream};
use async_nats::jetstream::{self, kv};
use bytes::Bytes;
use dashmap::DashMap;
use dramatis_nats::{NatsError, NatsOptions, SubjectFeed};
use dramatis_proto::v1::Event;
use prost::Message as _;

use super::relay::NatsRelay;
use crate::error::WorldError;

/// How to reach the cluster and what to call things in it.
pub type JetStreamOptions = NatsOptions;

/// Where a world's log ends: its last event's sequence and that message's stream
/// sequence (the value appends expect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Tail {
    pub(super) event: u64,
    pub(super) stream: u64,
}

/// A connection to the cluster's stream and buckets. Clones share it.
#[derive(Clone)]
pub struct JetStreamLog {
    pub(super) context: jetstream::Context,
    pub(super) stream: JsStream,
    pub(super) worlds: kv::Store,
    /// The stream behind `worlds`, for reading a key from its leader.
    pub(super) worlds_stream: JsStream,
    pub(super) notes: kv::Store,
    pub(super) subject_prefix: String,
    /// Where each world's log ends, as this process last saw it.
    pub(super) tails: std::sync::Arc<DashMap<String, Tail>>,
    /// Live token chunks, on a connection of their own.
    pub(super) relay: NatsRelay,
    /// The revision of each world's narrator notes this process last read or wrote:
    /// a write replaces only that one, so a stale owner cannot overwrite a new one's.
    pub(super) note_revisions: std::sync::Arc<DashMap<String, u64>>,
    pub(super) options: JetStreamOptions,
}

impl std::fmt::Debug for JetStreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamLog")
            .field("servers", &dramatis_nats::redacted(&self.options.servers))
            .field("prefix", &self.options.prefix)
            .finish_non_exhaustive()
    }
}

pub(super) fn nats_err(what: &str, e: impl std::fmt::Display) -> WorldError {
    WorldError::Log(format!("JetStream {what}: {e}"))
}

impl From<NatsError> for WorldError {
    fn from(error: NatsError) -> Self {
        match error {
            NatsError::Invalid(message) => Self::InvalidArgument(format!("log: {message}")),
            other => Self::Log(other.to_string()),
        }
    }
}

impl JetStreamLog {
    /// Connects and makes sure the stream and buckets exist (created with
    /// `options.replicas` copies when they do not).
    pub async fn connect(options: JetStreamOptions) -> Result<Self, WorldError> {
        let prefix = &options.prefix;
        let context = dramatis_nats::connect(&options, "dramatis world service").await?;
        // Direct gets answer from any replica: the tail and the binary search for a
        // watcher's start.
        let stream = dramatis_nats::keyed_stream(
            &context,
            &options,
            "EVENTS",
            "events",
            "Dramatis world events, one subject per world",
        )
        .await?;
        let worlds =
            dramatis_nats::bucket(&context, &format!("{prefix}_worlds"), options.replicas).await?;
        let worlds_stream = context
            .get_stream(format!("KV_{prefix}_worlds"))
            .await
            .map_err(|e| nats_err("the world records' stream", e))?;
        // Notes are written by compare-and-set: read from the leader only.
        let notes = dramatis_nats::bucket_with(
            &context,
            &format!("{prefix}_notes"),
            options.replicas,
            false,
        )
        .await?;
        // Token chunks go over a connection of their own: a burst of them while a node
        // is down never queues ahead of an append.
        let live = dramatis_nats::client(&options, "dramatis world service (live)").await?;
        Ok(Self {
            relay: NatsRelay::new(live, prefix),
            context,
            stream,
            worlds,
            worlds_stream,
            notes,
            subject_prefix: format!("{prefix}.events."),
            tails: std::sync::Arc::default(),
            note_revisions: std::sync::Arc::default(),
            options,
        })
    }

    /// The key-value bucket `<prefix>_<name>` beside this log, made when missing, with
    /// the log's replicas.
    pub async fn bucket(&self, name: &str) -> Result<async_nats::jetstream::kv::Store, WorldError> {
        let name = format!("{}_{name}", self.options.prefix);
        Ok(dramatis_nats::bucket(&self.context, &name, self.options.replicas).await?)
    }

    pub(super) fn subject(&self, world_id: &str) -> String {
        format!("{}{world_id}", self.subject_prefix)
    }

    /// The core-NATS subject of `world_id`'s live token chunks (not stored).
    /// The first message of `subject` at or after stream sequence `from` (`None`: the
    /// subject's first), as (stream sequence, event); `None` when there is none.
    pub(super) async fn next_at(
        &self,
        subject: &str,
        from: Option<u64>,
    ) -> Result<Option<(u64, Event)>, WorldError> {
        self.patiently(|| async {
            match self.stream.direct_get_next_for_subject(subject, from).await {
                Ok(message) => Ok(Some((message.sequence, decode(&message.payload)?))),
                Err(e) if matches!(e.kind(), DirectGetErrorKind::NotFound) => Ok(None),
                Err(e) => Err(nats_err("read", e)),
            }
        })
        .await
    }

    /// Runs `op` again while it fails (a node died, a leader is being elected), until
    /// the timeout; then its last error.
    pub(super) async fn patiently<T, F, Fut>(&self, op: F) -> Result<T, WorldError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, WorldError>>,
    {
        dramatis_nats::patiently(self.options.timeout, op).await
    }

    /// Where `world_id`'s log ends, asked of the stream's leader (and remembered):
    /// appends and restores need the true end.
    pub(super) async fn fetch_tail(&self, world_id: &str) -> Result<Tail, WorldError> {
        let subject = self.subject(world_id);
        let tail = match dramatis_nats::last_message(&self.stream, &subject, self.options.timeout)
            .await?
        {
            Some((stream, payload)) => Tail {
                event: decode(&payload)?.seq,
                stream,
            },
            None => Tail {
                event: 0,
                stream: 0,
            },
        };
        self.tails.insert(world_id.to_owned(), tail);
        Ok(tail)
    }

    /// A stream position to deliver `world_id`'s events from so that event `from_seq`
    /// (when it is or will be logged) is not skipped: at or before it, and as close as
    /// a binary search over the stream finds (a world's events are numbered without
    /// gaps, in stream order, interleaved with other worlds'). Direct gets answer from
    /// any replica, perhaps one behind; a probe that finds nothing counts as "not
    /// before", so a lagging answer can only move the start earlier, and the caller
    /// drops what comes before `from_seq`.
    pub(super) async fn start_of(&self, world_id: &str, from_seq: u64) -> Result<u64, WorldError> {
        let subject = self.subject(world_id);
        let Some((first, first_event)) = self.next_at(&subject, None).await? else {
            return Ok(1);
        };
        if first_event.seq >= from_seq {
            return Ok(first);
        }
        let tail = self.fetch_tail(world_id).await?;
        if tail.event < from_seq {
            return Ok(tail.stream + 1);
        }
        let (mut lo, mut hi) = (first + 1, tail.stream);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.next_at(&subject, Some(mid)).await? {
                Some((_, event)) if event.seq < from_seq => lo = mid + 1,
                _ => hi = mid,
            }
        }
        Ok(lo)
    }

    /// `world_id`'s messages in order from stream sequence `start`, through node deaths.
    pub(super) async fn deliver_from(
        &self,
        world_id: &str,
        start: u64,
    ) -> Result<SubjectFeed, WorldError> {
        Ok(SubjectFeed::open(
            &self.stream,
            &self.subject(world_id),
            start,
            self.options.timeout,
        )
        .await?)
    }

    /// The narrator's notes of `world_id` and their revision (that of a deletion, or
    /// 0, when there are none), remembered as what the next write replaces.
    pub(super) async fn note_entry(
        &self,
        world_id: &str,
    ) -> Result<(u64, Option<Bytes>), WorldError> {
        let entry = self
            .patiently(|| async {
                self.notes
                    .entry(world_id)
                    .await
                    .map_err(|e| nats_err("read the narrator's notes", e))
            })
            .await?;
        let found = match entry {
            Some(entry) if entry.operation == kv::Operation::Put => {
                (entry.revision, Some(entry.value))
            }
            Some(entry) => (entry.revision, None),
            None => (0, None),
        };
        self.note_revisions.insert(world_id.to_owned(), found.0);
        Ok(found)
    }

    pub(super) async fn kv_get(
        &self,
        store: &kv::Store,
        key: &str,
    ) -> Result<Option<Bytes>, WorldError> {
        self.patiently(|| async { store.get(key).await.map_err(|e| nats_err("bucket read", e)) })
            .await
    }

    pub(super) async fn kv_put(
        &self,
        store: &kv::Store,
        key: &str,
        value: Bytes,
    ) -> Result<(), WorldError> {
        self.patiently(|| async {
            store
                .put(key, value.clone())
                .await
                .map(drop)
                .map_err(|e| nats_err("bucket write", e))
        })
        .await
    }
}

pub(super) fn decode(payload: &[u8]) -> Result<Event, WorldError> {
    Event::decode(payload).map_err(|e| nats_err("decode an event", e))
}
