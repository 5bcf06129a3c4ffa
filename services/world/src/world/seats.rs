//! People playing characters: a seat per played character, the turns offered to it,
//! and the wait for the person's action.

use std::collections::BTreeMap;

use dramatis_proto::v1::{self as pb, Action};
use futures::{Stream, StreamExt as _};

use super::World;
use crate::error::WorldError;
use dramatis_story::state::WorldState;

/// A person's claim on a character.
#[derive(Debug, Clone)]
pub(super) struct Seat {
    turns: tokio::sync::mpsc::Sender<TurnRequest>,
    timeout: std::time::Duration,
    /// Who plays it: the name of the token that claimed it (none on an open service).
    player: Option<String>,
}

/// A turn offered to a person: what the character sees, how long the world waits, and
/// (private) where the action goes.
#[derive(Debug)]
pub struct TurnRequest {
    pub frame: pb::SceneFrame,
    pub timeout: std::time::Duration,
    reply: tokio::sync::oneshot::Sender<Action>,
}

impl TurnRequest {
    /// Plays `action` as the character's turn; fails if the world stopped waiting
    /// meanwhile (its agent took the turn).
    pub fn play(self, action: Action) -> Result<(), TooLate> {
        self.reply.send(action).map_err(|_| TooLate)
    }

    /// Resolves once the world stopped waiting for this turn.
    pub async fn taken_back(&mut self) {
        self.reply.closed().await;
    }
}

/// A person's action came after the world stopped waiting for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLate;

/// A person's hold on a character: the turns the world offers it, in order.
#[derive(Debug)]
pub struct SeatTurns(tokio::sync::mpsc::Receiver<TurnRequest>);

impl SeatTurns {
    /// The next turn offered; `None` once the seat is closed (its world was deleted or
    /// given up).
    pub async fn next(&mut self) -> Option<TurnRequest> {
        self.0.recv().await
    }
}

/// The characters people play in one world, each with the channel its turns go to.
#[derive(Debug)]
pub(super) struct Seats {
    held: std::sync::Mutex<BTreeMap<String, Seat>>,
    /// Most people playing at once (serve --max-seats).
    max: usize,
}

impl Seats {
    pub fn new(max: usize) -> Self {
        Self {
            held: std::sync::Mutex::default(),
            max,
        }
    }

    /// Claims the character `id` for a person; returns the turns offered. A character
    /// has one player at a time, and a person holding a token (`player`, its name)
    /// plays one character per world: one token claiming every seat would hold every
    /// turn for the seat wait.
    fn claim(
        &self,
        id: &str,
        timeout: std::time::Duration,
        player: Option<&str>,
    ) -> Result<SeatTurns, WorldError> {
        let mut seats = dramatis_runtime::lock(&self.held);
        if seats.get(id).is_some_and(|s| !s.turns.is_closed()) {
            return Err(WorldError::SeatTaken(id.to_owned()));
        }
        seats.retain(|_, s| !s.turns.is_closed());
        if let Some(player) = player
            && let Some((other, _)) = seats
                .iter()
                .find(|(_, s)| s.player.as_deref() == Some(player))
        {
            return Err(WorldError::Full(format!(
                "{} plays {other} in this world already: one character per player",
                crate::limits::quote(player)
            )));
        }
        if seats.len() >= self.max {
            return Err(WorldError::Full(format!(
                "{} people play in this world already, its limit (serve --max-seats)",
                self.max
            )));
        }
        let (turns, offered) = tokio::sync::mpsc::channel(1);
        seats.insert(
            id.to_owned(),
            Seat {
                turns,
                timeout,
                player: player.map(str::to_owned),
            },
        );
        Ok(SeatTurns(offered))
    }

    fn release(&self, character: &str) {
        dramatis_runtime::lock(&self.held).remove(character);
    }

    fn seat(&self, character: &str) -> Option<Seat> {
        dramatis_runtime::lock(&self.held).get(character).cloned()
    }

    /// Ends every seat (their turn channels close), as the world is deleted or given up.
    pub fn close(&self) {
        dramatis_runtime::lock(&self.held).clear();
    }
}

