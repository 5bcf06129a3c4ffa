//! Asking a character as of an earlier moment, on a real `CharacterAgents` (scripted
//! model, fake embedder): the copy it answers from holds exactly what a character that
//! had perceived only the events up to then holds (the same memory, item by item, at
//! every seq of a three-scene story), the names it knew then, and nothing it learned
//! later; the question changes nothing; before its first event it holds its profile.

use std::sync::Arc;

use dramatis_character::{AgentOptions, CharacterAgents};
use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptRule, ScriptedModel};
use dramatis_proto::v1::{CharacterProfile, Event, EventKind, KnownFact};

const WATSON: &str = "watson";

fn watson() -> CharacterProfile {
    CharacterProfile {
        id: WATSON.into(),
        name: "Watson".into(),
        profile: "An army doctor, back from Afghanistan.".into(),
        goal: "To find lodgings he can afford.".into(),
        knowledge: vec![KnownFact {
            id: "wound".into(),
            text: "Watson was wounded at Maiwand".into(),
            ..KnownFact::default()
        }],
        ..CharacterProfile::default()
    }
}

fn agents() -> CharacterAgents {
    let model = ScriptedModel::new(vec![ScriptRule {
        when: vec!["Question:".into()],
        reply: "Jefferson Hope is the murderer.".into(),
    }]);
    CharacterAgents::new(AgentOptions::new(
        RoleModels::uniform(Arc::new(model)),
        Arc::new(FakeEmbedder::new(512)),
    ))
}

fn event(seq: u64, scene: &str, kind: EventKind, speaker: (&str, &str), text: &str) -> Event {
    Event {
        world_id: "w".into(),
        seq,
        scene_id: scene.into(),
        kind: kind as i32,
        speaker: speaker.0.into(),
        speaker_name: speaker.1.into(),
        text: text.into(),
        perceivers: vec![WATSON.into(), "holmes".into()],
        perceiver_names: vec!["Watson".into(), speaker.1.into()],
        ..Event::default()
    }
}

/// A line said by `speaker` (id, and the name Watson knows them by).
fn say(seq: u64, scene: &str, speaker: (&str, &str), text: &str) -> Event {
    event(seq, scene, EventKind::Speech, speaker, text)
}

/// A scene's start, showing its place.
fn start(seq: u64, scene: &str, place: &str) -> Event {
    let mut start = event(
        seq,
        scene,
        EventKind::SceneStart,
        ("", ""),
        &format!("Scene: {scene}"),
    );
    place.clone_into(&mut start.place_description);
    start
}

/// Three scenes: in the laboratory Watson meets a stranger who is named only at seq 4;
/// in the street, Holmes names the murderer (seq 7); Baker Street begins with no end of
/// the street perceived, which closes it.
fn story() -> Vec<Event> {
    let stranger = ("holmes", "a tall thin stranger");
    let holmes = ("holmes", "Holmes");
    vec![
        start(1, "lab", "Rows of bottles and a smell of acid."),
        say(
            2,
            "lab",
            stranger,
            "You have been in Afghanistan, I perceive.",
        ),
        say(3, "lab", stranger, "I have found a reagent for blood."),
        say(
            4,
            "lab",
            holmes,
            "My name is Holmes, and we shall share rooms.",
        ),
        event(5, "lab", EventKind::SceneEnd, ("", ""), ""),
        start(6, "street", "A wet grey road under gas lamps."),
        say(7, "street", holmes, "The murderer is Jefferson Hope."),
        say(8, "street", holmes, "We shall take him at Baker Street."),
        start(9, "baker", "A sitting room with two broad windows."),
        say(10, "baker", holmes, "Mrs Hudson has laid supper."),
    ]
}

async fn watson_after(events: &[Event]) -> CharacterAgents {
    let agents = agents();
    agents
        .attach("w", WATSON, watson())
        .await
        .expect("attached");
    // Delivered a scene at a time, as a world delivers them (the order facts are
    // written in follows the deliveries).
    let watson = agents.character("w", WATSON).expect("attached");
    for scene in events.chunk_by(|a, b| a.scene_id == b.scene_id) {
        watson.perceive(scene).await.expect("perceived");
    }
    agents
}

