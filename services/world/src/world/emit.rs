//! Emitting an event: number it, decide who perceives it, log it, publish it to
//! watchers, and deliver it to the agents of exactly those who perceived it, each copy
//! rendered with the names its character knows.

use dramatis_proto::v1::{self as pb, Event, Usage};
use std::sync::atomic::Ordering;

use futures::future::try_join_all;
use tracing::Instrument as _;

use super::World;
use crate::error::WorldError;
use dramatis_scenario::Scenario;
use dramatis_story::drafts::{Draft, Stamp};
use dramatis_story::frame::frame_for;
use dramatis_story::names::Perspective;
use dramatis_story::perception::PerceptionRouter;
use dramatis_story::state::WorldState;

/// Most events in one `Perceive` call.
const PERCEIVE_BATCH: usize = 256;

impl World {
    /// Numbers, logs, publishes and delivers one event.
    pub(super) async fn emit(
        &self,
        state: &mut WorldState,
        draft: Draft,
    ) -> Result<Event, WorldError> {
        let mut events = self.emit_all(state, vec![draft]).await?;
        Ok(events.pop().expect("one draft, one event"))
    }

    /// Numbers, logs, publishes and delivers the events of one story step, in order.
    /// They are logged in one append, so a step is in the log whole or not at all: a
    /// service that stops in the middle of a round's opening replays the round from
    /// its start instead of going on from half of it. Each event is built in the state
    /// the ones before it leave (a scene's start before its opening narration).
    pub(super) async fn emit_all(
        &self,
        state: &mut WorldState,
        drafts: Vec<Draft>,
    ) -> Result<Vec<Event>, WorldError> {
        self.catch_up().await?;
        let scenario = self.scenario();
        let first = self.hub.next_seq();
        let narrated = self.narrator.notes().usage.take();
        let mut usage = narrated;
        let mut events: Vec<Event> = Vec::with_capacity(drafts.len());
        // The state after the events built so far: only a step of several events
        // needs one apart from `state`.
        let mut after: Option<WorldState> = None;
        let count = drafts.len();
        for (i, mut draft) in drafts.into_iter().enumerate() {
            let basis = after.as_ref().unwrap_or(state);
            // Movement is seen by those at the destination and, since the actor is
            // still at the origin, by everyone who saw the actor leave (the actor
            // included).
            let (perceivers, origin_perceivers) = PerceptionRouter::of_draft(basis, &draft);
            if let Some(narrated) = usage.take() {
                draft
                    .usage
                    .get_or_insert_with(Usage::default)
                    .add_calls_and_tokens(&narrated);
            }
            let event = draft.into_event(
                &scenario,
                basis,
                Stamp {
                    world_id: &self.id,
                    seq: first + events.len() as u64,
                    perceivers,
                    origin_perceivers,
                    timestamp_ms: dramatis_runtime::now_ms(),
                },
            );
            if i + 1 < count {
                after
                    .get_or_insert_with(|| state.clone())
                    .apply(&scenario, &event);
            }
            events.push(event);
        }
        let timer = crate::metrics::LOG_APPEND.start_timer();
        let appended = self
            .log
            .append(&self.id, first - 1, events.clone())
            .instrument(tracing::info_span!("log_append"))
            .await;
        timer.observe_duration();
        if let Err(error) = appended {
            // Nothing was logged: the narrator's usage waits for the next event.
            self.narrator.notes().usage = narrated;
            if matches!(error, WorldError::Fenced { .. }) {
                // Another owner wrote this world's log: this replica's view is stale.
                self.abandon();
            }
            return Err(error);
        }
        for event in &events {
            state.apply(&scenario, event);
        }
        *dramatis_runtime::lock(&self.snapshot) = state.clone();
        for event in &events {
            self.hub.publish(event.clone());
        }
        if state.finished(&scenario) {
            self.hub.close();
        }
        let mut perceivers: Vec<&str> = events
            .iter()
            .flat_map(|e| e.perceivers.iter().map(String::as_str))
            .collect();
        perceivers.sort_unstable();
        perceivers.dedup();
        let delivered = try_join_all(perceivers.into_iter().map(|c| self.deliver_pending(c)))
            .instrument(tracing::info_span!("deliver"))
            .await;
        if let Err(error) = delivered {
            self.behind.store(true, Ordering::Relaxed);
            return Err(error);
        }
        Ok(events)
    }

