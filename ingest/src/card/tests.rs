use std::path::PathBuf;

use serde_json::{Map, Value};

use super::*;

fn fixtures(folder: &str) -> Option<PathBuf> {
    dramatis_base::shared(env!("CARGO_MANIFEST_DIR"), &format!("fixtures/{folder}"))
}

fn import_one(cards: &[PathBuf], lorebooks: &[PathBuf], dir: &Path) -> (Imported, Scenario) {
    let done = import(
        &CardImport {
            cards: cards.to_vec(),
            lorebooks: lorebooks.to_vec(),
            ..CardImport::default()
        },
        dir,
    )
    .expect("imported");
    let scenario = Scenario::load(&done.scenario).expect("the written scenario loads");
    (done, scenario)
}

use dramatis_scenario::Scenario;

/// The entries of a book by id, each as an object.
fn entries_by_id(data: &Map<String, Value>) -> BTreeMap<String, Value> {
    let Some(Value::Array(entries)) = data.get("character_book").and_then(|b| b.get("entries"))
    else {
        return BTreeMap::new();
    };
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let id = e
                .get("uid")
                .or_else(|| e.get("id"))
                .map_or_else(|| i.to_string(), Value::to_string);
            (id, e.clone())
        })
        .collect()
}

use std::collections::BTreeMap;

