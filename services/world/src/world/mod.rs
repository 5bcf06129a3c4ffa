//! One running world: its scenario, state, transcript hub and the agents of its
//! characters. `advance` runs the story one step at a time, each step handled by one
//! method; every event is logged, then applied, then published, then delivered to
//! exactly the characters who perceived it (`emit.rs`, `delivery.rs`). Its agents are
//! reached through [`AgentPort`](crate::agent_clients::AgentPort) only, so `tests.rs`
//! runs all of it with no agent process.
//!
//! # Lock order
//!
//! A task takes a world's locks in this order and never the other way; a lock lower in
//! the list is never held while one higher up is taken.
//!
//! 1. `runs` (tokio): one `advance` at a time, for the whole run. Held across model
//!    calls and across a person's thinking: it holds back only other advances.
//! 2. `state` (tokio): one story step at a time (a turn, an opening, a director's
//!    event). Held across the step's agent calls (its turn, its deliveries), taken anew
//!    for each step so a director's event lands between two, and **not held while a
//!    person thinks** (`seats.rs`): the turn is offered under it, waited for without it,
//!    and taken under it again if it is still that character's turn.
//! 3. a slot's delivery cursor (tokio, `delivery.rs`): one delivery to a character at a
//!    time. Held across its `Perceive` calls.
//! 4. the lifecycle's gate (tokio `RwLock`, `lifecycle.rs`): read-held by each call to
//!    an agent, write-held by a sleep and by a deletion.
//! 5. `agents.reviving` (tokio): one recovery, wake or sleep of the agents at a time.
//! 6. Leaves, `std` locks held for a copy or a swap and never across an `.await`: the
//!    state's `snapshot`, a slot's link, `agents.slots`, the phase, the seats, the
//!    narrator's notes and the shared scenario's cell.
//!
//! Supervision reads the lifecycle's phase, never a lock probe: a sleep starts only
//! from `Ready` with the gate free (no advance runs, no call is in flight).

mod agents;
mod delivery;
mod direct;
mod emit;
mod export;
mod lifecycle;
mod narration;
mod replay;
mod run;
mod seats;
#[cfg(test)]
mod tests;
mod turn;
mod watch;

use std::collections::BTreeMap;
use std::sync::Arc;

use dramatis_llm::LanguageModel;
use dramatis_proto::v1::{self as pb, Event, WorldStatus};

use crate::agent_clients::AgentLinks;
use crate::convert::{attach_request, world_info};
use crate::error::WorldError;
use crate::hub::TranscriptHub;
use crate::limits::Limits;
use crate::log::{ForkPoint, SharedLog};
use agents::Slot;
pub use direct::Intervention;
use dramatis_scenario::Scenario;
use dramatis_story::state::WorldState;
use dramatis_story::view::SharedScenario;
use lifecycle::Phase;
use narration::NarratorNotes;
pub(crate) use replay::Replay;
pub use seats::{OpenSeat, PlayInput};

/// How far one `advance` call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    Turns(u32),
    SceneEnd,
    ScriptEnd,
}

