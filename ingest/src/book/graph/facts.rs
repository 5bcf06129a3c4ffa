//! The fact pass of the graph: each sentence that names someone or something becomes a
//! fact, with who may know it (its visibility) and by which route.

use std::collections::{BTreeMap, BTreeSet};

use super::super::lexicon::{COMMON_MARKERS, TIME_WORDS, UNSEEN_MARKERS};
use super::super::proper::{NUMBER_WORDS, proper_phrases};
use super::super::scenes::{Scene, Sentence, Speaker};
use super::super::text::{Mention, Namer, contains_phrase, words};
use super::{GraphFact, Organisation, group_learns, spo};

/// What the fact pass reads each sentence with.
pub(super) struct FactReader<'a> {
    pub(super) namer: &'a Namer,
    pub(super) world: &'a BTreeSet<String>,
    pub(super) focus_names: &'a BTreeMap<&'a str, &'a str>,
    pub(super) proper: &'a BTreeSet<String>,
    pub(super) objects: &'a BTreeSet<String>,
    pub(super) organisations: &'a [Organisation],
}

/// The pronoun context of a scene's narration, carried from sentence to sentence.
#[derive(Default)]
struct Narrated<'a> {
    /// The paragraph whose narration last named a focus character: a later sentence of
    /// it speaking of "he" or "her" is about that character.
    named_paragraph: Option<usize>,
    /// The focus characters the narration named so far in this paragraph.
    paragraph_names: BTreeSet<&'a str>,
    /// Characters the narrator says the others did not see, until they speak: what the
    /// narration tells of them reaches only them.
    hidden: BTreeSet<String>,
}

impl FactReader<'_> {
    /// The facts scene `s` tells, one per sentence that names someone or something, in
    /// order; those no focus character may know are left out.
    pub(super) fn scene(&self, s: &Scene) -> Vec<GraphFact> {
        let mut out = Vec::new();
        let mut narrated = Narrated::default();
        for sentence in &s.sentences {
            let text = sentence.text.trim();
            let mentions = self.namer.mentions(text);
            if narrated.named_paragraph != Some(sentence.paragraph) {
                narrated.paragraph_names.clear();
            }
            if sentence.spoken_by.is_none() && !mentions.is_empty() {
                narrated.named_paragraph = Some(sentence.paragraph);
                narrated
                    .paragraph_names
                    .extend(mentions.iter().map(|m| m.character));
            }
            // "he" or "she" is the one the paragraph's narration named, if only one.
            let last_named = match narrated.paragraph_names.iter().collect::<Vec<_>>()[..] {
                [one] => Some(self.focus_names[*one]),
                _ => None,
            };
            let pronoun = sentence.spoken_by.is_none()
                && narrated.named_paragraph == Some(sentence.paragraph)
                && words(text).any(|w| matches!(w.as_str(), "he" | "his" | "him" | "she" | "her"));
            let word_count = text.split_whitespace().count();
            if !(4..=60).contains(&word_count) {
                continue;
            }
            let phrases = proper_phrases(text, self.proper);
            let lower_words: Vec<String> = words(text).collect();
            let timed = lower_words
                .iter()
                .any(|w| TIME_WORDS.contains(&w.as_str()) || NUMBER_WORDS.contains(&w.as_str()))
                || text.chars().any(|c| c.is_ascii_digit());
            let thing = lower_words.iter().any(|w| self.objects.contains(w));
            if mentions.is_empty() && phrases.is_empty() && !timed && !thing && !pronoun {
                continue;
            }
            // In a first-person scene, the narration's "I" is the narrator.
            let teller = sentence
                .spoken_by
                .clone()
                .or_else(|| s.narrator.clone().map(Speaker::Focus));
            let mut fact = spo(
                text,
                &mentions,
                &phrases,
                &teller,
                self.focus_names,
                last_named,
            );
            fact.scene = s.number;
            if let Some(speaker) = &sentence.spoken_by {
                let who = match speaker {
                    Speaker::Focus(id) => self.focus_names[id.as_str()].to_owned(),
                    Speaker::Other(name) => name.clone(),
                };
                fact.text = format!("{who} said, \"{text}\"");
            }
            self.visibility(s, sentence, &mentions, &mut narrated.hidden, &mut fact);
            if !fact.known_by.is_empty() {
                out.push(fact);
            }
        }
        out
    }

    /// Who may know what `sentence` tells, and by which route: everyone for common
    /// knowledge, only whom it names for what others did not see, else those present,
    /// with whom it says acted and the members of a group it says learned it.
    fn visibility(
        &self,
        s: &Scene,
        sentence: &Sentence,
        mentions: &[Mention<'_>],
        hidden: &mut BTreeSet<String>,
        fact: &mut GraphFact,
    ) {
        let text = sentence.text.trim();
        let common = COMMON_MARKERS.iter().any(|m| contains_phrase(text, m));
        if let Some(Speaker::Focus(id)) = &sentence.spoken_by {
            hidden.remove(id);
        }
        let unseen = UNSEEN_MARKERS.iter().any(|m| contains_phrase(text, m))
            || mentions.iter().any(|m| hidden.contains(m.character));
        if unseen && sentence.spoken_by.is_none() {
            hidden.extend(mentions.iter().map(|m| m.character.to_owned()));
        }
        let mut known_by = if common {
            fact.route = "common_knowledge".into();
            self.world.clone()
        } else if unseen {
            // What those present did not see reaches only whom it names.
            fact.route = "direct_experience".into();
            mentions.iter().map(|m| m.character.to_owned()).collect()
        } else if sentence.paragraph == 0 && sentence.spoken_by.is_none() && s.narrator.is_none() {
            // The setting a third-person scene opens on (who is there, what they wear
            // and carry): whoever comes in later sees it too.
            fact.route = "observation".into();
            s.present().cloned().collect()
        } else {
            fact.route = "observation".into();
            s.present_at(sentence.paragraph)
        };
        // The narration's subject ("Holmes took the lamp"); a line about someone
        // ("Holmes is a fool") reaches only those there, and whom it says acted.
        if let Some(m) = mentions.first().filter(|m| m.start == 0)
            && sentence.spoken_by.is_none()
            && self.world.contains(m.character)
            && !common
        {
            known_by.insert(m.character.to_owned());
            fact.route = "direct_experience".into();
        }
        // Who lived what the sentence tells knows it, told in the room or not.
        if !common {
            for who in sentence.actors.iter().filter(|a| self.world.contains(*a)) {
                if known_by.insert(who.clone()) {
                    fact.route = "direct_experience".into();
                }
            }
        }
        for org in self.organisations {
            if org
                .aliases
                .iter()
                .chain([&org.name])
                .any(|a| group_learns(text, a))
                && !org.members.is_subset(&known_by)
            {
                known_by.extend(org.members.iter().cloned());
                fact.route = "organisation_membership".into();
            }
        }
        fact.known_by = known_by.intersection(self.world).cloned().collect();
    }
}
