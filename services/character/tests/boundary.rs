//! The boundary guard on both paths: a model that answers with a canary from another
//! character's facts (words Watson's shard, profile and frame never held) has that line
//! flagged in the audit, retried once with the words named as unknown, and replaced by
//! an in-character deflection when the retry still has them, in `Act` and in `Answer`.

use std::sync::Arc;

use dramatis_character::{AgentOptions, CharacterAgents, GuardMode};
use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptRule, ScriptedModel};
use dramatis_proto::v1::{CharacterProfile, KnownFact, PresentCharacter, SceneFrame};

/// Lestrade's secret, which only a leak could put in Watson's mouth.
const CANARY: &str = "KESTREL-9";
const LEAK: &str = "The crates for Enoch Drebber are marked KESTREL-9.";

fn leaking_model() -> ScriptedModel {
    ScriptedModel::new(vec![
        ScriptRule {
            when: vec!["Question:".into()],
            reply: LEAK.into(),
        },
        ScriptRule {
            when: vec!["Character: John Watson".into()],
            reply: format!(
                r#"{{"kind":"speech","target":"","text":"{LEAK}","thought":"","destination":""}}"#
            ),
        },
    ])
}

async fn watson(guard: GuardMode) -> (CharacterAgents, ScriptedModel) {
    let model = leaking_model();
    let mut options = AgentOptions::new(
        RoleModels::uniform(Arc::new(model.clone())),
        Arc::new(FakeEmbedder::new(32)),
    );
    options.boundary_guard = guard;
    let agents = CharacterAgents::new(options);
    let profile = CharacterProfile {
        id: "watson".into(),
        name: "John Watson".into(),
        profile: "An army surgeon home from Afghanistan.".into(),
        knowledge: vec![KnownFact {
            id: "wound".into(),
            text: "I was wounded in the shoulder at Maiwand.".into(),
            ..KnownFact::default()
        }],
        ..CharacterProfile::default()
    };
    agents
        .attach("w", "watson", profile)
        .await
        .expect("attached");
    (agents, model)
}

fn frame() -> SceneFrame {
    SceneFrame {
        scene_id: "lab".into(),
        location_name: "the laboratory".into(),
        present: vec![PresentCharacter {
            id: "stamford".into(),
            name: "Stamford".into(),
        }],
        ..SceneFrame::default()
    }
}

/// The flags on Watson's audited prompts: (purpose, words), in order.
async fn flagged(agents: &CharacterAgents) -> Vec<(String, Vec<String>)> {
    agents
        .snapshot("w", "watson")
        .await
        .expect("shard")
        .prompts()
        .into_iter()
        .filter(|p| !p.flagged.is_empty())
        .map(|p| (p.purpose, p.flagged))
        .collect()
}

#[tokio::test]
async fn a_leaked_canary_is_regenerated_then_deflected_in_act_and_in_answer() {
    let (agents, model) = watson(GuardMode::Regenerate).await;
    let turn = agents
        .character("w", "watson")
        .expect("attached")
        .turn(&frame(), None)
        .await
        .expect("a turn");
    assert!(!turn.action.text.contains(CANARY), "{}", turn.action.text);
    assert_eq!(
        turn.action.text,
        "John Watson hesitates, and lets the matter drop."
    );
    assert_eq!(turn.action.usage.map(|u| u.llm_calls), Some(2), "one retry");
    let retry = &model.prompts()[1].text();
    assert!(
        retry.contains("never heard of") && retry.contains(CANARY),
        "the retry names the words: {retry}"
    );

    let answer = agents
        .character("w", "watson")
        .expect("attached")
        .answer("Where were you wounded at Maiwand?", &[])
        .await
        .expect("an answer");
    assert!(!answer.answer.contains(CANARY), "{}", answer.answer);
    assert_eq!(answer.answer, "I cannot answer that from my own knowledge.");

    // Each first reply and each retry is flagged on the prompt it answered.
    let words = ["Enoch", "Drebber", "KESTREL-9"]
        .map(str::to_owned)
        .to_vec();
    let act = ("act".to_owned(), words.clone());
    let answer = ("answer".to_owned(), words);
    assert_eq!(
        flagged(&agents).await,
        [act.clone(), act, answer.clone(), answer]
    );
}

#[tokio::test]
async fn flag_mode_keeps_the_line_and_notes_it_and_a_known_name_is_not_flagged() {
    let (agents, model) = watson(GuardMode::Flag).await;
    let turn = agents
        .character("w", "watson")
        .expect("attached")
        .turn(&frame(), None)
        .await
        .expect("a turn");
    assert_eq!(turn.action.text, LEAK);
    assert_eq!(model.calls(), 1, "no retry when only flagging");
    assert_eq!(flagged(&agents).await.len(), 1);

    let (agents, _) = watson(GuardMode::Off).await;
    agents
        .character("w", "watson")
        .expect("attached")
        .turn(&frame(), None)
        .await
        .expect("a turn");
    assert!(flagged(&agents).await.is_empty());
}
