//! An EPUB ingests as its plain text does: Gutenberg's EPUB of *Alice's Adventures in
//! Wonderland* (`../shared/fixtures/epub/pg11.epub`) and the plain-text Alice of
//! `../shared/books/` give the same chapters, scenes, rosters and speakers, on the
//! deterministic path.

use std::path::{Path, PathBuf};

use dramatis_embed::FakeEmbedder;
use dramatis_ingest::book::{Analysed, Options, Past, Quiet, ingest_analysed};

fn shared(path: &str) -> Option<PathBuf> {
    dramatis_base::shared(env!("CARGO_MANIFEST_DIR"), path)
}

async fn ingest(book: &Path, characters: &Path) -> Analysed {
    let out = tempfile::tempdir().expect("scratch");
    let options = Options {
        past: Past::Half,
        patterns: None,
        stop_after: None,
        chapters: None,
    };
    ingest_analysed(
        book,
        characters,
        out.path(),
        &FakeEmbedder::new(32),
        None,
        &options,
        &Quiet,
    )
    .await
    .unwrap_or_else(|e| panic!("{}: {e:#}", book.display()))
}

/// A scene as a reader compares two editions: its chapter, who is on stage and who
/// only named, and who says what, in order, each line as its words (no punctuation).
fn scenes(analysed: &Analysed) -> Vec<(String, Vec<(String, String)>)> {
    analysed
        .analysis
        .scenes
        .iter()
        .map(|s| {
            let lines = s
                .utterances
                .iter()
                .map(|u| {
                    let letters: String = u
                        .text
                        .chars()
                        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
                        .collect();
                    let words: Vec<&str> = letters.split_whitespace().collect();
                    (format!("{:?}", u.speaker), words.join(" "))
                })
                .collect();
            let header = format!(
                "chapter {} | active {:?} | silent {:?} | referenced {:?}",
                s.span.chapter, s.active, s.silent, s.referenced
            );
            (header, lines)
        })
        .collect()
}

#[tokio::test]
async fn gutenbergs_epub_of_alice_ingests_as_its_plain_text_scene_by_scene() {
    let characters = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../eval/answers/alices-adventures-in-wonderland/characters.txt");
    let Some(text) = shared("books/alices-adventures-in-wonderland.txt") else {
        return;
    };
    let from_text = ingest(&text, &characters).await;
    // Gutenberg's EPUB 2 and its EPUB 3 edition.
    for name in ["pg11.epub", "pg11-images-3.epub"] {
        let Some(epub) = shared(&format!("fixtures/epub/{name}")) else {
            return;
        };
        same_scenes(&from_text, &ingest(&epub, &characters).await, name);
    }
}

fn same_scenes(from_text: &Analysed, from_epub: &Analysed, name: &str) {
    assert_eq!(from_epub.done.chapters, 12);
    assert_eq!(from_epub.done.chapters, from_text.done.chapters);
    let (a, b) = (scenes(from_text), scenes(from_epub));
    assert!(a.len() > 12, "{} scenes", a.len());
    assert_eq!(a.len(), b.len(), "{name}: scenes");
    // The two editions differ in a word here and there (the EPUB's "some attempt at
    // applause" is the text's "some attempts"): such lines are counted, never a
    // different speaker, a different roster or a line more or less.
    let mut reworded = Vec::new();
    for (i, ((head_t, lines_t), (head_e, lines_e))) in a.iter().zip(&b).enumerate() {
        assert_eq!(head_t, head_e, "{name}: scene {}", i + 1);
        let speakers = |lines: &[(String, String)]| -> Vec<String> {
            lines.iter().map(|(s, _)| s.clone()).collect()
        };
        assert_eq!(
            speakers(lines_t),
            speakers(lines_e),
            "{name}: speakers of scene {}",
            i + 1
        );
        for ((_, t), (_, e)) in lines_t.iter().zip(lines_e) {
            if t != e {
                reworded.push(format!("scene {}: {t:?} / {e:?}", i + 1));
            }
        }
    }
    let lines: usize = a.iter().map(|(_, l)| l.len()).sum();
    assert!(lines > 100, "{lines} attributed lines");
    eprintln!(
        "{name}: {} chapters, {} scenes, {lines} attributed lines, {} reworded: {reworded:#?}",
        from_epub.done.chapters,
        b.len(),
        reworded.len()
    );
    assert!(
        reworded.len() <= 3,
        "{name}: {} of {lines} lines differ: {reworded:#?}",
        reworded.len()
    );
}

#[test]
fn a_damaged_epub_is_refused_with_its_file_named() {
    let dir = tempfile::tempdir().expect("scratch");
    let path = dir.path().join("book.epub");
    std::fs::write(&path, "CHAPTER I.\n\nNot a zip at all.").expect("written");
    let error = dramatis_ingest::book::text::read_book(&path).expect_err("not a zip");
    assert_eq!(
        error.to_string(),
        format!(
            "{}: not an EPUB: the file is not a zip archive (invalid Zip archive: Could not find EOCD)",
            path.display()
        )
    );
    // A zip by its first bytes is read as an EPUB whatever its name.
    let named = dir.path().join("book.txt");
    std::fs::write(&named, b"PK\x03\x04 torn").expect("written");
    let error = dramatis_ingest::book::text::read_book(&named).expect_err("torn");
    assert!(error.to_string().contains("not an EPUB"), "{error}");
}
