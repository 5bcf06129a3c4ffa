//! Who may know what one sentence of the book tells: the one place ingest decides it.
//!
//! The decision reads only evidence local to the sentence: who is on stage at its
//! paragraph (entrances, stays and exits, read afresh from every break the text marks),
//! who says it, and who the sentence itself shows acting. A scene's or a chapter's
//! roster never grants anything: being in the same scene at some other time, or being
//! talked about, is not being there. Where the evidence is unsure, the character is
//! left out: a miss costs recall, never a leak.

use std::collections::BTreeSet;

use super::super::lexicon::UNSEEN_MARKERS;
use super::super::narration::{
    in_first_person, of_the_narrator_alone, recalls_own_past, tells_inner_life,
};
use super::super::presence::{shows, tells_death};
use super::super::scenes::{Scene, Sentence, Speaker};
use super::super::text::{Mention, contains_phrase};
use super::{Organisation, group_learns};

/// One sentence as told: where, by whom, and whom it names.
pub(super) struct Told<'a> {
    pub scene: &'a Scene,
    pub sentence: &'a Sentence,
    pub mentions: &'a [Mention<'a>],
    /// The one focus character the paragraph's narration named so far, if only one:
    /// whose mind "he felt" opens.
    pub he_or_she: Option<&'a str>,
}

/// Who may know a sentence, and by which route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Knowers {
    pub known_by: BTreeSet<String>,
    pub route: &'static str,
}

/// Characters the narration says the others did not see, until they speak: what it
/// tells of them reaches only them. Carried from sentence to sentence of a scene.
#[derive(Debug, Default)]
pub(super) struct Unseen(BTreeSet<String>);

/// Who may know what `told` tells, among `world` (the characters with an agent):
///
/// - those on stage at its paragraph, and whoever says it; in a third-person telling,
///   of those on stage only whom its narration names (or "he" or "she" means);
/// - in a first-person narration, a thought or feeling of the narrator's ("I felt",
///   "it was in my mind"), or a sentence of "I" and "my", or of his memory ("where I had
///   once"), that names no one else on stage: the narrator alone;
/// - an omniscient narrator's view into one mind ("his heart was sore"): that mind
///   alone, if the sentence says whose; otherwise no one;
/// - what those present did not see: only those it shows acting unseen;
/// - the one the sentence shows acting ("Holmes took the lamp", "then the major
///   wrote"), there or not: the act is theirs; not one it buries, mourns or only
///   talks of;
/// - a group's members, when the sentence says the group learned it.
pub(super) fn knowers(
    told: &Told<'_>,
    unseen: &mut Unseen,
    world: &BTreeSet<String>,
    organisations: &[Organisation],
) -> Knowers {
    let Told {
        scene,
        sentence,
        mentions,
        he_or_she,
    } = told;
    let text = sentence.text.trim();
    let narration = sentence.spoken_by.is_none();
    if let Some(Speaker::Focus(id)) = &sentence.spoken_by {
        unseen.0.remove(id);
    }
    // Who the sentence itself shows acting: its subject, and whom it says lived it.
    let acting = |id: &str| {
        mentions
            .iter()
            .any(|m| m.character == id && shows(text, m, scene.narrator.is_some()))
    };
    let mut shown: BTreeSet<String> = BTreeSet::new();
    if narration
        && let Some(m) = mentions.first().filter(|m| m.start == 0)
        && acting(m.character)
    {
        shown.insert(m.character.to_owned());
    }
    // Whom the reading found living it ("then the major wrote", "my father received a
    // letter"), unless the sentence tells a death: what it tells may be after theirs.
    if !tells_death(text) {
        shown.extend(sentence.actors.iter().cloned());
    }

    let mut out = if narration && let Some(narrator) = &scene.narrator {
        let on_stage = scene.present_at(sentence.paragraph);
        let names_another = mentions
            .iter()
            .any(|m| m.character != narrator.as_str() && on_stage.contains(m.character));
        if in_first_person(text)
            && (tells_inner_life(text)
                || ((of_the_narrator_alone(text) || recalls_own_past(text)) && !names_another))
        {
            // The narrator's own mind, or his own view of himself: no one beside him
            // hears a thought, and one it does not name is not shown to be looking.
            Knowers {
                known_by: BTreeSet::from([narrator.clone()]),
                route: "direct_experience",
            }
        } else {
            observed(scene, sentence)
        }
    } else if narration && tells_inner_life(text) {
        // An omniscient narrator's view into one mind: whose, or no one's.
        let whose = mentions
            .first()
            .filter(|m| m.start == 0 && !m.shared)
            .map(|m| m.character)
            .or(*he_or_she);
        Knowers {
            known_by: whose.map(str::to_owned).into_iter().collect(),
            route: "direct_experience",
        }
    } else if narration
        && (UNSEEN_MARKERS.iter().any(|m| contains_phrase(text, m))
            || mentions.iter().any(|m| unseen.0.contains(m.character)))
    {
        // What those present did not see reaches only those it shows.
        unseen
            .0
            .extend(mentions.iter().map(|m| m.character.to_owned()));
        Knowers {
            known_by: mentions
                .iter()
                .filter(|m| acting(m.character))
                .map(|m| m.character.to_owned())
                .collect(),
            route: "direct_experience",
        }
    } else {
        let mut out = observed(scene, sentence);
        if narration && scene.narrator.is_none() {
            // An omniscient narrator tells more than anyone in the room perceives ("Not
            // a syllable had ever reached her…", "the travellers soon found…"): what it
            // says reaches those there whom it names, not every bystander.
            let named: BTreeSet<&str> = mentions
                .iter()
                .filter(|m| !m.shared)
                .map(|m| m.character)
                .chain(*he_or_she)
                .collect();
            out.known_by.retain(|c| named.contains(c.as_str()));
        }
        for who in shown {
            if out.known_by.insert(who) {
                out.route = "direct_experience";
            }
        }
        out
    };
    for org in organisations {
        if org
            .aliases
            .iter()
            .chain([&org.name])
            .any(|a| group_learns(text, a))
            && !org.members.is_subset(&out.known_by)
        {
            out.known_by.extend(org.members.iter().cloned());
            out.route = "organisation_membership";
        }
    }
    out.known_by = out.known_by.intersection(world).cloned().collect();
    out
}

/// Those on stage where the sentence is told, and its speaker.
fn observed(scene: &Scene, sentence: &Sentence) -> Knowers {
    let mut known_by = scene.present_at(sentence.paragraph);
    if let Some(Speaker::Focus(id)) = &sentence.spoken_by {
        known_by.insert(id.clone());
    }
    Knowers {
        known_by,
        route: "observation",
    }
}

#[cfg(test)]
mod tests;
