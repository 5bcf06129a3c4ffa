use std::io::Write as _;
use std::path::PathBuf;

use zip::write::SimpleFileOptions;

use super::*;

fn fixture(name: &str) -> Option<PathBuf> {
    crate::fixture("epub", name)
}

const CONTAINER: &str = r#"<?xml version="1.0"?>
<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container" version="1.0">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"#;

fn package(items: &[(&str, &str)], spine: &str) -> String {
    let manifest: String = items
        .iter()
        .map(|(id, href)| {
            format!(r#"<item id="{id}" href="{href}" media-type="application/xhtml+xml"/>"#)
        })
        .collect();
    format!(
        r#"<?xml version="1.0"?><package version="3.0">
        <manifest>{manifest}</manifest><spine>{spine}</spine></package>"#
    )
}

fn xhtml(body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html>
<html xmlns:epub="urn:test:epub-vocabulary">
<head><title>t</title><style>p {{ color: red }}</style></head><body>{body}</body></html>"#
    )
}

/// A zip of `entries` (name, bytes), deflated.
fn zipped(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in entries {
        zip.start_file(*name, SimpleFileOptions::default())
            .expect("entry");
        zip.write_all(bytes).expect("written");
    }
    zip.finish().expect("finished").into_inner()
}

fn book(chapter: &str) -> Vec<u8> {
    let opf = package(
        &[("c1", "text/one.xhtml"), ("notes", "text/notes.xhtml")],
        r#"<itemref idref="c1"/><itemref idref="notes" linear="no"/>"#,
    );
    zipped(&[
        ("mimetype", b"application/epub+zip"),
        ("META-INF/container.xml", CONTAINER.as_bytes()),
        ("OEBPS/content.opf", opf.as_bytes()),
        ("OEBPS/text/one.xhtml", xhtml(chapter).as_bytes()),
        (
            "OEBPS/text/notes.xhtml",
            xhtml("<p>A note nobody reads in order.</p>").as_bytes(),
        ),
    ])
}

#[test]
fn headings_and_paragraphs_become_blocks_and_notes_and_licence_are_left_out() {
    let chapter = r##"<section class="pg-boilerplate" id="pg-header"><p>The Project Gutenberg eBook</p></section>
        <h2><a id="c1"/>CHAPTER I.<br/>
        Down the   Rabbit-Hole</h2>
        <p>Alice was beginning<a class="fnanchor" href="#n1">[1]</a> to get
           very <i>tired</i>.</p>
        <p>“Oh dear!” said the Rabbit.</p>
        <div epub:type="footnote" id="n1"><p>A footnote.</p></div>
        <aside><p>A sidebar.</p></aside>
        <ol type="a"><li>A listed line.</li></ol>
        <table><tr><td>CHAPTER II.</td><td>The Pool of Tears</td></tr></table>"##;
    let text = read(&book(chapter), &Limits::default()).expect("read");
    assert_eq!(
        text,
        "CHAPTER I.\nDown the Rabbit-Hole\n\nAlice was beginning to get very _tired_.\n\n\
         “Oh dear!” said the Rabbit.\n\nA listed line.\n\nCHAPTER II. The Pool of Tears\n\n"
    );
}

#[test]
fn a_file_that_is_not_a_zip_is_refused() {
    let error =
        read(b"Alice was beginning to get very tired", &Limits::default()).expect_err("not a zip");
    assert!(matches!(error, EpubError::NotZip(_)), "{error}");
    assert!(
        error
            .to_string()
            .starts_with("not an EPUB: the file is not a zip archive")
    );
}

