use std::collections::BTreeMap;

use super::*;
use crate::modules::test_mind::TestMind;
use crate::reverie::{Annotation, Moment};

/// The test mind's vectors are this long.
const DIMENSION: usize = 64;

fn perceived(seq: u64, kind: PerceivedKind, speaker: &str, target: &str, text: &str) -> Perceived {
    let name = |id: &str| match id {
        "holmes" => "Holmes".to_owned(),
        "watson" => "Watson".to_owned(),
        other => other.to_owned(),
    };
    Perceived {
        seq,
        scene_id: "lab".into(),
        kind,
        speaker: speaker.into(),
        speaker_name: name(speaker),
        target: target.into(),
        target_name: name(target),
        text: text.into(),
        thought: String::new(),
        perceivers: vec!["holmes".into(), "watson".into()],
        perceiver_names: vec!["Holmes".into(), "Watson".into()],
        others: 0,
        place_description: String::new(),
        own_state: String::new(),
    }
}

fn draft() -> SceneDraft {
    SceneDraft {
        scene_id: "lab".into(),
        events: vec![
            perceived(
                1,
                PerceivedKind::SceneStart,
                "",
                "",
                "The laboratory at Bart's",
            ),
            perceived(
                2,
                PerceivedKind::Speech,
                "holmes",
                "watson",
                "You have been in Afghanistan.",
            ),
            perceived(
                3,
                PerceivedKind::Speech,
                "watson",
                "holmes",
                "How on earth did you know?",
            ),
            perceived(4, PerceivedKind::Action, "holmes", "", "pricks his finger"),
            perceived(5, PerceivedKind::SceneEnd, "", "", ""),
        ],
        moments: vec![Moment {
            seq: 3,
            felt: Annotation {
                emotion: "surprise".into(),
                intensity: 1.0,
                intent: "learn how".into(),
                trigger: "You have been in Afghanistan.".into(),
                trigger_pieces: Vec::new(),
            },
        }],
        names: BTreeMap::from([("holmes".to_owned(), "Holmes".to_owned())]),
    }
}

const WATSON: Author<'static> = Author {
    id: "watson",
    name: "Watson",
};

#[test]
fn the_digest_is_first_person_and_in_story_order() {
    assert_eq!(
        digest(WATSON, &draft()),
        "The laboratory at Bart's. I was with Holmes. Holmes said to me: \"You have been \
         in Afghanistan.\" I said to Holmes: \"How on earth did you know?\" Holmes pricks \
         his finger. I felt surprise; I wanted to learn how."
    );
}

#[test]
fn in_a_crowd_the_digest_names_whom_the_lines_named_and_counts_the_rest() {
    let mut crowd = draft();
    // Each copy named Holmes and Watson, and 37 more were on the square.
    for event in &mut crowd.events {
        event.others = 37;
    }
    assert!(
        digest(WATSON, &crowd).starts_with(
            "The laboratory at Bart's. I was with Holmes and 37 others. Holmes said to me:"
        ),
        "{}",
        digest(WATSON, &crowd)
    );
}

#[tokio::test]
async fn facts_carry_the_perceivers_and_the_route() {
    let written = write_scene(WATSON, &draft(), &TestMind::default())
        .await
        .expect("written");
    let facts: Vec<(&str, VisibilityRoute)> = written
        .facts
        .iter()
        .map(|(f, _)| (f.id.as_str(), f.route))
        .collect();
    assert_eq!(
        facts,
        [
            ("fact:e2", VisibilityRoute::DirectExperience),
            ("fact:e3", VisibilityRoute::DirectExperience),
            ("fact:e4", VisibilityRoute::Observation)
        ]
    );
    assert!(written.facts.iter().all(|(f, v)| {
        f.visibility == BTreeSet::from(["holmes".to_owned(), "watson".to_owned()])
            && v.len() == DIMENSION
    }));
    assert_eq!(written.transitions.len(), 1);
    assert_eq!(written.transitions[0].trigger_vector.len(), DIMENSION);
    assert_eq!(written.episode.0.id, "episode:lab");
    assert_eq!(written.episode.0.text, digest(WATSON, &draft()));
}

/// Being there is knowing the place: a scene's start that carries the place's look is
/// a fact of what the character saw, from its arrival, visible to those who were
/// there, and only them. The scene's writing at its end does not repeat it.
#[tokio::test]
async fn the_place_a_scene_opens_in_is_remembered_as_seen_by_those_there() {
    let mut draft = draft();
    draft.events[0].place_description = "A lofty room lined with bottles and retorts.".into();
    draft.events[0].perceivers = vec!["watson".into()];
    let arrived = arrival_facts(WATSON, &draft.events, &TestMind::default())
        .await
        .expect("written");
    let [(place, vector)] = arrived.as_slice() else {
        panic!("one fact of the place: {arrived:?}");
    };
    assert_eq!(place.id, "fact:e1");
    assert_eq!(
        place.text,
        "The laboratory at Bart's. A lofty room lined with bottles and retorts."
    );
    assert_eq!(place.subject, "Watson");
    assert_eq!(place.visibility, BTreeSet::from(["watson".to_owned()]));
    assert_eq!(vector.len(), DIMENSION);
    let written = write_scene(WATSON, &draft, &TestMind::default())
        .await
        .expect("written");
    assert!(written.facts.iter().all(|(f, _)| f.id != "fact:e1"));
    // Without a description the scene's start is no fact, as before.
    let plain = arrival_facts(WATSON, &self::draft().events, &TestMind::default())
        .await
        .expect("written");
    assert!(plain.is_empty());
}

#[tokio::test]
async fn one_call_rewrites_a_scene_and_facts_cite_its_perceived_lines_only() {
    let mind = TestMind::replying(&[r#"{"summary":"I met a remarkable man.",
            "facts":[
            {"line":2,"subject":"Holmes","predicate":"knew","object":"my service","cause":"my tan"},
            {"line":99,"subject":"x","predicate":"y","object":"z","cause":""}]}"#]);
    let rewritten = rewrite_scene(WATSON, &draft(), &mind)
        .await
        .expect("rewritten");
    let prompts = mind.prompts();
    assert_eq!(prompts.len(), 1);
    assert!(prompts[0].contains("a scene you just lived through"));
    assert_eq!(rewritten.spent.calls, 1);
    assert!(prompts[0].contains("1. -- The laboratory"));
    assert!(prompts[0].contains("2. Holmes (to you)"));
    assert!(prompts[0].contains("You felt surprise"));
    let (episode, vector) = rewritten.episode.as_ref().expect("a new memory");
    assert_eq!(
        (episode.id.as_str(), episode.text.as_str()),
        ("episode:lab", "I met a remarkable man.")
    );
    assert_eq!(vector.len(), DIMENSION);
    assert_eq!(rewritten.facts.len(), 1, "line 99 was never perceived");
    let (fact, vector) = &rewritten.facts[0];
    assert_eq!(fact.text, "Holmes knew my service because my tan");
    assert_eq!(fact.id, "fact:e2:2", "line 2 is the scene's second line");
    assert_eq!(vector.len(), DIMENSION);
}

#[tokio::test]
async fn an_empty_or_unusable_rewrite_keeps_the_digest() {
    for reply in [r#"{"summary":"","facts":[]}"#, "I remember nothing."] {
        let mind = TestMind::replying(&[reply]);
        let rewritten = rewrite_scene(WATSON, &draft(), &mind)
            .await
            .expect("rewritten");
        assert!(rewritten.episode.is_none(), "{reply}");
        assert!(rewritten.facts.is_empty());
        assert_eq!(rewritten.spent.calls, 1, "the call is still counted");
    }
}
