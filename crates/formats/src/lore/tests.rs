use std::path::PathBuf;

use super::*;

fn fixture(name: &str) -> Option<PathBuf> {
    crate::fixture("lorebooks", name)
}

fn book(name: &str) -> Option<Lorebook> {
    let path = fixture(name)?;
    Some(read_lorebook(&std::fs::read(path).expect("fixture")).expect("a lorebook"))
}

#[test]
fn world_info_old_and_new_and_a_character_book_read_alike() {
    let Some(old) = book("Eldoria.json") else {
        return;
    };
    let Some(new) = book("Eldoria.staging.json") else {
        return;
    };
    let Some(embedded) = book("Seraphina.character_book.from_ccv3.json") else {
        return;
    };
    for book in [&old, &new, &embedded] {
        assert_eq!(book.entries.len(), 4);
        assert!(
            book.entries
                .iter()
                .all(|e| e.enabled && !e.content.is_empty())
        );
        assert!(
            book.entries
                .iter()
                .any(|e| e.keys.iter().any(|k| k == "eldoria"))
        );
    }
    let contents = |b: &Lorebook| {
        let mut c: Vec<String> = b.entries.iter().map(|e| e.content.clone()).collect();
        c.sort();
        c
    };
    assert_eq!(contents(&old), contents(&new));
    assert_eq!(contents(&old), contents(&embedded));
    // What has no meaning here is listed, not lost.
    assert!(old.unused.contains("position"), "{:?}", old.unused);
    for field in ["depth", "probability", "group", "sticky"] {
        assert!(new.unused.contains(field), "{field}: {:?}", new.unused);
    }
    assert!(
        embedded.unused.contains("extensions.depth"),
        "{:?}",
        embedded.unused
    );
    assert!(embedded.entries[0].raw.contains_key("use_regex"));
}

#[test]
fn an_entry_with_a_mistyped_field_is_named() {
    let error = Lorebook::from_value(&serde_json::json!({
        "entries": {"7": {"key": ["a"], "content": 3}}
    }))
    .expect_err("content is not text");
    assert_eq!(
        error,
        LoreError::Field {
            entry: "\"7\"".into(),
            field: "content".into(),
            problem: "is not a string".into()
        }
    );
    let off = Lorebook::from_value(&serde_json::json!({
        "entries": [{"keys": "alpha, beta", "content": "x", "disable": true}]
    }))
    .expect("reads");
    assert_eq!(off.entries[0].keys, ["alpha", "beta"]);
    assert!(!off.entries[0].enabled);
    assert_eq!(
        Lorebook::from_value(&serde_json::json!({"name": "x"})),
        Err(LoreError::NoEntries)
    );
}

#[test]
fn an_entry_keyed_by_nothing_gets_its_place_and_a_long_key_is_quoted_short() {
    let book = Lorebook::from_value(&serde_json::json!({
        "entries": { "": { "content": "x" } }
    }))
    .expect("a book");
    assert_eq!(book.entries.len(), 1);
    assert_eq!(book.entries[0].id, "0");
    let long = "k".repeat(10_000);
    let error = Lorebook::from_value(&serde_json::json!({
        "entries": { long.clone(): { "content": 1 } }
    }))
    .expect_err("refused")
    .to_string();
    assert!(error.len() < 200, "{} bytes", error.len());
    assert!(
        error.contains("10000 characters") && error.contains("`content`"),
        "{error}"
    );
}
