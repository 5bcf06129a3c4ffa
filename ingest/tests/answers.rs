//! The answer files a reader wrote for the two real novels in `../shared/books/` (and
//! what `eval/answers/README.md` asks of them): every anchor is in the book once,
//! every name is on the character list, and each file holds at least what the format
//! asks for.

use std::path::{Path, PathBuf};

use dramatis_ingest::answers::Answers;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The novels' folder, when it is beside the repository (CI has it).
fn books() -> Option<PathBuf> {
    let books = repo().join("../shared/books");
    if books.is_dir() {
        return Some(books);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "../shared/books is missing beside the repository"
    );
    eprintln!("SKIPPED: ../shared/books is not beside the repository");
    None
}

fn check(name: &str, chapters: usize) {
    let Some(books) = books() else { return };
    let (answers, book) = Answers::load(&repo().join("eval/answers").join(name), &books)
        .unwrap_or_else(|e| panic!("{name}: {e:#}"));
    assert_eq!(answers.chapters.len(), chapters, "{name}: every chapter");
    assert!(
        answers.lines.len() >= 60,
        "{name}: {} lines",
        answers.lines.len()
    );
    assert!(
        answers.scenes.len() >= 20,
        "{name}: {} scenes",
        answers.scenes.len()
    );
    assert!(
        answers.facts.len() >= 25,
        "{name}: {} facts",
        answers.facts.len()
    );
    // Chapters and scenes in book order, scenes inside the book's text.
    assert!(answers.chapters.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(answers.scenes.windows(2).all(|w| w[0].start < w[1].start));
    assert!(answers.scenes.iter().all(|s| s.end <= book.len()));
    // Someone narrates in the first person, and is marked so on the list.
    let narrators: Vec<&String> = answers
        .chapters
        .iter()
        .filter_map(|c| c.1.as_ref())
        .collect();
    assert!(!narrators.is_empty());
    for id in narrators {
        let character = answers
            .characters
            .iter()
            .find(|c| &c.id == id)
            .expect("listed");
        assert!(
            character.narrator,
            "{name}: {id} narrates but is not marked"
        );
    }
}

#[test]
fn a_study_in_scarlet_answers_hold_together() {
    check("a-study-in-scarlet", 14);
}

#[test]
fn the_sign_of_the_four_answers_hold_together() {
    check("the-sign-of-the-four", 12);
}