impl World {
    /// Claims `character` (id, name or alias) for a person; returns its id and the
    /// turns offered (see [`Seats::claim`]).
    pub fn claim(
        &self,
        character: &str,
        timeout: std::time::Duration,
        player: Option<&str>,
    ) -> Result<(String, SeatTurns), WorldError> {
        let id = self.character_id(character)?;
        let offered = self.seats.claim(&id, timeout, player)?;
        Ok((id, offered))
    }

    /// Gives `character` back to its agent.
    pub fn release(&self, character: &str) {
        self.seats.release(character);
    }

    /// The turn to offer a person who plays `actor`, framed in `state`; none when
    /// nobody plays it. Made under the step lock; waited for outside it.
    pub(super) fn offer_for(&self, state: &WorldState, actor: &str) -> Option<Offer> {
        let seat = self.seats.seat(actor)?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        let request = TurnRequest {
            frame: self.frame_of(state, actor),
            timeout: seat.timeout,
            reply,
        };
        Some(Offer {
            seat,
            request,
            answer,
            actor: actor.to_owned(),
        })
    }
}

/// A turn to offer a person, and where their action comes back.
pub(super) struct Offer {
    seat: Seat,
    request: TurnRequest,
    answer: tokio::sync::oneshot::Receiver<Action>,
    actor: String,
}

impl Offer {
    /// Offers the turn and waits for the person's action, up to the seat's timeout.
    /// `None` when they did not answer in time, or left, or the world was deleted or
    /// given up meanwhile: the agent acts instead (or, in a world that ended, nothing
    /// does). The world's step lock is not held here.
    pub async fn wait(self, world: &World) -> Option<Action> {
        let Self {
            seat,
            request,
            answer,
            actor,
        } = self;
        let answered = async {
            seat.turns.send(request).await.ok()?;
            match tokio::time::timeout(seat.timeout, answer).await {
                Ok(Ok(action)) => Some(action),
                _ => {
                    tracing::info!(world_id = %world.id, character = %actor,
                        "no action from the player in time; the agent acts");
                    None
                }
            }
        };
        tokio::select! {
            action = answered => action,
            () = world.life.ended() => None,
        }
    }
}

/// What a player sends once the claim is made.
pub enum PlayInput {
    /// An action, and (for `PlayAct`) where to say whether it was taken.
    Action(
        pb::PlayAction,
        Option<tokio::sync::oneshot::Sender<Result<(), String>>>,
    ),
    NotAnAction,
}

/// A claimed character: the world, the character's id, the turns the world offers it
/// and the stream to the person.
pub struct OpenSeat {
    world: std::sync::Arc<World>,
    id: String,
    turns: SeatTurns,
    out: tokio::sync::mpsc::Sender<pb::PlayResponse>,
    rx: tokio::sync::mpsc::Receiver<pb::PlayResponse>,
    /// Forwards what the character perceives; stopped when the seat closes, so the
    /// person's stream ends with it.
    follower: tokio::task::JoinHandle<()>,
}

/// A play item as the person's stream carries it.
fn play_item(item: pb::play_response::Item) -> pb::PlayResponse {
    pb::PlayResponse { item: Some(item) }
}

impl OpenSeat {
    /// Claims `claim.character` of `world` for a person and starts forwarding what it
    /// perceives; the first item on the stream says which character was claimed.
    pub fn open(
        world: std::sync::Arc<World>,
        claim: &pb::PlayClaim,
        player: Option<&str>,
    ) -> Result<Self, WorldError> {
        // The story waits for the person (other steps wait behind the turn), so the wait
        // is capped.
        let longest = world.limits.seat_wait;
        let timeout = if claim.timeout_ms == 0 {
            std::time::Duration::from_secs(60).min(longest)
        } else {
            std::time::Duration::from_millis(u64::from(claim.timeout_ms)).min(longest)
        };
        let (id, turns) = world.claim(&claim.character, timeout, player)?;
        let (out, rx) = tokio::sync::mpsc::channel(256);
        // Room for this was just made; nothing can fill the channel first.
        let _ = out.try_send(play_item(pb::play_response::Item::Claimed(id.clone())));
        let from = if claim.from_seq == 0 {
            world.hub().next_seq()
        } else {
            claim.from_seq
        };
        let follower = world.follow_as(&id, from, out.clone(), |item| {
            play_item(match item {
                pb::watch_response::Item::Event(e) => pb::play_response::Item::Event(e),
                pb::watch_response::Item::Token(t) => pb::play_response::Item::Token(t),
            })
        });
        Ok(Self {
            world,
            id,
            turns,
            out,
            rx,
            follower,
        })
    }

