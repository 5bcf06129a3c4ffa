//! The replicated backend: NATS JetStream. One stream holds every world's events, one
//! subject per world (`<prefix>.events.<world>`), replicated over the cluster; world
//! records and narrator notes are two key-value buckets beside it.
//!
//! An append carries a message id (world and sequence), so a retried publish is stored
//! once, and the stream sequence of the world's last message as the expected last
//! subject sequence, so a writer that has missed another's append is refused by the
//! stream's leader: the log fences a stale owner itself.

use std::time::Duration;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::consumer::pull::OrderedConfig;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{
    self, DirectGetErrorKind, LastRawMessageErrorKind, Stream as JsStream,
};
use async_nats::jetstream::{self, kv};
use async_trait::async_trait;
use bytes::Bytes;
use dashmap::DashMap;
use dramatis_proto::v1::Event;
use futures::StreamExt as _;
use prost::Message as _;

use super::{EventFeed, EventLog, WorldRecord, check_run};
use crate::WorldError;

/// How to reach the cluster and what to call things in it.
#[derive(Debug, Clone)]
pub struct JetStreamOptions {
    /// Server addresses (`nats://host:port`, comma-separated for several).
    pub servers: String,
    /// Prefix of the stream, subjects and buckets, so deployments can share a cluster.
    pub prefix: String,
    /// Copies of each message and key (3 in a three-node cluster).
    pub replicas: usize,
    /// How long an append or request waits for the cluster, resending an append whose
    /// acknowledgement does not come (a node died, a leader is being elected).
    pub timeout: Duration,
}

impl JetStreamOptions {
    /// Defaults for `servers`: prefix `dramatis`, three replicas, 20 s.
    #[must_use]
    pub fn new(servers: impl Into<String>) -> Self {
        Self {
            servers: servers.into(),
            prefix: "dramatis".into(),
            replicas: 3,
            timeout: Duration::from_secs(20),
        }
    }
}

/// How long one publish waits for its acknowledgement before it is sent again.
const ACK_WAIT: Duration = Duration::from_secs(2);

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
    notes: kv::Store,
    subject_prefix: String,
    /// Where each world's log ends, as this process last saw it.
    tails: std::sync::Arc<DashMap<String, Tail>>,
    options: JetStreamOptions,
}

impl std::fmt::Debug for JetStreamLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JetStreamLog")
            .field("servers", &self.options.servers)
            .field("prefix", &self.options.prefix)
            .finish_non_exhaustive()
    }
}

fn nats_err(what: &str, e: impl std::fmt::Display) -> WorldError {
    WorldError::Log(format!("JetStream {what}: {e}"))
}

