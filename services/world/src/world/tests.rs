//! The orchestrator alone: a world over a real event log file and a fake agent port,
//! with no agent process. Each test names the rule it holds; breaking that rule in
//! `world/` makes it fail.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use async_trait::async_trait;
use dramatis_proto::v1::{self as pb, Event, EventKind, act_response};
use futures::StreamExt as _;
use futures::future::BoxFuture;
use tokio::sync::{Notify, Semaphore};
use tonic::Status;

use super::seats::{SeatTurns, TurnRequest};
use super::{Intervention, Shared, Until, World};
use crate::agent_clients::{ActItems, AgentDirectory, AgentLinks, AgentPort, AgentPorts, Loss};
use crate::error::WorldError;
use crate::limits::Limits;
use crate::log::{EventFeed, EventLog, RedbLog, SharedLog, WorldRecord};
use dramatis_scenario::Scenario;

type Seat = SeatTurns;

const ENDPOINT: &str = "fake://agents";
const WORLD: &str = "w";
/// A bound on waits that only a broken rule (a deadlock) reaches; never a speed claim.
const STUCK: Duration = Duration::from_secs(30);

/// Run at a point of a fake call: where the world stands when an agent is reached.
type Hook = Arc<dyn Fn(String, Vec<u64>) -> BoxFuture<'static, ()> + Send + Sync>;

/// Holds one call until the test lets it go, and says when the call arrived.
struct Gate {
    entered: Notify,
    release: Semaphore,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            entered: Notify::new(),
            release: Semaphore::new(0),
        }
    }
}

impl Gate {
    async fn pass(&self) {
        self.entered.notify_one();
        self.release.acquire().await.expect("open").forget();
    }

    fn open(&self) {
        self.release.add_permits(1);
    }
}

/// What the fake agents hold and were asked.
#[derive(Default)]
struct Held {
    attached: BTreeSet<String>,
    /// Where each character's saved shard ends.
    shard_end: BTreeMap<String, u64>,
    /// Every seq each character perceived, in the order it got them.
    perceived: BTreeMap<String, Vec<u64>>,
    /// Whose turn each `Act` call was.
    acts: Vec<String>,
    /// Perceive calls to fail with an answer of the agent's own (not retried).
    fail_perceive: BTreeMap<String, u32>,
    /// Holds the next `Act` call.
    act_gate: Option<Arc<Gate>>,
    /// Holds every `Answer` call while set.
    answer_gate: Option<Arc<Gate>>,
    on_perceive: Option<Hook>,
}

/// Agents in this process: a directory, a port factory and the ports, all one double.
#[derive(Clone, Default)]
struct FakeAgents(Arc<Mutex<Held>>);

impl std::fmt::Debug for FakeAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FakeAgents")
    }
}

impl FakeAgents {
    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.0.lock().expect("fake agents")
    }

    fn perceived(&self, character: &str) -> Vec<u64> {
        self.held()
            .perceived
            .get(character)
            .cloned()
            .unwrap_or_default()
    }

    fn attached(&self) -> BTreeSet<String> {
        self.held().attached.clone()
    }
}

#[async_trait]
impl AgentDirectory for FakeAgents {
    async fn endpoint_for(&self, _world: &str, _character: &str) -> Result<String, WorldError> {
        Ok(ENDPOINT.to_owned())
    }

    async fn recover(
        &self,
        _world_id: &str,
        _character_id: &str,
        endpoint: &str,
        _loss: Loss,
    ) -> Result<Option<String>, WorldError> {
        Ok(Some(endpoint.to_owned()))
    }
}

#[async_trait]
impl AgentPorts for FakeAgents {
    fn port(&self, _endpoint: &str, character: &str) -> Result<Arc<dyn AgentPort>, WorldError> {
        Ok(Arc::new(FakePort {
            agents: self.clone(),
            character: character.to_owned(),
        }))
    }

    async fn probe(&self, _endpoint: &str) -> Option<bool> {
        Some(true)
    }

    fn forget(&self, _endpoint: &str) {}
}

/// One character's port to the fake agents.
#[derive(Debug)]
struct FakePort {
    agents: FakeAgents,
    character: String,
}

