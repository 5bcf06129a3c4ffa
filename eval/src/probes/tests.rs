use super::*;
use dramatis_proto::v1::{Event, EventKind};
use std::path::Path;

const SCENARIO: &str = r#"
version = 1
name = "harbour-test"
title = "Harbour test"
description = "A test harbour."
[world]
description = "A harbour town."
[[locations]]
id = "quay"
name = "the quay"
description = "Wet stones."
[[locations]]
id = "office"
name = "Saltash House"
description = "Ledgers and lamps."
[[paths]]
from = "quay"
to = "office"
distance = 1
[[characters]]
id = "ada"
name = "Ada Quill"
profile = "The harbour clerk."
style = "briskly"
location = "quay"
[[characters]]
id = "ben"
name = "Ben Rook"
profile = "A fisherman."
style = "slowly"
location = "quay"
[[characters]]
id = "cora"
name = "Cora Vane"
profile = "The harbour master."
style = "sternly"
location = "office"
[[facts]]
id = "cargo"
text = "The night barge carried forty crates of saffron from Valparaiso."
known_by = ["ada"]
[[facts]]
id = "debt"
text = "The harbour master owes the chandler ninety guineas since Michaelmas."
known_by = ["cora"]
[[facts]]
id = "storm"
text = "A storm wrecked the lighthouse lantern at Tarrow Point last winter."
known_by = ["ada", "ben", "cora"]
[[scenes]]
id = "one"
location = "quay"
cast = ["ada", "ben"]
beat = "They talk."
max_turns = 2
[[scenes]]
id = "two"
location = "office"
cast = ["cora"]
beat = "She counts."
max_turns = 1
"#;

fn scenario() -> Scenario {
    Scenario::parse(SCENARIO, Path::new("harbour.toml")).expect("test scenario")
}

fn event(seq: u64, kind: EventKind, speaker: &str, text: &str, perceivers: &[&str]) -> Event {
    Event {
        seq,
        kind: kind as i32,
        speaker: speaker.to_owned(),
        text: text.to_owned(),
        perceivers: perceivers.iter().map(|p| (*p).to_owned()).collect(),
        turn: u32::from(kind == EventKind::Speech),
        ..Event::default()
    }
}

fn scene_start(seq: u64, location: &str, text: &str, perceivers: &[&str]) -> Event {
    Event {
        location: location.to_owned(),
        ..event(seq, EventKind::SceneStart, "", text, perceivers)
    }
}

/// Scene one (positions 1–2) on the quay with Ada and Ben; scene two (3) with Cora.
fn run() -> Run {
    let speech = EventKind::Speech;
    Run {
        log: vec![
            (
                1,
                event(
                    1,
                    EventKind::Narration,
                    "",
                    "Gulls wheel over the quay.",
                    &["ada", "ben"],
                ),
            ),
            (
                1,
                event(
                    2,
                    speech,
                    "ada",
                    "The customs seal is marked Kestrel.",
                    &["ada", "ben"],
                ),
            ),
            (
                2,
                event(3, speech, "ben", "Scripted line 4.", &["ada", "ben"]),
            ),
            (
                2,
                event(4, speech, "ada", "Scripted line 5.", &["ada", "ben"]),
            ),
            (3, event(5, EventKind::SceneEnd, "", "", &[])),
            (
                3,
                scene_start(7, "office", "Scene 2: Saltash House", &["cora"]),
            ),
            (
                3,
                event(
                    6,
                    speech,
                    "cora",
                    "Somebody paid the pilot in Florins.",
                    &["cora"],
                ),
            ),
        ],
        scene_ends: vec![2, 3],
        turns: 3,
        finished: true,
        ..Run::default()
    }
}

fn item<'a>(items: &'a [Probe], id: &str) -> &'a Probe {
    items.iter().find(|p| p.id == id).unwrap_or_else(|| {
        panic!(
            "no item {id}; have {:?}",
            items.iter().map(|p| &p.id).collect::<Vec<_>>()
        )
    })
}

#[test]
fn words_are_matched_whole_and_sentence_openings_are_not_names() {
    assert!(contains_word("Forty crates of Saffron.", "saffron"));
    assert!(!contains_word("Saffronwalden", "saffron"));
    let t = tokens("Gulls wheel. Over Tarrow Point");
    let names: Vec<&str> = t
        .iter()
        .filter(|t| kind_of(t) == Some(Kind::Name))
        .map(|t| t.word)
        .collect();
    assert_eq!(
        names,
        ["Tarrow", "Point"],
        "'Gulls' and 'Over' open sentences"
    );
}

