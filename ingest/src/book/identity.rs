//! Stage 5, identity: who knows whom by name at the end of each scene. A character
//! learns a name by hearing it spoken aloud (or saying it) while on stage, or by
//! having said it in a line another retells; narration naming someone teaches nobody,
//! and descriptions ("the widow") are not names.

use std::collections::{BTreeMap, BTreeSet};

use super::scenes::{Scene, Speaker};
use super::text::Namer;

/// Per scene (index into `scenes`), character id → the ids and other speakers' names
/// it knows by name at that scene's end.
pub type NameTable = Vec<BTreeMap<String, BTreeSet<String>>>;

/// The table for `scenes`, in order; each row carries the one before it forward.
#[must_use]
pub fn names_known(scenes: &[Scene], namer: &Namer) -> NameTable {
    let mut known: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut table = Vec::with_capacity(scenes.len());
    let others: BTreeSet<&str> = scenes
        .iter()
        .flat_map(|s| &s.utterances)
        .filter_map(|u| match &u.speaker {
            Speaker::Other(n) => Some(n.as_str()),
            Speaker::Focus(_) => None,
        })
        .collect();
    for s in scenes {
        for u in &s.utterances {
            let mut hearers = s.present_at(u.paragraph);
            if let Some(id) = u.speaker.focus() {
                hearers.insert(id.to_owned());
            }
            let mut heard: BTreeSet<String> = namer
                .mentions(&u.text)
                .iter()
                .filter(|m| m.by_name)
                .map(|m| m.character.to_owned())
                .collect();
            for other in &others {
                if super::text::contains_phrase(&u.text, other) {
                    heard.insert((*other).to_owned());
                }
            }
            for who in &hearers {
                let entry = known.entry(who.clone()).or_default();
                entry.extend(heard.iter().filter(|h| *h != who).cloned());
            }
        }
        // A line someone retells ("'I will tell you how Morstan died,' he said"): the
        // one who first said it used the names in it; who heard it then is not told.
        for u in &s.retold {
            let Some(id) = u.speaker.focus() else {
                continue;
            };
            let said = namer
                .mentions(&u.text)
                .into_iter()
                .filter(|m| m.by_name && m.character != id)
                .map(|m| m.character.to_owned());
            known.entry(id.to_owned()).or_default().extend(said);
        }
        table.push(known.clone());
    }
    table
}
