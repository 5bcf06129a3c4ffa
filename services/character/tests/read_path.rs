//! The read path on a real `CharacterAgents` with the scripted model and the fake
//! embedder (words hash into buckets, so shared words mean similarity): Sufficient's
//! early exit, skipping Self-Probe when covered, refusal on an empty pool, Emo-Gate's
//! inertia, a shard that survives a restart of the agent, and a turn saved with its
//! character's own event (one durable write per line), or by a detach that keeps the
//! shard.

use std::sync::Arc;

use dramatis_character::shard::read_store_file;
use dramatis_character::{ABSTAIN_INSTRUCTION, AgentOptions, CharacterAgents, RecallView};
use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptRule, ScriptedModel};
use dramatis_proto::v1::{
    CharacterProfile, Event, EventKind, KnownFact, PersonalityPattern, PresentCharacter, SceneFrame,
};

fn rule(when: &[&str], reply: &str) -> ScriptRule {
    ScriptRule {
        when: when.iter().map(|w| (*w).to_owned()).collect(),
        reply: reply.to_owned(),
    }
}

fn holmes() -> CharacterProfile {
    let fact = |id: &str, text: &str| KnownFact {
        id: id.into(),
        text: text.into(),
        ..KnownFact::default()
    };
    let pattern = |id: &str, description: &str, excerpt: &str| PersonalityPattern {
        id: id.into(),
        description: description.into(),
        excerpts: vec![excerpt.into()],
    };
    CharacterProfile {
        id: "holmes".into(),
        name: "Holmes".into(),
        profile: "A consulting detective.".into(),
        knowledge: vec![
            fact("found", "The ring was found at Lauriston Gardens"),
            fact("beside", "A gold ring lay beside the body"),
        ],
        patterns: vec![
            pattern("calm", "calm polite conversation", "Quite so."),
            pattern("dread", "fear danger murder dread", "Good God, he is dead!"),
        ],
        ..CharacterProfile::default()
    }
}

fn agents(model: &ScriptedModel, data_dir: Option<std::path::PathBuf>) -> CharacterAgents {
    let mut options = AgentOptions::new(
        RoleModels::uniform(Arc::new(model.clone())),
        Arc::new(FakeEmbedder::new(512)),
    );
    options.data_dir = data_dir;
    CharacterAgents::new(options)
}

async fn attached(model: &ScriptedModel) -> CharacterAgents {
    let agents = agents(model, None);
    agents
        .attach("w", "holmes", holmes())
        .await
        .expect("attached");
    agents
}