/// A world.
pub struct World {
    id: String,
    /// The story's scenario, shared with the views of its watchers: replaced only under
    /// the state's lock, when the director brings a character new to the story in
    /// (`direct.rs`).
    scenario: SharedScenario,
    log: SharedLog,
    hub: TranscriptHub,
    /// Held for the length of an `advance`: one run at a time.
    runs: tokio::sync::Mutex<()>,
    /// Held for one story step (a turn, an opening, a director's event): one step at a
    /// time, and never while a person thinks.
    state: tokio::sync::Mutex<WorldState>,
    /// The latest state, readable while an advance runs.
    snapshot: Arc<std::sync::Mutex<WorldState>>,
    /// The characters' agents, and the links to them that supervision replaces.
    agents: agents::Supervisor,
    limits: Arc<Limits>,
    /// Ready, running, asleep, given up or deleted, and the gate of calls to agents.
    life: lifecycle::Lifecycle,
    /// A logged event did not reach all its perceivers (an agent failed, a disk was
    /// full): they are sent it before anything more is logged, so the story never runs
    /// on without them (`delivery.rs`).
    backlog: delivery::Backlog,
    /// The narrator of open stories and its notes.
    narrator: narration::Narrator,
    /// Characters a person plays: where to ask for their actions.
    seats: seats::Seats,
    /// A logged run whose lines play the turns instead of the agents.
    replay: Option<Replay>,
    /// For a branch: the world it was forked from, and where.
    forked_from: Option<ForkPoint>,
    /// The sampling seed of the next turn's line (0: none): set when a line is asked
    /// again (`regenerate`), taken by that turn.
    retake_seed: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// What every world of a service shares: the log, the way to its agents, the
/// narrator and the limits.
pub(crate) struct Shared {
    pub log: SharedLog,
    pub links: AgentLinks,
    pub narrator: Option<Arc<dyn LanguageModel>>,
    pub limits: Arc<Limits>,
}

impl World {
    /// Builds a world over `history` (its logged events, possibly none) and attaches
    /// every character to its agent. Agents receive each character's profile and only
    /// the facts that character knows.
    pub(crate) async fn start(
        id: String,
        scenario: Arc<Scenario>,
        endpoints: BTreeMap<String, String>,
        history: Vec<Event>,
        shared: Shared,
    ) -> Result<Self, WorldError> {
        let Shared {
            log,
            links,
            narrator,
            limits,
        } = shared;
        let scenario = limits.attention_for(scenario);
        let mut state = WorldState::initial(&scenario);
        for event in &history {
            state.apply(&scenario, event);
        }
        let notes = match log.notes(&id).await? {
            Some(bytes) => serde_json::from_slice::<NarratorNotes>(&bytes)
                .map_err(|e| WorldError::Log(format!("narrator notes of {id}: {e}")))?
                .after(&history),
            None => NarratorNotes::default(),
        };
        let mut slots = BTreeMap::new();
        for (character_id, endpoint) in endpoints {
            let client = links.pool.port(&endpoint, &character_id)?;
            let link = agents::Link {
                endpoint,
                client,
                generation: 0,
            };
            slots.insert(character_id, Arc::new(Slot::new(link, 0)));
        }
        let held = attach_all(&id, &scenario, &slots).await?;
        // A shard that ends before the last event its character perceived (one rebuilt
        // after its store was found corrupt, or one a crash left a line behind) is sent
        // the rest before the world logs anything more: see `catch_up`.
        let short = held.iter().any(|(character, last_seq)| {
            history
                .iter()
                .rev()
                .find(|e| e.perceivers.iter().any(|p| p == character))
                .is_some_and(|e| e.seq > *last_seq)
        });
        let relay = log.relay().map(|relay| (id.clone(), relay));
        let hub = TranscriptHub::with_stall(history, limits.watcher_stall, relay);
        if state.finished(&scenario) {
            hub.close();
        }
        let seats = seats::Seats::new(limits.max_seats);
        Ok(Self {
            id,
            scenario: SharedScenario::from(scenario),
            log,
            hub,
            snapshot: Arc::new(std::sync::Mutex::new(state.clone())),
            runs: tokio::sync::Mutex::new(()),
            state: tokio::sync::Mutex::new(state),
            agents: agents::Supervisor {
                slots: std::sync::RwLock::new(slots),
                links,
                reviving: tokio::sync::Mutex::new(()),
            },
            limits,
            life: lifecycle::Lifecycle::new(),
            backlog: delivery::Backlog::new(short),
            narrator: narration::Narrator::new(narrator, notes),
            seats,
            replay: None,
            forked_from: None,
            retake_seed: std::sync::atomic::AtomicU32::new(0),
        })
    }

