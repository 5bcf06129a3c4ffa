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
mod lifecycle;
mod narration;
mod replay;
mod seats;
#[cfg(test)]
mod tests;
mod turn;
mod watch;

use std::collections::BTreeMap;
use std::sync::Arc;

use dramatis_llm::LanguageModel;
use dramatis_proto::v1::{self as pb, Event, WorldStatus};
use tracing::{Instrument, info_span};

use crate::agent_clients::AgentLinks;
use crate::convert::{attach_request, world_info};
use crate::error::WorldError;
use crate::hub::TranscriptHub;
use crate::limits::Limits;
use crate::log::{ForkPoint, SharedLog};
use agents::Slot;
pub use direct::Intervention;
use dramatis_scenario::Scenario;
use dramatis_story::drafts::{self, Draft};
use dramatis_story::narration_guard;
use dramatis_story::scheduler::{Step, next_step};
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

/// Where one `advance` call is: what it has produced and how many turns it ran.
struct Run {
    until: Until,
    produced: Vec<Event>,
    turns: u32,
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

    /// Runs the story until `until`; returns the events it produced.
    pub async fn advance(&self, until: Until) -> Result<Vec<Event>, WorldError> {
        let _one_run = self.runs.lock().await;
        self.life.begin_run();
        let mut run = Run {
            until,
            produced: Vec::new(),
            turns: 0,
        };
        let first = self.hub.next_seq();
        let result = self.run_steps(&mut run).await;
        self.life.end_run();
        // An event is logged before it is delivered, so a failed delivery leaves it
        // logged though the run never returned it: name every event this run logged.
        let last = self.hub.next_seq() - 1;
        match result {
            Ok(()) => Ok(run.produced),
            Err(error) if last >= first => Err(WorldError::Interrupted {
                first,
                last,
                source: Box::new(error),
            }),
            Err(error) => Err(error),
        }
    }

    /// The step the story takes next from `state`.
    fn next_step(&self, state: &WorldState) -> Step {
        let verdict = self.narrator.notes().verdict(state.scene);
        next_step(state, &self.scenario(), verdict)
    }

    /// Runs steps until the run is done, taking the step lock anew for each, so a
    /// director's event waiting for it lands between two steps. A person's turn is
    /// offered and waited for without it.
    async fn run_steps(&self, run: &mut Run) -> Result<(), WorldError> {
        if run.until == Until::Turns(0) {
            return Ok(());
        }
        loop {
            let mut state = self.state.lock().await;
            self.life.check_live(&self.id)?;
            let step = self.next_step(&state);
            let offer = match &step {
                Step::Turn { actor } if self.replay.is_none() => {
                    self.deliver_pending(actor).await?;
                    self.offer_for(&state, actor)
                }
                _ => None,
            };
            let done = match (step, offer) {
                (Step::Turn { actor }, Some(offer)) => {
                    drop(state);
                    let played = offer.wait(self).await;
                    let mut state = self.state.lock().await;
                    self.life.check_live(&self.id)?;
                    // A director's event may have landed while the person thought: the
                    // action is taken if it is still their character's turn.
                    match self.next_step(&state) {
                        Step::Turn { actor: now } if now == actor => {
                            self.on_turn(&mut state, &actor, played, run).await?
                        }
                        _ => {
                            tracing::info!(world_id = %self.id, character = %actor,
                                "the story moved on while the player thought; the turn is taken again");
                            false
                        }
                    }
                }
                (step, _) => self.take_step(&mut state, step, run).await?,
            };
            if done {
                return Ok(());
            }
        }
    }

    /// Takes one step under the step lock; true when it ends the run.
    async fn take_step(
        &self,
        state: &mut WorldState,
        step: Step,
        run: &mut Run,
    ) -> Result<bool, WorldError> {
        let scenario = self.scenario();
        Ok(match step {
            Step::Finished => true,
            Step::OpenScene => {
                let opening = drafts::scene_opening(&scenario, state);
                self.emit_step(state, opening, run).await?;
                false
            }
            Step::OpenAt { location } => {
                let proposal = self.narrator.notes().proposal.take().filter(|(at, text)| {
                    match narration_guard::check(&scenario, state, at, text) {
                        Ok(()) => true,
                        Err(why) => {
                            tracing::warn!(world_id = %self.id, location = %at, %why,
                                "the narrator's proposal is refused by the boundary guard");
                            false
                        }
                    }
                });
                let opening = drafts::round_opening(&scenario, state, &location, proposal);
                self.emit_step(state, opening, run).await?;
                false
            }
            Step::Arrive { who, location } => {
                let arrival = drafts::arrival(&scenario, &who, &location);
                self.emit_step(state, vec![arrival], run).await?;
                false
            }
            Step::PassRound => {
                self.emit_step(state, vec![drafts::quiet_round()], run)
                    .await?;
                false
            }
            Step::Judge => self.on_judge(state).await?,
            Step::Turn { actor } => self.on_turn(state, &actor, None, run).await?,
            Step::CloseScene { reason } => {
                let end = drafts::scene_end(state, reason);
                self.emit_step(state, vec![end], run).await?;
                run.until == Until::SceneEnd
            }
        })
    }

    /// Emits the events of one step, logged together.
    async fn emit_step(
        &self,
        state: &mut WorldState,
        drafts: Vec<Draft>,
        run: &mut Run,
    ) -> Result<(), WorldError> {
        run.produced.extend(self.emit_all(state, drafts).await?);
        Ok(())
    }

    /// The narrator judges the scene (once per scene). Its notes, the verdict among
    /// them, are saved before anything follows from them, so a restart neither loses
    /// nor repeats them: a scene judged complete is closed by the next step, here or
    /// after a restart.
    async fn on_judge(&self, state: &WorldState) -> Result<bool, WorldError> {
        let judgement = self
            .narrator
            .judge_scene(&self.scenario(), &self.hub, state)
            .await;
        let saved = {
            let mut notes = self.narrator.notes();
            notes.judged = Some(state.scene);
            notes.over = judgement.scene_over;
            notes.proposal = judgement.proposal;
            notes.usage = Some(judgement.usage);
            notes.at_seq = self.hub.next_seq();
            serde_json::to_vec(&*notes)
                .map_err(|e| WorldError::Log(format!("narrator notes: {e}")))?
        };
        if let Err(error) = self.log.put_notes(&self.id, saved).await {
            if matches!(error, WorldError::Fenced { .. }) {
                // Another owner wrote this world's notes: this replica's view is stale.
                self.abandon();
            }
            return Err(error);
        }
        Ok(false)
    }

    /// `actor` takes its turn: the action a person `played`, or else its agent's. Ends
    /// the run when the turns asked for are done.
    async fn on_turn(
        &self,
        state: &mut WorldState,
        actor: &str,
        played: Option<pb::Action>,
        run: &mut Run,
    ) -> Result<bool, WorldError> {
        let draft = match played {
            Some(action) => {
                let scenario = self.scenario();
                drafts::resolve(self.perspective(&scenario, state, actor), state, &action)
            }
            None => {
                let span = info_span!("turn", world_id = %self.id, character = %actor,
                    turn = state.scene_turn + 1);
                self.agent_turn(state, actor).instrument(span).await?
            }
        };
        run.produced.push(self.emit(state, draft).await?);
        crate::metrics::TURNS.inc();
        run.turns += 1;
        Ok(run.until == Until::Turns(run.turns))
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