fn probing_model(first_probe: &str) -> ScriptedModel {
    ScriptedModel::new(vec![
        rule(
            &["help Holmes remember", "Already searched"],
            r#"{"sufficient":true,"probes":[]}"#,
        ),
        rule(
            &["help Holmes remember"],
            &format!(r#"{{"sufficient":false,"probes":["{first_probe}"]}}"#),
        ),
        rule(&["Question:"], "At Lauriston Gardens."),
    ])
}

fn purposes(shard: &dramatis_character::Shard) -> Vec<String> {
    shard.prompts().iter().map(|p| p.purpose.clone()).collect()
}

// "gold" and "ring" match the second fact only in part: a gap worth a probe.
const PARTLY_COVERED: &str = "What became of the gold wedding ring?";

#[tokio::test]
async fn sufficient_from_the_model_ends_the_probe_loop_early() {
    // The first probe finds nothing new; round 2's call says the pool is enough.
    let model = probing_model("gold body");
    let agents = attached(&model).await;
    let outcome = agents
        .character("w", "holmes")
        .expect("attached")
        .answer(PARTLY_COVERED, &[])
        .await
        .expect("answer");
    assert_eq!(outcome.answer, "At Lauriston Gardens.");
    assert!(!outcome.abstained);
    let shard = agents.snapshot("w", "holmes").await.expect("shard");
    assert_eq!(
        purposes(&shard),
        ["self_probe", "self_probe", "answer"],
        "round 2 said sufficient, so the loop stopped before its limit"
    );
    assert_eq!(outcome.usage.llm_calls, 3);
    let prompts = model.prompts();
    assert!(prompts[1].text().contains("Already searched: gold body"));
    let answer_prompt = prompts[2].text();
    assert!(answer_prompt.contains("A gold ring lay beside the body"));
    assert!(!answer_prompt.contains("Lauriston Gardens"));
}

#[tokio::test]
async fn a_probe_that_covers_the_question_ends_the_loop_without_another_call() {
    let model = probing_model("Lauriston Gardens ring");
    let agents = attached(&model).await;
    let outcome = agents
        .character("w", "holmes")
        .expect("attached")
        .answer(PARTLY_COVERED, &[])
        .await
        .expect("answer");
    let shard = agents.snapshot("w", "holmes").await.expect("shard");
    assert_eq!(purposes(&shard), ["self_probe", "answer"]);
    assert_eq!(outcome.usage.llm_calls, 2);
    let answer_prompt = model.prompts()[1].text();
    assert!(
        answer_prompt.contains("The ring was found at Lauriston Gardens"),
        "the probe brought the first fact into the pool"
    );
    assert!(answer_prompt.contains("A gold ring lay beside the body"));
}

#[tokio::test]
async fn a_covered_question_needs_no_probe_and_an_unknown_one_is_refused() {
    let model = ScriptedModel::new(vec![rule(&["Question:"], "The body lay there.")]);
    let agents = attached(&model).await;
    let covered = agents
        .character("w", "holmes")
        .expect("attached")
        .answer("Where was the ring found?", &[])
        .await
        .expect("answer");
    assert_eq!(
        covered.usage.llm_calls, 1,
        "no Self-Probe: the pool covers it"
    );
    assert!(!covered.abstained);

    let unknown = agents
        .character("w", "holmes")
        .expect("attached")
        .answer("Who won the cricket match at Lord's yesterday?", &[])
        .await
        .expect("answer");
    assert!(unknown.abstained);
    assert_eq!(unknown.usage.llm_calls, 1, "refusing costs no extra search");
    assert_eq!(
        unknown.answer, "I cannot answer that from my own knowledge.",
        "a claim the pool cannot support is replaced by a refusal"
    );
    let shard = agents.snapshot("w", "holmes").await.expect("shard");
    let record = shard.prompts().pop().expect("answer prompt");
    assert!(record.prompt.contains(ABSTAIN_INSTRUCTION));
    assert!(
        record
            .items
            .iter()
            .all(|i| i.layer != "semantic" && i.layer != "episodic"),
        "nothing from memory went into the refusal prompt: {:?}",
        record.items
    );
}

fn speech(seq: u64, text: &str) -> Event {
    Event {
        world_id: "w".into(),
        seq,
        scene_id: "s1".into(),
        speaker: "watson".into(),
        speaker_name: "Watson".into(),
        target: "holmes".into(),
        target_name: "Holmes".into(),
        kind: EventKind::Speech as i32,
        text: text.into(),
        perceivers: vec!["holmes".into(), "watson".into()],
        ..Event::default()
    }
}

fn frame() -> SceneFrame {
    SceneFrame {
        scene_id: "s1".into(),
        location_name: "Baker Street".into(),
        present: vec![PresentCharacter {
            id: "watson".into(),
            name: "Watson".into(),
        }],
        ..SceneFrame::default()
    }
}

#[tokio::test]
async fn emo_gate_keeps_the_pattern_on_routine_turns_and_fires_on_salient_ones() {
    let model = ScriptedModel::default();
    let agents = attached(&model).await;
    let mut manners = Vec::new();
    for (seq, line) in [
        (1, "Shall we take a cab to the station this evening"),
        (2, "The weather is grey again this evening"),
        (
            3,
            "There has been a murder! He is dead, and there is blood everywhere.",
        ),
    ] {
        agents
            .character("w", "holmes")
            .expect("attached")
            .perceive(&[speech(seq, line)])
            .await
            .expect("perceived");
        agents
            .character("w", "holmes")
            .expect("attached")
            .turn(&frame(), None)
            .await
            .expect("acted");
        let shard = agents.snapshot("w", "holmes").await.expect("shard");
        manners.push((
            shard.mood().pattern.clone().unwrap_or_default(),
            shard.mood().emotion.clone(),
        ));
    }
    assert_eq!(
        manners,
        [
            ("pattern:calm".to_owned(), "calm".to_owned()),
            ("pattern:calm".to_owned(), "calm".to_owned()),
            ("pattern:dread".to_owned(), "fear".to_owned()),
        ]
    );
    let prompts: Vec<String> = model.prompts().iter().map(|p| p.text()).collect();
    assert_eq!(prompts.len(), 3, "the gate itself costs no call");
    assert!(prompts[1].contains("Manner now: calm polite conversation Like: \"Quite so.\""));
    assert!(prompts[2].contains("Manner now: fear danger murder dread"));
    assert!(prompts[2].contains("Good God, he is dead!"));
}

#[tokio::test]
async fn a_restarted_agent_answers_the_same_from_its_saved_shard() {
    let dir = tempfile::tempdir().expect("tempdir");
    let question = "What did Watson say about the murder and the blood?";
    let ask = |agents: CharacterAgents| async move {
        let outcome = agents
            .character("w", "holmes")
            .expect("attached")
            .answer(question, &[])
            .await
            .expect("answer");
        let shard = agents.snapshot("w", "holmes").await.expect("shard");
        (
            outcome.answer,
            shard.prompts().pop().expect("prompt").prompt,
        )
    };
    let model = ScriptedModel::new(vec![rule(&["Question:"], "He spoke of blood.")]);
    let first = agents(&model, Some(dir.path().to_path_buf()));
    assert_eq!(
        first.attach("w", "holmes", holmes()).await.expect("attach"),
        (4, false)
    );
    let mut end = speech(3, "");
    end.kind = EventKind::SceneEnd as i32;
    end.speaker = String::new();
    first
        .character("w", "holmes")
        .expect("attached")
        .perceive(&[
            speech(1, "A murder, Holmes! There is blood on the wall."),
            speech(2, "Come at once."),
            end,
        ])
        .await
        .expect("perceived");
    let before = ask(first.clone()).await;
    assert!(before.1.contains("blood on the wall"), "{}", before.1);
    drop(first);

    // A new process: the same data directory, a fresh model.
    let model = ScriptedModel::new(vec![rule(&["Question:"], "He spoke of blood.")]);
    let second = agents(&model, Some(dir.path().to_path_buf()));
    let (items, resumed) = second
        .attach("w", "holmes", holmes())
        .await
        .expect("attach");
    assert!(resumed, "the saved shard was read back");
    assert!(items > 4, "scene memory and facts came back: {items}");
    let shard = second.snapshot("w", "holmes").await.expect("shard");
    assert_eq!(shard.last_seq(), 3);
    assert!(
        shard
            .layers()
            .episodic
            .items()
            .iter()
            .any(|m| m.id == "episode:s1")
    );
    let after = ask(second.clone()).await;
    assert_eq!(after, before, "same answer from the same prompt");

    second.detach("w", "holmes", false).await.expect("detach");
    assert!(
        dir.path().join("w").read_dir().is_err(),
        "detaching removes the store file and its world's folder"
    );
}

/// `--layers` without `semantic`: the same covered question finds no fact and is
/// refused; interviews go to the answer role's model, turns and Self-Probe never do.
#[tokio::test]
async fn a_layer_switched_off_is_not_read_and_answers_use_the_answer_model() {
    use dramatis_llm::ModelRole;
    use dramatis_memory::reverie::Layers;
    let turns = ScriptedModel::new(vec![rule(&["Question:"], "From the turn model.")]);
    let answers = ScriptedModel::new(vec![rule(&["Question:"], "The ring? Lauriston Gardens.")]);
    let build = |layers: Layers| {
        let mut options = AgentOptions::new(
            RoleModels::uniform(Arc::new(turns.clone()))
                .with_role(ModelRole::Answer, Arc::new(answers.clone())),
            Arc::new(FakeEmbedder::new(512)),
        );
        options.recall.layers = layers;
        options.answer_temperature = 0.0;
        CharacterAgents::new(options)
    };
    let all = build(Layers::ALL);
    all.attach("w", "holmes", holmes()).await.expect("attached");
    let answered = all
        .character("w", "holmes")
        .expect("attached")
        .answer("Where was the ring found?", &[])
        .await
        .expect("answer");
    assert!(!answered.abstained);
    assert_eq!(answered.answer, "The ring? Lauriston Gardens.");
    assert_eq!(turns.calls(), 0, "the turn model answered nothing");

    let without = build(Layers::without("semantic").expect("a layer"));
    without
        .attach("w", "holmes", holmes())
        .await
        .expect("attached");
    let refused = without
        .character("w", "holmes")
        .expect("attached")
        .answer("Where was the ring found?", &[])
        .await
        .expect("answer");
    assert!(refused.abstained, "no visible fact was read");
    let RecallView { items, .. } = without
        .character("w", "holmes")
        .expect("attached")
        .recall_view("Where was the ring found?", &[])
        .await
        .expect("recall");
    assert!(
        items.iter().all(|i| i.layer != "semantic"),
        "semantic items with the layer off: {items:?}"
    );
    assert_eq!(
        Layers::parse("episodic,personality").map(|l| l.to_string()),
        Ok("episodic,personality".to_owned())
    );
    assert!(Layers::parse("episodic,dreams").is_err());
}

/// How many turn prompts the store file holds, and how many events.
fn on_disk(path: &std::path::Path) -> (usize, usize) {
    let (stored, audit) = read_store_file(path).expect("the store reads");
    let turns = audit.iter().filter(|e| e.purpose == "act").count();
    (turns, stored.perceived.len())
}

#[tokio::test]
async fn a_turn_is_saved_with_its_own_event_and_a_detach_saves_the_last_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = AgentOptions::new(
        RoleModels::uniform(Arc::new(ScriptedModel::new(Vec::new()))),
        Arc::new(FakeEmbedder::new(64)),
    );
    options.data_dir = Some(dir.path().to_path_buf());
    let agents = CharacterAgents::new(options);
    agents
        .attach("w", "holmes", holmes())
        .await
        .expect("attached");
    let path = dir.path().join("w").join("holmes.redb");
    agents
        .character("w", "holmes")
        .expect("attached")
        .perceive(&[speech(1, "You have been in Afghanistan?")])
        .await
        .expect("perceived");
    assert_eq!(on_disk(&path), (0, 1));

    let first = agents
        .character("w", "holmes")
        .expect("attached")
        .turn(&frame(), None)
        .await
        .expect("act");
    let own = Event {
        speaker: "holmes".into(),
        speaker_name: "Holmes".into(),
        target: "watson".into(),
        target_name: "Watson".into(),
        ..speech(2, &first.action.text)
    };
    agents
        .character("w", "holmes")
        .expect("attached")
        .perceive(&[own])
        .await
        .expect("own event");
    assert_eq!(
        on_disk(&path),
        (1, 2),
        "the turn's prompt came with its event"
    );

    agents
        .character("w", "holmes")
        .expect("attached")
        .turn(&frame(), None)
        .await
        .expect("act");
    let shown = agents.snapshot("w", "holmes").await.expect("snapshot");
    let audited = shown
        .prompts()
        .iter()
        .filter(|p| p.purpose == "act")
        .count();
    assert_eq!(audited, 2, "a snapshot shows the turn not saved yet");
    agents.detach("w", "holmes", true).await.expect("detached");
    assert_eq!(on_disk(&path), (2, 2), "the detach saved the last turn");
}

