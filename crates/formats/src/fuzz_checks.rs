//! The properties the fuzz targets (`fuzz/`) check, here so that `cargo test` replays
//! every committed corpus file through the same code on the stable toolchain. Each
//! panics when a property fails: that is what a fuzzer reports.

use crate::{card, epub, lore};

/// Inputs larger than this are skipped: the fuzzer's own bound.
pub const MAX_INPUT: usize = 1024 * 1024;

/// A card file's bytes (PNG or JSON): reading never panics; a refusal says why in a
/// bounded message; a card read is named, and its V3 JSON reads back to the same data;
/// the lorebook reader takes the same bytes without panicking.
pub fn card_file(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    match card::read(data, "fuzz.png") {
        Ok(card) => {
            assert!(!card.name().trim().is_empty(), "a card read has a name");
            let json = serde_json::to_vec(&card.to_v3_json()).expect("a value serialises");
            let again = card::from_json(&json, "again").expect("its V3 JSON reads");
            assert_eq!(again.data, card.data, "the round trip keeps every field");
        }
        Err(error) => assert!(error.to_string().len() < 4096, "{error}"),
    }
    if let Ok(book) = lore::read_lorebook(data) {
        assert!(book.entries.iter().all(|e| !e.id.is_empty()));
    }
}

/// An EPUB's bytes, read with 4 MiB of inflation at most: never a panic, never more
/// inflated than the bound, and a book read has text.
pub fn epub_file(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    let limits = epub::Limits {
        total_bytes: 4 * 1024 * 1024,
        ..epub::Limits::default()
    };
    match epub::read(data, &limits) {
        Ok(text) => {
            assert!(!text.trim().is_empty());
            assert!(
                text.len() as u64 <= limits.total_bytes,
                "no more text than inflated"
            );
        }
        Err(error) => assert!(error.to_string().len() < 4096, "{error}"),
    }
}

#[cfg(test)]
mod tests {
    /// Other tools' real files (beside the repository, never in it) keep the fuzz
    /// targets' properties: the seeds `scripts/fuzz.sh` starts from.
    #[test]
    fn the_fixture_cards_books_and_epubs_keep_the_fuzz_properties() {
        let mut seen = 0;
        for (folder, check) in [
            ("cards", super::card_file as fn(&[u8])),
            ("lorebooks", super::card_file),
            ("epub", super::epub_file),
        ] {
            let Some(entries) =
                crate::fixture(folder, "").and_then(|dir| std::fs::read_dir(dir).ok())
            else {
                continue;
            };
            for entry in entries.flatten() {
                check(&std::fs::read(entry.path()).expect("fixture"));
                seen += 1;
            }
        }
        assert!(seen == 0 || seen >= 11, "{seen} fixtures");
    }
}
