//! The boundary guard of the narrator's words. The narrator of an open story sees the
//! whole world (everyone's whereabouts, the scene's lines), so what it proposes is held
//! to what the place it is told at may hear: it names nobody who is not there, and it
//! repeats no fact that someone there does not know. A proposal that fails is dropped
//! (the round opens without it): the one path left from world truth to characters
//! through a model's words is closed like a character's own line.

use std::collections::BTreeSet;

use crate::state::WorldState;
use dramatis_scenario::Scenario;

/// Words a fact shares with any sentence: they say nothing of what it is about.
const COMMON: [&str; 40] = [
    "that", "this", "with", "from", "have", "were", "they", "them", "their", "there", "what",
    "when", "where", "which", "while", "will", "would", "could", "should", "about", "into", "been",
    "being", "every", "some", "more", "most", "only", "over", "under", "after", "before", "just",
    "than", "then", "your", "yours", "mine", "ours", "last",
];

/// A narration repeats a fact when it has this many of the fact's telling words, and at
/// least this share of them.
const SHARED_WORDS: usize = 3;
const SHARED_PART: f32 = 0.3;

/// The fact's telling words: four letters or more, not common ones.
fn telling(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\'').trim_end_matches("'s").to_lowercase())
        .filter(|w| w.chars().count() >= 4 && !COMMON.contains(&w.as_str()))
        .collect()
}

/// Whether `text` has `name` as whole words (case aside).
fn names(text: &str, name: &str) -> bool {
    let name = name.trim();
    if name.is_empty() {
        return false;
    }
    let lower = text.to_lowercase();
    let name = name.to_lowercase();
    lower
        .match_indices(&name)
        .any(|(at, _)| dramatis_base::whole_word_at(&lower, at, at + name.len()))
}

/// Whether the narration `text`, told at `location` in `state`, keeps to what those
/// there may hear; the error says what it would have given away.
pub fn check(
    scenario: &Scenario,
    state: &WorldState,
    location: &str,
    text: &str,
) -> Result<(), String> {
    let present: BTreeSet<String> = state.present_at(location).into_iter().collect();
    for character in &scenario.characters {
        if present.contains(&character.id) {
            continue;
        }
        let forms = std::iter::once(&character.name).chain(&character.aliases);
        if let Some(form) = forms.into_iter().find(|form| names(text, form)) {
            return Err(format!("it names {form:?}, who is not at {location}"));
        }
    }
    let said = telling(text);
    for fact in &scenario.facts {
        if present.iter().all(|who| fact.known_by.contains(who)) {
            continue;
        }
        let words = telling(&fact.text);
        let shared = words.intersection(&said).count();
        #[allow(clippy::cast_precision_loss)]
        let part = shared as f32 / words.len().max(1) as f32;
        if shared >= SHARED_WORDS && part >= SHARED_PART {
            return Err(format!(
                "it repeats fact {:?}, which someone at {location} does not know",
                fact.id
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox() -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/lamplighters-ledger/scenario.toml");
        Scenario::load(&path).expect("the shipped sandbox")
    }

    #[test]
    fn the_narrator_names_only_those_present_and_repeats_no_private_fact() {
        let scenario = sandbox();
        let state = WorldState::initial(&scenario);
        // Coyle and Varga are at the police station; Ada and Tom in Gasworks Lane.
        assert_eq!(state.present_at("police-station"), ["coyle", "varga"]);
        let at = "police-station";
        assert_eq!(
            check(&scenario, &state, at, "A runner bursts in with a note."),
            Ok(())
        );
        // Varga, who is there, may be named.
        assert_eq!(check(&scenario, &state, at, "Varga drops his pen."), Ok(()));
        let tom = &scenario
            .characters
            .iter()
            .find(|c| c.id == "tom")
            .expect("tom")
            .name;
        let named = check(
            &scenario,
            &state,
            at,
            &format!("Word comes that {tom} ran off."),
        );
        assert!(
            named
                .expect_err("Tom is not there")
                .contains("who is not at")
        );
        // Tom's secret: the packet in the barge's rope locker.
        let leaked = check(
            &scenario,
            &state,
            at,
            "A boatman swears a small black book of names was hidden in a barge's rope locker.",
        );
        assert!(
            leaked.expect_err("a private fact").contains("\"packet\""),
            "the packet fact is Tom's"
        );
        // What everyone knows may be said anywhere.
        assert_eq!(
            check(
                &scenario,
                &state,
                at,
                "Everyone in the district pays the fixer."
            ),
            Ok(())
        );
        // A word in a longer word is not a name ("Tomorrow" is not Tom).
        assert!(!names("Tomorrow the lamps are lit.", "Tom"));
        assert!(names("They saw tom.", "Tom"));
        assert!(names("忽见黛玉笑道：", "黛玉"));
    }
}