    /// The world the seat is in.
    #[must_use]
    pub fn world_id(&self) -> &str {
        self.world.id()
    }

    /// Sends the person an item before the seat starts (a seat token).
    pub async fn tell(&self, item: pb::play_response::Item) {
        // The person may have hung up: the seat closes with their stream.
        let _ = self.out.send(play_item(item)).await;
    }

    /// Runs the seat until the person leaves (`inputs` ends or the stream to them
    /// closes): offers each turn, passes the person's action on, tells them when the
    /// agent took a turn back. Then gives the character back and calls `closed`.
    pub fn start(
        self,
        inputs: impl Stream<Item = PlayInput> + Send + Unpin + 'static,
        closed: impl FnOnce() + Send + 'static,
    ) -> tokio::sync::mpsc::Receiver<pb::PlayResponse> {
        let Self {
            world,
            id,
            mut turns,
            out,
            rx,
            follower,
        } = self;
        let mut inputs = inputs;
        tokio::spawn(async move {
            let notice = |text: &str| play_item(pb::play_response::Item::Notice(text.to_owned()));
            let mut pending: Option<TurnRequest> = None;
            loop {
                let handed_back = async {
                    match pending.as_mut() {
                        Some(turn) => turn.taken_back().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    offer = turns.next() => {
                        let Some(mut offer) = offer else {
                            // The world closed the seat: it was deleted.
                            let _ = out.send(notice("This world was deleted; your seat is closed.")).await;
                            break;
                        };
                        let turn = pb::YourTurn {
                            frame: Some(std::mem::take(&mut offer.frame)),
                            timeout_ms: dramatis_runtime::saturating_u32(offer.timeout.as_millis()),
                        };
                        pending = Some(offer);
                        if out.send(play_item(pb::play_response::Item::YourTurn(turn))).await.is_err() {
                            break;
                        }
                    }
                    () = handed_back => {
                        pending = None;
                        // A notice to a person who has hung up reaches no one; the seat
                        // closes with the stream.
                        let _ = out.send(notice("Too late: your character's agent took this turn.")).await;
                    }
                    () = out.closed() => break,
                    input = inputs.next() => match input {
                        Some(PlayInput::Action(a, accepted)) => {
                            let longest = world.limits.max_line_chars;
                            let over = a.text.chars().count().max(a.thought.chars().count());
                            let taken = match pending.take() {
                                Some(reply) if over > longest => {
                                    pending = Some(reply);
                                    Err(format!("That line has {over} characters; the limit is {longest}. Say it shorter."))
                                }
                                Some(turn) => turn
                                    .play(pb::Action {
                                        kind: a.kind,
                                        text: a.text,
                                        target: a.target,
                                        destination: a.destination,
                                        thought: a.thought,
                                        usage: None,
                                        fallback: false,
                                        // A person's turn leaves the agent's state as
                                        // it was; a client cannot write it.
                                        actor_state: String::new(),
                                    })
                                    .map_err(|_| "Too late: your character's agent took this turn.".to_owned()),
                                None => Err("It is not your turn yet.".to_owned()),
                            };
                            if let Err(text) = &taken {
                                // A notice to a person who has hung up reaches no one; the
                                // seat closes with the stream.
                                let _ = out.send(notice(text)).await;
                            }
                            if let Some(accepted) = accepted {
                                // The turn may have stopped waiting (handed back to the
                                // agent); the answer then has no taker.
                                let _ = accepted.send(taken);
                            }
                        }
                        Some(PlayInput::NotAnAction) => {
                            // A notice to a person who has hung up reaches no one; the seat
                            // closes with the stream.
                            let _ = out.send(notice("Send actions only; the claim is made.")).await;
                        }
                        None => break,
                    },
                }
            }
            world.release(&id);
            follower.abort();
            closed();
        });
        rx
    }
}
