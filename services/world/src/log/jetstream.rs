//! The replicated backend: NATS JetStream. One stream holds every world's events, one
//! subject per world (`<prefix>.events.<world>`), replicated over the cluster; world
//! records and narrator notes are two key-value buckets beside it.
//!
//! An append carries a message id (world and sequence), so a retried publish is stored
//! once, and the stream sequence of the world's last message as the expected last
//! subject sequence, so a writer that has missed another's append is refused by the
//! stream's leader: the log fences a stale owner itself.

use async_nats::jetstream::kv::UpdateErrorKind;
use async_nats::jetstream::stream::{DirectGetErrorKind, Stream as JsStream};
use async_nats::jetstream::{self, kv};
use async_trait::async_trait;
use bytes::Bytes;
use dashmap::DashMap;
use dramatis_nats::{NatsError, NatsOptions, SubjectFeed};
use dramatis_proto::v1::{Event, TokenChunk};
use futures::StreamExt as _;
use prost::Message as _;

use super::{EventFeed, EventLog, TokenFeed, WorldRecord, check_run};
use crate::error::WorldError;

/// How to reach the cluster and what to call things in it.
pub type JetStreamOptions = NatsOptions;

/// Where a world's log ends: its last event's sequence and that message's stream
/// sequence (the value appends expect).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Tail {
    event: u64,
    stream: u64,
}

/// A connection to the cluster's stream and buckets. Clones share it.
#[derive(Clone)]
pub struct JetStreamLog {
    context: jetstream::Context,
    stream: JsStream,
    worlds: kv::Store,
    /// The stream behind `worlds`, for reading a key from its leader.
    worlds_stream: JsStream,
    notes: kv::Store,
    subject_prefix: String,
    /// Where each world's log ends, as this process last saw it.
    tails: std::sync::Arc<DashMap<String, Tail>>,
    /// The connection token chunks travel on.
    live: async_nats::Client,
    /// Token chunks to publish, in order, by one task: (subject, encoded chunk).
    tokens: tokio::sync::mpsc::Sender<(String, Bytes)>,
    /// The revision of each world's narrator notes this process last read or wrote:
    /// a write replaces only that one, so a stale owner cannot overwrite a new one's.
    note_revisions: std::sync::Arc<DashMap<String, u64>>,
    options: JetStreamOptions,
}

impl std::fmt::Debug for JetStreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamLog")
            .field("servers", &dramatis_nats::redacted(&self.options.servers))
            .field("prefix", &self.options.prefix)
            .finish_non_exhaustive()
    }
}

