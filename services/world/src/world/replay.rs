//! A world replaying a logged run (`CreateWorldRequest.replay`): each turn is played
//! from the next line of the log instead of by the character's agent, so a story a
//! model played can be walked again, position by position, without that model. The
//! scheduler, perception, names and memory all run as in any world; only where a line
//! comes from changes. The replay checks that the story it drives follows the log:
//! the same character acts, at the same turn of its scene.

use std::collections::VecDeque;

use dramatis_proto::v1::{Action, ActionKind, Event, EventKind};
use dramatis_scenario::Scenario;
use dramatis_story::drafts::{Draft, resolve};
use dramatis_story::names::Perspective;
use dramatis_story::state::WorldState;

use crate::error::WorldError;

/// The lines still to play, in log order.
#[derive(Debug)]
pub(crate) struct Replay {
    lines: std::sync::Mutex<VecDeque<Event>>,
    /// Lines the log held.
    total: usize,
}

impl Replay {
    /// The replay of `events` (a transcript of a run of `scenario`), or none when there
    /// are no events. Refuses an open story (its narrator's judgements are not in the
    /// log as decisions), a log holding a director's event, events out of order, and a
    /// line by someone not in the cast.
    pub fn new(scenario: &Scenario, events: Vec<Event>) -> Result<Option<Self>, WorldError> {
        if events.is_empty() {
            return Ok(None);
        }
        let refuse = |why: String| Err(WorldError::InvalidArgument(format!("replay: {why}")));
        if scenario.open.is_some() {
            return refuse(format!(
                "{} is an open story; a replay plays a script (an open story's narrator \
                 is not replayed)",
                dramatis_runtime::quote(&scenario.name)
            ));
        }
        let mut last = 0;
        let mut lines = VecDeque::new();
        for event in events {
            if event.seq <= last {
                return refuse(format!(
                    "event {} comes after event {last}; give the log in order",
                    event.seq
                ));
            }
            last = event.seq;
            if event.director {
                return refuse(format!(
                    "event {} is the director's; a replay plays the characters' lines only",
                    event.seq
                ));
            }
            if event.turn == 0 {
                continue;
            }
            if scenario.character(&event.speaker).is_none() {
                return refuse(format!(
                    "event {} is spoken by {}, who is not in the cast of {}",
                    event.seq,
                    dramatis_runtime::quote(&event.speaker),
                    dramatis_runtime::quote(&scenario.name)
                ));
            }
            lines.push_back(event);
        }
        let total = lines.len();
        Ok(Some(Self {
            lines: std::sync::Mutex::new(lines),
            total,
        }))
    }

    /// `actor`'s turn in `state`, played from the next logged line. Fails when the log
    /// is played out, or when its next line is someone else's or at another turn: the
    /// story no longer follows the log.
    pub fn next(
        &self,
        view: Perspective<'_>,
        state: &WorldState,
        actor: &str,
    ) -> Result<Draft, WorldError> {
        let mut lines = dramatis_runtime::lock(&self.lines);
        let Some(line) = lines.front() else {
            return Err(WorldError::NotNow(format!(
                "replay: the log's {} lines are played; the story goes no further",
                self.total
            )));
        };
        let turn = state.scene_turn + 1;
        if line.speaker != actor || line.turn != turn {
            return Err(WorldError::NotNow(format!(
                "replay: the story left the log: it gives turn {turn} of its scene to {}, the log's \
                 next line (event {}) is turn {} by {}",
                dramatis_runtime::quote(actor),
                line.seq,
                line.turn,
                dramatis_runtime::quote(&line.speaker)
            )));
        }
        let draft = replayed(view, state, line);
        if draft.kind != line.kind() {
            return Err(WorldError::NotNow(format!(
                "replay: event {} is a {:?} the story cannot play here (it would be a {:?})",
                line.seq,
                line.kind(),
                draft.kind
            )));
        }
        lines.pop_front();
        Ok(draft)
    }
}

/// The draft of a logged line played again: its action resolved against the rules as
/// the agent's was, and its target, usage and fallback mark as logged.
fn replayed(view: Perspective<'_>, state: &WorldState, line: &Event) -> Draft {
    let kind = match line.kind() {
        EventKind::Action => ActionKind::Action,
        EventKind::Movement => ActionKind::Movement,
        _ => ActionKind::Speech,
    };
    let action = Action {
        kind: kind as i32,
        text: line.text.clone(),
        destination: if line.destination.is_empty() {
            line.location.clone()
        } else {
            line.destination.clone()
        },
        thought: line.thought.clone(),
        usage: line.usage,
        fallback: line.fallback,
        actor_state: line.actor_state.clone(),
        ..Action::default()
    };
    let mut draft = resolve(view, state, &action);
    if draft.kind != EventKind::Movement {
        // The target as logged: the agent named it as it knew that character then,
        // which the log keeps only as the id.
        draft.target.clone_from(&line.target);
    }
    draft
}
