//! Each layer's retrieval on fixed vectors, visibility bounds, and persistence.

use std::collections::BTreeSet;

use dramatis_memory::{
    EmotionTransition, EpisodicMemory, Fact, PersonalityPattern, ReverieLayers, VisibilityRoute,
};

fn unit(x: f32, y: f32, z: f32) -> Vec<f32> {
    let n = (x * x + y * y + z * z).sqrt();
    vec![x / n, y / n, z / n]
}

fn fact(id: &str, visible_to: &[&str]) -> Fact {
    Fact {
        id: id.into(),
        subject: "holmes".into(),
        predicate: "found".into(),
        object: id.into(),
        cause: String::new(),
        visibility: visible_to
            .iter()
            .map(|s| (*s).to_owned())
            .collect::<BTreeSet<_>>(),
        route: VisibilityRoute::Observation,
        text: format!("Holmes found {id}."),
    }
}

fn shard() -> ReverieLayers {
    let mut shard = ReverieLayers::new("watson");
    for (id, v) in [
        ("lab", unit(1.0, 0.1, 0.0)),
        ("criterion", unit(0.0, 1.0, 0.0)),
        ("brixton", unit(0.7, 0.7, 0.0)),
    ] {
        shard.episodic.add(
            EpisodicMemory {
                id: id.into(),
                scene_id: id.into(),
                text: format!("I was at {id}."),
            },
            &v,
        );
    }
    shard
        .semantic
        .add(fact("reagent", &["watson", "holmes"]), &unit(1.0, 0.0, 0.0));
    shard
        .semantic
        .add(fact("secret-letter", &["holmes"]), &unit(1.0, 0.0, 0.0));
    shard
        .semantic
        .add(fact("ring", &["watson"]), &unit(0.8, 0.6, 0.0));
    shard
        .semantic
        .add(fact("cab", &["watson"]), &unit(0.0, 0.0, 1.0));
    shard.personality.add_pattern(
        PersonalityPattern {
            id: "calm".into(),
            description: "calm".into(),
            excerpts: vec!["Quite so.".into()],
        },
        &unit(0.0, 0.0, 1.0),
    );
    shard.personality.add_pattern(
        PersonalityPattern {
            id: "astonished".into(),
            description: "astonished".into(),
            excerpts: vec!["Good heavens!".into()],
        },
        &unit(1.0, 0.0, 0.0),
    );
    shard.personality.record(EmotionTransition {
        emotion: "surprise".into(),
        intensity: 0.8,
        trigger: "Holmes's deduction".into(),
        intent: "ask how".into(),
        seq: 12,
        trigger_vector: unit(1.0, 0.0, 0.0),
    });
    shard.personality.record(EmotionTransition {
        emotion: "calm".into(),
        intensity: 0.2,
        trigger: "tea is served".into(),
        intent: "thank".into(),
        seq: 14,
        trigger_vector: unit(0.0, 0.0, 1.0),
    });
    shard
}

#[test]
fn anchor_returns_scene_memories_nearest_first() {
    let shard = shard();
    let hits: Vec<&str> = shard
        .episodic
        .anchor(&unit(1.0, 0.0, 0.0), 2)
        .iter()
        .map(|(m, _)| m.id.as_str())
        .collect();
    assert_eq!(hits, ["lab", "brixton"]);
    assert_eq!(
        shard.episodic.vector_of("criterion"),
        Some(unit(0.0, 1.0, 0.0).as_slice())
    );
    assert_eq!(shard.episodic.vector_of("nowhere"), None);
}

#[test]
fn a_rewritten_scene_memory_replaces_the_old_one_in_place() {
    let mut shard = shard();
    let count = shard.episodic.items().len();
    shard.episodic.upsert(
        EpisodicMemory {
            id: "criterion".into(),
            scene_id: "criterion".into(),
            text: "Rewritten.".into(),
        },
        &unit(1.0, 0.0, 0.0),
    );
    assert_eq!(shard.episodic.items().len(), count);
    let best = shard.episodic.anchor(&unit(1.0, 0.0, 0.0), 1);
    assert_eq!(best[0].0.text, "Rewritten.", "the new vector is searched");
    shard.episodic.upsert(
        EpisodicMemory {
            id: "new".into(),
            scene_id: "new".into(),
            text: "New.".into(),
        },
        &unit(0.0, 0.0, 1.0),
    );
    assert_eq!(shard.episodic.items().len(), count + 1);
}

