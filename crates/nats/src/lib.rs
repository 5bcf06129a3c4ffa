//! What the world service's event log and the agents' shard store share of NATS
//! JetStream: connecting to a cluster, waiting out a node's death or a leader's
//! election, publishing after an expected last message (so a stale writer is refused
//! by the stream itself), reading a subject, and key-value buckets that Debian's
//! server (2.9) accepts.

use std::time::Duration;

mod feed;
pub use feed::{QUIET, SubjectFeed};

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::consumer::pull::{Ordered, OrderedConfig};
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::publish::PublishAck;
use async_nats::jetstream::stream::{self, LastRawMessageErrorKind, Stream};
use async_nats::jetstream::{self, kv};
use bytes::Bytes;

/// How to reach a cluster and what to call things in it.
#[derive(Debug, Clone)]
pub struct NatsOptions {
    /// Server addresses (`nats://host:port`, comma-separated for several).
    pub servers: String,
    /// Prefix of streams, subjects and buckets, so deployments can share a cluster.
    pub prefix: String,
    /// Copies of each message and key (3 in a three-node cluster).
    pub replicas: usize,
    /// How long a publish or request waits for the cluster, sending a publish whose
    /// acknowledgement does not come again (a node died, a leader is being elected).
    pub timeout: Duration,
}

