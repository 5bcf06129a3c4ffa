//! The durable event log: every world's events in order, the record each world was
//! created from, and the narrator's latest notes. An event is committed here before
//! anyone sees it.
//!
//! Two backends sit behind [`EventLog`]: [`RedbLog`], one embedded file (the default:
//! one machine, no server), and [`JetStreamLog`], a replicated NATS JetStream stream
//! with one subject per world (`serve --log nats://…`), which several world-service
//! replicas can share.
//!
//! Appends name the sequence they expect to follow. A writer whose view is stale (a
//! second owner of the same world) is refused by the log itself with
//! [`WorldError::Fenced`], so a world's history never forks.

mod jetstream;
mod redb;
pub(crate) mod relay;

use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use dramatis_proto::v1::Event;
use futures::Stream;
use serde::{Deserialize, Serialize};

use crate::error::WorldError;
use dramatis_scenario::Scenario;
pub use jetstream::{JetStreamLog, JetStreamOptions};
pub use redb::{RedbLog, Repaired, repair};
use relay::TokenRelay;

/// What a world was created from, so it can be rebuilt after a restart (or by another
/// replica).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorldRecord {
    pub world_id: String,
    pub scenario_path: String,
    pub created_ms: i64,
    /// An inline sandbox spec, as scenario TOML: it lives in no shared file, so it
    /// travels with the record to whichever replica rebuilds the world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_toml: Option<String>,
    /// For a branch: the world it was forked from and the events it began with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkPoint>,
    /// Characters new to the story that the director brought in, in the order they
    /// joined its cast.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub newcomers: Vec<Newcomer>,
}

/// A character new to a story, with the profile the director gave it, that joined the
/// cast after event `after_seq` (its entrance is a later event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Newcomer {
    pub after_seq: u64,
    pub character: dramatis_proto::v1::SandboxCharacter,
}

impl WorldRecord {
    /// `scenario` (what the world was created from) with the newcomers that joined its
    /// cast and are not in it yet.
    pub fn with_newcomers(&self, scenario: Scenario) -> Result<Scenario, WorldError> {
        let mut scenario = scenario;
        for newcomer in &self.newcomers {
            if scenario.character(&newcomer.character.id).is_none() {
                scenario = scenario.admit(&newcomer.character).map_err(|why| {
                    WorldError::Log(format!(
                        "the newcomer {} of world {} no longer fits its story: {why}",
                        dramatis_runtime::quote(&newcomer.character.id),
                        dramatis_runtime::quote(&self.world_id)
                    ))
                })?;
            }
        }
        Ok(scenario)
    }

    /// The newcomers of this record that joined before event `at_seq` was logged
    /// (kept by a fork after `at_seq`), and the ids of those that joined later.
    #[must_use]
    pub fn newcomers_before(&self, at_seq: u64) -> (Vec<Newcomer>, Vec<String>) {
        let (kept, later): (Vec<&Newcomer>, Vec<&Newcomer>) =
            self.newcomers.iter().partition(|n| n.after_seq < at_seq);
        (
            kept.into_iter().cloned().collect(),
            later.into_iter().map(|n| n.character.id.clone()).collect(),
        )
    }
}

/// Where a branch left the world it was forked from: after `at_seq` of its events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkPoint {
    pub world_id: String,
    pub at_seq: u64,
}

impl ForkPoint {
    /// Shows it in `info`.
    pub fn show(&self, info: &mut dramatis_proto::v1::WorldInfo) {
        info.forked_from.clone_from(&self.world_id);
        info.fork_seq = self.at_seq;
    }
}

/// A world's events as they are logged, from a starting sequence, without end.
pub type EventFeed = Pin<Box<dyn Stream<Item = Result<Event, WorldError>> + Send>>;