#[test]
fn vis_retrieve_never_returns_an_invisible_fact_however_relevant() {
    let shard = shard();
    // The probe points straight at the secret letter (score 1.0), visible only to Holmes.
    let probes = vec![unit(1.0, 0.0, 0.0), unit(0.0, 0.0, 1.0)];
    let hits: Vec<&str> = shard
        .semantic
        .vis_retrieve("watson", &probes, 2)
        .iter()
        .map(|(f, _)| f.id.as_str())
        .collect();
    assert_eq!(
        hits,
        ["reagent", "cab", "ring"],
        "merged across probes, best score first"
    );
    let for_holmes: Vec<&str> = shard
        .semantic
        .vis_retrieve("holmes", &probes, 2)
        .iter()
        .map(|(f, _)| f.id.as_str())
        .collect();
    assert_eq!(for_holmes, ["reagent", "secret-letter"]);
    assert!(
        shard
            .semantic
            .vis_retrieve("lestrade", &probes, 5)
            .is_empty()
    );
}

#[test]
fn a_fact_added_after_a_search_is_seen_by_exactly_those_it_names() {
    let mut shard = shard();
    let probe = vec![unit(0.0, 1.0, 0.0)];
    let ids = |shard: &ReverieLayers, who: &str| -> Vec<String> {
        shard
            .semantic
            .vis_retrieve(who, &probe, 10)
            .iter()
            .map(|(f, _)| f.id.clone())
            .collect()
    };
    // Both have asked once: what each may see is now kept per asker.
    let (watson_before, holmes_before) = (ids(&shard, "watson"), ids(&shard, "holmes"));
    shard
        .semantic
        .add(fact("telegram", &["watson"]), &unit(0.0, 1.0, 0.0));
    let (watson, holmes) = (ids(&shard, "watson"), ids(&shard, "holmes"));
    assert_eq!(watson[0], "telegram");
    assert_eq!(watson.len(), watson_before.len() + 1);
    assert_eq!(holmes, holmes_before, "Holmes is not named on the telegram");
    assert!(
        shard
            .semantic
            .vis_search_words("holmes", "telegram", 5)
            .is_empty()
    );
    assert_eq!(
        shard
            .semantic
            .vis_search_words("watson", "telegram", 5)
            .len(),
        1
    );
}

#[test]
fn pattern_selection_follows_the_state_description() {
    let shard = shard();
    let (pattern, _) = shard
        .personality
        .nearest_pattern(&unit(0.9, 0.1, 0.0))
        .expect("a pattern");
    assert_eq!(pattern.id, "astonished");
    assert_eq!(pattern.excerpts, ["Good heavens!"]);
}

#[test]
fn emotion_record_finds_how_a_similar_moment_was_met() {
    let shard = shard();
    let (nearest, score) = shard
        .personality
        .nearest_transition(&unit(0.8, 0.2, 0.1))
        .expect("a transition");
    assert_eq!(nearest.emotion, "surprise");
    assert!(score > 0.9, "{score}");
    let (calm, _) = shard
        .personality
        .nearest_transition(&unit(0.0, 0.1, 1.0))
        .expect("a transition");
    assert_eq!(calm.seq, 14);
    assert!(
        dramatis_memory::PersonalityLayer::default()
            .nearest_transition(&unit(1.0, 0.0, 0.0))
            .is_none()
    );
}

#[test]
fn a_serialised_shard_reloads_identically() {
    // The agent's store keeps the layers as JSON inside the character's state.
    let shard = shard();
    let bytes = serde_json::to_vec(&shard).expect("serialised");
    let loaded: ReverieLayers = serde_json::from_slice(&bytes).expect("loaded");
    assert_eq!(loaded, shard);
    let probes = vec![unit(1.0, 0.0, 0.0)];
    let ids = |s: &ReverieLayers| {
        s.semantic
            .vis_retrieve("watson", &probes, 3)
            .iter()
            .map(|(f, _)| f.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&loaded), ids(&shard), "same answers after a restart");
    assert!(!ids(&loaded).is_empty());
}
