//! One running world: its scenario, state, transcript hub and the agents of its
//! characters. `advance` runs the scripted story; every event is logged, then
//! published, then delivered to exactly the characters who perceived it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use dramatis_llm::LanguageModel;
use dramatis_proto::v1::{
    self as pb, Action, ActionKind, Event, EventKind, TokenChunk, Usage, WorldStatus, act_response,
};
use futures::future::try_join_all;
use tracing::{Instrument, info_span};

use crate::WorldError;
use crate::agent_clients::AgentRpc;
use crate::hub::TranscriptHub;
use crate::log::EventLog;
use crate::scenario::Scenario;
use crate::story::perception::PerceptionRouter;

mod narration;

use crate::story::scheduler::{Step, next_step};
use crate::story::state::WorldState;
use narration::Judgement;

/// How far one `advance` call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    Turns(u32),
    SceneEnd,
    ScriptEnd,
}

/// An event before the world numbers it and decides who perceives it.
#[derive(Debug, Clone, Default)]
struct Draft {
    kind: EventKind,
    speaker: String,
    text: String,
    target: String,
    /// Where it happens (for movement: the destination).
    location: String,
    /// For movement: where the actor left from.
    origin: Option<String>,
    /// For a departure on a journey: where to, and how many rounds it takes.
    destination: String,
    travel_rounds: u32,
    /// Characters who perceive it though they are not (yet) at the location: an
    /// arriving traveller.
    told: Vec<String>,
    thought: String,
    turn: u32,
    usage: Option<Usage>,
}

struct Slot {
    client: AgentRpc,
    /// Highest seq already considered for delivery to this character.
    delivered: tokio::sync::Mutex<u64>,
}

/// A world.
pub struct World {
    id: String,
    scenario: Arc<Scenario>,
    log: EventLog,
    hub: TranscriptHub,
    /// Held for the length of an `advance`: one story step at a time.
    state: tokio::sync::Mutex<WorldState>,
    /// The latest state, readable while an advance runs.
    snapshot: std::sync::Mutex<WorldState>,
    slots: BTreeMap<String, Slot>,
    advancing: AtomicBool,
    deleted: AtomicBool,
    /// The narrator of open stories (world-side: it sees the whole world, and what it
    /// says reaches characters only as events at a location).
    narrator: Option<Arc<dyn LanguageModel>>,
    notes: std::sync::Mutex<NarratorNotes>,
    /// Characters a person plays: where to ask for their actions.
    seats: std::sync::Mutex<BTreeMap<String, Seat>>,
}

/// A person's claim on a character.
#[derive(Debug, Clone)]
struct Seat {
    turns: tokio::sync::mpsc::Sender<TurnRequest>,
    timeout: std::time::Duration,
}

/// A turn offered to a person: what the character sees, and where to put the action.
#[derive(Debug)]
pub struct TurnRequest {
    pub frame: pb::SceneFrame,
    pub timeout: std::time::Duration,
    pub reply: tokio::sync::oneshot::Sender<Action>,
}

/// What the narrator decided that no event records yet. Kept in the log beside the
/// events (written at each judgement), so a restart neither loses the proposed event
/// nor tells it twice.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct NarratorNotes {
    /// The round whose scene was judged.
    judged: Option<usize>,
    /// The event proposed for the next round: location and text.
    proposal: Option<(String, String)>,
    /// Narrator usage not yet attached to an event.
    #[serde(with = "usage_figures")]
    usage: Option<Usage>,
    /// The sequence number the next event had when these notes were made.
    at_seq: u64,
}

impl NarratorNotes {
    /// The notes as they stand after `history` (the world's logged events): a proposal
    /// already told, or usage already attached to a later event, is spent.
    fn after(mut self, history: &[Event]) -> Self {
        let later: Vec<&Event> = history.iter().filter(|e| e.seq >= self.at_seq).collect();
        if !later.is_empty() {
            self.usage = None;
        }
        if let Some((at, text)) = &self.proposal
            && later
                .iter()
                .any(|e| e.kind() == EventKind::Narration && e.location == *at && e.text == *text)
        {
            self.proposal = None;
        }
        self
    }
}