#[test]
fn each_item_gold_is_what_its_character_could_know_at_its_position() {
    let scenario = scenario();
    let items = generate(&scenario, &run(), At::Scene, "scripted:builtin");
    // A fact given to Ada only: she can fill the blank; Ben and Cora cannot.
    let ada = item(&items, "fact:cargo:ada@3");
    let blank = &ada.options[&ada.truth.expect("truth")];
    assert!(ada.question.contains("____"), "{}", ada.question);
    assert!(
        !ada.question.contains(blank.as_str()),
        "the blank hides {blank}"
    );
    assert!(scenario.facts[0].text.contains(blank.as_str()));
    assert_eq!(
        (ada.gold, ada.split),
        (ada.truth.expect("truth"), Split::Krf)
    );
    for who in ["ben", "cora"] {
        let other = item(&items, &format!("fact:cargo:{who}@3"));
        assert_eq!((other.gold, other.split), (REFUSAL, Split::Kr), "{who}");
        assert_eq!(other.options[&other.truth.expect("truth")], *blank);
    }
    // Ada's line on the quay: Ada and Ben heard it by the end of scene one; Cora never.
    for (who, known) in [("ada", true), ("ben", true), ("cora", false)] {
        let line = item(&items, &format!("line:2:{who}@2"));
        assert_eq!(line.split == Split::Krf, known, "{who}: {line:?}");
        assert_eq!(line.line, Some(2));
        assert_eq!(
            line.line_text.as_deref(),
            Some("The customs seal is marked Kestrel.")
        );
    }
    // Cora's line in scene two, asked of her at the end of scene one: not yet said.
    let early = item(&items, "line:6:cora@2");
    assert_eq!(early.gold, REFUSAL);
    assert_eq!(item(&items, "line:6:cora@3").split, Split::Krf);
    // Every distractor is a word its character could not know there.
    let all = sources(&scenario, &run());
    for p in &items {
        for (letter, text) in &p.options {
            if *letter != REFUSAL && Some(*letter) != p.truth {
                assert!(
                    !could_know(
                        &all,
                        &p.character,
                        p.at.unwrap_or(0),
                        std::slice::from_ref(text)
                    ),
                    "{}: distractor {text} is known",
                    p.id
                );
            }
        }
    }
    // "Scripted line ____." is the same blank for two lines: no item from either.
    assert!(items.iter().all(|p| !p.question.contains("Scripted")));
    // Names and places are never the blank.
    assert!(items.iter().all(|p| {
        let truth = &p.options[&p.truth.expect("truth")];
        ![
            "Ada", "Quill", "Ben", "Rook", "Cora", "Vane", "quay", "harbour", "office",
        ]
        .contains(&truth.as_str())
    }));
}

#[test]
fn line_positions_ask_right_after_the_line_and_one_turn_before() {
    let items = generate(&scenario(), &run(), At::Line, "scripted:builtin");
    assert_eq!(item(&items, "line:2:ben@1").split, Split::Krf);
    assert_eq!(item(&items, "line:2:ben@0").gold, REFUSAL);
    assert_eq!(item(&items, "fact:storm:ben@0").split, Split::Krf);
}

/// A hand-written item: four options (A–D) and the refusal, asked at the story's end.
fn hand_written(character: &str, question: &str, options: [&str; 4], gold: char) -> Probe {
    Probe {
        id: format!("{question}:{character}"),
        ..Probe::multiple_choice(character, question, options, gold)
    }
}

#[test]
fn hand_written_gold_follows_what_was_perceived_before_the_position() {
    let scenario = scenario();
    let probe = |character: &str, gold: char| Probe {
        fact: Some("cargo".to_owned()),
        ..hand_written(
            character,
            "What is on the customs seal?",
            [
                "Marked Kestrel",
                "Marked Osprey",
                "Unmarked",
                "Marked Heron",
            ],
            gold,
        )
    };
    let probes = vec![probe("ada", 'A'), probe("ben", REFUSAL)];
    let truths = truths(&probes);
    assert_eq!(
        truths.get("cargo").map(String::as_str),
        Some("Marked Kestrel")
    );
    let all = sources(&scenario, &run());
    // Ben heard Ada name "Kestrel" at position 1: from then on he could know.
    assert_eq!(
        derive_gold(&probes[1], &scenario, &all, 0, &truths),
        Some(REFUSAL)
    );
    assert_eq!(
        derive_gold(&probes[1], &scenario, &all, 1, &truths),
        Some('A')
    );
    // Cora never heard it.
    let cora = probe("cora", REFUSAL);
    assert_eq!(
        derive_gold(&cora, &scenario, &all, 3, &truths),
        Some(REFUSAL)
    );
    // Ada was given the fact.
    assert_eq!(
        derive_gold(&probes[0], &scenario, &all, 0, &truths),
        Some('A')
    );
}

