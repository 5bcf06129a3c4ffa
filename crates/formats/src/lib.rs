//! `dramatis-formats` reads the files people already have, from bytes, within bounds
//! it states: an EPUB book becomes the plain text `ingest` reads ([`epub`]); a
//! SillyTavern/TavernAI character card ([`card`]) and a World Info lorebook ([`lore`])
//! become values that keep every field. Nothing here touches the disk or the network,
//! so a fuzz target can drive every reader.

pub mod card;
pub mod epub;
pub mod fuzz_checks;
pub mod lore;

/// Other tools' real files, beside the repository (`../shared/fixtures/`), for the
/// tests: `None`, said on stderr, where the folder is absent.
#[cfg(test)]
pub(crate) fn fixture(folder: &str, name: &str) -> Option<std::path::PathBuf> {
    dramatis_base::shared(
        env!("CARGO_MANIFEST_DIR"),
        &format!("fixtures/{folder}/{name}"),
    )
}
