//! The perception router: decides, for every event, which characters perceive it, and
//! what each of them receives. This is where the one invariant is kept — an agent is
//! only ever sent what its character perceived, with other people's thoughts removed.

use dramatis_proto::v1::{Event, EventKind};

use crate::story::state::WorldState;

/// Who perceives an event.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerceptionRouter;

impl PerceptionRouter {
    /// Perceivers of an event happening at `location`: everyone present there, plus
    /// `told` (characters addressed directly through some channel of their own, such
    /// as a letter). For movement, `origin` adds those who saw the actor leave.
    #[must_use]
    pub fn perceivers(
        state: &WorldState,
        location: &str,
        origin: Option<&str>,
        told: &[String],
    ) -> Vec<String> {
        let mut who = state.present_at(location);
        if let Some(origin) = origin {
            who.extend(state.present_at(origin));
        }
        who.extend(told.iter().cloned());
        who.sort();
        who.dedup();
        who
    }

    /// The event as `character` receives it, or `None` if it did not perceive it.
    /// Only the actor keeps the private thought.
    #[must_use]
    pub fn view_for(event: &Event, character: &str) -> Option<Event> {
        if !event.perceivers.iter().any(|p| p == character) {
            return None;
        }
        let mut view = event.clone();
        if view.speaker != character {
            view.thought.clear();
        }
        // Usage figures are bookkeeping of the world, not something perceived.
        view.usage = None;
        if view.kind() == EventKind::SceneEnd {
            // The end reason may name the hidden beat; perceivers only learn it ended.
            view.text = "The scene ends.".into();
        }
        Some(view)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thoughts_reach_only_the_actor_and_absent_characters_get_nothing() {
        let event = Event {
            speaker: "holmes".into(),
            kind: EventKind::Speech as i32,
            text: "You have been in Afghanistan.".into(),
            thought: "His tan stops at the wrists.".into(),
            perceivers: vec!["holmes".into(), "watson".into()],
            ..Event::default()
        };
        let holmes = PerceptionRouter::view_for(&event, "holmes").expect("actor perceives");
        let watson = PerceptionRouter::view_for(&event, "watson").expect("watson perceives");
        assert_eq!(holmes.thought, "His tan stops at the wrists.");
        assert_eq!(watson.thought, "");
        assert_eq!(watson.text, "You have been in Afghanistan.");
        assert!(PerceptionRouter::view_for(&event, "lestrade").is_none());
    }
}
