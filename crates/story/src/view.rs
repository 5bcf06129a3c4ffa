//! What one watcher sees of a world's transcript: all of it, or one character's point
//! of view. A view keeps the world's state as of the last event it took in, so a
//! chunk of a line reaches the character only if it is where the line is spoken, an
//! event shows people as the character knew them then, and the view knows when the
//! story is over. The owner of a world and a replica reading the shared log filter
//! with the same view, so a watch shows the same items wherever it is served.

use std::sync::{Arc, PoisonError, RwLock};

use dramatis_proto::v1::{Event, watch_response::Item};
use dramatis_scenario::Scenario;

use crate::names::Perspective;
use crate::perception::PerceptionRouter;
use crate::state::WorldState;

/// A story's scenario as it is now, shared by a world and its watchers' views. It
/// changes only when the director brings a character new to the story in, and it
/// changes before the first event that names the newcomer, so every view built on it
/// knows the newcomer (and masks its name) from its entrance on.
#[derive(Debug, Clone)]
pub struct SharedScenario(Arc<RwLock<Arc<Scenario>>>);

impl SharedScenario {
    /// The scenario now.
    #[must_use]
    pub fn now(&self) -> Arc<Scenario> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts `scenario` in its place, for every holder.
    pub fn replace(&self, scenario: Arc<Scenario>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = scenario;
    }
}

impl From<Arc<Scenario>> for SharedScenario {
    fn from(scenario: Arc<Scenario>) -> Self {
        Self(Arc::new(RwLock::new(scenario)))
    }
}

/// One watcher's view of a world.
#[derive(Debug, Clone)]
pub struct View {
    scenario: SharedScenario,
    world_id: String,
    /// The character whose point of view it is; everything when `None`.
    pov: Option<String>,
    state: WorldState,
    /// The seq of the next event the state takes in.
    next: u64,
}

/// The seq an item belongs to: an event's own, or that of the line a chunk is part of.
#[must_use]
pub fn seq_of(item: &Item) -> u64 {
    match item {
        Item::Event(event) => event.seq,
        Item::Token(token) => token.seq,
    }
}

impl View {
    /// A view of `world_id` from its start.
    #[must_use]
    pub fn new(scenario: impl Into<SharedScenario>, world_id: &str, pov: Option<String>) -> Self {
        let scenario = scenario.into();
        let state = WorldState::initial(&scenario.now());
        Self {
            scenario,
            world_id: world_id.to_owned(),
            pov,
            state,
            next: 1,
        }
    }

    /// The seq of the next event this view takes in: every event before it is in its
    /// state, and an item of a later seq needs those between first.
    #[must_use]
    pub fn next_seq(&self) -> u64 {
        self.next
    }

    /// Takes in `event` without showing it (one before the watch's start). An event the
    /// state already holds, or one past a gap, changes nothing.
    pub fn pass(&mut self, event: &Event) {
        if event.seq == self.next {
            self.state.apply(&self.scenario.now(), event);
            self.next += 1;
        }
    }

    /// `item` as this view shows it: `None` for what its character did not perceive.
    /// An event is taken in first.
    pub fn see(&mut self, item: Item) -> Option<Item> {
        if let Item::Event(event) = &item {
            self.pass(event);
        }
        let Some(me) = &self.pov else {
            return Some(item);
        };
        PerceptionRouter::item_for(
            item,
            &Perspective {
                scenario: &self.scenario.now(),
                world_id: &self.world_id,
                known: &self.state.acquaintances,
                attention: &self.state.attention,
                me,
            },
        )
    }

    /// Whether the story is over as far as this view has read.
    #[must_use]
    pub fn finished(&self) -> bool {
        self.state.finished(&self.scenario.now())
    }
}

#[cfg(test)]
mod tests {
    use dramatis_proto::v1::{EventKind, TokenChunk};

    use super::*;
    use crate::test_scenarios::scripted;

    fn event(seq: u64, kind: EventKind, location: &str, perceivers: &[&str], text: &str) -> Event {
        Event {
            seq,
            world_id: "w".into(),
            kind: kind.into(),
            location: location.into(),
            perceivers: perceivers.iter().map(|p| (*p).to_owned()).collect(),
            text: text.into(),
            ..Event::default()
        }
    }

    fn token(seq: u64, text: &str, hearers: &[&str]) -> Item {
        Item::Token(TokenChunk {
            seq,
            speaker: "holmes".into(),
            text: text.into(),
            perceivers: hearers.iter().map(|h| (*h).to_owned()).collect(),
            ..TokenChunk::default()
        })
    }

    #[test]
    fn a_point_of_view_sees_only_what_its_character_perceived_and_follows_the_story() {
        let scenario = Arc::new(scripted());
        let mut all = View::new(Arc::clone(&scenario), "w", None);
        let mut lestrade = View::new(Arc::clone(&scenario), "w", Some("lestrade".into()));
        let line = event(
            1,
            EventKind::Speech,
            "lab",
            &["holmes", "watson"],
            "At the lab.",
        );
        assert!(all.see(Item::Event(line.clone())).is_some());
        assert!(lestrade.see(Item::Event(line)).is_none(), "not there");
        assert_eq!(lestrade.next_seq(), 2, "the state took it in all the same");
        let at_the_lab = || token(2, "words at the lab", &["holmes", "watson"]);
        assert_eq!(seq_of(&at_the_lab()), 2);
        assert!(
            lestrade.see(at_the_lab()).is_none(),
            "no words of a line spoken elsewhere"
        );
        assert!(all.see(at_the_lab()).is_some());
        let mut watson = View::new(scenario, "w", Some("watson".into()));
        match watson.see(at_the_lab()) {
            Some(Item::Token(heard)) => {
                assert_eq!(heard.text, "words at the lab");
                assert!(
                    heard.speaker.starts_with("person-"),
                    "a stranger to him yet"
                );
            }
            other => panic!("watson hears the words: {other:?}"),
        }
    }

    #[test]
    fn an_event_out_of_order_moves_nothing() {
        let scenario = Arc::new(scripted());
        let mut view = View::new(scenario, "w", None);
        view.pass(&event(
            2,
            EventKind::Speech,
            "lab",
            &["holmes"],
            "Too early.",
        ));
        assert_eq!(view.next_seq(), 1, "a gap is not skipped");
        let first = event(1, EventKind::Speech, "lab", &["holmes"], "First.");
        view.pass(&first);
        view.pass(&first);
        assert_eq!(view.next_seq(), 2, "an event is taken in once");
        assert!(!view.finished());
    }
}
