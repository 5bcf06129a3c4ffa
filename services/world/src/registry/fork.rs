//! Forking a world: a new world whose log is the first events of another, up to a
//! sequence number. Its characters start with empty shards and are sent their own
//! copies of those events again, as a world rebuilt after a restart brings a shard that
//! ends early up to date, so nothing after the fork point is in any shard, audit or
//! module state. The two worlds then go on apart.

use std::sync::Arc;

use dramatis_proto::v1 as pb;
use dramatis_scenario::Scenario;

use super::Worlds;
use super::create::checked_id;
use crate::error::WorldError;
use crate::log::{ForkPoint, WorldRecord};
use crate::world::{Until, World};

impl Worlds {
    /// A new world (id `world_id`, or a fresh one) whose log is `parent`'s first
    /// `at_seq` events.
    pub async fn fork(
        &self,
        parent: &World,
        at_seq: u64,
        world_id: Option<String>,
    ) -> Result<Arc<World>, WorldError> {
        let last = parent.hub().next_seq() - 1;
        if at_seq > last {
            return Err(WorldError::InvalidArgument(format!(
                "at_seq {at_seq} is past the last event of world {} ({last})",
                dramatis_runtime::quote(parent.id())
            )));
        }
        let id = checked_id(world_id, &self.inner.limits)?;
        let _creating = self.hold(&id)?;
        if self.inner.log.world(&id).await?.is_some() {
            return Err(WorldError::WorldExists(id));
        }
        let parent_record = self
            .inner
            .log
            .world(parent.id())
            .await?
            .ok_or_else(|| WorldError::WorldNotFound(parent.id().to_owned()))?;
        let count = usize::try_from(at_seq).unwrap_or(usize::MAX);
        let history: Vec<pb::Event> = parent
            .hub()
            .events_from(1)
            .into_iter()
            .take(count)
            .map(|event| pb::Event {
                world_id: id.clone(),
                ..event
            })
            .collect();
        // A newcomer that joined the parent's cast after the fork point is in no part
        // of the fork: not its cast, not its record.
        let (newcomers, later) = parent_record.newcomers_before(at_seq);
        let mut scenario = Scenario::clone(&parent.scenario());
        scenario.characters.retain(|c| !later.contains(&c.id));
        let mut scenario_path = parent_record.scenario_path.clone();
        if let Some(toml) = &parent_record.sandbox_toml {
            // The parent's kept file goes when the parent is deleted: the fork keeps its own.
            scenario.source = self.keep_sandbox_toml(&id, toml)?;
            scenario_path = scenario.source.to_string_lossy().into_owned();
        }
        let record = WorldRecord {
            world_id: id,
            scenario_path,
            created_ms: dramatis_runtime::now_ms(),
            sandbox_toml: parent_record.sandbox_toml,
            forked_from: Some(ForkPoint {
                world_id: parent.id().to_owned(),
                at_seq,
            }),
            newcomers,
        };
        let world = self
            .launch(Arc::new(scenario), history, record, None)
            .await?;
        tracing::info!(world_id = %world.id(), parent = %parent.id(), at_seq, "world forked");
        Ok(world)
    }

    /// `parent`'s last line asked again: a fork (id `world_id`, or a fresh one) just
    /// before it, whose next turn is played at once. The fork, and the events its turn
    /// produced (the new line last).
    pub async fn regenerate(
        &self,
        parent: &World,
        world_id: Option<String>,
    ) -> Result<(Arc<World>, Vec<pb::Event>), WorldError> {
        let line = parent
            .hub()
            .events_from(1)
            .iter()
            .rev()
            .find(|event| event.turn > 0)
            .map(|event| event.seq)
            .ok_or_else(|| {
                WorldError::InvalidArgument(format!(
                    "world {} has no line yet to ask again",
                    dramatis_runtime::quote(parent.id())
                ))
            })?;
        let fork = self.fork(parent, line - 1, world_id).await?;
        fork.ask_next_line_again();
        let events = fork.advance(Until::Turns(1)).await?;
        Ok((fork, events))
    }
}