impl FakePort {
    fn check(&self, character: Option<&pb::CharacterRef>) -> Result<(), Status> {
        let named = character.map(|c| c.character_id.as_str());
        if named != Some(self.character.as_str()) {
            return Err(Status::invalid_argument("a call for another character"));
        }
        if !self.agents.held().attached.contains(&self.character) {
            return Err(Status::not_found("not attached"));
        }
        Ok(())
    }
}

#[async_trait]
impl AgentPort for FakePort {
    async fn attach(&self, request: pb::AttachRequest) -> Result<pb::AttachResponse, Status> {
        let id = request
            .character
            .map(|c| c.character_id)
            .unwrap_or_default();
        let mut held = self.agents.held();
        held.attached.insert(id.clone());
        Ok(pb::AttachResponse {
            last_seq: held.shard_end.get(&id).copied().unwrap_or(0),
            ..Default::default()
        })
    }

    async fn detach(&self, request: pb::DetachRequest) -> Result<(), Status> {
        let mut held = self.agents.held();
        held.attached.remove(&self.character);
        if !request.keep_shard {
            held.shard_end.remove(&self.character);
        }
        Ok(())
    }

    async fn perceive(&self, request: pb::PerceiveRequest) -> Result<(), Status> {
        self.check(request.character.as_ref())?;
        let seqs: Vec<u64> = request.events.iter().map(|e| e.seq).collect();
        let hook = {
            let mut held = self.agents.held();
            if let Some(left) = held.fail_perceive.get_mut(&self.character)
                && *left > 0
            {
                *left -= 1;
                return Err(Status::internal("the disk is full"));
            }
            let end = held.shard_end.entry(self.character.clone()).or_default();
            for &seq in &seqs {
                *end = (*end).max(seq);
            }
            held.perceived
                .entry(self.character.clone())
                .or_default()
                .extend(&seqs);
            held.on_perceive.clone()
        };
        if let Some(hook) = hook {
            hook(self.character.clone(), seqs).await;
        }
        Ok(())
    }

    async fn act(&self, request: pb::ActRequest) -> Result<ActItems, Status> {
        self.check(request.character.as_ref())?;
        let gate = {
            let mut held = self.agents.held();
            held.acts.push(self.character.clone());
            held.act_gate.take()
        };
        if let Some(gate) = gate {
            gate.pass().await;
        }
        let action = pb::Action {
            kind: pb::ActionKind::Speech.into(),
            text: format!("{} speaks.", self.character),
            ..Default::default()
        };
        Ok(futures::stream::iter([
            Ok(act_response::Item::Token(format!("{} ", self.character))),
            Ok(act_response::Item::Action(action)),
        ])
        .boxed())
    }

    async fn answer(&self, request: pb::AnswerRequest) -> Result<pb::AnswerResponse, Status> {
        self.check(request.character.as_ref())?;
        let gate = self.agents.held().answer_gate.clone();
        if let Some(gate) = gate {
            gate.pass().await;
        }
        Ok(pb::AnswerResponse {
            answer: format!("{} answers.", self.character),
            ..Default::default()
        })
    }

    async fn snapshot(&self, request: pb::SnapshotRequest) -> Result<pb::SnapshotResponse, Status> {
        self.check(request.character.as_ref())?;
        Ok(pb::SnapshotResponse::default())
    }
}

/// Run before each append.
type AppendHook = Arc<dyn Fn() + Send + Sync>;

/// A real log file whose appends can be refused, and which runs a hook before each.
struct WatchedLog {
    inner: RedbLog,
    refuse: std::sync::atomic::AtomicBool,
    before_append: Mutex<Option<AppendHook>>,
}

impl std::fmt::Debug for WatchedLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchedLog").finish_non_exhaustive()
    }
}

#[async_trait]
impl EventLog for WatchedLog {
    async fn put_world(&self, record: WorldRecord) -> Result<(), WorldError> {
        self.inner.put_world(record).await
    }

    async fn world(&self, world_id: &str) -> Result<Option<WorldRecord>, WorldError> {
        self.inner.world(world_id).await
    }