/// Recall by words (issue 32): a question that shares no word form with the fact that
/// answers it ("bedroom", "lodging" against "bedrooms", "lodgings") is far from it for
/// the vectors, so recall by vector alone finds nothing and refuses. The word index
/// matches the stems and brings the fact back; a question about nothing the character
/// holds is still refused.
#[tokio::test]
async fn a_question_in_other_word_forms_is_recalled_by_its_stems() {
    let fact = |id: String, text: String| KnownFact {
        id,
        text,
        ..KnownFact::default()
    };
    let mut knowledge = vec![fact(
        "rooms".into(),
        "Our lodgings at Baker Street: two bedrooms and a sitting-room".into(),
    )];
    // Enough other facts that a word only one of them holds counts as rare.
    for (i, topic) in [
        "violin",
        "tobacco",
        "chemistry",
        "boxing",
        "cabs",
        "telegrams",
        "newspapers",
        "revolvers",
        "maps",
        "poisons",
        "ciphers",
        "bees",
    ]
    .iter()
    .enumerate()
    {
        knowledge.push(fact(
            format!("topic-{i}"),
            format!("Holmes keeps notes on {topic}"),
        ));
    }
    let profile = CharacterProfile {
        id: "watson".into(),
        name: "Watson".into(),
        profile: "An army doctor.".into(),
        knowledge,
        ..CharacterProfile::default()
    };
    let question = "How many bedroom does each lodging offer?";
    let mut recalled = Vec::new();
    for lexical in [false, true] {
        let mut options = AgentOptions::new(
            RoleModels::uniform(Arc::new(ScriptedModel::new(Vec::new()))),
            Arc::new(FakeEmbedder::new(512)),
        );
        options.recall.lexical = lexical;
        let agents = CharacterAgents::new(options);
        agents
            .attach("w", "watson", profile.clone())
            .await
            .expect("attached");
        let RecallView {
            items, abstained, ..
        } = agents
            .character("w", "watson")
            .expect("attached")
            .recall_view(question, &[])
            .await
            .expect("recall");
        let texts: Vec<String> = items.into_iter().map(|i| i.text).collect();
        let nothing = agents
            .character("w", "watson")
            .expect("attached")
            .recall_view("Who won the regatta at Henley?", &[])
            .await
            .expect("recall");
        assert!(nothing.abstained, "lexical {lexical}: {:?}", nothing.items);
        recalled.push((abstained, texts));
    }
    let (off_abstained, off) = &recalled[0];
    assert!(*off_abstained, "by vector alone nothing is found: {off:?}");
    let (on_abstained, on) = &recalled[1];
    assert!(!on_abstained);
    assert!(
        on.iter().any(|t| t.contains("two bedrooms")),
        "the stems bring the fact back: {on:?}"
    );
}

