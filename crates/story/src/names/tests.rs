use dramatis_proto::v1::{Event, EventKind, Usage};

use super::*;
use crate::state::WorldState;
use crate::test_scenarios::scripted;

fn view<'a>(scenario: &'a Scenario, state: &'a WorldState, me: &'a str) -> Perspective<'a> {
    Perspective {
        scenario,
        world_id: "w",
        known: &state.acquaintances,
        attention: &state.attention,
        me,
    }
}

fn event(seq: u64, kind: EventKind, speaker: &str, text: &str, perceivers: &[&str]) -> Event {
    Event {
        world_id: "w".into(),
        seq,
        kind: kind as i32,
        speaker: speaker.into(),
        text: text.into(),
        perceivers: perceivers.iter().map(|p| (*p).to_owned()).collect(),
        ..Event::default()
    }
}

/// Everything in a copy that could carry a name, as one string.
fn words(view: &Event) -> String {
    format!("{view:?}")
}

#[test]
fn thoughts_reach_only_the_actor_a_scene_end_hides_its_reason_and_usage_is_not_perceived() {
    let scenario = scripted();
    let state = WorldState::initial(&scenario);
    let mut said = event(
        1,
        EventKind::Speech,
        "holmes",
        "You have been in Afghanistan.",
        &["holmes", "watson"],
    );
    said.thought = "His tan stops at the wrists.".into();
    said.usage = Some(Usage {
        llm_calls: 3,
        ..Usage::default()
    });
    let holmes = view(&scenario, &state, "holmes")
        .event(&said)
        .expect("the actor perceives");
    let watson = view(&scenario, &state, "watson")
        .event(&said)
        .expect("watson perceives");
    assert_eq!(holmes.thought, "His tan stops at the wrists.");
    assert_eq!((watson.thought.as_str(), watson.usage), ("", None));
    assert_eq!(watson.text, "You have been in Afghanistan.");
    assert!(view(&scenario, &state, "lestrade").event(&said).is_none());
    let end = event(
        2,
        EventKind::SceneEnd,
        "",
        "The beat was reached: Holmes deduces Afghanistan.",
        &["watson"],
    );
    let seen = view(&scenario, &state, "watson")
        .event(&end)
        .expect("perceived");
    assert_eq!(seen.text, "The scene ends.");
}

#[test]
fn a_stranger_is_seen_not_named_until_a_line_names_them_while_they_are_there() {
    let scenario = scripted();
    let mut state = WorldState::initial(&scenario);
    let springs = event(
        1,
        EventKind::Action,
        "holmes",
        "Sherlock Holmes springs up. Holmes waves a test-tube.",
        &["holmes", "watson"],
    );
    state.apply(&scenario, &springs);
    let watson = view(&scenario, &state, "watson");
    let before = watson.event(&springs).expect("perceived");
    assert_eq!(
        before.text,
        "A tall young man with a test-tube springs up. A tall young man with a test-tube waves a test-tube."
    );
    assert_eq!(before.speaker_name, "a tall young man with a test-tube");
    let handle = before.speaker.clone();
    assert!(handle.starts_with(HANDLE_PREFIX), "{handle}");
    assert_eq!(before.perceivers, [handle.clone(), "watson".to_owned()]);
    assert_eq!(
        before.perceiver_names,
        ["a tall young man with a test-tube", "John Watson"]
    );
    let seen = words(&before);
    assert!(
        !seen.contains("olmes") && !seen.contains("Sherlock"),
        "{seen}"
    );
    // Holmes names himself aloud: from this line on, Watson knows the name he heard.
    let introduces = event(
        2,
        EventKind::Speech,
        "holmes",
        "Holmes is the name. You have been in Afghanistan, I perceive.",
        &["holmes", "watson"],
    );
    state.apply(&scenario, &introduces);
    let watson = view(&scenario, &state, "watson");
    let after = watson.event(&introduces).expect("perceived");
    assert_eq!(
        (after.speaker_name.as_str(), after.speaker.as_str()),
        ("Holmes", handle.as_str()),
        "the name is learned; the handle stays"
    );
    // A line logged before the introduction is still rendered as it was perceived then.
    assert_eq!(watson.event(&springs).expect("perceived"), before);
    // A later "Sherlock Holmes" in a description becomes the name Watson heard.
    let bows = event(
        3,
        EventKind::Action,
        "holmes",
        "Sherlock Holmes bows.",
        &["holmes", "watson"],
    );
    assert_eq!(watson.event(&bows).expect("perceived").text, "Holmes bows.");
    // Someone absent is not learned by being named: Lestrade was at the bar.
    let lestrade = view(&scenario, &state, "lestrade");
    assert!(!lestrade.knows("holmes", u64::MAX));
    // Holmes, who was there, learned nothing about himself and knows Watson now? No:
    // nobody named Watson.
    assert!(!view(&scenario, &state, "holmes").knows("watson", u64::MAX));
}