impl JetStreamLog {
    /// Connects and makes sure the stream and buckets exist (created with
    /// `options.replicas` copies when they do not).
    pub async fn connect(options: JetStreamOptions) -> Result<Self, WorldError> {
        let prefix = &options.prefix;
        if prefix.is_empty()
            || !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(WorldError::InvalidArgument(format!(
                "log prefix {:?} may hold only letters, digits, '-' and '_'",
                prefix.chars().take(40).collect::<String>()
            )));
        }
        let servers: Vec<async_nats::ServerAddr> = options
            .servers
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .map_err(|e| nats_err(&format!("server address {:?}", s.trim()), e))
            })
            .collect::<Result<_, _>>()?;
        let client = async_nats::ConnectOptions::new()
            .name("dramatis world service")
            .request_timeout(Some(options.timeout))
            .retry_on_initial_connect()
            .connection_timeout(options.timeout)
            .connect(servers)
            .await
            .map_err(|e| nats_err(&format!("connect to {}", options.servers), e))?;
        // One attempt's wait (the client waits this long for a publish's
        // acknowledgement too): a lost acknowledgement is resent well within
        // `timeout` (see `publish`).
        let context = jetstream::ContextBuilder::new()
            .timeout(options.timeout.min(ACK_WAIT))
            .build(client);
        let stream = context
            .get_or_create_stream(stream::Config {
                name: format!("{}_EVENTS", prefix.to_ascii_uppercase()),
                description: Some("Dramatis world events, one subject per world".into()),
                subjects: vec![format!("{prefix}.events.>")],
                num_replicas: options.replicas,
                // Direct gets answer from any replica: the tail and the binary search
                // for a watcher's start.
                allow_direct: true,
                duplicate_window: Duration::from_secs(120),
                ..stream::Config::default()
            })
            .await
            .map_err(|e| nats_err("event stream", e))?;
        let worlds = bucket(&context, &format!("{prefix}_worlds"), options.replicas).await?;
        let notes = bucket(&context, &format!("{prefix}_notes"), options.replicas).await?;
        Ok(Self {
            context,
            stream,
            worlds,
            notes,
            subject_prefix: format!("{prefix}.events."),
            tails: std::sync::Arc::default(),
            options,
        })
    }

    /// The world-ownership leases of replicas sharing this log, in a bucket beside it.
    pub async fn leases(
        &self,
        me: crate::cluster::Replica,
        ttl: Duration,
    ) -> Result<crate::cluster::Leases, WorldError> {
        let name = format!("{}_leases", self.options.prefix);
        let store = bucket(&self.context, &name, self.options.replicas).await?;
        Ok(crate::cluster::Leases::new(store, me, ttl))
    }

    fn subject(&self, world_id: &str) -> String {
        format!("{}{world_id}", self.subject_prefix)
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
        let mut backoff = Backoff::new(self.options.timeout);
        loop {
            match op().await {
                Ok(value) => return Ok(value),
                Err(error) => {
                    if !backoff.wait(&error).await {
                        return Err(error);
                    }
                }
            }
        }
    }

    /// Where `world_id`'s log ends, asked of the cluster (and remembered).
    async fn fetch_tail(&self, world_id: &str) -> Result<Tail, WorldError> {
        let subject = self.subject(world_id);
        let tail = self
            .patiently(|| async {
                // Asked of the stream's leader (not a direct get, which any replica
                // answers, perhaps behind): appends and restores need the true end.
                match self.stream.get_last_raw_message_by_subject(&subject).await {
                    Ok(message) => Ok(Tail {
                        event: decode(&message.payload)?.seq,
                        stream: message.sequence,
                    }),
                    Err(e) if matches!(e.kind(), LastRawMessageErrorKind::NoMessageFound) => {
                        Ok(Tail {
                            event: 0,
                            stream: 0,
                        })
                    }
                    Err(e) => Err(nats_err("read the last event", e)),
                }
            })
            .await?;
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

    /// Ordered delivery of `world_id`'s messages from stream sequence `start`.
    async fn deliver_from(
        &self,
        world_id: &str,
        start: u64,
    ) -> Result<async_nats::jetstream::consumer::pull::Ordered, WorldError> {
        self.patiently(|| async {
            self.stream
                .create_consumer(OrderedConfig {
                    filter_subject: self.subject(world_id),
                    deliver_policy: DeliverPolicy::ByStartSequence {
                        start_sequence: start.max(1),
                    },
                    ..OrderedConfig::default()
                })
                .await
                .map_err(|e| nats_err("consumer", e))?
                .messages()
                .await
                .map_err(|e| nats_err("consumer messages", e))
        })
        .await
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

/// A key-value bucket keeping one value per key, created when missing.
///
/// The bucket's stream is made here, with the settings a bucket has, rather than by
/// the client's `create_key_value`: that first asks for the account's limits in a
/// form Debian's server (2.9) does not send, and fails.
pub(crate) async fn bucket(
    context: &jetstream::Context,
    name: &str,
    replicas: usize,
) -> Result<kv::Store, WorldError> {
    context
        .get_or_create_stream(stream::Config {
            name: format!("KV_{name}"),
            subjects: vec![format!("$KV.{name}.>")],
            max_messages_per_subject: 1,
            discard: stream::DiscardPolicy::New,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: true,
            num_replicas: replicas,
            ..stream::Config::default()
        })
        .await
        .map_err(|e| nats_err(&format!("bucket {name}"), e))?;
    context
        .get_key_value(name)
        .await
        .map_err(|e| nats_err(&format!("bucket {name}"), e))
}

/// Pauses between attempts, doubling up to a second, until a deadline.
struct Backoff {
    deadline: tokio::time::Instant,
    pause: Duration,
}

impl Backoff {
    fn new(within: Duration) -> Self {
        Self {
            deadline: tokio::time::Instant::now() + within,
            pause: Duration::from_millis(50),
        }
    }

    /// Sleeps before the next attempt after `error`; `false` when none is left.
    async fn wait(&mut self, error: &(dyn std::fmt::Display + Sync)) -> bool {
        if tokio::time::Instant::now() + self.pause > self.deadline {
            return false;
        }
        tracing::debug!(%error, "JetStream busy; trying again");
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(Duration::from_secs(1));
        true
    }
}

/// Why a publish did not land.
enum Refusal {
    /// The stream refused it: its last message on the subject is not the one expected.
    Fenced(String),
    Failed(WorldError),
}

impl JetStreamLog {
    /// Publishes one event after `tail`, sending it again while the cluster does not
    /// answer (a node died, a leader is being elected) until the timeout: the message
    /// id makes a resend that finds the first copy stored a duplicate, not a second
    /// event.
    async fn publish(
        &self,
        subject: &str,
        event: &Event,
        payload: &Bytes,
        tail: Tail,
    ) -> Result<async_nats::jetstream::publish::PublishAck, Refusal> {
        // World, number and time: the same event sent again has the same id, while a
        // world deleted and created again under its name does not collide with its
        // predecessor in the duplicate window.
        let id = format!("{}.{}.{}", event.world_id, event.seq, event.timestamp_ms);
        let mut backoff = Backoff::new(self.options.timeout);
        loop {
            let message = PublishMessage::build()
                .payload(payload.clone())
                .message_id(&id)
                .expected_last_subject_sequence(tail.stream);
            let attempt = match self.context.send_publish(subject.to_owned(), message).await {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            let error = match attempt {
                Ok(ack) => return Ok(ack),
                Err(e) if matches!(e.kind(), PublishErrorKind::WrongLastSequence) => {
                    return Err(Refusal::Fenced(format!(
                        "another writer appended after event {} (stream sequence {})",
                        tail.event, tail.stream
                    )));
                }
                Err(e) => e,
            };
            let transient = matches!(
                error.kind(),
                PublishErrorKind::TimedOut
                    | PublishErrorKind::BrokenPipe
                    | PublishErrorKind::StreamNotFound
                    | PublishErrorKind::Other
            );
            if !transient || !backoff.wait(&error).await {
                return Err(Refusal::Failed(nats_err("append", error)));
            }
        }
    }
}

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
        self.kv_get(&self.worlds, world_id)
            .await?
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
            let ack = match self.publish(&subject, &event, &payload, tail).await {
                Ok(ack) => ack,
                Err(error) => {
                    self.tails.remove(world_id);
                    return Err(match error {
                        Refusal::Fenced(detail) => fenced(detail),
                        Refusal::Failed(error) => error,
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
        let mut messages = self.deliver_from(world_id, start).await?;
        let mut out = Vec::new();
        while let Some(message) = messages.next().await {
            let message = message.map_err(|e| nats_err("read", e))?;
            let event = decode(&message.payload)?;
            let seq = event.seq;
            if seq >= from_seq {
                out.push(event);
            }
            if seq >= tail.event {
                break;
            }
        }
        Ok(out)
    }

    async fn follow(&self, world_id: &str, from_seq: u64) -> Result<EventFeed, WorldError> {
        let from_seq = from_seq.max(1);
        let start = self.start_of(world_id, from_seq).await?;
        let mut messages = self.deliver_from(world_id, start).await?;
        let (tx, rx) = tokio::sync::mpsc::channel(256);
        let (log, world) = (self.clone(), world_id.to_owned());
        tokio::spawn(async move {
            let mut next = from_seq;
            loop {
                let message = tokio::select! {
                    () = tx.closed() => return,
                    message = messages.next() => message,
                };
                match message.map(|m| m.map_err(|e| nats_err("follow", e))) {
                    Some(Ok(message)) => match decode(&message.payload) {
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
                    },
                    // The consumer broke (its node died, the connection moved): start
                    // again from the next event, as patiently as any read.
                    broken => {
                        let broke = match broken {
                            Some(Err(error)) => error.to_string(),
                            _ => "the consumer ended".to_owned(),
                        };
                        tracing::debug!(world_id = %world, next, %broke, "following again");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        let again = async {
                            let start = log.start_of(&world, next).await?;
                            log.deliver_from(&world, start).await
                        };
                        match again.await {
                            Ok(fresh) => messages = fresh,
                            Err(error) => {
                                let _ = tx.send(Err(error)).await;
                                return;
                            }
                        }
                    }
                }
            }
        });
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn put_notes(&self, world_id: &str, notes: Vec<u8>) -> Result<(), WorldError> {
        self.kv_put(&self.notes, world_id, notes.into()).await
    }

    async fn notes(&self, world_id: &str) -> Result<Option<Vec<u8>>, WorldError> {
        Ok(self
            .kv_get(&self.notes, world_id)
            .await?
            .map(|b| b.to_vec()))
    }

    async fn delete_world(&self, world_id: &str) -> Result<(), WorldError> {
        self.stream
            .purge()
            .filter(self.subject(world_id))
            .await
            .map_err(|e| nats_err("purge the world's events", e))?;
        self.tails.remove(world_id);
        for store in [&self.worlds, &self.notes] {
            store
                .purge(world_id)
                .await
                .map_err(|e| nats_err("remove the world's keys", e))?;
        }
        Ok(())
    }

    fn describe(&self) -> String {
        format!(
            "JetStream at {} (stream {}, {} replicas)",
            self.options.servers,
            self.stream.cached_info().config.name,
            self.options.replicas
        )
    }
}