/// A multiple-choice question is answered only from evidence: the option whose own
/// words a memory on the question's subject holds ("wounded" at "Maiwand"). A memory
/// that holds an option's word but is about something else ("dresser", in a memory of
/// Watson's own old post, which searching for the options finds) does not answer a
/// question about another man's trade: it is refused. Without the gate the agent picks
/// no option at all, and only refuses when nothing was recalled.
#[tokio::test]
async fn options_are_chosen_by_evidence_on_the_subject_and_refused_without_it() {
    let fact = |id: &str, text: &str| KnownFact {
        id: id.into(),
        text: text.into(),
        ..KnownFact::default()
    };
    let mut knowledge = vec![
        fact(
            "wound",
            "I was wounded at the battle of Maiwand by a Jezail bullet.",
        ),
        fact("post", "Years ago I served as a hospital dresser at Barts."),
    ];
    for (i, topic) in ["violins", "tobacco", "boxing", "cabs", "telegrams", "maps"]
        .iter()
        .enumerate()
    {
        knowledge.push(fact(
            &format!("topic-{i}"),
            &format!("London is full of {topic}"),
        ));
    }
    let profile = CharacterProfile {
        id: "watson".into(),
        name: "Watson".into(),
        profile: "An army doctor.".into(),
        knowledge,
        ..CharacterProfile::default()
    };
    let battles: Vec<String> = ["Maiwand", "Kandahar", "Isandlwana", "Tel-el-Kebir"]
        .map(String::from)
        .to_vec();
    let trades: Vec<String> = [
        "Consulting detective",
        "Hospital dresser",
        "Police surgeon",
        "Brewery chemist",
    ]
    .map(String::from)
    .to_vec();
    let trade = "What is the odd chemist's real trade?";
    let mut verdicts = Vec::new();
    for gate in [true, false] {
        let mut options = AgentOptions::new(
            RoleModels::uniform(Arc::new(ScriptedModel::new(Vec::new()))),
            Arc::new(FakeEmbedder::new(512)),
        );
        if !gate {
            options.recall.gate = None;
        }
        let agents = CharacterAgents::new(options);
        agents
            .attach("w", "watson", profile.clone())
            .await
            .expect("attached");
        let wound = agents
            .character("w", "watson")
            .expect("attached")
            .recall_view("Where was the doctor wounded?", &battles)
            .await
            .expect("recall");
        let loose = agents
            .character("w", "watson")
            .expect("attached")
            .recall_view(trade, &trades)
            .await
            .expect("recall");
        verdicts.push((wound.choice, wound.abstained, loose.choice, loose.abstained));
    }
    assert_eq!(verdicts[0], (Some(0), false, None, true), "with the gate");
    let (chosen, abstained, _, _) = verdicts[1];
    assert_eq!(
        (chosen, abstained),
        (None, false),
        "without it, nothing is chosen"
    );
}