#[test]
fn a_scene_start_teaches_the_names_its_scenario_says_were_learned_offstage() {
    let mut scenario = scripted();
    scenario.scenes[0].knows = [("watson".to_owned(), ["holmes".to_owned()].into())].into();
    let mut state = WorldState::initial(&scenario);
    assert!(!view(&scenario, &state, "watson").knows("holmes", u64::MAX));
    let start = event(
        5,
        EventKind::SceneStart,
        "",
        "Scene 1: the Lab",
        &["holmes", "watson"],
    );
    state.apply(&scenario, &start);
    let watson = view(&scenario, &state, "watson");
    assert!(watson.knows("holmes", 5) && !watson.knows("holmes", 4));
    assert_eq!(watson.name("holmes", 5), "Sherlock Holmes");
}

#[test]
fn a_departure_is_seen_from_the_origin_an_arrival_from_the_destination() {
    let scenario = scripted();
    let state = WorldState::initial(&scenario);
    // Holmes leaves the lab, where Watson is, for the bar, where Lestrade is.
    let mut moves = event(
        1,
        EventKind::Movement,
        "holmes",
        "Sherlock Holmes goes to the Bar.",
        &["holmes", "lestrade", "watson"],
    );
    moves.origin_perceivers = vec!["holmes".into(), "watson".into()];
    let names = |who: &str| {
        let seen = view(&scenario, &state, who)
            .event(&moves)
            .expect("perceived");
        assert!(seen.origin_perceivers.is_empty());
        seen.perceiver_names
    };
    assert_eq!(
        names("watson"),
        ["a tall young man with a test-tube", "John Watson"]
    );
    assert_eq!(
        names("lestrade"),
        ["a tall young man with a test-tube", "Inspector Lestrade"]
    );
    assert_eq!(names("holmes").len(), 3, "the traveller sees both ends");
}

#[test]
fn an_actor_names_others_by_the_handle_it_was_given_or_a_name_it_knows() {
    let scenario = scripted();
    let state = WorldState::initial(&scenario);
    let watson = view(&scenario, &state, "watson");
    let handle = watson.handle("holmes");
    assert_eq!(watson.resolve(&handle), Some("holmes"));
    assert_eq!(
        watson.resolve("Sherlock Holmes"),
        None,
        "a name it never heard"
    );
    assert_eq!(watson.resolve("holmes"), None);
    // Watson knows Lestrade from the start: by id, name or alias.
    assert_eq!(watson.handle("lestrade"), "lestrade");
    assert_eq!(watson.resolve("the inspector"), Some("lestrade"));
    assert_eq!(watson.resolve(" "), None);
    // Handles differ by viewer and by world, and never spell the id.
    let lestrade = view(&scenario, &state, "lestrade");
    assert_ne!(lestrade.handle("holmes"), handle);
    let elsewhere = Perspective {
        world_id: "other",
        ..watson
    };
    assert_ne!(elsewhere.handle("holmes"), handle);
}

#[test]
fn a_frame_shows_strangers_by_handle_and_appearance_and_renders_its_texts() {
    let scenario = scripted();
    let state = WorldState::initial(&scenario);
    let frame = SceneFrame {
        direction: "Watch Holmes closely.".into(),
        location_description: "Sherlock Holmes's bench.".into(),
        present: vec![dramatis_proto::v1::PresentCharacter {
            id: "holmes".into(),
            name: "Sherlock Holmes".into(),
        }],
        ..SceneFrame::default()
    };
    let seen = view(&scenario, &state, "watson").frame(frame);
    assert_eq!(
        seen.direction,
        "Watch a tall young man with a test-tube closely."
    );
    assert_eq!(
        seen.location_description,
        "A tall young man with a test-tube's bench."
    );
    assert_eq!(seen.present[0].name, "a tall young man with a test-tube");
    assert!(seen.present[0].id.starts_with(HANDLE_PREFIX));
}

#[test]
fn whole_words_only_and_the_fuller_name_is_kept() {
    assert_eq!(
        replace_names("Holmesian Holmes.", &["Holmes"], "him"),
        "Holmesian him."
    );
    assert_eq!(find_word("Ah, Holmes!", "Holmes", 0), Some(4));
    assert_eq!(find_word("Holmesian", "Holmes", 0), None);
    let mut known = Acquaintances::default();
    known.teach("watson", "holmes", 1, "Sherlock Holmes".into());
    known.teach("watson", "holmes", 2, "Holmes".into());
    assert_eq!(
        known.learned("watson", "holmes", 9),
        Some("Sherlock Holmes")
    );
    assert_eq!(known.learned("watson", "holmes", 0), None);
}

