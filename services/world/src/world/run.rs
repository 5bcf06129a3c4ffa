//! Running the story: `advance` takes one step after another (each under the step
//! lock, see the lock order in `mod.rs`) until the run is done, a person's turn offered
//! and waited for without that lock.

use dramatis_proto::v1::{self as pb, Event};
use tracing::{Instrument, info_span};

use super::{Until, World};
use crate::error::WorldError;
use dramatis_story::drafts::{self, Draft};
use dramatis_story::narration_guard;
use dramatis_story::scheduler::{Step, next_step};
use dramatis_story::state::WorldState;

/// Where one `advance` call is: what it has produced and how many turns it ran.
struct Run {
    until: Until,
    produced: Vec<Event>,
    turns: u32,
}

impl World {
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
}