    /// Asks this world's next line again, drawn with a seed of its own: a function of
    /// the world's id, so each branch that asks it again draws it differently, and the
    /// same branch the same way.
    pub(crate) fn ask_next_line_again(&self) {
        let seed = self
            .id
            .bytes()
            .fold(0x811c_9dc5_u32, |hash, byte| {
                (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
            })
            .max(1);
        self.retake_seed
            .store(seed, std::sync::atomic::Ordering::Release);
    }

    /// The same world, its turns played from `replay` (see [`Replay`]).
    #[must_use]
    pub(crate) fn replaying(self, replay: Option<Replay>) -> Self {
        Self { replay, ..self }
    }

    /// The same world, a branch of the world `point` names.
    #[must_use]
    pub(crate) fn forked_from(self, point: Option<ForkPoint>) -> Self {
        Self {
            forked_from: point,
            ..self
        }
    }

    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The scenario as it is now (a newcomer brought in joins its cast).
    #[must_use]
    pub fn scenario(&self) -> Arc<Scenario> {
        self.scenario.now()
    }

    #[must_use]
    pub fn hub(&self) -> &TranscriptHub {
        &self.hub
    }

    /// The world as clients see it.
    #[must_use]
    pub fn info(&self) -> pb::WorldInfo {
        let state = dramatis_runtime::lock(&self.snapshot).clone();
        let scenario = self.scenario();
        let status = if state.finished(&scenario) {
            WorldStatus::Finished
        } else if self.life.phase() == Phase::Running {
            WorldStatus::Running
        } else {
            WorldStatus::Ready
        };
        let mut info = world_info(&self.id, &scenario, &state, status, self.hub.next_seq());
        if let Some(point) = &self.forked_from {
            point.show(&mut info);
        }
        info
    }

    /// Gives the world up to the replica that owns it now: no more story steps from
    /// here, and this replica's watchers and seats end (watchers go on elsewhere from
    /// where they were). The characters stay attached: their new owner attaches them
    /// again and their shards are theirs, not this replica's.
    pub(crate) fn abandon(&self) {
        if self.life.abandon() {
            tracing::warn!(world_id = %self.id, "world given up to another replica");
            self.hub.close();
            self.seats.close();
        } else if self.life.is_deleted() {
            // Its deletion may have lost the race for its entry to the lease's loss,
            // and then never shuts it: its watchers and seats end here.
            self.hub.close();
            self.seats.close();
        }
    }

    /// Whether the world was given up to another replica.
    #[must_use]
    pub fn is_abandoned(&self) -> bool {
        self.life.is_abandoned()
    }

    /// Stops the world for its deletion: nothing runs in it from here on. No sleep starts,
    /// and one under way (its characters leaving their agents, each saving first) ends
    /// before this returns: caught in between, they would be neither attached, to have
    /// their shards deleted, nor asleep, to be woken for it. Calls under way end too;
    /// the next sees the world deleted, so nothing more is logged for it.
    pub(crate) async fn stop(&self) {
        self.life.stop().await;
    }

    /// Stops the world and detaches its characters (best effort).
    pub(crate) async fn shut(&self) {
        self.stop().await;
        // A sleeping world's shards are deleted by its agents, so wake it first.
        if self.is_asleep()
            && let Err(error) = self.wake().await
        {
            tracing::warn!(world_id = %self.id, %error, "cannot wake the world to delete its shards");
        }
        // Seats end with the world (their turn channels close).
        self.seats.close();
        self.detach_all(false).await;
    }
}
/// Attaches every character of `slots` to its agent at once: each character's id and
/// the last event its shard holds. If any refuses, those that did attach are let go
/// (so their stores are free for the next try, which may place them on other agents)
/// and the first refusal is returned.
async fn attach_all(
    id: &str,
    scenario: &Scenario,
    slots: &BTreeMap<String, Arc<Slot>>,
) -> Result<Vec<(String, u64)>, WorldError> {
    let attaches = slots.keys().map(|character| {
        let request = attach_request(id, scenario, character);
        let port = slots[character].port();
        async move {
            port.attach(request)
                .await
                .map(|attached| (character, attached.last_seq))
                .map_err(|s| WorldError::agent(character, &s))
        }
    });
    let mut held = Vec::new();
    let mut refused = None;
    for attached in futures::future::join_all(attaches).await {
        match attached {
            Ok(h) => held.push(h),
            Err(error) => {
                refused.get_or_insert(error);
            }
        }
    }
    if let Some(error) = refused {
        // Let go of those that did attach, so their stores are free for the next
        // try (which may place them on other agents).
        for (character, _) in held {
            let request = pb::DetachRequest {
                character: Some(pb::CharacterRef {
                    world_id: id.to_owned(),
                    character_id: character.clone(),
                }),
                keep_shard: true,
            };
            if let Err(status) = slots[character].port().detach(request).await {
                tracing::debug!(%status, character, "detach after a failed start failed");
            }
        }
        return Err(error);
    }
    Ok(held
        .into_iter()
        .map(|(character, seq)| (character.clone(), seq))
        .collect())
}