    async fn worlds(&self) -> Result<Vec<WorldRecord>, WorldError> {
        self.inner.worlds().await
    }

    async fn append(
        &self,
        world_id: &str,
        after: u64,
        events: Vec<Event>,
    ) -> Result<(), WorldError> {
        let hook = self.before_append.lock().expect("hook").clone();
        if let Some(hook) = hook {
            hook();
        }
        if self.refuse.load(std::sync::atomic::Ordering::Acquire) {
            return Err(WorldError::Log("the disk is full".into()));
        }
        self.inner.append(world_id, after, events).await
    }

    async fn read(&self, world_id: &str, from_seq: u64) -> Result<Vec<Event>, WorldError> {
        self.inner.read(world_id, from_seq).await
    }

    async fn follow(&self, world_id: &str, from_seq: u64) -> Result<EventFeed, WorldError> {
        self.inner.follow(world_id, from_seq).await
    }

    async fn put_notes(&self, world_id: &str, notes: Vec<u8>) -> Result<(), WorldError> {
        self.inner.put_notes(world_id, notes).await
    }

    async fn notes(&self, world_id: &str) -> Result<Option<Vec<u8>>, WorldError> {
        self.inner.notes(world_id).await
    }

    async fn delete_world(&self, world_id: &str) -> Result<(), WorldError> {
        self.inner.delete_world(world_id).await
    }

    fn describe(&self) -> String {
        "a watched log".into()
    }
}

/// A world of the shipped *A Study in Scarlet* over `agents`, its log a file in `dir`.
struct Fixture {
    world: Arc<World>,
    agents: FakeAgents,
    log: Arc<WatchedLog>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    async fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = Arc::new(WatchedLog {
            inner: RedbLog::open(&dir.path().join("events.redb")).expect("log"),
            refuse: std::sync::atomic::AtomicBool::new(false),
            before_append: Mutex::new(None),
        });
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/study-in-scarlet/scenario.toml");
        let scenario = Arc::new(Scenario::load(&path).expect("the shipped scenario loads"));
        let agents = FakeAgents::default();
        let endpoints = scenario
            .characters
            .iter()
            .map(|c| (c.id.clone(), ENDPOINT.to_owned()))
            .collect();
        let shared = Shared {
            log: Arc::clone(&log) as SharedLog,
            links: AgentLinks {
                directory: Arc::new(agents.clone()),
                pool: Arc::new(agents.clone()),
            },
            narrator: None,
            limits: Arc::new(Limits::default()),
        };
        let world = World::start(WORLD.into(), scenario, endpoints, Vec::new(), shared)
            .await
            .expect("the world starts");
        Self {
            world: Arc::new(world),
            agents,
            log,
            _dir: dir,
        }
    }

    async fn logged(&self) -> Vec<Event> {
        self.log.read(WORLD, 1).await.expect("the log reads")
    }

    /// The seqs of the logged events `character` perceived, in order.
    async fn perceivable(&self, character: &str) -> Vec<u64> {
        self.logged()
            .await
            .iter()
            .filter(|e| e.perceivers.iter().any(|p| p == character))
            .map(|e| e.seq)
            .collect()
    }

    fn advance(&self, until: Until) -> tokio::task::JoinHandle<Result<Vec<Event>, WorldError>> {
        let world = Arc::clone(&self.world);
        tokio::spawn(async move { world.advance(until).await })
    }
}

/// Each event's kind and, for a line, its speaker; a director's narration is marked.
fn shape(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e.kind() {
            EventKind::Speech => format!("line:{}", e.speaker),
            EventKind::Narration if e.text.starts_with("A clock") => "director".to_owned(),
            kind => format!("{kind:?}"),
        })
        .collect()
}

fn narrate() -> Intervention {
    Intervention::Narrate {
        location: "criterion".into(),
        text: "A clock strikes the hour.".into(),
    }
}

/// Claims watson and stamford, the first scene's cast, for people.
fn claim_both(world: &World, timeout: Duration) -> [Seat; 2] {
    ["watson", "stamford"]
        .map(|character| world.claim(character, timeout, None).expect("claimed").1)
}