/// A world service's event log. Every method is safe to call from many tasks; one
/// world has one writer at a time, and the log refuses a second.
#[async_trait]
pub trait EventLog: Send + Sync + std::fmt::Debug + 'static {
    /// Records a new world (replacing a record of the same id).
    async fn put_world(&self, record: WorldRecord) -> Result<(), WorldError>;

    /// The record of one world, if there is one.
    async fn world(&self, world_id: &str) -> Result<Option<WorldRecord>, WorldError>;

    /// Every recorded world.
    async fn worlds(&self) -> Result<Vec<WorldRecord>, WorldError>;

    /// Appends `events` (consecutive sequence numbers, `after + 1` on) to a world whose
    /// last logged event is `after` (0: none). Durable when it returns. Refused with
    /// [`WorldError::Fenced`] when the log's last event of the world is not `after`.
    async fn append(
        &self,
        world_id: &str,
        after: u64,
        events: Vec<Event>,
    ) -> Result<(), WorldError>;

    /// The world's events from `from_seq` on, in order, up to the last one logged.
    async fn read(&self, world_id: &str, from_seq: u64) -> Result<Vec<Event>, WorldError>;

    /// The world's events from `from_seq` on, in order, then each new one as it is
    /// logged (by this process or, for a shared log, any other).
    async fn follow(&self, world_id: &str, from_seq: u64) -> Result<EventFeed, WorldError>;

    /// Keeps the narrator's notes of a world (replacing the previous ones).
    async fn put_notes(&self, world_id: &str, notes: Vec<u8>) -> Result<(), WorldError>;

    /// The narrator's notes of a world, if any were kept.
    async fn notes(&self, world_id: &str) -> Result<Option<Vec<u8>>, WorldError>;

    /// Removes a world, its events and its notes.
    async fn delete_world(&self, world_id: &str) -> Result<(), WorldError>;

    /// Where a repair cut this world's events short (`dramatis repair`): the last
    /// sequence it kept. Such a world is shown FAILED, never replayed as if whole.
    async fn cut_short(&self, _world_id: &str) -> Result<Option<u64>, WorldError> {
        Ok(None)
    }

    /// The token relay that travels beside this log to the other replicas sharing it;
    /// `None` for a log no other process shares.
    fn relay(&self) -> Option<Arc<dyn TokenRelay>> {
        None
    }

    /// Where the log is, for the service's start-up line.
    fn describe(&self) -> String;
}

/// A log shared by the worlds of a service.
pub type SharedLog = Arc<dyn EventLog>;

/// The one follow loop of both backends: a world's events from `from_seq` on, in
/// order and each once, out of `source` (which may repeat events or start earlier).
/// It ends after the first error, which it hands on, and when its consumer drops it;
/// it runs in the consumer's task.
pub(crate) fn in_order(
    from_seq: u64,
    source: impl Stream<Item = Result<Event, WorldError>> + Send + 'static,
) -> EventFeed {
    use futures::StreamExt as _;
    let items = source
        .scan((from_seq.max(1), false), |(next, failed), item| {
            let out = match item {
                _ if *failed => None,
                Ok(event) if event.seq < *next => Some(None),
                Ok(event) => {
                    *next = event.seq + 1;
                    Some(Some(Ok(event)))
                }
                Err(error) => {
                    *failed = true;
                    Some(Some(Err(error)))
                }
            };
            std::future::ready(out)
        })
        .filter_map(std::future::ready);
    Box::pin(items)
}

/// Checks that `events` continue a world whose last event is `after` with consecutive
/// numbers; both backends refuse anything else before touching their store.
pub(crate) fn check_run(world_id: &str, after: u64, events: &[Event]) -> Result<(), WorldError> {
    for (offset, event) in (1..).zip(events) {
        if event.world_id != world_id || event.seq != after + offset {
            return Err(WorldError::Log(format!(
                "append to world {world_id:?} after {after} got event {} of world {:?}",
                event.seq, event.world_id
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use futures::StreamExt as _;

    use super::*;

    fn event(seq: u64) -> Event {
        Event {
            seq,
            ..Event::default()
        }
    }

    /// The follow loop hands on each event once, in order, from where it was asked,
    /// and nothing after an error.
    #[tokio::test]
    async fn a_feed_starts_where_asked_skips_repeats_and_ends_after_an_error() {
        let source = futures::stream::iter(vec![
            Ok(event(1)),
            Ok(event(2)),
            Ok(event(3)),
            Ok(event(3)),
            Ok(event(2)),
            Ok(event(4)),
            Err(WorldError::Log("torn".into())),
            Ok(event(5)),
        ]);
        let got: Vec<Result<u64, String>> = in_order(2, source)
            .map(|item| item.map(|e| e.seq).map_err(|e| e.to_string()))
            .collect()
            .await;
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[..3], [Ok(2), Ok(3), Ok(4)]);
        assert!(
            matches!(&got[3], Err(why) if why.contains("torn")),
            "{got:?}"
        );
    }
}
