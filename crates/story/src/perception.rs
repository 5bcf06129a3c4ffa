//! The perception router: decides, for every event, which characters perceive it; each
//! one's copy is rendered by its [`Perspective`]. This is where the one invariant is
//! kept: an agent is only ever sent what its character perceived, with other people's
//! thoughts removed and other people named only as it knows them.

use dramatis_proto::v1::watch_response;

use crate::drafts::Draft;
use crate::names::Perspective;

use crate::state::WorldState;

/// Who perceives an event.
#[derive(Debug, Clone, Copy, Default)]
pub struct PerceptionRouter;

impl PerceptionRouter {
    /// Who perceives `draft` in `state` (and, for a movement, who of them saw it leave):
    /// those told of a private event only; for any other, as [`Self::perceivers`] says.
    #[must_use]
    pub fn of_draft(state: &WorldState, draft: &Draft) -> (Vec<String>, Vec<String>) {
        if draft.private {
            let mut told = draft.told.clone();
            told.sort();
            told.dedup();
            return (told, Vec::new());
        }
        Self::perceivers(state, &draft.location, draft.origin.as_deref(), &draft.told)
    }

    /// Perceivers of an event happening at `location`: everyone present there, plus
    /// `told` (characters who perceive it though they are not there yet: an arriving
    /// traveller). For movement, `origin` adds those who saw the actor leave, who are
    /// also returned apart (the actor among them), so each side sees only its own.
    #[must_use]
    pub fn perceivers(
        state: &WorldState,
        location: &str,
        origin: Option<&str>,
        told: &[String],
    ) -> (Vec<String>, Vec<String>) {
        let mut who = state.present_at(location);
        let at_origin = origin.map(|o| state.present_at(o)).unwrap_or_default();
        who.extend(at_origin.iter().cloned());
        who.extend(told.iter().cloned());
        who.sort();
        who.dedup();
        (who, at_origin)
    }

    /// A transcript item as `view`'s character sees it: an event as its agent received
    /// it, or the words of a line spoken where it is; `None` for anything it did not
    /// perceive.
    #[must_use]
    pub fn item_for(
        item: watch_response::Item,
        view: &Perspective<'_>,
    ) -> Option<watch_response::Item> {
        match item {
            watch_response::Item::Event(event) => {
                view.event(&event).map(watch_response::Item::Event)
            }
            watch_response::Item::Token(token) => {
                view.token(&token).map(watch_response::Item::Token)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use dramatis_proto::v1::{Event, TokenChunk};

    use super::*;
    use crate::state::WorldState;
    use crate::test_scenarios::scripted;

    #[test]
    fn movement_is_seen_at_both_ends_each_side_apart_and_a_traveller_sees_its_arrival() {
        let scenario = scripted();
        let state = WorldState::initial(&scenario);
        // Holmes at the lab; Watson and Lestrade at the bar.
        let (leaving, at_origin) = PerceptionRouter::perceivers(&state, "lab", Some("bar"), &[]);
        assert_eq!(leaving, ["holmes", "lestrade", "watson"]);
        assert_eq!(at_origin, ["lestrade", "watson"]);
        let (at_bar, none) = PerceptionRouter::perceivers(&state, "bar", None, &[]);
        assert_eq!(at_bar, ["lestrade", "watson"]);
        assert!(none.is_empty());
        let (told, _) = PerceptionRouter::perceivers(&state, "cellar", None, &["holmes".into()]);
        assert_eq!(told, ["holmes"], "an empty place: only the one told");
    }

    #[test]
    fn a_point_of_view_gets_the_words_of_lines_spoken_where_it_is_only_by_handle() {
        let scenario = scripted();
        let state = WorldState::initial(&scenario);
        let watson = Perspective {
            scenario: &scenario,
            world_id: "w",
            known: &state.acquaintances,
            attention: &state.attention,
            me: "watson",
        };
        let token = |hearers: &[&str]| {
            watch_response::Item::Token(TokenChunk {
                seq: 4,
                speaker: "holmes".into(),
                speaker_name: "Sherlock Holmes".into(),
                text: "You have ".into(),
                perceivers: hearers.iter().map(|h| (*h).to_owned()).collect(),
            })
        };
        match PerceptionRouter::item_for(token(&["holmes", "watson"]), &watson) {
            Some(watch_response::Item::Token(heard)) => {
                assert_eq!(heard.text, "You have ");
                assert_eq!(heard.speaker_name, "a tall young man with a test-tube");
                assert!(heard.speaker.starts_with("person-"), "{}", heard.speaker);
                assert_eq!(heard.perceivers, [heard.speaker.clone(), "watson".into()]);
            }
            other => panic!("watson hears the words: {other:?}"),
        }
        assert!(PerceptionRouter::item_for(token(&["holmes"]), &watson).is_none());
        let event = watch_response::Item::Event(Event {
            thought: "secret".into(),
            speaker: "holmes".into(),
            perceivers: vec!["holmes".into(), "watson".into()],
            ..Event::default()
        });
        match PerceptionRouter::item_for(event, &watson) {
            Some(watch_response::Item::Event(seen)) => assert_eq!(seen.thought, ""),
            other => panic!("watson perceives the event: {other:?}"),
        }
    }
}
