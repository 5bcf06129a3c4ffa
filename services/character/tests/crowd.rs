//! A turn in a crowd: the frame names the few others the world's attention chose and
//! counts the rest, and the prompt says so in as many words, without a name more.

use std::sync::Arc;

use dramatis_character::{AgentOptions, CharacterAgents};
use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptRule, ScriptedModel};
use dramatis_proto::v1::{CharacterProfile, PresentCharacter, SceneFrame};

#[tokio::test]
async fn a_crowd_turn_lists_the_named_few_and_counts_the_others() {
    let model = ScriptedModel::new(vec![ScriptRule {
        when: vec!["Character: Martha".into()],
        reply: r#"{"kind":"speech","target":"","text":"Loaves, fresh loaves!","thought":"","destination":""}"#
            .into(),
    }]);
    let agents = CharacterAgents::new(AgentOptions::new(
        RoleModels::uniform(Arc::new(model.clone())),
        Arc::new(FakeEmbedder::new(16)),
    ));
    let profile = CharacterProfile {
        id: "martha".into(),
        name: "Martha".into(),
        profile: "A baker at the fair.".into(),
        ..CharacterProfile::default()
    };
    agents
        .attach("w", "martha", profile)
        .await
        .expect("attached");
    let present: Vec<PresentCharacter> = (0..12)
        .map(|i| PresentCharacter {
            id: format!("person-{i}"),
            name: format!("a hawker in a red cap number {i}"),
        })
        .collect();
    let frame = SceneFrame {
        scene_id: "fair".into(),
        location_name: "the fair".into(),
        present,
        others_present: 988,
        ..SceneFrame::default()
    };
    let turn = agents
        .character("w", "martha")
        .expect("attached")
        .turn(&frame, None)
        .await
        .expect("a turn");
    assert_eq!(turn.action.text, "Loaves, fresh loaves!");
    let prompt = model.prompts()[0].text();
    let with = prompt
        .lines()
        .find(|l| l.starts_with("Place: the fair."))
        .expect("the place line");
    assert!(
        with.ends_with("a hawker in a red cap number 11 (id person-11) and 988 others."),
        "{with}"
    );
    assert_eq!(with.matches("(id person-").count(), 12, "{with}");
}