/// A free question put to the character about itself ("you") is not answered just
/// because it is about the character: what it holds must bear on it. Its own profile
/// counts when it shares a word with the question.
#[tokio::test]
async fn a_question_about_you_is_refused_when_nothing_held_bears_on_it() {
    let profile = CharacterProfile {
        id: "watson".into(),
        name: "Watson".into(),
        profile: "An army doctor, wounded in the shoulder.".into(),
        knowledge: vec![KnownFact {
            id: "rooms".into(),
            text: "The rooms at Baker Street have two bedrooms.".into(),
            ..KnownFact::default()
        }],
        ..CharacterProfile::default()
    };
    let agents = CharacterAgents::new(AgentOptions::new(
        RoleModels::uniform(Arc::new(ScriptedModel::new(Vec::new()))),
        Arc::new(FakeEmbedder::new(512)),
    ));
    agents
        .attach("w", "watson", profile)
        .await
        .expect("attached");
    let hidden = agents
        .character("w", "watson")
        .expect("attached")
        .recall_view("What did you bury in the orchard?", &[])
        .await
        .expect("recall");
    assert!(
        hidden.abstained,
        "nothing held bears on it: {:?}",
        hidden.items
    );
    let wound = agents
        .character("w", "watson")
        .expect("attached")
        .recall_view("Where in the shoulder are you wounded?", &[])
        .await
        .expect("recall");
    assert!(!wound.abstained, "its own profile bears on it");
}

