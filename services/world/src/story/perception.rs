//! The perception router: decides, for every event, which characters perceive it, and
//! what each of them receives. This is where the one invariant is kept — an agent is
//! only ever sent what its character perceived, with other people's thoughts removed.

use dramatis_proto::v1::{Event, EventKind, watch_response};

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

    /// A transcript item as `character`'s point of view shows it: an event as its
    /// agent received it, or the words of a line spoken where it is; `None` for
    /// anything it did not perceive.
    #[must_use]
    pub fn item_for(item: watch_response::Item, character: &str) -> Option<watch_response::Item> {
        match item {
            watch_response::Item::Event(event) => {
                Self::view_for(&event, character).map(watch_response::Item::Event)
            }
            watch_response::Item::Token(token) => token
                .perceivers
                .iter()
                .any(|p| p == character)
                .then_some(watch_response::Item::Token(token)),
        }
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

    #[test]
    fn movement_is_seen_at_both_ends_and_a_traveller_sees_its_arrival() {
        use crate::story::state::WorldState;
        use crate::story::test_scenarios::scripted;
        let scenario = scripted();
        let state = WorldState::initial(&scenario);
        // Holmes at the lab; Watson and Lestrade at the bar.
        let leaving = PerceptionRouter::perceivers(&state, "lab", Some("bar"), &[]);
        assert_eq!(leaving, ["holmes", "lestrade", "watson"]);
        let at_bar = PerceptionRouter::perceivers(&state, "bar", None, &[]);
        assert_eq!(at_bar, ["lestrade", "watson"]);
        let told = PerceptionRouter::perceivers(&state, "cellar", None, &["holmes".into()]);
        assert_eq!(told, ["holmes"], "an empty place: only the one told");
    }

    #[test]
    fn a_scene_end_keeps_its_reason_from_perceivers_and_usage_is_not_perceived() {
        let event = Event {
            kind: EventKind::SceneEnd as i32,
            text: "The beat was reached: Holmes deduces Afghanistan.".into(),
            perceivers: vec!["watson".into()],
            usage: Some(dramatis_proto::v1::Usage {
                llm_calls: 3,
                ..Default::default()
            }),
            ..Event::default()
        };
        let view = PerceptionRouter::view_for(&event, "watson").expect("perceived");
        assert_eq!(view.text, "The scene ends.");
        assert_eq!(view.usage, None);
    }

    #[test]
    fn a_point_of_view_gets_the_words_of_lines_spoken_where_it_is_only() {
        use dramatis_proto::v1::TokenChunk;
        let token = |hearers: &[&str]| {
            watch_response::Item::Token(TokenChunk {
                seq: 4,
                speaker: "holmes".into(),
                text: "You have ".into(),
                perceivers: hearers.iter().map(|h| (*h).to_owned()).collect(),
                ..TokenChunk::default()
            })
        };
        assert!(PerceptionRouter::item_for(token(&["holmes", "watson"]), "watson").is_some());
        assert!(PerceptionRouter::item_for(token(&["holmes"]), "watson").is_none());
        let event = watch_response::Item::Event(Event {
            thought: "secret".into(),
            speaker: "holmes".into(),
            perceivers: vec!["holmes".into(), "watson".into()],
            ..Event::default()
        });
        match PerceptionRouter::item_for(event, "watson") {
            Some(watch_response::Item::Event(seen)) => assert_eq!(seen.thought, ""),
            other => panic!("watson perceives the event: {other:?}"),
        }
    }
}
