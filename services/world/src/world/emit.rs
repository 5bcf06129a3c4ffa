//! Emitting an event: number it, decide who perceives it, log it, apply it to the
//! state, publish it to watchers, and deliver it (`delivery.rs`) to the agents of
//! exactly those who perceived it, each copy rendered with the names its character
//! knows. That order is the rule: nobody sees an event the log could lose, and no
//! agent perceives one its watchers cannot read.

use dramatis_proto::v1::{self as pb, Event, Usage};

use tracing::Instrument as _;

use super::World;
use crate::error::WorldError;
use dramatis_scenario::Scenario;
use dramatis_story::drafts::{Draft, Stamp};
use dramatis_story::frame::frame_for;
use dramatis_story::names::Perspective;
use dramatis_story::perception::PerceptionRouter;
use dramatis_story::state::WorldState;

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
        self.deliver_to(&perceivers)
            .instrument(tracing::info_span!("deliver"))
            .await?;
        Ok(events)
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