impl NatsOptions {
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

#[derive(Debug, Clone, thiserror::Error)]
pub enum NatsError {
    /// The settings cannot work (a bad prefix or address).
    #[error("{0}")]
    Invalid(String),
    /// The stream refused a publish: its last message on the subject is not the one
    /// the writer expected, so another writer has written since.
    #[error("{0}")]
    Fenced(String),
    #[error("JetStream {what}: {detail}")]
    Failed { what: String, detail: String },
}

/// A failure of `what`.
pub fn failed(what: &str, error: impl std::fmt::Display) -> NatsError {
    NatsError::Failed {
        what: what.to_owned(),
        detail: error.to_string(),
    }
}

/// How long one publish waits for its acknowledgement before it is sent again.
pub const ACK_WAIT: Duration = Duration::from_secs(2);

/// Connects as `name` (seen in the server's connection list) and returns the
/// JetStream context, after checking the prefix can name streams and subjects.
pub async fn connect(options: &NatsOptions, name: &str) -> Result<jetstream::Context, NatsError> {
    let client = client(options, name).await?;
    // One attempt's wait (the client waits this long for a publish's acknowledgement
    // too): a lost acknowledgement is resent well within `timeout` (see
    // `publish_after`).
    Ok(jetstream::ContextBuilder::new()
        .timeout(options.timeout.min(ACK_WAIT))
        .build(client))
}

/// A plain connection as `name`, after checking the prefix can name streams and
/// subjects.
pub async fn client(options: &NatsOptions, name: &str) -> Result<async_nats::Client, NatsError> {
    let prefix = &options.prefix;
    if prefix.is_empty()
        || !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(NatsError::Invalid(format!(
            "prefix {:?} may hold only letters, digits, '-' and '_'",
            prefix.chars().take(40).collect::<String>()
        )));
    }
    let servers: Vec<async_nats::ServerAddr> = options
        .servers
        .split(',')
        .map(|s| {
            s.trim().parse().map_err(|e| {
                NatsError::Invalid(format!(
                    "NATS server address {:?}: {e}",
                    s.trim().chars().take(80).collect::<String>()
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    async_nats::ConnectOptions::new()
        .name(name)
        .request_timeout(Some(options.timeout))
        .retry_on_initial_connect()
        .connection_timeout(options.timeout)
        .connect(servers)
        .await
        .map_err(|e| failed(&format!("connect to {}", redacted(&options.servers)), e))
}

/// Server addresses as they may be shown (in logs and errors): without credentials
/// (`nats://user:password@host` becomes `nats://…@host`).
#[must_use]
pub fn redacted(servers: &str) -> String {
    servers
        .split(',')
        .map(|server| {
            let server = server.trim();
            match server.split_once("://") {
                Some((scheme, rest)) => match rest.rsplit_once('@') {
                    Some((_, host)) => format!("{scheme}://…@{host}"),
                    None => server.to_owned(),
                },
                None => server
                    .rsplit_once('@')
                    .map_or_else(|| server.to_owned(), |(_, host)| format!("…@{host}")),
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The stream of `config`, created when missing.
pub async fn stream(
    context: &jetstream::Context,
    config: stream::Config,
) -> Result<Stream, NatsError> {
    let name = config.name.clone();
    context
        .get_or_create_stream(config)
        .await
        .map_err(|e| failed(&format!("stream {name}"), e))
}

/// The stream `<PREFIX>_<NAME>` of subjects `<prefix>.<root>.>` (one subject per
/// world or character), with `options.replicas` copies, direct gets from any replica
/// and a two-minute window in which a resent message id is a duplicate; created when
/// missing.
pub async fn keyed_stream(
    context: &jetstream::Context,
    options: &NatsOptions,
    name: &str,
    root: &str,
    description: &str,
) -> Result<Stream, NatsError> {
    let prefix = &options.prefix;
    stream(
        context,
        stream::Config {
            name: format!("{}_{name}", prefix.to_ascii_uppercase()),
            description: Some(description.to_owned()),
            subjects: vec![format!("{prefix}.{root}.>")],
            num_replicas: options.replicas,
            allow_direct: true,
            duplicate_window: Duration::from_secs(120),
            ..stream::Config::default()
        },
    )
    .await
}

/// A key-value bucket keeping one value per key, created when missing.
///
/// The bucket's stream is made here, with the settings a bucket has, rather than by
/// the client's `create_key_value`: that first asks for the account's limits in a
/// form Debian's server (2.9) does not send, and fails.
pub async fn bucket(
    context: &jetstream::Context,
    name: &str,
    replicas: usize,
) -> Result<kv::Store, NatsError> {
    bucket_with(context, name, replicas, true).await
}

/// A bucket whose reads all go to its stream's leader (`direct: false`), for values
/// written by compare-and-set: a read from a replica that is behind would give an old
/// revision, and the write after it would be refused for nothing.
pub async fn bucket_with(
    context: &jetstream::Context,
    name: &str,
    replicas: usize,
    direct: bool,
) -> Result<kv::Store, NatsError> {
    stream(
        context,
        stream::Config {
            name: format!("KV_{name}"),
            subjects: vec![format!("$KV.{name}.>")],
            max_messages_per_subject: 1,
            discard: stream::DiscardPolicy::New,
            allow_rollup: true,
            deny_delete: true,
            allow_direct: direct,
            num_replicas: replicas,
            ..stream::Config::default()
        },
    )
    .await?;
    context
        .get_key_value(name)
        .await
        .map_err(|e| failed(&format!("bucket {name}"), e))
}

/// A name as one subject token: kept when it is letters, digits, `-` and `_` only,
/// else `=` and its bytes in hex (which no kept name starts with), so any world or
/// character id makes a valid token and two ids never share one.
#[must_use]
pub fn subject_token(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return name.to_owned();
    }
    let mut out = String::with_capacity(1 + 2 * name.len());
    out.push('=');
    for byte in name.bytes() {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Pauses between attempts, doubling up to a second, until a deadline.
pub struct Backoff {
    deadline: tokio::time::Instant,
    pause: Duration,
}

impl Backoff {
    #[must_use]
    pub fn new(within: Duration) -> Self {
        Self {
            deadline: tokio::time::Instant::now() + within,
            pause: Duration::from_millis(50),
        }
    }

    /// Sleeps before the next attempt after `error`; `false` when none is left.
    pub async fn wait(&mut self, error: &(dyn std::fmt::Display + Sync)) -> bool {
        if tokio::time::Instant::now() + self.pause > self.deadline {
            return false;
        }
        tracing::debug!(%error, "JetStream busy; trying again");
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(Duration::from_secs(1));
        true
    }
}

/// Runs `op` again while it fails (a node died, a leader is being elected), for at
/// most `within`; then its last error.
pub async fn patiently<T, E, F, Fut>(within: Duration, op: F) -> Result<T, E>
where
    E: std::fmt::Display + Sync,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let mut backoff = Backoff::new(within);
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

/// Publishes `payload` on `subject` of `stream` if the subject's last message is at
/// stream sequence `expected` (0: the subject has none), under message id `id`. Sent
/// again while the cluster does not answer, for at most `within`: the id makes a
/// resend that finds the first copy stored a duplicate (`ack.duplicate`), not a
/// second message. A resend the stream refuses because the subject now ends after
/// `expected` is checked against that last message: when it carries this id, it is
/// the first copy, stored though its acknowledgement was lost. [`NatsError::Fenced`]
/// when another writer got there first.
pub async fn publish_after(
    context: &jetstream::Context,
    stream: &Stream,
    subject: &str,
    payload: &Bytes,
    id: &str,
    expected: u64,
    within: Duration,
) -> Result<PublishAck, NatsError> {
    let mut backoff = Backoff::new(within);
    let mut resent = false;
    loop {
        let message = PublishMessage::build()
            .payload(payload.clone())
            .message_id(id)
            .expected_last_subject_sequence(expected);
        let attempt = match context.send_publish(subject.to_owned(), message).await {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        let error = match attempt {
            Ok(ack) => return Ok(ack),
            Err(e) if matches!(e.kind(), PublishErrorKind::WrongLastSequence) => {
                if resent && let Some(ack) = stored_as(stream, subject, id, within).await? {
                    return Ok(ack);
                }
                return Err(NatsError::Fenced(format!(
                    "another writer published on {subject} after stream sequence {expected}"
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
            return Err(failed(&format!("publish on {subject}"), error));
        }
        resent = true;
    }
}

/// The acknowledgement of the message with id `id` when it is `subject`'s last (asked
/// of the leader); `None` when the last message is another's.
async fn stored_as(
    stream: &Stream,
    subject: &str,
    id: &str,
    within: Duration,
) -> Result<Option<PublishAck>, NatsError> {
    let last = patiently(within, || async {
        match stream.get_last_raw_message_by_subject(subject).await {
            Ok(message) => Ok(Some(message)),
            Err(e) if matches!(e.kind(), LastRawMessageErrorKind::NoMessageFound) => Ok(None),
            Err(e) => Err(failed(&format!("read the last message of {subject}"), e)),
        }
    })
    .await?;
    Ok(last
        .filter(|message| {
            message
                .headers
                .get(async_nats::header::NATS_MESSAGE_ID)
                .is_some_and(|v| v.as_str() == id)
        })
        .map(|message| PublishAck {
            stream: stream.cached_info().config.name.clone(),
            sequence: message.sequence,
            domain: String::new(),
            duplicate: true,
            value: None,
        }))
}

/// The last message of `subject` as (stream sequence, payload), asked of the
/// stream's leader (a direct get may come from a replica that is behind, and a writer
/// needs the true end); `None` when the subject has none.
pub async fn last_message(
    stream: &Stream,
    subject: &str,
    within: Duration,
) -> Result<Option<(u64, Bytes)>, NatsError> {
    patiently(within, || async {
        match stream.get_last_raw_message_by_subject(subject).await {
            Ok(message) => Ok(Some((message.sequence, message.payload))),
            Err(e) if matches!(e.kind(), LastRawMessageErrorKind::NoMessageFound) => Ok(None),
            Err(e) => Err(failed(&format!("read the last message of {subject}"), e)),
        }
    })
    .await
}

/// Ordered delivery of `subject`'s messages from stream sequence `start`: the client's
/// consumer, as it is, made patiently (for at most `within`). Read through a
/// [`SubjectFeed`], which makes another when this one stops delivering.
async fn ordered_from(
    stream: &Stream,
    subject: &str,
    start: u64,
    within: Duration,
) -> Result<Ordered, NatsError> {
    patiently(within, || ordered_once(stream, subject, start)).await
}

/// One attempt at [`ordered_from`].
async fn ordered_once(stream: &Stream, subject: &str, start: u64) -> Result<Ordered, NatsError> {
    stream
        .create_consumer(OrderedConfig {
            filter_subject: subject.to_owned(),
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: start.max(1),
            },
            ..OrderedConfig::default()
        })
        .await
        .map_err(|e| failed("consumer", e))?
        .messages()
        .await
        .map_err(|e| failed("consumer messages", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_kept_and_others_become_hex_tokens_that_cannot_collide() {
        assert_eq!(subject_token("holmes"), "holmes");
        assert_eq!(subject_token("world-7_b"), "world-7_b");
        assert_eq!(subject_token("a.b"), "=612e62");
        assert_eq!(subject_token("*"), "=2a");
        assert_eq!(subject_token(""), "=");
        // A kept name never starts with '=', so it never equals an encoded one.
        assert_ne!(subject_token("=612e62"), subject_token("a.b"));
        for token in ["x y", "é", ">", "a.b.c"].map(subject_token) {
            assert!(!token.contains(['.', '*', '>', ' ']), "{token}");
        }
    }

    #[test]
    fn credentials_never_show() {
        assert_eq!(
            redacted("nats://alice:s3cret@a:4222, nats://b:4222,bob:pw@c:4222"),
            "nats://…@a:4222,nats://b:4222,…@c:4222"
        );
    }

    #[test]
    fn a_bad_prefix_is_refused_before_connecting() {
        let mut options = NatsOptions::new("nats://127.0.0.1:1");
        options.prefix = "a.b".into();
        let refused = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(connect(&options, "test"));
        assert!(
            matches!(&refused, Err(NatsError::Invalid(m)) if m.contains("prefix")),
            "{refused:?}"
        );
    }
}