/// A character brought in with a profile and nothing else answers what its profile
/// says of it ("What do you do for a living?" shares no word with "keeps the
/// lighthouse"), and what it wants from its goal; a question about something it did or
/// saw is still refused, since no profile is a memory of events.
#[tokio::test]
async fn a_profile_only_character_answers_about_itself_and_refuses_the_rest() {
    let model = ScriptedModel::new(vec![rule(
        &["Question:", "lighthouse"],
        "I keep the light on Skerry Point.",
    )]);
    let agents = CharacterAgents::new(AgentOptions::new(
        RoleModels::uniform(Arc::new(model)),
        Arc::new(FakeEmbedder::new(512)),
    ));
    let profile = CharacterProfile {
        id: "mara".into(),
        name: "Mara Voss".into(),
        profile: "Keeps the lighthouse on Skerry Point.".into(),
        goal: "to see the relief boat come in before the storm".into(),
        ..CharacterProfile::default()
    };
    agents.attach("w", "mara", profile).await.expect("attached");
    let mara = agents.character("w", "mara").expect("attached");
    let living = mara
        .answer("What do you do for a living?", &[])
        .await
        .expect("answer");
    assert!(!living.abstained, "its profile says what it does");
    assert_eq!(living.answer, "I keep the light on Skerry Point.");
    for standing in [
        "Who are you?",
        "What do you want most?",
        "What's your trade?",
    ] {
        let view = mara.recall_view(standing, &[]).await.expect("recall");
        assert!(!view.abstained, "{standing}: its profile and goal say");
    }
    for event in [
        "What did you hide in the lamp room?",
        "Who did you meet at the inn last night?",
        "What did you do after the wreck?",
        "Who killed the keeper before you?",
    ] {
        let view = mara.recall_view(event, &[]).await.expect("recall");
        assert!(view.abstained, "{event}: no memory bears on it");
    }
}

