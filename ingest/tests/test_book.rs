//! The test book the ingest is measured on (`tests/books/wrayhaven/`) keeps its own
//! promises: at least 4,000 words, eight scenes in four chapters, every character of
//! the answer file on the character list, and every character the answers call active
//! or silent in a scene actually named in that scene's text.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

#[derive(Deserialize)]
struct Answers {
    scenes: Vec<SceneAnswer>,
    facts: Vec<FactAnswer>,
    knows: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
struct SceneAnswer {
    active: Vec<String>,
    silent: Vec<String>,
    referenced: Vec<String>,
}

#[derive(Deserialize)]
struct FactAnswer {
    known_by: Vec<String>,
}

fn book() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/books/wrayhaven")
}

/// Canonical id (first word of the name, lowercased) → every name form.
fn characters() -> BTreeMap<String, Vec<String>> {
    std::fs::read_to_string(book().join("characters.txt"))
        .expect("character list")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let (name, aliases) = line.split_once('|').expect("Name | aliases");
            let name = name.trim().to_owned();
            // No title in this list: the id is the whole name.
            let id = name.to_lowercase().replace(' ', "-");
            let mut forms = vec![name];
            forms.extend(aliases.split(',').map(|a| a.trim().to_owned()));
            (id, forms)
        })
        .collect()
}

#[test]
fn the_test_book_matches_its_answer_file() {
    let text = std::fs::read_to_string(book().join("book.txt")).expect("book");
    assert!(text.split_whitespace().count() >= 4000);
    let chapters: Vec<&str> = text.split("\nCHAPTER ").skip(1).collect();
    assert_eq!(chapters.len(), 4);
    let scenes: Vec<&str> = chapters.iter().flat_map(|c| c.split("\n* * *\n")).collect();
    let answers: Answers =
        toml::from_str(&std::fs::read_to_string(book().join("answers.toml")).expect("answers"))
            .expect("answer file");
    assert_eq!(scenes.len(), answers.scenes.len());
    assert_eq!(answers.facts.len(), 10);
    let characters = characters();
    assert!(characters.len() >= 4);
    for (text, scene) in scenes.iter().zip(&answers.scenes) {
        for id in scene.active.iter().chain(&scene.silent) {
            let forms = &characters[id];
            assert!(
                forms.iter().any(|f| text.contains(f.as_str())),
                "{id} is on stage but not named in: {}",
                &text[..80]
            );
        }
        for id in scene.referenced.iter() {
            assert!(characters.contains_key(id), "{id}");
        }
    }
    // One focus character is talked about and never on stage.
    let never: Vec<&String> = characters
        .keys()
        .filter(|id| {
            answers
                .scenes
                .iter()
                .all(|s| !s.active.contains(id) && !s.silent.contains(id))
        })
        .collect();
    assert_eq!(never, ["elias-dunmore"]);
    for id in answers
        .facts
        .iter()
        .flat_map(|f| &f.known_by)
        .chain(answers.knows.keys())
    {
        assert!(characters.contains_key(id), "{id}");
    }
}