/// The next turn offered to either seat.
async fn next_offer(seats: &mut [Seat; 2]) -> TurnRequest {
    let [one, two] = seats;
    within("the offer", async {
        tokio::select! {
            Some(offer) = one.next() => offer,
            Some(offer) = two.next() => offer,
        }
    })
    .await
}

async fn within<T>(what: &str, wait: impl Future<Output = T>) -> T {
    tokio::time::timeout(STUCK, wait)
        .await
        .unwrap_or_else(|_| panic!("{what} is stuck"))
}

/// What was true of an event when an agent perceived it: its seq, whether the log and
/// the hub held it, and whether the state had applied it (1) or not (0).
type Seen = (u64, bool, bool, u32);

/// An emit logs, then applies to the state, then publishes, then delivers: when an
/// agent perceives an event, the log, the state and the hub all hold it already.
#[tokio::test]
async fn an_emit_logs_then_applies_then_publishes_then_delivers() {
    let fixture = Fixture::new().await;
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let world: Arc<OnceLock<Weak<World>>> = Arc::default();
    world.set(Arc::downgrade(&fixture.world)).expect("once");
    let hook: Hook = {
        let (seen, world, log) = (
            Arc::clone(&seen),
            Arc::clone(&world),
            Arc::clone(&fixture.log),
        );
        Arc::new(move |_character, seqs| {
            let (seen, world, log) = (Arc::clone(&seen), Arc::clone(&world), Arc::clone(&log));
            Box::pin(async move {
                let world = world.get().and_then(Weak::upgrade).expect("the world");
                let logged = log.read(WORLD, 1).await.expect("reads");
                for seq in seqs {
                    let in_log = logged.iter().any(|e| e.seq == seq);
                    let in_hub = world.hub.next_seq() > seq;
                    let turns = dramatis_runtime::lock(&world.snapshot).total_turns;
                    let event = logged.iter().find(|e| e.seq == seq);
                    let lines_so_far = logged
                        .iter()
                        .filter(|e| e.seq <= seq && e.kind() == EventKind::Speech)
                        .count();
                    let state_has_it =
                        event.is_some() && u32::try_from(lines_so_far).expect("few") <= turns;
                    seen.lock()
                        .expect("seen")
                        .push((seq, in_log, in_hub, u32::from(state_has_it)));
                }
            })
        })
    };
    fixture.agents.held().on_perceive = Some(hook);
    let produced = within("the advance", fixture.advance(Until::Turns(3)))
        .await
        .expect("joined")
        .expect("advanced");
    assert_eq!(
        produced
            .iter()
            .filter(|e| e.kind() == EventKind::Speech)
            .count(),
        3
    );
    let seen = seen.lock().expect("seen").clone();
    assert!(
        seen.len() >= produced.len(),
        "every event reached someone: {seen:?}"
    );
    for (seq, in_log, in_hub, in_state) in seen {
        assert!(in_log, "event {seq} was perceived before it was logged");
        assert_eq!(
            in_state, 1,
            "event {seq} was perceived before the state held it"
        );
        assert!(
            in_hub,
            "event {seq} was perceived before watchers could read it"
        );
    }
    // A refused append leaves the state, the hub and every agent as they were.
    let before = (fixture.world.hub.next_seq(), fixture.world.info());
    let perceived_before = fixture.agents.perceived("watson");
    fixture
        .log
        .refuse
        .store(true, std::sync::atomic::Ordering::Release);
    let refused = fixture.world.advance(Until::Turns(1)).await;
    assert!(matches!(refused, Err(WorldError::Log(_))), "{refused:?}");
    assert_eq!((fixture.world.hub.next_seq(), fixture.world.info()), before);
    assert_eq!(fixture.agents.perceived("watson"), perceived_before);
}