/// `Usage` (a wire type) in the notes: calls and tokens only.
mod usage_figures {
    use dramatis_proto::v1::Usage;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(usage: &Option<Usage>, out: S) -> Result<S::Ok, S::Error> {
        usage
            .as_ref()
            .map(|u| (u.llm_calls, u.prompt_tokens, u.completion_tokens))
            .serialize(out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<Option<Usage>, D::Error> {
        Ok(
            Option::<(u32, u32, u32)>::deserialize(input)?.map(|(calls, prompt, completion)| {
                Usage {
                    llm_calls: calls,
                    prompt_tokens: prompt,
                    completion_tokens: completion,
                    latency_ms: 0,
                }
            }),
        )
    }
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl World {
    /// Builds a world over `history` (its logged events, possibly none) and attaches
    /// every character to its agent. Agents receive each character's profile and only
    /// the facts that character knows.
    pub(crate) async fn start(
        id: String,
        scenario: Arc<Scenario>,
        log: EventLog,
        clients: BTreeMap<String, AgentRpc>,
        history: Vec<Event>,
        narrator: Option<Arc<dyn LanguageModel>>,
    ) -> Result<Self, WorldError> {
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
        let attaches = clients.iter().map(|(character_id, client)| {
            let mut client = client.clone();
            let request = attach_request(&id, &scenario, character_id);
            async move {
                client
                    .attach(request)
                    .await
                    .map_err(|s| WorldError::agent(character_id, &s))
            }
        });
        try_join_all(attaches).await?;
        for (character_id, client) in clients {
            slots.insert(
                character_id,
                Slot {
                    client,
                    delivered: tokio::sync::Mutex::new(0),
                },
            );
        }
        Ok(Self {
            id,
            scenario,
            log,
            hub: TranscriptHub::new(history),
            snapshot: std::sync::Mutex::new(state.clone()),
            state: tokio::sync::Mutex::new(state),
            slots,
            advancing: AtomicBool::new(false),
            deleted: AtomicBool::new(false),
            narrator,
            notes: std::sync::Mutex::new(notes),
            seats: std::sync::Mutex::default(),
        })
    }

    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    #[must_use]
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    #[must_use]
    pub fn hub(&self) -> &TranscriptHub {
        &self.hub
    }

    /// The world as clients see it.
    #[must_use]
    pub fn info(&self) -> pb::WorldInfo {
        let state = self
            .snapshot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let finished = state.finished(&self.scenario);
        let status = if finished {
            WorldStatus::Finished
        } else if self.advancing.load(Ordering::Relaxed) {
            WorldStatus::Running
        } else {
            WorldStatus::Ready
        };
        pb::WorldInfo {
            world_id: self.id.clone(),
            scenario: self.scenario.name.clone(),
            title: self.scenario.title.clone(),
            status: status as i32,
            current_scene: if finished {
                0
            } else {
                u32::try_from(state.scene + 1).unwrap_or(u32::MAX)
            },
            total_scenes: u32::try_from(self.scenario.length()).unwrap_or(u32::MAX),
            scene_turn: state.scene_turn,
            next_seq: self.hub.next_seq(),
            characters: self
                .scenario
                .characters
                .iter()
                .map(|c| {
                    // Rounds are shown 1-based, like scenes.
                    let (travelling_to, arrives_round) = state
                        .travelling
                        .get(&c.id)
                        .map(|(to, at)| (to.clone(), u32::try_from(at + 1).unwrap_or(u32::MAX)))
                        .unwrap_or_default();
                    pb::CharacterState {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        location: state.locations.get(&c.id).cloned().unwrap_or_default(),
                        travelling_to,
                        arrives_round,
                    }
                })
                .collect(),
            usage: Some(state.usage),
            total_turns: state.total_turns,
            locations: self
                .scenario
                .locations
                .iter()
                .map(|l| pb::LocationInfo {
                    id: l.id.clone(),
                    name: l.name.clone(),
                    description: l.description.clone(),
                })
                .collect(),
            paths: self
                .scenario
                .paths
                .iter()
                .map(|p| pb::SandboxPath {
                    from: p.from.clone(),
                    to: p.to.clone(),
                    distance: p.distance,
                })
                .collect(),
            scene_location: state.scene_location.clone(),
            open: self.scenario.open.is_some(),
        }
    }

    /// Runs the story until `until`; returns the events it produced.
    pub async fn advance(&self, until: Until) -> Result<Vec<Event>, WorldError> {
        let mut state = self.state.lock().await;
        self.advancing.store(true, Ordering::Relaxed);
        let result = self.advance_locked(&mut state, until).await;
        self.advancing.store(false, Ordering::Relaxed);
        result
    }

    async fn advance_locked(
        &self,
        state: &mut WorldState,
        until: Until,
    ) -> Result<Vec<Event>, WorldError> {
        let mut produced = Vec::new();
        let mut turns = 0;
        if until == Until::Turns(0) {
            return Ok(produced);
        }
        loop {
            if self.deleted.load(Ordering::Relaxed) {
                return Err(WorldError::Deleted(self.id.clone()));
            }
            let judged = self.notes().judged == Some(state.scene);
            match next_step(state, &self.scenario, judged) {
                Step::Finished => break,
                Step::OpenScene => {
                    for draft in self.opening_drafts(state) {
                        produced.push(self.emit(state, draft).await?);
                    }
                }
                Step::OpenAt { location } => {
                    for draft in self.open_round_drafts(state, &location) {
                        produced.push(self.emit(state, draft).await?);
                    }
                }
                Step::Arrive { who, location } => {
                    let place = self.place_name(&location).to_owned();
                    let draft = Draft {
                        kind: EventKind::Movement,
                        text: format!("{} arrives at {place}.", self.name_of(&who)),
                        speaker: who.clone(),
                        location,
                        told: vec![who],
                        ..Draft::default()
                    };
                    produced.push(self.emit(state, draft).await?);
                }
                Step::PassRound => {
                    let draft = Draft {
                        kind: EventKind::SceneEnd,
                        text: "Time passes on the roads.".into(),
                        ..Draft::default()
                    };
                    produced.push(self.emit(state, draft).await?);
                }
                Step::Judge => {
                    let judgement = self.judge(state).await;
                    let over = judgement.scene_over;
                    let saved = {
                        let mut notes = self.notes();
                        notes.judged = Some(state.scene);
                        notes.proposal = judgement.proposal;
                        notes.usage = Some(judgement.usage);
                        notes.at_seq = self.hub.next_seq();
                        serde_json::to_vec(&*notes)
                            .map_err(|e| WorldError::Log(format!("narrator notes: {e}")))?
                    };
                    self.log.put_notes(&self.id, saved).await?;
                    if over {
                        let draft = Draft {
                            kind: EventKind::SceneEnd,
                            text: "The narrator judged the scene complete.".into(),
                            location: state.scene_location.clone(),
                            ..Draft::default()
                        };
                        produced.push(self.emit(state, draft).await?);
                        if until == Until::SceneEnd {
                            break;
                        }
                    }
                }
                Step::Turn { actor } => {
                    let span = info_span!("turn", world_id = %self.id, character = %actor,
                        turn = state.scene_turn + 1);
                    let draft = self.run_turn(state, &actor).instrument(span).await?;
                    produced.push(self.emit(state, draft).await?);
                    turns += 1;
                    if until == Until::Turns(turns) {
                        break;
                    }
                }
                Step::CloseScene { reason } => {
                    let draft = Draft {
                        kind: EventKind::SceneEnd,
                        text: reason,
                        location: state.scene_location.clone(),
                        ..Draft::default()
                    };
                    produced.push(self.emit(state, draft).await?);
                    if until == Until::SceneEnd {
                        break;
                    }
                }
            }
        }
        Ok(produced)
    }

    /// Movements of the cast to the scene's location, the scene marker, the opening.
    fn opening_drafts(&self, state: &WorldState) -> Vec<Draft> {
        let scene = &self.scenario.scenes[state.scene];
        let place = self
            .scenario
            .location(&scene.location)
            .map_or(scene.location.as_str(), |l| l.name.as_str());
        let mut drafts = Vec::new();
        for who in &scene.cast {
            let at = state.locations.get(who).cloned().unwrap_or_default();
            if at != scene.location {
                let name = self.name_of(who);
                drafts.push(Draft {
                    kind: EventKind::Movement,
                    speaker: who.clone(),
                    text: format!("{name} goes to {place}."),
                    location: scene.location.clone(),
                    origin: Some(at),
                    ..Draft::default()
                });
            }
        }
        drafts.push(Draft {
            kind: EventKind::SceneStart,
            text: format!("Scene {}: {place}", state.scene + 1),
            location: scene.location.clone(),
            ..Draft::default()
        });
        if !scene.opening.trim().is_empty() {
            drafts.push(Draft {
                kind: EventKind::Narration,
                text: scene.opening.trim().to_owned(),
                location: scene.location.clone(),
                ..Draft::default()
            });
        }
        drafts
    }

    fn notes(&self) -> std::sync::MutexGuard<'_, NarratorNotes> {
        self.notes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn place_name<'a>(&'a self, id: &'a str) -> &'a str {
        self.scenario.location(id).map_or(id, |l| l.name.as_str())
    }

    /// A round of an open story: the scene marker, the story's opening (first round),
    /// and the event the narrator proposed, told where it happens.
    fn open_round_drafts(&self, state: &WorldState, location: &str) -> Vec<Draft> {
        let mut drafts = vec![Draft {
            kind: EventKind::SceneStart,
            text: format!("Round {}: {}", state.scene + 1, self.place_name(location)),
            location: location.to_owned(),
            ..Draft::default()
        }];
        if let Some(open) = &self.scenario.open
            && state.scene == 0
            && !open.opening.trim().is_empty()
        {
            let at = if open.opening_location.is_empty() {
                location.to_owned()
            } else {
                open.opening_location.clone()
            };
            drafts.push(Draft {
                kind: EventKind::Narration,
                text: open.opening.trim().to_owned(),
                location: at,
                ..Draft::default()
            });
        }
        if let Some((at, text)) = self.notes().proposal.take() {
            drafts.push(Draft {
                kind: EventKind::Narration,
                text,
                location: at,
                ..Draft::default()
            });
        }
        drafts
    }

    /// The narrator's judgement of the scene running, with the next round's event.
    async fn judge(&self, state: &WorldState) -> Judgement {
        let Some(model) = &self.narrator else {
            return Judgement::default();
        };
        let Some(open) = &self.scenario.open else {
            return Judgement::default();
        };
        let scene: Vec<Event> = self
            .hub
            .events_from(1)
            .into_iter()
            .filter(|e| e.scene_id == state.scene_id)
            .collect();
        narration::judge(model.as_ref(), &self.scenario, open, state, &scene).await
    }

    fn name_of<'a>(&'a self, id: &'a str) -> &'a str {
        self.scenario.character(id).map_or(id, |c| c.name.as_str())
    }

    /// Numbers, logs, publishes and delivers one event.
    async fn emit(&self, state: &mut WorldState, draft: Draft) -> Result<Event, WorldError> {
        // Movement is seen by those at the destination and, since the actor is still at
        // the origin, by everyone who saw the actor leave (the actor included).
        let perceivers = PerceptionRouter::perceivers(
            state,
            &draft.location,
            draft.origin.as_deref(),
            &draft.told,
        );
        let (draft_speaker, draft_target) = (draft.speaker.clone(), draft.target.clone());
        let mut usage = draft.usage;
        if let Some(narrated) = self.notes().usage.take() {
            let total = usage.get_or_insert_with(Usage::default);
            total.llm_calls += narrated.llm_calls;
            total.prompt_tokens += narrated.prompt_tokens;
            total.completion_tokens += narrated.completion_tokens;
        }
        let event = Event {
            world_id: self.id.clone(),
            seq: self.hub.next_seq(),
            scene_index: u32::try_from(state.scene + 1).unwrap_or(u32::MAX),
            scene_id: self.scene_id_for(state, draft.kind),
            speaker: draft.speaker,
            kind: draft.kind as i32,
            text: draft.text,
            target: draft.target,
            location: draft.location,
            perceivers,
            thought: draft.thought,
            usage,
            timestamp_ms: now_ms(),
            turn: draft.turn,
            speaker_name: self.name_of(&draft_speaker).to_owned(),
            target_name: self.name_of(&draft_target).to_owned(),
            destination: draft.destination,
            travel_rounds: draft.travel_rounds,
        };
        self.log.append(vec![event.clone()]).await?;
        state.apply(&self.scenario, &event);
        *self
            .snapshot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = state.clone();
        self.hub.publish(event.clone());
        try_join_all(event.perceivers.iter().map(|c| self.deliver_pending(c))).await?;
        Ok(event)
    }

    /// The scene an event belongs to: the script's scene, or the open story's round.
    fn scene_id_for(&self, state: &WorldState, kind: EventKind) -> String {
        if self.scenario.open.is_none() {
            return self
                .scenario
                .scenes
                .get(state.scene)
                .map(|s| s.id.clone())
                .unwrap_or_default();
        }
        if state.scene_open || kind == EventKind::SceneStart {
            format!("round-{}", state.scene + 1)
        } else {
            String::new()
        }
    }

    /// Sends `character` every logged event it perceived and has not been sent yet.
    async fn deliver_pending(&self, character: &str) -> Result<(), WorldError> {
        let Some(slot) = self.slots.get(character) else {
            return Ok(());
        };
        let mut delivered = slot.delivered.lock().await;
        let fresh = self.hub.events_from(*delivered + 1);
        let Some(last) = fresh.last().map(|e| e.seq) else {
            return Ok(());
        };
        let views: Vec<Event> = fresh
            .iter()
            .filter_map(|e| PerceptionRouter::view_for(e, character))
            .collect();
        if !views.is_empty() {
            let request = pb::PerceiveRequest {
                character: Some(self.character_ref(character)),
                events: views,
            };
            slot.client
                .clone()
                .perceive(request)
                .await
                .map_err(|s| WorldError::agent(character, &s))?;
        }
        *delivered = last;
        Ok(())
    }

    fn character_ref(&self, character: &str) -> pb::CharacterRef {
        pb::CharacterRef {
            world_id: self.id.clone(),
            character_id: character.to_owned(),
        }
    }

    /// Asks the actor's agent for its action, streaming its tokens to watchers.
    async fn run_turn(&self, state: &WorldState, actor: &str) -> Result<Draft, WorldError> {
        let slot = self
            .slots
            .get(actor)
            .ok_or_else(|| WorldError::CharacterNotFound {
                world: self.id.clone(),
                character: actor.to_owned(),
            })?;
        self.deliver_pending(actor).await?;
        if let Some(action) = self.ask_player(state, actor).await {
            return Ok(self.resolve(state, actor, &action));
        }
        let started = Instant::now();
        let request = pb::ActRequest {
            character: Some(self.character_ref(actor)),
            frame: Some(self.frame_for(state, actor)),
        };
        let mut stream = slot
            .client
            .clone()
            .act(request)
            .await
            .map_err(|s| WorldError::agent(actor, &s))?
            .into_inner();
        let seq = self.hub.next_seq();
        let hearers = state.present_at(
            state
                .locations
                .get(actor)
                .map_or(state.scene_location.as_str(), String::as_str),
        );
        let mut action = None;
        while let Some(message) = stream
            .message()
            .await
            .map_err(|s| WorldError::agent(actor, &s))?
        {
            match message.item {
                Some(act_response::Item::Token(text)) => self.hub.publish_token(TokenChunk {
                    seq,
                    speaker: actor.to_owned(),
                    text,
                    speaker_name: self.name_of(actor).to_owned(),
                    perceivers: hearers.clone(),
                }),
                Some(act_response::Item::Action(a)) => action = Some(a),
                None => {}
            }
        }
        let action = action.ok_or_else(|| WorldError::Agent {
            character: actor.to_owned(),
            kind: dramatis_proto::ErrorKind::Internal,
            message: "act stream ended without an action".into(),
        })?;
        let mut draft = self.resolve(state, actor, &action);
        if let Some(usage) = &mut draft.usage {
            usage.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        }
        Ok(draft)
    }

    /// The id of a character given by id, name or alias.
    pub fn character_id(&self, character: &str) -> Result<String, WorldError> {
        self.scenario
            .find_character(character)
            .map(|c| c.id.clone())
            .ok_or_else(|| WorldError::CharacterNotFound {
                world: self.id.clone(),
                character: character.to_owned(),
            })
    }

    /// Claims `character` (id, name or alias) for a person; returns its id and the
    /// turns offered. A character has one player at a time.
    pub fn claim(
        &self,
        character: &str,
        timeout: std::time::Duration,
    ) -> Result<(String, tokio::sync::mpsc::Receiver<TurnRequest>), WorldError> {
        let id = self.character_id(character)?;
        let mut seats = self
            .seats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if seats.get(&id).is_some_and(|s| !s.turns.is_closed()) {
            return Err(WorldError::InvalidArgument(format!(
                "{id} is already played by someone"
            )));
        }
        let (turns, offered) = tokio::sync::mpsc::channel(1);
        seats.insert(id.clone(), Seat { turns, timeout });
        Ok((id, offered))
    }

    /// Gives `character` back to its agent.
    pub fn release(&self, character: &str) {
        self.seats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(character);
    }

    /// The person's action for `actor`'s turn, if someone plays it and answers in time.
    async fn ask_player(&self, state: &WorldState, actor: &str) -> Option<Action> {
        let seat = self
            .seats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(actor)
            .cloned()?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        let offer = TurnRequest {
            frame: self.frame_for(state, actor),
            timeout: seat.timeout,
            reply,
        };
        seat.turns.send(offer).await.ok()?;
        match tokio::time::timeout(seat.timeout, answer).await {
            Ok(Ok(action)) => Some(action),
            _ => {
                tracing::info!(world_id = %self.id, character = actor, "no action from the player in time; the agent acts");
                None
            }
        }
    }

    fn frame_for(&self, state: &WorldState, actor: &str) -> pb::SceneFrame {
        let here = state.scene_location.clone();
        let location = self.scenario.location(&here);
        let exits: Vec<String> = self
            .scenario
            .neighbours(&here)
            .into_iter()
            .map(|(id, _)| id.to_owned())
            .collect();
        let (direction, max_turns, scenes_here) = match &self.scenario.open {
            // Open stories: the character's own goal steers it (kept in its shard).
            Some(open) => (
                String::new(),
                open.scene_turns,
                state.stay.get(actor).copied().unwrap_or(0),
            ),
            None => {
                let scene = &self.scenario.scenes[state.scene];
                (
                    scene.directions.get(actor).cloned().unwrap_or_default(),
                    scene.max_turns,
                    0,
                )
            }
        };
        pb::SceneFrame {
            scene_id: state.scene_id.clone(),
            scene_index: u32::try_from(state.scene + 1).unwrap_or(u32::MAX),
            location_id: here.clone(),
            location_name: location.map(|l| l.name.clone()).unwrap_or_default(),
            location_description: location.map(|l| l.description.clone()).unwrap_or_default(),
            present: state
                .present_at(&here)
                .into_iter()
                .filter(|who| who != actor)
                .map(|who| pb::PresentCharacter {
                    name: self.name_of(&who).to_owned(),
                    id: who,
                })
                .collect(),
            direction,
            turn: state.scene_turn + 1,
            max_turns,
            exits,
            scenes_here,
        }
    }

    /// Turns an agent's action into an event the world accepts: targets must be present,
    /// movement must follow a path from here; anything else degrades to a plain action.
    fn resolve(&self, state: &WorldState, actor: &str, action: &Action) -> Draft {
        let here = state.locations.get(actor).cloned().unwrap_or_default();
        let present = state.present_at(&here);
        let target = self
            .scenario
            .find_character(&action.target)
            .map(|c| c.id.clone())
            .filter(|t| t != actor && present.contains(t))
            .unwrap_or_default();
        let name = self.name_of(actor).to_owned();
        let mut text = action.text.trim().to_owned();
        if text.is_empty() {
            text = format!("{name} pauses.");
        }
        let mut draft = Draft {
            kind: EventKind::Speech,
            speaker: actor.to_owned(),
            text,
            target,
            location: here.clone(),
            thought: action.thought.trim().to_owned(),
            turn: state.scene_turn + 1,
            usage: action.usage,
            ..Draft::default()
        };
        match action.kind() {
            ActionKind::Speech | ActionKind::Unspecified => {}
            ActionKind::Action => draft.kind = EventKind::Action,
            ActionKind::Movement => {
                let destination = self.scenario.locations.iter().find(|l| {
                    l.id.eq_ignore_ascii_case(action.destination.trim())
                        || l.name.eq_ignore_ascii_case(action.destination.trim())
                });
                let reachable = destination.filter(|l| {
                    self.scenario
                        .neighbours(&here)
                        .iter()
                        .any(|(id, _)| *id == l.id)
                });
                if let Some(place) = reachable {
                    draft.kind = EventKind::Movement;
                    draft.target.clear();
                    if self.scenario.open.is_some() {
                        // A journey: seen leaving here; on the road for the distance.
                        draft.destination = place.id.clone();
                        draft.travel_rounds = self
                            .scenario
                            .neighbours(&here)
                            .iter()
                            .find(|(id, _)| *id == place.id)
                            .map_or(1, |(_, d)| (*d).max(1));
                    } else {
                        draft.origin = Some(here);
                        draft.location = place.id.clone();
                    }
                } else {
                    draft.kind = EventKind::Action;
                }
            }
        }
        draft
    }

    /// Puts a question to one character; its agent answers from its own shard.
    pub async fn ask(
        &self,
        character: &str,
        question: &str,
        recall_only: bool,
    ) -> Result<pb::AskResponse, WorldError> {
        let id = self.character_id(character)?;
        if question.trim().is_empty() {
            return Err(WorldError::InvalidArgument(
                "question must not be empty".into(),
            ));
        }
        self.deliver_pending(&id).await?;
        let slot = &self.slots[&id];
        let answer = slot
            .client
            .clone()
            .answer(pb::AnswerRequest {
                character: Some(self.character_ref(&id)),
                question: question.to_owned(),
                recall_only,
            })
            .await
            .map_err(|s| WorldError::agent(&id, &s))?
            .into_inner();
        Ok(pb::AskResponse {
            character: id,
            answer: answer.answer,
            usage: answer.usage,
            abstained: answer.abstained,
            recalled: answer.recalled,
        })
    }

    /// The prompt records of one character (id, name or alias) or of all, in id order,
    /// read from each character's own agent.
    pub async fn audit(
        &self,
        character: Option<&str>,
    ) -> Result<Vec<pb::CharacterAudit>, WorldError> {
        let wanted: Vec<&String> = match character.filter(|c| !c.trim().is_empty()) {
            Some(needle) => {
                let id = self
                    .scenario
                    .find_character(needle)
                    .map(|c| &c.id)
                    .ok_or_else(|| WorldError::CharacterNotFound {
                        world: self.id.clone(),
                        character: needle.to_owned(),
                    })?;
                vec![id]
            }
            None => self.slots.keys().collect(),
        };
        let mut audits = Vec::with_capacity(wanted.len());
        for id in wanted {
            let snapshot = self.slots[id.as_str()]
                .client
                .clone()
                .snapshot(pb::SnapshotRequest {
                    character: Some(self.character_ref(id)),
                })
                .await
                .map_err(|s| WorldError::agent(id, &s))?
                .into_inner();
            audits.push(pb::CharacterAudit {
                character: id.clone(),
                prompts: snapshot.prompts,
            });
        }
        Ok(audits)
    }

    /// Stops the world and detaches its characters (best effort).
    pub(crate) async fn shut(&self) {
        self.deleted.store(true, Ordering::Relaxed);
        // Seats end with the world (their turn channels close).
        self.seats
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        for (character, slot) in &self.slots {
            let request = pb::DetachRequest {
                character: Some(self.character_ref(character)),
            };
            if let Err(status) = slot.client.clone().detach(request).await {
                tracing::debug!(%status, character, "detach failed");
            }
        }
    }
}

fn attach_request(world_id: &str, scenario: &Scenario, character_id: &str) -> pb::AttachRequest {
    let character = scenario.character(character_id);
    pb::AttachRequest {
        character: Some(pb::CharacterRef {
            world_id: world_id.to_owned(),
            character_id: character_id.to_owned(),
        }),
        profile: character.map(|c| pb::CharacterProfile {
            id: c.id.clone(),
            name: c.name.clone(),
            aliases: c.aliases.clone(),
            profile: c.profile.clone(),
            speaking_style: c.style.clone(),
            knowledge: scenario
                .knowledge_of(&c.id)
                .map(|f| pb::KnownFact {
                    id: f.id.clone(),
                    text: f.text.clone(),
                    subject: f.subject.clone(),
                    predicate: f.predicate.clone(),
                    object: f.object.clone(),
                    cause: f.cause.clone(),
                    route: f.route.as_str().to_owned(),
                })
                .collect(),
            memories: c
                .memories
                .iter()
                .map(|m| pb::StartingMemory {
                    id: m.id.clone(),
                    text: m.text.clone(),
                })
                .collect(),
            patterns: c
                .patterns
                .iter()
                .map(|p| pb::PersonalityPattern {
                    id: p.id.clone(),
                    description: p.description.clone(),
                    excerpts: p.excerpts.clone(),
                })
                .collect(),
            goal: c.goal.clone(),
            memory_modules: scenario.memory_modules_of(c),
        }),
    }
}