fn nats_err(what: &str, e: impl std::fmt::Display) -> WorldError {
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
            tokens: publish_tokens(live.clone()),
            live,
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

    fn subject(&self, world_id: &str) -> String {
        format!("{}{world_id}", self.subject_prefix)
    }

    /// The core-NATS subject of `world_id`'s live token chunks (not stored).
    fn token_subject(&self, world_id: &str) -> String {
        format!("{}.tokens.{world_id}", self.options.prefix)
    }

    /// The first message of `subject` at or after stream sequence `from` (`None`: the
    /// subject's first), as (stream sequence, event); `None` when there is none.
    async fn next_at(
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
    async fn patiently<T, F, Fut>(&self, op: F) -> Result<T, WorldError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, WorldError>>,
    {
        dramatis_nats::patiently(self.options.timeout, op).await
    }

    /// Where `world_id`'s log ends, asked of the stream's leader (and remembered):
    /// appends and restores need the true end.
    async fn fetch_tail(&self, world_id: &str) -> Result<Tail, WorldError> {
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
    async fn start_of(&self, world_id: &str, from_seq: u64) -> Result<u64, WorldError> {
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
    async fn deliver_from(&self, world_id: &str, start: u64) -> Result<SubjectFeed, WorldError> {
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
    async fn note_entry(&self, world_id: &str) -> Result<(u64, Option<Bytes>), WorldError> {
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

    async fn kv_get(&self, store: &kv::Store, key: &str) -> Result<Option<Bytes>, WorldError> {
        self.patiently(|| async { store.get(key).await.map_err(|e| nats_err("bucket read", e)) })
            .await
    }

    async fn kv_put(&self, store: &kv::Store, key: &str, value: Bytes) -> Result<(), WorldError> {
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

/// Starts the task that publishes token chunks on core NATS, one after another (so a
/// world's chunks keep their order); returns its queue. A chunk is dropped while the
/// connection is down or the queue is full: it is a preview, and the event that
/// follows carries the line.
fn publish_tokens(client: async_nats::Client) -> tokio::sync::mpsc::Sender<(String, Bytes)> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(String, Bytes)>(TOKEN_QUEUE);
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
    tx
}

/// Token chunks waiting to be published, at most.
const TOKEN_QUEUE: usize = 4096;

fn decode(payload: &[u8]) -> Result<Event, WorldError> {
    Event::decode(payload).map_err(|e| nats_err("decode an event", e))
}

#[async_trait]
impl EventLog for JetStreamLog {
    async fn put_world(&self, record: WorldRecord) -> Result<(), WorldError> {
        let bytes = serde_json::to_vec(&record).map_err(|e| nats_err("world record", e))?;
        self.kv_put(&self.worlds, &record.world_id, bytes.into())
            .await
    }

    async fn world(&self, world_id: &str) -> Result<Option<WorldRecord>, WorldError> {
        // A direct get may be answered by a replica that has not yet stored a record
        // another replica has just written (a world created there a moment ago): a
        // miss is asked again of the bucket's leader. A deleted record's marker is
        // empty. An id no world can have (ids are letters, digits, '-' and '_') names
        // none, and would be no key.
        if dramatis_nats::subject_token(world_id) != world_id {
            return Ok(None);
        }
        let bytes = match self.kv_get(&self.worlds, world_id).await? {
            Some(bytes) => Some(bytes),
            None => dramatis_nats::last_message(
                &self.worlds_stream,
                &format!("$KV.{}_worlds.{world_id}", self.options.prefix),
                self.options.timeout,
            )
            .await?
            .map(|(_, payload)| payload)
            .filter(|payload| !payload.is_empty()),
        };
        bytes
            .map(|bytes| serde_json::from_slice(&bytes).map_err(|e| nats_err("world record", e)))
            .transpose()
    }

    async fn worlds(&self) -> Result<Vec<WorldRecord>, WorldError> {
        let mut keys = self
            .worlds
            .keys()
            .await
            .map_err(|e| nats_err("list worlds", e))?;
        let mut ids = Vec::new();
        while let Some(key) = keys.next().await {
            ids.push(key.map_err(|e| nats_err("list worlds", e))?);
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(record) = self.world(&id).await? {
                out.push(record);
            }
        }
        out.sort_by(|a: &WorldRecord, b| a.world_id.cmp(&b.world_id));
        Ok(out)
    }

    async fn append(
        &self,
        world_id: &str,
        after: u64,
        events: Vec<Event>,
    ) -> Result<(), WorldError> {
        check_run(world_id, after, &events)?;
        let remembered = self.tails.get(world_id).map(|t| *t);
        let mut tail = match remembered {
            Some(tail) if tail.event == after => tail,
            _ => self.fetch_tail(world_id).await?,
        };
        let fenced = |detail: String| WorldError::Fenced {
            world: world_id.to_owned(),
            detail,
        };
        if tail.event != after {
            return Err(fenced(format!(
                "expected it to end at event {after}, it ends at {}",
                tail.event
            )));
        }
        let subject = self.subject(world_id);
        for event in events {
            let payload = Bytes::from(event.encode_to_vec());
            // World, number and time: the same event sent again has the same id,
            // while a world deleted and created again under its name does not collide
            // with its predecessor in the duplicate window.
            let id = format!("{}.{}.{}", event.world_id, event.seq, event.timestamp_ms);
            let published = dramatis_nats::publish_after(
                &self.context,
                &self.stream,
                &subject,
                &payload,
                &id,
                tail.stream,
                self.options.timeout,
            )
            .await;
            let ack = match published {
                Ok(ack) => ack,
                Err(error) => {
                    self.tails.remove(world_id);
                    return Err(match error {
                        NatsError::Fenced(_) => fenced(format!(
                            "another writer appended after event {} (stream sequence {})",
                            tail.event, tail.stream
                        )),
                        other => other.into(),
                    });
                }
            };
            if ack.duplicate {
                // The id was seen in the duplicate window: this very event, sent again
                // after an ack was lost. Anything else under that id is a fork.
                let stored = self
                    .stream
                    .direct_get(ack.sequence)
                    .await
                    .map_err(|e| nats_err("read a duplicate", e))?;
                if stored.payload != payload {
                    self.tails.remove(world_id);
                    return Err(fenced(format!(
                        "event {} was already logged by another writer",
                        event.seq
                    )));
                }
            }
            tail = Tail {
                event: event.seq,
                stream: ack.sequence,
            };
        }
        self.tails.insert(world_id.to_owned(), tail);
        Ok(())
    }

    async fn read(&self, world_id: &str, from_seq: u64) -> Result<Vec<Event>, WorldError> {
        let from_seq = from_seq.max(1);
        let tail = self.fetch_tail(world_id).await?;
        if tail.event < from_seq {
            return Ok(Vec::new());
        }
        let start = self.start_of(world_id, from_seq).await?;
        let mut out = Vec::new();
        for (_, payload) in self
            .deliver_from(world_id, start)
            .await?
            .read_to(tail.stream)
            .await?
        {
            let event = decode(&payload)?;
            if event.seq >= from_seq {
                out.push(event);
            }
        }
        Ok(out)
    }

    async fn follow(&self, world_id: &str, from_seq: u64) -> Result<EventFeed, WorldError> {
        let from_seq = from_seq.max(1);
        let start = self.start_of(world_id, from_seq).await?;
        let mut messages = self.deliver_from(world_id, start).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        tokio::spawn(async move {
            let mut next = from_seq;
            loop {
                // The feed outlives its consumers (see `SubjectFeed`): it ends only
                // when no consumer can be made, and then the watcher hears why.
                let message = tokio::select! {
                    () = tx.closed() => return,
                    message = messages.next() => message,
                };
                let event = message
                    .map_err(WorldError::from)
                    .and_then(|(_, payload)| decode(&payload));
                match event {
                    Ok(event) if event.seq < next => {}
                    Ok(event) => {
                        next = event.seq + 1;
                        if tx.send(Ok(event)).await.is_err() {
                            return;
                        }
                    }
                    Err(error) => {
                        let _ = tx.send(Err(error)).await;
                        return;
                    }
                }
            }
        });
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn put_notes(&self, world_id: &str, notes: Vec<u8>) -> Result<(), WorldError> {
        let expected = match self.note_revisions.get(world_id).map(|r| *r) {
            Some(revision) => revision,
            None => self.note_entry(world_id).await?.0,
        };
        let value = Bytes::from(notes);
        let written = self
            .patiently(|| async {
                match self.notes.update(world_id, value.clone(), expected).await {
                    Ok(revision) => Ok(Ok(revision)),
                    Err(e) if matches!(e.kind(), UpdateErrorKind::WrongLastRevision) => Ok(Err(())),
                    Err(e) => Err(nats_err("write the narrator's notes", e)),
                }
            })
            .await?;
        let revision = match written {
            Ok(revision) => revision,
            Err(()) => {
                // Refused: another owner wrote them, or an attempt that seemed to fail
                // was stored after all (then they are these very notes).
                let (revision, stored) = self.note_entry(world_id).await?;
                if stored.as_ref() != Some(&value) {
                    self.note_revisions.remove(world_id);
                    return Err(WorldError::Fenced {
                        world: world_id.to_owned(),
                        detail: format!(
                            "another writer replaced the narrator's notes (revision {expected})"
                        ),
                    });
                }
                revision
            }
        };
        self.note_revisions.insert(world_id.to_owned(), revision);
        Ok(())
    }

    async fn notes(&self, world_id: &str) -> Result<Option<Vec<u8>>, WorldError> {
        Ok(self.note_entry(world_id).await?.1.map(|b| b.to_vec()))
    }

    async fn delete_world(&self, world_id: &str) -> Result<(), WorldError> {
        self.stream
            .purge()
            .filter(self.subject(world_id))
            .await
            .map_err(|e| nats_err("purge the world's events", e))?;
        self.tails.remove(world_id);
        self.note_revisions.remove(world_id);
        for store in [&self.worlds, &self.notes] {
            store
                .purge(world_id)
                .await
                .map_err(|e| nats_err("remove the world's keys", e))?;
        }
        Ok(())
    }

    fn publish_token(&self, world_id: &str, token: &TokenChunk) {
        let _ = self.tokens.try_send((
            self.token_subject(world_id),
            Bytes::from(token.encode_to_vec()),
        ));
    }

    async fn tokens(&self, world_id: &str) -> Result<Option<TokenFeed>, WorldError> {
        let subscriber = self
            .live
            .subscribe(self.token_subject(world_id))
            .await
            .map_err(|e| nats_err("subscribe to token chunks", e))?;
        Ok(Some(Box::pin(subscriber.filter_map(
            |message| async move { TokenChunk::decode(message.payload.as_ref()).ok() },
        ))))
    }

    fn describe(&self) -> String {
        format!(
            "JetStream at {} (stream {}, {} replicas)",
            dramatis_nats::redacted(&self.options.servers),
            self.stream.cached_info().config.name,
            self.options.replicas
        )
    }
}