#[test]
fn a_name_known_in_full_is_not_doubled_by_its_shorter_forms() {
    let scenario = scripted();
    let mut state = WorldState::initial(&scenario);
    let introduces = event(
        1,
        EventKind::Speech,
        "holmes",
        "Sherlock Holmes, at your service.",
        &["holmes", "watson"],
    );
    state.apply(&scenario, &introduces);
    let watson = view(&scenario, &state, "watson");
    assert_eq!(watson.name("holmes", 9), "Sherlock Holmes");
    let arrives = event(
        2,
        EventKind::Movement,
        "holmes",
        "Sherlock Holmes goes to Baker Street. Holmes sits; Sherlock Holmes smiles.",
        &["holmes", "watson"],
    );
    assert_eq!(
        watson.event(&arrives).expect("perceived").text,
        "Sherlock Holmes goes to Baker Street. Sherlock Holmes sits; Sherlock Holmes smiles."
    );
    // One pass: a form inside what was put in is not replaced again.
    assert_eq!(
        replace_names(
            "Holmes and Sherlock Holmes.",
            &["Sherlock Holmes", "Holmes"],
            "Sherlock Holmes"
        ),
        "Sherlock Holmes and Sherlock Holmes."
    );
    assert_eq!(
        replace_names(
            "Sherlock Holmes nods to Holmes.",
            &["Sherlock Holmes", "Holmes"],
            "Holmes"
        ),
        "Holmes nods to Holmes."
    );
}

#[test]
fn a_chinese_name_inside_a_sentence_is_hidden_from_a_stranger_until_it_is_spoken() {
    let text = r#"version = 1
name = "hlm"
title = "红楼梦"

[[locations]]
id = "rongguofu"
name = "荣国府"
description = "正房大院。"

[[characters]]
id = "lin-daiyu"
name = "林黛玉"
aliases = ["黛玉"]
profile = "林如海之女。"
location = "rongguofu"
known_as = "一位面生的姑娘"

[[characters]]
id = "jia-baoyu"
name = "贾宝玉"
aliases = ["宝玉"]
profile = "贾政之子。"
location = "rongguofu"

[[scenes]]
id = "meeting"
location = "rongguofu"
cast = ["lin-daiyu", "jia-baoyu"]
beat = "二人初见。"
max_turns = 4
"#;
    let scenario =
        Scenario::parse(text, std::path::Path::new("hlm.toml")).expect("the scenario parses");
    let mut state = WorldState::initial(&scenario);
    let both = ["lin-daiyu", "jia-baoyu"];
    let smiles = event(
        1,
        EventKind::Action,
        "lin-daiyu",
        "黛玉笑着看了一眼。",
        &both,
    );
    state.apply(&scenario, &smiles);
    let seen = view(&scenario, &state, "jia-baoyu")
        .event(&smiles)
        .expect("perceived");
    assert_eq!(seen.text, "一位面生的姑娘笑着看了一眼。");
    assert!(!words(&seen).contains("黛玉"), "{seen:?}");
    // A model that knows the book has him say the name he never heard: the world keeps
    // it out of the line, so no hearer learns it from him.
    let guessed = dramatis_proto::v1::Action {
        kind: dramatis_proto::v1::ActionKind::Speech as i32,
        text: "黛玉妹妹从哪里来？".into(),
        ..Default::default()
    };
    let draft = crate::drafts::resolve(view(&scenario, &state, "jia-baoyu"), &state, &guessed);
    assert_eq!(draft.text, "一位面生的姑娘妹妹从哪里来？");
    // She says her name aloud, inside a sentence with no space around it.
    let says = event(
        2,
        EventKind::Speech,
        "lin-daiyu",
        "我姓林，名叫黛玉。",
        &both,
    );
    state.apply(&scenario, &says);
    let again = event(
        3,
        EventKind::Action,
        "lin-daiyu",
        "黛玉笑着看了一眼。",
        &both,
    );
    let seen = view(&scenario, &state, "jia-baoyu")
        .event(&again)
        .expect("perceived");
    assert_eq!(seen.text, "黛玉笑着看了一眼。");
    assert_eq!(seen.speaker_name, "黛玉");
    let draft = crate::drafts::resolve(view(&scenario, &state, "jia-baoyu"), &state, &guessed);
    assert_eq!(draft.text, "黛玉妹妹从哪里来？");
}