    /// After a delivery failed (or a world was rebuilt with a shard that ends early),
    /// sends every character what it has not been sent yet; an error here fails the
    /// caller before it logs anything more.
    pub(crate) async fn catch_up(&self) -> Result<(), WorldError> {
        if !self.behind.load(Ordering::Relaxed) {
            return Ok(());
        }
        let characters = self.agents.characters();
        try_join_all(characters.iter().map(|c| self.deliver_pending(c))).await?;
        self.behind.store(false, Ordering::Relaxed);
        tracing::info!(world_id = %self.id, "every character has its story again");
        Ok(())
    }

    /// Sends `character` every logged event it perceived and has not been sent yet
    /// (again from where its shard ends, when its agent was replaced meanwhile).
    pub(super) async fn deliver_pending(&self, character: &str) -> Result<(), WorldError> {
        let Some(slot) = self.agents.slot(character) else {
            return Ok(());
        };
        let mut delivered = slot.delivered.lock().await;
        loop {
            let rewind = slot.rewind.swap(u64::MAX, Ordering::Relaxed);
            if rewind < *delivered {
                tracing::info!(world_id = %self.id, character, from = rewind + 1,
                    "sending a moved character its story again");
                *delivered = rewind;
            }
            let fresh = self.hub.events_from(*delivered + 1);
            let Some(last) = fresh.last().map(|e| e.seq) else {
                return Ok(());
            };
            let views: Vec<Event> = {
                let scenario = self.scenario();
                let state = dramatis_runtime::lock(&self.snapshot);
                let view = self.perspective(&scenario, &state, character);
                fresh.iter().filter_map(|e| view.event(e)).collect()
            };
            // In batches, so a long history (a restored world's first delivery) never
            // makes one oversized message.
            for batch in views.chunks(PERCEIVE_BATCH) {
                let request = pb::PerceiveRequest {
                    character: Some(self.character_ref(character)),
                    events: batch.to_vec(),
                };
                let rewind = &slot.rewind;
                self.call_agent(character, |mut client| {
                    let request = request.clone();
                    async move {
                        // An agent replaced during this delivery attached the
                        // character with less than this batch follows: send nothing
                        // more now (it would take these and then refuse the earlier
                        // events as old); the loop starts again from its shard's end.
                        if rewind.load(Ordering::Relaxed) != u64::MAX {
                            return Ok(None);
                        }
                        client.perceive(request).await.map(Some)
                    }
                })
                .await?;
            }
            *delivered = last;
            // An agent replaced during these calls may have attached the character
            // with less than was just sent.
            if slot.rewind.load(Ordering::Relaxed) == u64::MAX {
                return Ok(());
            }
        }
    }

    /// `character`'s view of the world's people in `state`.
    pub(super) fn perspective<'a>(
        &'a self,
        scenario: &'a Scenario,
        state: &'a WorldState,
        character: &'a str,
    ) -> Perspective<'a> {
        Perspective {
            scenario,
            world_id: &self.id,
            known: &state.acquaintances,
            attention: &state.attention,
            me: character,
        }
    }

    /// The frame of `actor`'s turn, as `actor` sees it.
    pub(super) fn frame_of(&self, state: &WorldState, actor: &str) -> pb::SceneFrame {
        let scenario = self.scenario();
        self.perspective(&scenario, state, actor)
            .frame(frame_for(&scenario, state, actor))
    }

    pub(super) fn character_ref(&self, character: &str) -> pb::CharacterRef {
        pb::CharacterRef {
            world_id: self.id.clone(),
            character_id: character.to_owned(),
        }
    }
}