/// A delivery that failed is made before anything more is logged, and each character
/// ends with every event it perceived, once and in order.
#[tokio::test]
async fn a_failed_delivery_is_caught_up_before_the_next_append() {
    let fixture = Fixture::new().await;
    fixture
        .agents
        .held()
        .fail_perceive
        .insert("watson".into(), 1);
    let first = fixture.world.advance(Until::Turns(1)).await;
    let Err(WorldError::Interrupted { first, last, .. }) = first else {
        panic!("the failed delivery interrupts the run: {first:?}");
    };
    assert_eq!(first, 1);
    let missed = fixture.perceivable("watson").await;
    assert!(missed.iter().all(|&seq| seq <= last) && !missed.is_empty());
    assert!(
        fixture.agents.perceived("watson").is_empty(),
        "watson got nothing yet"
    );
    // At the next append, watson already holds what it missed.
    let at_append: Arc<Mutex<Vec<Vec<u64>>>> = Arc::default();
    {
        let (at_append, agents) = (Arc::clone(&at_append), fixture.agents.clone());
        *fixture.log.before_append.lock().expect("hook") = Some(Arc::new(move || {
            at_append
                .lock()
                .expect("seen")
                .push(agents.perceived("watson"));
        }));
    }
    within("the advance", fixture.world.advance(Until::Turns(2)))
        .await
        .expect("advanced");
    let at_append = at_append.lock().expect("seen").clone();
    assert!(!at_append.is_empty());
    assert_eq!(
        at_append[0], missed,
        "caught up before the next event was logged"
    );
    assert_eq!(
        fixture.agents.perceived("watson"),
        fixture.perceivable("watson").await,
        "every event watson perceived, once, in order"
    );
    assert_eq!(
        fixture.agents.perceived("stamford"),
        fixture.perceivable("stamford").await
    );
}

/// A person who does not answer in time hands the turn back to the agent.
#[tokio::test]
async fn a_seat_that_times_out_gives_the_turn_to_the_agent() {
    let fixture = Fixture::new().await;
    let mut seats = claim_both(&fixture.world, Duration::from_millis(20));
    let advancing = fixture.advance(Until::Turns(1));
    // The offer is taken and never answered (its reply kept open).
    let offer = next_offer(&mut seats).await;
    let produced = within("the advance", advancing)
        .await
        .expect("joined")
        .expect("advanced");
    let line = produced
        .iter()
        .find(|e| e.kind() == EventKind::Speech)
        .expect("a line");
    assert_eq!(
        line.text,
        format!("{} speaks.", line.speaker),
        "the agent's line"
    );
    assert_eq!(
        fixture.agents.held().acts,
        std::slice::from_ref(&line.speaker)
    );
    drop(offer);
}

/// A director's event asked for while a step runs lands after that step and before
/// the next one of the same advance.
#[tokio::test]
async fn a_directors_event_lands_between_two_steps() {
    let fixture = Fixture::new().await;
    let gate = Arc::new(Gate::default());
    fixture.agents.held().act_gate = Some(Arc::clone(&gate));
    let advancing = fixture.advance(Until::Turns(2));
    within("the first turn", gate.entered.notified()).await;
    let directing = {
        let world = Arc::clone(&fixture.world);
        tokio::spawn(async move { world.intervene(narrate()).await })
    };
    tokio::task::yield_now().await;
    assert!(
        !directing.is_finished(),
        "the event waits for the step under way"
    );
    gate.open();
    within("the director", directing)
        .await
        .expect("joined")
        .expect("the event is taken");
    within("the advance", advancing)
        .await
        .expect("joined")
        .expect("advanced");
    let shape = shape(&fixture.logged().await);
    let lines: Vec<usize> = (0..shape.len())
        .filter(|&i| shape[i].starts_with("line:"))
        .collect();
    let director = shape.iter().position(|s| s == "director").expect("logged");
    assert_eq!(lines.len(), 2, "{shape:?}");
    assert!(
        lines[0] < director && director < lines[1],
        "between the two turns: {shape:?}"
    );
}