/// A character standing in a place can say how it looks before the scene ends: the
/// scene's start, with the place's description, is a fact from the moment it arrives,
/// not only once the scene is written at its end. The character who was not there
/// refuses the same question.
#[tokio::test]
async fn the_place_in_view_is_evidence_while_its_scene_goes_on() {
    let agents = attached(&ScriptedModel::new(Vec::new())).await;
    agents
        .attach(
            "w",
            "gregson",
            CharacterProfile {
                id: "gregson".into(),
                name: "Gregson".into(),
                profile: "A police inspector.".into(),
                ..CharacterProfile::default()
            },
        )
        .await
        .expect("attached");
    let start = Event {
        world_id: "w".into(),
        seq: 1,
        scene_id: "s1".into(),
        kind: EventKind::SceneStart as i32,
        text: "Scene 1: 3 Lauriston Gardens".into(),
        place_description: "A bare front room with a dusty floor and peeling wallpaper.".into(),
        perceivers: vec!["holmes".into(), "watson".into()],
        ..Event::default()
    };
    agents
        .character("w", "holmes")
        .expect("attached")
        .perceive(&[start, speech(2, "What a dreadful house.")])
        .await
        .expect("perceived");
    let walls: Vec<String> = [
        "Oak panelling",
        "Peeling wallpaper",
        "Fresh whitewash",
        "Red flock paper",
    ]
    .map(String::from)
    .to_vec();
    let question = "What is on the walls of the bare front room?";
    let there = agents
        .character("w", "holmes")
        .expect("attached")
        .recall_view(question, &walls)
        .await
        .expect("recall");
    assert_eq!(
        (there.choice, there.abstained),
        (Some(1), false),
        "the room in view holds the answer"
    );
    let away = agents
        .character("w", "gregson")
        .expect("attached")
        .recall_view(question, &walls)
        .await
        .expect("recall");
    assert_eq!(
        (away.choice, away.abstained),
        (None, true),
        "one who was not there refuses"
    );
}