/// The shard's memory as (id, text) pairs, in order, without the perceived lines'
/// positions: what an answer can draw on.
fn memory(shard: &dramatis_character::Shard) -> Vec<(String, String)> {
    shard
        .memory()
        .into_iter()
        .map(|item| (item.id, item.text))
        .collect()
}

#[tokio::test]
async fn as_of_each_seq_the_character_holds_what_one_that_stopped_there_holds() {
    let story = story();
    let whole = watson_after(&story).await;
    let now = whole.snapshot("w", WATSON).await.expect("shard");
    for seq in 1..=10u64 {
        let stopped = watson_after(&story[..usize::try_from(seq).expect("small")]).await;
        let then = stopped.snapshot("w", WATSON).await.expect("shard");
        let as_of = now.as_of(seq);
        assert_eq!(memory(&as_of), memory(&then), "as of {seq}");
        assert_eq!(as_of.current_scene(), then.current_scene(), "as of {seq}");
        assert_eq!(as_of.goal(), then.goal(), "as of {seq}");
        assert_eq!(*as_of.vocabulary(), *then.vocabulary(), "as of {seq}");
    }
    let texts = |seq: u64| -> String {
        memory(&now.as_of(seq))
            .into_iter()
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Before seq 4 the stranger has no name; the murderer is named at 7.
    assert!(texts(3).contains("a tall thin stranger"), "{}", texts(3));
    assert!(!texts(3).contains("Holmes"), "{}", texts(3));
    assert!(texts(5).contains("Holmes"), "{}", texts(5));
    assert!(!texts(6).contains("Jefferson"), "{}", texts(6));
    assert!(texts(8).contains("Jefferson"), "{}", texts(8));
}

#[tokio::test]
async fn an_interview_as_of_an_earlier_moment_refuses_what_came_later_and_changes_nothing() {
    let agents = watson_after(&story()).await;
    let watson = agents.character("w", WATSON).expect("attached");
    let before = agents.snapshot("w", WATSON).await.expect("shard");
    let question = "Who is the murderer of Brixton Road, Jefferson Hope?";
    let now = watson.answer(question, &[]).await.expect("answer");
    assert!(!now.abstained, "told at seq 7");
    let then = watson
        .answer_as_of(question, &[], Some(5))
        .await
        .expect("answer");
    assert!(then.abstained, "not yet told at seq 5: {}", then.answer);
    assert!(!then.answer.contains("Jefferson"), "{}", then.answer);
    assert_eq!(
        (then.usage.llm_calls, now.usage.llm_calls),
        (1, 1),
        "one answer call, as now"
    );
    let after = agents.snapshot("w", WATSON).await.expect("shard");
    assert_eq!(memory(&after), memory(&before), "nothing learned");
    assert_eq!(after.last_seq(), before.last_seq());
    let purposes: Vec<String> = after.prompts().iter().map(|p| p.purpose.clone()).collect();
    assert_eq!(
        purposes.last().map(String::as_str),
        Some("answer as of 5, read-only"),
        "{purposes:?}"
    );
}

#[tokio::test]
async fn before_its_first_event_a_character_holds_what_its_profile_gave_it() {
    // Watson comes on at seq 4.
    let agents = watson_after(&story()[3..]).await;
    let now = agents.snapshot("w", WATSON).await.expect("shard");
    let fresh = watson_after(&[]).await;
    let start = fresh.snapshot("w", WATSON).await.expect("shard");
    for seq in [1, 3] {
        let then = now.as_of(seq);
        assert_eq!(memory(&then), memory(&start), "as of {seq}");
        assert!(then.perceived().is_empty(), "as of {seq}");
    }
    let first = agents
        .character("w", WATSON)
        .expect("attached")
        .recall_view_as_of("Where were you wounded at Maiwand?", &[], Some(2))
        .await
        .expect("recall");
    assert!(
        first.items.iter().any(|item| item.text.contains("Maiwand")),
        "its profile's fact is held from the start: {:?}",
        first.items
    );
    assert!(
        first.items.iter().all(|item| !item.text.contains("Holmes")),
        "nothing of seq 4 on: {:?}",
        first.items
    );
}
