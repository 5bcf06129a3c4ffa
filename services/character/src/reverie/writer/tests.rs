use dramatis_embed::FakeEmbedder;
use dramatis_llm::{ScriptRule, ScriptedModel};

use std::collections::BTreeMap;

use super::*;
use crate::shard::Moment;

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
            emotion: "surprise".into(),
            intensity: 1.0,
            intent: "learn how".into(),
            trigger: "You have been in Afghanistan.".into(),
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

#[tokio::test]
async fn facts_carry_the_perceivers_and_the_route() {
    let written = write_scene(WATSON, &draft(), &FakeEmbedder::new(8))
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
        f.visibility == BTreeSet::from(["holmes".to_owned(), "watson".to_owned()]) && v.len() == 8
    }));
    assert_eq!(written.transitions.len(), 1);
    assert_eq!(written.transitions[0].trigger_vector.len(), 8);
    assert_eq!(written.episode.0.id, "episode:lab");
    assert_eq!(written.episode.0.text, digest(WATSON, &draft()));
}

#[tokio::test]
async fn one_call_rewrites_a_batch_of_scenes_and_facts_cite_perceived_lines_only() {
    let mut second = draft();
    second.scene_id = "street".into();
    for event in &mut second.events {
        event.seq += 10;
    }
    let model = ScriptedModel::new(vec![ScriptRule {
        when: vec!["2 scenes you lived through".into()],
        reply: r#"{"memories":[{"summary":"I met a remarkable man."},{"summary":""}],
            "facts":[
            {"line":7,"subject":"Holmes","predicate":"knew","object":"my service","cause":"my tan"},
            {"line":99,"subject":"x","predicate":"y","object":"z","cause":""}]}"#
            .into(),
    }]);
    let rewritten = rewrite_scenes(WATSON, &[draft(), second], &model, &FakeEmbedder::new(8))
        .await
        .expect("rewritten");
    assert_eq!(model.calls(), 1, "one call for the batch");
    assert_eq!(rewritten.usage.llm_calls, 1);
    assert!(rewritten.prompt.contains("Scene 2:\n5. -- The laboratory"));
    assert!(rewritten.prompt.contains("6. Holmes (to you)"));
    let episodes: Vec<(&str, &str)> = rewritten
        .episodes
        .iter()
        .map(|(e, _)| (e.id.as_str(), e.text.as_str()))
        .collect();
    assert_eq!(
        episodes,
        [("episode:lab", "I met a remarkable man.")],
        "an empty summary keeps the digest"
    );
    assert_eq!(rewritten.facts.len(), 1, "line 99 was never perceived");
    let (fact, vector) = &rewritten.facts[0];
    assert_eq!(fact.text, "Holmes knew my service because my tan");
    assert_eq!(
        fact.id, "fact:e13:7",
        "line 7 is the second scene's third line"
    );
    assert_eq!(vector.len(), 8);
}