/// Issue 61. A hand-written set shuffles the options per item: the fact's true option is
/// A in one item and C in another. The gold re-derived for the second must be its own
/// option with the true text (C), not the letter the first item used (A).
#[test]
fn shuffled_options_keep_the_true_option_by_its_text() {
    let scenario = scenario();
    let question = "What is on the customs seal?";
    let first = Probe {
        fact: Some("cargo".to_owned()),
        ..hand_written(
            "ada",
            question,
            [
                "Marked Kestrel",
                "Marked Osprey",
                "Unmarked",
                "Marked Heron",
            ],
            'A',
        )
    };
    let shuffled = |character: &str, gold: char| Probe {
        fact: Some("cargo".to_owned()),
        ..hand_written(
            character,
            question,
            [
                "Marked Osprey",
                "Marked Heron",
                "Marked  Kestrel",
                "Unmarked",
            ],
            gold,
        )
    };
    // Written as a KR item (its writer asked it before Ben hears the name); asked at
    // position 1 it is KRf, and its own letter for the true text is C.
    let probes = vec![first, shuffled("ben", REFUSAL)];
    let truths = truths(&probes);
    let all = sources(&scenario, &run());
    // Ben heard Ada name "Kestrel" at position 1.
    assert_eq!(
        derive_gold(&probes[1], &scenario, &all, 1, &truths),
        Some('C')
    );
    assert_eq!(
        derive_gold(&probes[1], &scenario, &all, 0, &truths),
        Some(REFUSAL)
    );
    // An item about the fact none of whose options holds the true text is not
    // re-derived: its letter would be a guess.
    let elsewhere = Probe {
        fact: Some("cargo".to_owned()),
        ..hand_written(
            "ben",
            question,
            ["Marked Osprey", "Marked Heron", "A crown", "Unmarked"],
            REFUSAL,
        )
    };
    assert_eq!(derive_gold(&elsewhere, &scenario, &all, 1, &truths), None);
}

#[test]
fn being_at_a_place_is_evidence_for_a_hand_written_item_that_names_it() {
    let scenario = scenario();
    let probe = |character: &str| Probe {
        truth: Some('B'),
        ..hand_written(
            character,
            "Where does the harbour master keep the ledgers?",
            [
                "At Gullcove",
                "At Saltash House",
                "At Tarrow Point",
                "Nowhere at all",
            ],
            REFUSAL,
        )
    };
    let all = sources(&scenario, &run());
    let none = BTreeMap::new();
    // Cora was at Saltash House when scene two began (position 3); Ben never was.
    assert_eq!(
        derive_gold(&probe("cora"), &scenario, &all, 2, &none),
        Some(REFUSAL)
    );
    assert_eq!(
        derive_gold(&probe("cora"), &scenario, &all, 3, &none),
        Some('B')
    );
    assert_eq!(
        derive_gold(&probe("ben"), &scenario, &all, 3, &none),
        Some(REFUSAL)
    );
}

/// Issue 65. A Chinese item's evidence is a phrase inside a clause with no space around
/// it: a character who heard the clause could know the answer, one who did not could not.
#[test]
fn a_chinese_evidence_phrase_is_found_inside_the_clause_that_tells_it() {
    assert!(contains_word("那玉上面五彩晶莹，还有字迹。", "五彩晶莹"));
    assert!(contains_word("忽见黛玉笑道", "黛玉"));
    assert!(!contains_word("那玉上面五彩晶莹", "金锁"));
    let scenario = scenario();
    let mut run = run();
    run.log.push((
        3,
        event(
            8,
            EventKind::Speech,
            "ada",
            "那玉上面五彩晶莹，还有字迹。",
            &["ada", "ben"],
        ),
    ));
    let all = sources(&scenario, &run);
    let probe = |character: &str| Probe {
        truth: Some('B'),
        evidence: vec!["五彩晶莹".to_owned()],
        ..hand_written(
            character,
            "那公子落草时嘴里衔着什么？",
            ["一把金锁", "一块五彩晶莹的玉", "一颗夜明珠", "一枚铜钱"],
            REFUSAL,
        )
    };
    let none = BTreeMap::new();
    assert_eq!(
        derive_gold(&probe("ben"), &scenario, &all, 3, &none),
        Some('B')
    );
    assert_eq!(
        derive_gold(&probe("ben"), &scenario, &all, 2, &none),
        Some(REFUSAL)
    );
    assert_eq!(
        derive_gold(&probe("cora"), &scenario, &all, 3, &none),
        Some(REFUSAL)
    );
}
