//! The fact pass of the graph: each sentence that names someone or something becomes a
//! fact, with who may know it (its visibility, `knowledge.rs`) and by which route.

use std::collections::{BTreeMap, BTreeSet};

use super::super::lexicon::TIME_WORDS;
use super::super::proper::{NUMBER_WORDS, proper_phrases};
use super::super::scenes::{Scene, Speaker};
use super::super::text::{Namer, is_chinese, word_count, words};
use super::knowledge::{Told, Unseen, knowers};
use super::{GraphFact, Organisation, spo};

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
    /// Characters the narrator says the others did not see, until they speak.
    unseen: Unseen,
}

impl FactReader<'_> {
    /// The facts scene `s` tells, one per sentence that names someone or something, in
    /// order; those no focus character may know are left out.
    pub(super) fn scene(&self, s: &Scene) -> Vec<GraphFact> {
        let mut out = Vec::new();
        let mut narrated = Narrated::default();
        let mut unit = 0;
        for sentence in &s.sentences {
            // Whom "he" means and who is unseen start afresh with each reading unit.
            let here = s.unit_starts.partition_point(|p| *p <= sentence.paragraph);
            if here != unit {
                unit = here;
                narrated = Narrated::default();
            }
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
            let last_named_id = match narrated.paragraph_names.iter().collect::<Vec<_>>()[..] {
                [one] => Some(*one),
                _ => None,
            };
            let last_named = last_named_id.map(|one| self.focus_names[one]);
            let pronoun = sentence.spoken_by.is_none()
                && narrated.named_paragraph == Some(sentence.paragraph)
                && words(text).any(|w| matches!(w.as_str(), "he" | "his" | "him" | "she" | "her"));
            let word_count = word_count(text);
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
                fact.text = if is_chinese(text) {
                    format!("{who}说：“{text}”")
                } else {
                    format!("{who} said, \"{text}\"")
                };
            }
            fact.at = s
                .paragraph_starts
                .get(sentence.paragraph)
                .copied()
                .unwrap_or(s.span.start);
            let told = Told {
                scene: s,
                sentence,
                mentions: &mentions,
                he_or_she: last_named_id,
            };
            let knowers = knowers(&told, &mut narrated.unseen, self.world, self.organisations);
            fact.known_by = knowers.known_by;
            fact.route = knowers.route.to_owned();
            if !fact.known_by.is_empty() {
                out.push(fact);
            }
        }
        out
    }
}