#[test]
fn every_fixture_card_comes_back_from_a_world_field_by_field() {
    let Some(dir) = fixtures("cards") else {
        return;
    };
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("cards").flatten() {
        let path = entry.path();
        let original = card::read(&std::fs::read(&path).expect("ok"), "fixture").expect("a card");
        let out = tempfile::tempdir().expect("ok");
        let (done, scenario) = import_one(std::slice::from_ref(&path), &[], out.path());
        assert_eq!(done.characters, 1);
        let id = &scenario.characters[0].id;
        let back = export(&standing_of(&scenario, id).expect("the character"));
        // Every field of the card comes back as it was, the book's entries by id.
        for (field, value) in &original.data {
            if field == "character_book" {
                continue;
            }
            assert_eq!(
                back.data.get(field),
                Some(value),
                "{}: {field}",
                path.display()
            );
        }
        assert_eq!(
            entries_by_id(&back.data),
            entries_by_id(&original.data),
            "{}: character_book entries",
            path.display()
        );
        if let (Some(Value::Object(was)), Some(Value::Object(now))) = (
            original.data.get("character_book"),
            back.data.get("character_book"),
        ) {
            for (field, value) in was.iter().filter(|(f, _)| *f != "entries") {
                assert_eq!(now.get(field), Some(value), "character_book.{field}");
            }
        }
        // Re-imported, the card gives the same character.
        let again_dir = tempfile::tempdir().expect("ok");
        let again_file = again_dir.path().join("card.json");
        std::fs::write(&again_file, back.to_v3_json().to_string()).expect("ok");
        let (_, again) = import_one(&[again_file], &[], &again_dir.path().join("out"));
        let (a, b) = (&scenario.characters[0], &again.characters[0]);
        assert_eq!(
            (&a.name, &a.profile, &a.tags, &a.patterns),
            (&b.name, &b.profile, &b.tags, &b.patterns)
        );
        let texts = |s: &Scenario| {
            s.facts
                .iter()
                .map(|f| (f.text.clone(), f.keys.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(&scenario), texts(&again));
        seen += 1;
    }
    assert!(seen >= 5, "{seen} cards");
}

#[test]
fn seraphina_with_eldoria_makes_an_open_story_whose_lore_is_everyones() {
    let (Some(cards), Some(books)) = (fixtures("cards"), fixtures("lorebooks")) else {
        return;
    };
    let out = tempfile::tempdir().expect("ok");
    let (done, scenario) = import_one(
        &[cards.join("default_Seraphina.png")],
        &[books.join("Eldoria.json")],
        out.path(),
    );
    let seraphina = &scenario.characters[0];
    assert_eq!(seraphina.name, "Seraphina");
    assert!(
        seraphina.profile.contains("amber eyes"),
        "{}",
        seraphina.profile
    );
    assert!(!seraphina.profile.contains("{{char}}") && !seraphina.profile.contains("{{user}}"));
    let open = scenario.open.as_ref().expect("an open story");
    assert!(!open.opening.is_empty() && !open.premise.is_empty());
    // Seraphina's own book and the world book: 4 entries each, all hers.
    assert_eq!(
        done.facts,
        8,
        "{:?}",
        scenario.facts.iter().map(|f| &f.id).collect::<Vec<_>>()
    );
    assert!(
        scenario
            .facts
            .iter()
            .all(|f| f.known_by.contains(&seraphina.id))
    );
    assert!(scenario.facts.iter().all(|f| !f.keys.keys.is_empty()));
    assert!(done.unused.contains("position"), "{:?}", done.unused);
}

#[test]
fn a_world_book_entry_can_be_known_by_some_or_kept_secret() {
    let (Some(cards), Some(books)) = (fixtures("cards"), fixtures("lorebooks")) else {
        return;
    };
    let out = tempfile::tempdir().expect("ok");
    let book = read_lorebook(&std::fs::read(books.join("Eldoria.json")).expect("ok")).expect("ok");
    let (first, second) = (&book.entries[0], &book.entries[1]);
    let done = import(
        &CardImport {
            cards: vec![
                cards.join("default_Seraphina.png"),
                cards.join("full_v2_card.json"),
            ],
            lorebooks: vec![books.join("Eldoria.json")],
            known_by: vec![(first.keys[0].clone(), vec!["Aurora".into()])],
            secret: vec![second.id.clone()],
            ..CardImport::default()
        },
        out.path(),
    )
    .expect("imported");
    let scenario = Scenario::load(&done.scenario).expect("ok");
    assert_eq!(scenario.characters.len(), 2);
    let fact = |content: &str| {
        scenario
            .facts
            .iter()
            .find(|f| f.text == resolve_placeholders(content, "{{char}}", "a stranger").trim())
            .unwrap_or_else(|| panic!("no fact {content:?}"))
    };
    assert_eq!(
        fact(&first.content).known_by.iter().collect::<Vec<_>>(),
        ["aurora"]
    );
    assert!(fact(&second.content).secret && fact(&second.content).known_by.is_empty());
    assert_eq!(done.secret, 1);
    // A flag that names no entry is an error, not a silent no-op.
    let error = import(
        &CardImport {
            cards: vec![cards.join("default_Seraphina.png")],
            lorebooks: vec![books.join("Eldoria.json")],
            secret: vec!["no-such-entry".into()],
            ..CardImport::default()
        },
        &out.path().join("again"),
    )
    .expect_err("refused")
    .to_string();
    assert!(error.contains("no-such-entry"), "{error}");
}

#[test]
fn a_greeting_chosen_opens_the_story_and_the_others_stay_to_choose_from() {
    let Some(cards) = fixtures("cards") else {
        return;
    };
    let out = tempfile::tempdir().expect("ok");
    let request = |opening| CardImport {
        cards: vec![cards.join("full_v2_card.json")],
        opening,
        ..CardImport::default()
    };
    let done = import(&request(1), out.path()).expect("imported");
    let scenario = Scenario::load(&done.scenario).expect("ok");
    let open = scenario.open.expect("open");
    assert_eq!(open.opening, "The stars told me of your coming.");
    assert_eq!(
        open.openings,
        [
            "Welcome, traveler. I have been expecting you.",
            "Another soul seeks answers..."
        ]
    );
    let error = import(&request(3), &out.path().join("no"))
        .expect_err("refused")
        .to_string();
    assert!(
        error.contains("no opening 3") && error.contains("0 to 2"),
        "{error}"
    );
}
