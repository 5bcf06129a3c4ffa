//! Keyword triggering, as a lorebook does it, over the facts this character holds: a
//! fact whose keys appear in the scene under way is brought into the turn's prompt
//! (SillyTavern's World Info, per character). The candidates are the facts of this
//! character's own profile and nothing else, so a triggered entry never reaches a
//! character that does not hold it: visibility is where the fact lives, not a filter
//! applied to a shared book.

use dramatis_proto::v1::{KnownFact, LoreKeys};

/// Triggered facts a prompt carries at most (constant ones first).
pub const LORE_ENTRIES: usize = 3;

/// Whether `key` occurs in `text` as a whole word (a key that starts or ends with a
/// letter or digit must not run on into one), ignoring case unless `case_sensitive`.
/// A key in a script written without spaces (Chinese) matches anywhere.
fn occurs(key: &str, text: &str, case_sensitive: bool) -> bool {
    let key = key.trim();
    if key.is_empty() {
        return false;
    }
    let (key, text) = if case_sensitive {
        (key.to_owned(), text.to_owned())
    } else {
        (key.to_lowercase(), text.to_lowercase())
    };
    let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let edges_matter = (word(key.chars().next()), word(key.chars().next_back()));
    text.match_indices(key.as_str()).any(|(at, found)| {
        let before = text[..at].chars().next_back();
        let after = text[at + found.len()..].chars().next();
        let runs_on = (edges_matter.0 && word(before)) || (edges_matter.1 && word(after));
        !runs_on
    })
}

/// Whether an entry with `keys` is triggered by `text`: always when constant; else a
/// primary key must occur, and, when selective with secondary keys, one of those too.
#[must_use]
pub fn triggered(keys: &LoreKeys, text: &str) -> bool {
    if keys.constant {
        return true;
    }
    let any = |list: &[String]| list.iter().any(|k| occurs(k, text, keys.case_sensitive));
    any(&keys.keys)
        && (!keys.selective || keys.secondary_keys.is_empty() || any(&keys.secondary_keys))
}

/// The facts of `held` that `scene` triggers, constant ones first, at most
/// [`LORE_ENTRIES`], skipping those whose ids are in `shown` already.
#[must_use]
pub fn select<'a>(held: &'a [KnownFact], scene: &str, shown: &[&str]) -> Vec<&'a KnownFact> {
    let mut hits: Vec<&KnownFact> = held
        .iter()
        .filter(|f| !shown.contains(&f.id.as_str()))
        .filter(|f| f.keys.as_ref().is_some_and(|k| triggered(k, scene)))
        .collect();
    hits.sort_by_key(|f| !f.keys.as_ref().is_some_and(|k| k.constant));
    hits.truncate(LORE_ENTRIES);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(keys: &[&str], secondary: &[&str]) -> LoreKeys {
        LoreKeys {
            keys: keys.iter().map(|k| (*k).to_owned()).collect(),
            secondary_keys: secondary.iter().map(|k| (*k).to_owned()).collect(),
            ..LoreKeys::default()
        }
    }

    #[test]
    fn a_key_triggers_as_a_whole_word_and_a_selective_entry_needs_a_second_key() {
        let plain = keys(&["Eldoria"], &[]);
        assert!(triggered(&plain, "They rode into eldoria at dusk."));
        assert!(!triggered(&plain, "Eldorian wine."), "not a whole word");
        assert!(!triggered(&plain, "Nothing here."));
        let cased = LoreKeys {
            case_sensitive: true,
            ..plain.clone()
        };
        assert!(!triggered(&cased, "into eldoria"));
        assert!(triggered(&cased, "into Eldoria!"));
        let selective = LoreKeys {
            selective: true,
            ..keys(&["glade"], &["shadow", "beast"])
        };
        assert!(!triggered(&selective, "The glade is quiet."));
        assert!(triggered(&selective, "A beast stalks the glade."));
        let constant = LoreKeys {
            constant: true,
            ..keys(&[], &[])
        };
        assert!(triggered(&constant, ""));
        assert!(triggered(&keys(&["黛玉"], &[]), "宝玉见了林黛玉便笑"));
    }

    #[test]
    fn only_held_facts_are_selected_constant_first_and_bounded() {
        let fact = |id: &str, k: LoreKeys| KnownFact {
            id: id.into(),
            text: format!("text of {id}"),
            keys: Some(k),
            ..KnownFact::default()
        };
        let held = vec![
            fact("a", keys(&["river"], &[])),
            fact("b", keys(&["forest"], &[])),
            fact(
                "c",
                LoreKeys {
                    constant: true,
                    ..LoreKeys::default()
                },
            ),
            fact("d", keys(&["river"], &[])),
            fact("e", keys(&["river"], &[])),
            KnownFact {
                id: "plain".into(),
                ..KnownFact::default()
            },
        ];
        let ids = |picked: Vec<&KnownFact>| picked.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(select(&held, "By the river.", &[])), ["c", "a", "d"]);
        assert_eq!(ids(select(&held, "By the river.", &["a", "c"])), ["d", "e"]);
        assert_eq!(ids(select(&held, "", &[])), ["c"]);
    }
}