#[test]
fn a_zip_bomb_stops_at_the_bound_it_names() {
    let zeros = vec![b'a'; 4 * 1024 * 1024];
    let opf = package(&[("c1", "one.xhtml")], r#"<itemref idref="c1"/>"#);
    let bytes = zipped(&[
        ("META-INF/container.xml", CONTAINER.as_bytes()),
        ("OEBPS/content.opf", opf.as_bytes()),
        ("OEBPS/one.xhtml", &zeros),
    ]);
    assert!(
        bytes.len() < 64 * 1024,
        "it compresses: {} bytes",
        bytes.len()
    );
    let limits = Limits {
        total_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let error = read(&bytes, &limits).expect_err("a bomb");
    assert_eq!(
        error,
        EpubError::Bomb {
            name: "OEBPS/one.xhtml".into(),
            limit: 1024 * 1024
        }
    );
    assert!(
        error.to_string().contains("1048576 uncompressed bytes"),
        "{error}"
    );
    let small = Limits {
        file_bytes: 100,
        ..Limits::default()
    };
    assert!(matches!(
        read(&bytes, &small),
        Err(EpubError::TooLarge { limit: 100, .. })
    ));
}

#[test]
fn a_missing_package_or_spine_item_is_named() {
    let bytes = zipped(&[("META-INF/container.xml", CONTAINER.as_bytes())]);
    assert_eq!(
        read(&bytes, &Limits::default()),
        Err(EpubError::MissingPackage {
            path: "OEBPS/content.opf".into()
        })
    );
    let bytes = zipped(&[("mimetype", b"application/epub+zip")]);
    assert_eq!(
        read(&bytes, &Limits::default()),
        Err(EpubError::NoContainer)
    );
    let opf = package(&[("c1", "gone.xhtml")], r#"<itemref idref="c1"/>"#);
    let bytes = zipped(&[
        ("META-INF/container.xml", CONTAINER.as_bytes()),
        ("OEBPS/content.opf", opf.as_bytes()),
    ]);
    assert_eq!(
        read(&bytes, &Limits::default()),
        Err(EpubError::MissingItem {
            idref: "c1".into(),
            path: "OEBPS/gone.xhtml".into()
        })
    );
    let opf = package(&[("c1", "one.xhtml")], r#"<itemref idref="c2"/>"#);
    let bytes = zipped(&[
        ("META-INF/container.xml", CONTAINER.as_bytes()),
        ("OEBPS/content.opf", opf.as_bytes()),
    ]);
    assert_eq!(
        read(&bytes, &Limits::default()),
        Err(EpubError::UnknownItem {
            file: "OEBPS/content.opf".into(),
            idref: "c2".into()
        })
    );
}

#[test]
fn a_path_that_climbs_out_is_refused_in_the_zip_and_in_the_package() {
    let bytes = zipped(&[
        ("META-INF/container.xml", CONTAINER.as_bytes()),
        ("../escape.txt", b"out"),
    ]);
    assert_eq!(
        read(&bytes, &Limits::default()),
        Err(EpubError::Climbs {
            name: "../escape.txt".into()
        })
    );
    let opf = package(&[("c1", "../../../etc/passwd")], r#"<itemref idref="c1"/>"#);
    let bytes = zipped(&[
        ("META-INF/container.xml", CONTAINER.as_bytes()),
        ("OEBPS/content.opf", opf.as_bytes()),
    ]);
    assert_eq!(
        read(&bytes, &Limits::default()),
        Err(EpubError::Climbs {
            name: "../../../etc/passwd".into()
        })
    );
    // Inside the book, `..` is fine.
    assert_eq!(
        resolve("OEBPS/text/", "../img/a.xhtml#x").as_deref(),
        Some("OEBPS/img/a.xhtml")
    );
}

#[test]
fn gutenbergs_alice_reads_as_its_twelve_chapters_without_the_licence() {
    for name in ["pg11.epub", "pg11-images-3.epub"] {
        let Some(path) = fixture(name) else { return };
        let bytes = std::fs::read(&path).expect("fixture");
        let text = read(&bytes, &Limits::default()).expect("read");
        let headings: Vec<&str> = text
            .split("\n\n")
            .filter(|b| b.starts_with("CHAPTER ") && b.contains('\n'))
            .collect();
        assert_eq!(headings.len(), 12, "{name}: {headings:?}");
        assert_eq!(headings[0], "CHAPTER I.\nDown the Rabbit-Hole", "{name}");
        assert_eq!(headings[11], "CHAPTER XII.\nAlice’s Evidence", "{name}");
        assert!(
            !text.to_lowercase().contains("gutenberg"),
            "{name}: the licence is left out"
        );
        assert!(text.contains("Alice was beginning to get very tired of sitting by her sister"));
        assert!(
            text.trim_end().ends_with("THE END"),
            "{name}: {:?}",
            &text[text.len() - 80..]
        );
    }
}

#[test]
fn frankenstein_reads_as_its_four_letters_and_twenty_four_chapters() {
    let Some(path) = fixture("pg84-images-3.epub") else {
        return;
    };
    let text = read(&std::fs::read(&path).expect("fixture"), &Limits::default()).expect("read");
    let blocks: Vec<&str> = text.split("\n\n").collect();
    // Each heading twice: in the contents list, then over its text.
    let letters = blocks.iter().filter(|b| b.starts_with("Letter ")).count();
    let chapters = blocks.iter().filter(|b| b.starts_with("Chapter ")).count();
    assert_eq!((letters, chapters), (8, 48), "{:?}", &blocks[..12]);
    let first = blocks
        .iter()
        .rposition(|b| *b == "Letter 1")
        .expect("a heading");
    assert!(
        blocks[first + 1].starts_with("_To Mrs. Saville, England._"),
        "{}",
        blocks[first + 1]
    );
    assert!(!text.to_lowercase().contains("gutenberg"));
}