/// An option's own words are searched for by word whatever the recall mode: the one
/// fact that names "Gullcove" shares no word form with "At which inlet are the illicit
/// kegs landed? Gullcove" that a vector search would weigh above the facts about inlets
/// and kegs, yet it is the evidence, and the gate picks the option it names. A
/// character without that fact refuses.
#[tokio::test]
async fn an_option_named_in_a_fact_is_found_by_its_word_and_answers() {
    let fact = |id: &str, text: &str| KnownFact {
        id: id.into(),
        text: text.into(),
        ..KnownFact::default()
    };
    let filler = [
        fact("inlets", "Every inlet along this coast silts up by autumn."),
        fact("kegs", "The cooper mends kegs and barrels behind the inn."),
        fact(
            "illicit",
            "Illicit trade is punished by the magistrate at Truro.",
        ),
        fact("landing", "Boats are landed on the shingle at high water."),
        fact(
            "coves",
            "Kynance Cove and Lamorna Cove are far to the west.",
        ),
    ];
    let mut knowledge = filler.to_vec();
    knowledge.push(fact(
        "smuggler",
        "A smuggler called Jory Penhallow lands brandy at Gullcove on moonless nights.",
    ));
    let options: Vec<String> = ["Kynance Cove", "Lamorna Cove", "Gullcove", "Porthallow"]
        .map(String::from)
        .to_vec();
    let question = "At which inlet are the illicit kegs landed?";
    let mut choices = Vec::new();
    for knowledge in [knowledge, filler.to_vec()] {
        let agents = agents(&ScriptedModel::new(Vec::new()), None);
        let profile = CharacterProfile {
            id: "ben".into(),
            name: "Ben".into(),
            profile: "A fisherman.".into(),
            knowledge,
            ..CharacterProfile::default()
        };
        agents.attach("w", "ben", profile).await.expect("attached");
        let view = agents
            .character("w", "ben")
            .expect("attached")
            .recall_view(question, &options)
            .await
            .expect("recall");
        choices.push((view.choice, view.abstained));
    }
    assert_eq!(choices, [(Some(2), false), (None, true)]);
}

/// A person the character perceived under two names is one person to its gate: Watson
/// heard a stranger ("a tall young man with a test-tube") say he had found a reagent,
/// then heard him introduce himself as Holmes, so "What has Holmes discovered?" is
/// about that line. A Watson who never heard the name cannot link them, and refuses.
#[tokio::test]
async fn a_person_known_by_two_names_is_one_subject_to_the_gate() {
    let stranger = "a tall young man with a test-tube";
    let event = |seq: u64, kind: EventKind, name: &str, text: &str| Event {
        world_id: "w".into(),
        seq,
        scene_id: "s1".into(),
        kind: kind as i32,
        speaker: if name.is_empty() {
            String::new()
        } else {
            "person-7".into()
        },
        speaker_name: name.into(),
        text: text.into(),
        perceivers: vec!["watson".into(), "person-7".into()],
        perceiver_names: vec!["John Watson".into(), stranger.into()],
        ..Event::default()
    };
    let seen = vec![
        event(1, EventKind::SceneStart, "", "Scene 1: the laboratory"),
        event(
            2,
            EventKind::Speech,
            stranger,
            "I have found a reagent which is precipitated by haemoglobin!",
        ),
    ];
    let mut heard = seen.clone();
    heard.push(event(3, EventKind::Speech, "Holmes", "Holmes is the name."));
    let options: Vec<String> = ["A reagent", "A ring", "A letter", "A bullet"]
        .map(String::from)
        .to_vec();
    let mut verdicts = Vec::new();
    for events in [heard, seen] {
        let agents = agents(&ScriptedModel::new(Vec::new()), None);
        let profile = CharacterProfile {
            id: "watson".into(),
            name: "John Watson".into(),
            profile: "An army doctor.".into(),
            ..CharacterProfile::default()
        };
        agents
            .attach("w", "watson", profile)
            .await
            .expect("attached");
        agents
            .character("w", "watson")
            .expect("attached")
            .perceive(&events)
            .await
            .expect("perceived");
        let view = agents
            .character("w", "watson")
            .expect("attached")
            .recall_view("What has Holmes discovered?", &options)
            .await
            .expect("recall");
        verdicts.push((view.choice, view.abstained));
    }
    assert_eq!(verdicts, [(Some(0), false), (None, true)]);
}
