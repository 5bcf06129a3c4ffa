//! A quote as the reading of a scene meets it: who says it, whom it addresses, the
//! lines it retells, its sentences with those who lived them.

use super::super::retelling::Retelling;
use super::super::scenes::{Sentence, Speaker, Tag, Utterance};
use super::super::speech::{actors, addressees, holds, lead_in, said_to, speech_tag};
use super::super::text::{Segment, prefix, sentences, words};
use super::{InParagraph, Reading};

/// The quote's speaker and whom it addresses.
struct Attribution {
    speaker: Option<Speaker>,
    vocative: Option<Speaker>,
}

impl Reading<'_> {
    /// Quote `q`, segment `i` of its paragraph: who says it, the lines it retells, its
    /// sentences with their actors.
    pub(super) fn quote(&mut self, q: &str, i: usize, segs: &[Segment], here: &mut InParagraph) {
        let p = here.p;
        for m in self.namer.mentions(q) {
            self.named.insert(m.character.to_owned());
        }
        let Attribution { speaker, vocative } = self.attribute(q, i, segs, here);
        if self.retelling.teller != speaker {
            self.retelling = Retelling {
                teller: speaker.clone(),
                ..Retelling::default()
            };
        }
        let lines = self.retelling.lines(q, p, self.namer, self.facts);
        self.quote_sentences(q, p, speaker.as_ref(), &lines);
        for u in &lines {
            tracing::debug!(
                target: "dramatis_ingest::presence",
                scene = self.number,
                paragraph = p,
                speaker = ?u.speaker,
                "retold: {}",
                prefix(&u.text, 80)
            );
        }
        self.retold.extend(lines);
        if vocative.is_some() {
            here.addressed = vocative;
        }
        match speaker {
            None => self.unattributed.push((p, q.to_owned())),
            Some(speaker) => self.speaks(speaker, q, here),
        }
    }

    /// Who says quote `q`: the tag after or before it, the paragraph's speaker, the
    /// previous paragraph's open quote, the narration's subject, whom the last line
    /// addressed, or turn-taking; never the one it addresses.
    fn attribute(&self, q: &str, i: usize, segs: &[Segment], here: &InParagraph) -> Attribution {
        let after = match segs.get(i + 1) {
            Some(Segment::Narration(n)) => speech_tag(n, self.namer),
            _ => None,
        };
        let before = match i.checked_sub(1).map(|j| &segs[j]) {
            Some(Segment::Narration(n)) => lead_in(n, self.namer),
            _ => None,
        };
        // "I'm Joseph Stangerson": the speaker says who it is, for every quote of the
        // paragraph a name does not tag.
        let named_tag = matches!(after.as_ref().or(before.as_ref()), Some(Tag::Focus(_)));
        let after_is_tag = after.is_some();
        let tag = here
            .introduced
            .clone()
            .filter(|_| !named_tag)
            .map(Tag::Focus)
            .or(after)
            .or(before);
        let has_tag = tag.is_some();
        let voices = &self.voices;
        let tagged = tag.and_then(|tag| match tag {
            // A pronoun in a paragraph that already has a speaker who fits it is that
            // speaker.
            Tag::Pronoun(g) => here
                .speaker
                .clone()
                .filter(|s| self.facts.fits(s, g) && !voices.is_narrator(s))
                .or_else(|| voices.speaker_of(tag, &here.shown)),
            _ => voices.speaker_of(tag, &here.shown),
        });
        // "…," I said to Mrs. Hudson: she is addressed, and likely answers.
        let told = match segs.get(i + 1) {
            Some(Segment::Narration(n)) if after_is_tag => said_to(n, self.namer),
            _ => None,
        };
        let vocative = match addressees(q, self.namer).as_slice() {
            [one] => Some(Speaker::Focus(one.clone())),
            many => self.voices.the_one_on_stage(many),
        }
        .or(told.map(Speaker::Focus));
        // A tag that names no one who can be found leaves the line unknown; only an
        // untagged line is given by the conversation.
        let untagged = || !has_tag;
        let speaker = tagged
            .or_else(|| here.speaker.clone().filter(|_| untagged()))
            .or_else(|| {
                (i == 0 && untagged())
                    .then(|| here.continued.clone())
                    .flatten()
            })
            .or_else(|| here.actor.clone().filter(|_| untagged()))
            .or_else(|| {
                voices
                    .addressed
                    .clone()
                    .filter(|a| untagged() && Some(a) != voices.spoken.last() && voices.on_stage(a))
            })
            .or_else(|| voices.alternate().filter(|_| untagged()))
            .filter(|s| Some(s) != vocative.as_ref());
        Attribution { speaker, vocative }
    }

    /// The sentences of quote `q`, each with those who lived it: its speaker, or the one
    /// who first said a line it retells, and the teller's companions.
    fn quote_sentences(
        &mut self,
        q: &str,
        p: usize,
        speaker: Option<&Speaker>,
        lines: &[Utterance],
    ) {
        for s in sentences(q) {
            let retold_by = lines.iter().find(|u| holds(&u.text, s)).map(|u| &u.speaker);
            let mut actors = actors(
                s,
                speaker.and_then(Speaker::focus),
                retold_by,
                self.namer,
                self.facts,
            );
            // "When we entered his room…": the teller's companions lived it.
            if retold_by.is_some() || words(s).any(|w| w == "we") {
                actors.extend(self.retelling.companions.iter().cloned());
            }
            self.sentences.push(Sentence {
                text: s.to_owned(),
                paragraph: p,
                spoken_by: speaker.cloned(),
                actors,
            });
        }
    }

    /// `speaker` says quote `q`: on stage from here, and the paragraph's speaker.
    fn speaks(&mut self, speaker: Speaker, q: &str, here: &mut InParagraph) {
        let p = here.p;
        if let Some(id) = speaker.focus() {
            tracing::debug!(
                target: "dramatis_ingest::presence",
                scene = self.number,
                paragraph = p,
                character = id,
                "speaks: {}",
                prefix(q, 80)
            );
            self.entries.entry(id.to_owned()).or_insert(p);
            self.voices.show(id, p);
        }
        here.speaker = Some(speaker.clone());
        if self.voices.spoken.last() != Some(&speaker) {
            self.voices.spoken.push(speaker.clone());
        }
        self.utterances.push(Utterance {
            speaker,
            text: q.to_owned(),
            paragraph: p,
        });
    }
}