/// While a person thinks, the world is not held: a director's event is taken at once,
/// and the person's action then lands after it. A deletion then ends the wait.
#[tokio::test]
async fn a_players_turn_does_not_hold_the_world() {
    let fixture = Fixture::new().await;
    let mut seats = claim_both(&fixture.world, Duration::from_secs(600));
    let advancing = fixture.advance(Until::Turns(1));
    let offer = next_offer(&mut seats).await;
    within("the director's event", fixture.world.intervene(narrate()))
        .await
        .expect("taken while the person thinks");
    offer
        .play(pb::Action {
            kind: pb::ActionKind::Speech.into(),
            text: "A person says this.".into(),
            ..Default::default()
        })
        .expect("the turn waits");
    within("the advance", advancing)
        .await
        .expect("joined")
        .expect("advanced");
    let logged = fixture.logged().await;
    let shape = shape(&logged);
    let director = shape.iter().position(|s| s == "director").expect("logged");
    let played = logged
        .iter()
        .position(|e| e.text == "A person says this.")
        .expect("the person's line is logged");
    assert!(director < played, "{shape:?}");
    assert!(fixture.agents.held().acts.is_empty(), "no agent acted");

    // A second offer, then the world is deleted while the person thinks.
    let advancing = fixture.advance(Until::Turns(1));
    // The person holds the offer through the deletion: the world stops waiting anyway.
    let _offer = next_offer(&mut seats).await;
    within("the deletion", fixture.world.shut()).await;
    let ended = within("the advance", advancing).await.expect("joined");
    assert!(matches!(ended, Err(WorldError::Deleted(_))), "{ended:?}");
    assert!(
        fixture.agents.held().acts.is_empty(),
        "no agent acted after the deletion"
    );
}

/// A finished world sleeps only when no call is in flight; a call wakes it; sleeping,
/// waking, asking and advancing raced together leave its characters attached exactly
/// when it is awake.
#[tokio::test]
async fn sleep_and_wake_race_calls_and_advances_without_losing_a_character() {
    let fixture = Fixture::new().await;
    within("the story", fixture.world.advance(Until::ScriptEnd))
        .await
        .expect("played to its end");
    assert_eq!(fixture.world.info().status(), pb::WorldStatus::Finished);
    let everyone: BTreeSet<String> = fixture
        .world
        .scenario()
        .characters
        .iter()
        .map(|c| c.id.clone())
        .collect();
    // A call in flight keeps the world awake.
    let gate = Arc::new(Gate::default());
    fixture.agents.held().answer_gate = Some(Arc::clone(&gate));
    let asking = {
        let world = Arc::clone(&fixture.world);
        tokio::spawn(async move { world.ask("watson", "Who are you?", &[], false, None).await })
    };
    within("the question", gate.entered.notified()).await;
    assert!(
        !fixture.world.sleep_if_idle(Duration::ZERO).await,
        "a call is in flight"
    );
    gate.open();
    within("the answer", asking)
        .await
        .expect("joined")
        .expect("answered");
    fixture.agents.held().answer_gate = None;
    // Idle: it sleeps, and its characters leave their agents.
    assert!(fixture.world.sleep_if_idle(Duration::ZERO).await);
    assert!(fixture.world.is_asleep());
    assert!(fixture.agents.attached().is_empty());
    // A question wakes it.
    let answer = within(
        "the answer",
        fixture
            .world
            .ask("holmes", "Who are you?", &[], false, None),
    )
    .await
    .expect("answered");
    assert_eq!(answer.answer, "holmes answers.");
    assert!(!fixture.world.is_asleep());
    assert_eq!(fixture.agents.attached(), everyone);
    // Raced.
    for round in 0..20 {
        let world = &fixture.world;
        let (slept, asked, advanced) = within("the race", async {
            tokio::join!(
                world.sleep_if_idle(Duration::ZERO),
                world.ask("watson", "Where are you?", &[], false, None),
                world.advance(Until::Turns(1)),
            )
        })
        .await;
        asked.unwrap_or_else(|e| panic!("round {round}: the question failed: {e}"));
        assert!(
            advanced
                .expect("a finished world advances nowhere")
                .is_empty()
        );
        let attached = fixture.agents.attached();
        if world.is_asleep() {
            assert!(slept, "round {round}");
            assert!(
                attached.is_empty(),
                "round {round}: asleep with {attached:?} attached"
            );
        } else {
            assert_eq!(
                attached, everyone,
                "round {round}: awake without every character"
            );
        }
    }
}
