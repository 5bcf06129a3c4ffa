//! A retelling: one teller's quoted paragraphs that tell what others said and did
//! elsewhere, so those named in it are not on stage.

use std::collections::BTreeSet;

use super::scenes::{BookFacts, Gender, Speaker, Tag, Utterance};
use super::speech::{kin_refs, lead_in, speech_tag, vocative};
use super::text::{Namer, Segment, inner_segments, sentences};

/// One speaker's retelling of what others said, through its quoted paragraphs: whom its
/// words name, and whose lines it has retold.
#[derive(Default)]
pub(super) struct Retelling {
    pub(super) teller: Option<Speaker>,
    /// Focus characters its words named, with the paragraph.
    pub(super) mentioned: Vec<(Speaker, usize)>,
    /// Those named in the last sentence of its words so far: whom a "he" or "she" just
    /// after most likely means.
    pub(super) last_named: Vec<Speaker>,
    /// Those the teller says lived it alongside ("my brother and I", "I and Holmes"):
    /// what the teller says "we" did, and the lines retold, they lived too.
    pub(super) companions: BTreeSet<String>,
    pub(super) spoken: Vec<Speaker>,
}

impl Retelling {
    /// The lines retold in quote `q` (paragraph `p`), each given to the one its tag
    /// names: "I" is the teller, "he" or "she" someone the retelling named, an untagged
    /// line the one who spoke the retold line before it. A line nobody fits is left out.
    pub(super) fn lines(
        &mut self,
        q: &str,
        p: usize,
        namer: &Namer,
        facts: &BookFacts,
    ) -> Vec<Utterance> {
        let Some(inner) = inner_segments(q) else {
            self.name_in(q, p, namer, facts);
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut last: Option<Speaker> = None;
        for (i, seg) in inner.iter().enumerate() {
            let line = match seg {
                Segment::Narration(n) => {
                    self.name_in(n, p, namer, facts);
                    continue;
                }
                Segment::Quote(line) => line,
            };
            let tag = match inner.get(i + 1) {
                Some(Segment::Narration(n)) => speech_tag(n, namer),
                _ => None,
            }
            .or_else(|| match i.checked_sub(1).map(|j| &inner[j]) {
                Some(Segment::Narration(n)) => lead_in(n, namer),
                _ => None,
            });
            let addressed = vocative(line, namer).map(Speaker::Focus);
            let speaker = match tag {
                Some(Tag::Focus(id)) => Some(Speaker::Focus(id)),
                // A shared form in a retold line: no one on stage decides it.
                Some(Tag::OneOf(_)) => None,
                Some(Tag::Named(name)) => Some(Speaker::Other(name)),
                Some(Tag::Narrator) => self.teller.clone(),
                Some(Tag::Pronoun(g)) => self.resolve(g, p, facts),
                // "said the taller of the pair": someone the list does not name.
                Some(Tag::Unnamed { .. }) => None,
                // Untagged: the one who spoke the retold line before it in this
                // paragraph; at the paragraph's start, turn-taking. A phrase quoted
                // inside the teller's own sentence ("with 'The sign of the four'
                // scrawled across it") is nobody's line.
                None if last.is_some() => last.clone(),
                None if i == 0 => self
                    .spoken
                    .last()
                    .and_then(|before| self.spoken.iter().rev().find(|s| *s != before).cloned()),
                None => None,
            }
            .filter(|s| Some(s) != addressed.as_ref());
            let Some(speaker) = speaker else { continue };
            if self.spoken.last() != Some(&speaker) {
                self.spoken.push(speaker.clone());
            }
            last = Some(speaker.clone());
            out.push(Utterance {
                speaker,
                text: line.clone(),
                paragraph: p,
            });
        }
        out
    }

    /// Records whom the teller's own words in `text` name, by name or as its family
    /// ("my father"), in order.
    pub(super) fn name_in(&mut self, text: &str, p: usize, namer: &Namer, facts: &BookFacts) {
        let mut named: Vec<(usize, String)> = namer
            .mentions(text)
            .iter()
            .map(|m| (m.start, m.character.to_owned()))
            .collect();
        if let Some(teller) = self.teller.as_ref().and_then(Speaker::focus) {
            named.extend(
                kin_refs(text, teller, facts)
                    .into_iter()
                    .map(|(at, _, id)| (at, id)),
            );
        }
        named.sort();
        for (at, id) in &named {
            let before = &text[..*at];
            let after = &text[*at..];
            let with_me = after.split_once(" and I").is_some_and(|(name, rest)| {
                !name.contains([',', '.', ';'])
                    && name.split_whitespace().count() <= 4
                    && !rest.starts_with(|c: char| c.is_alphanumeric())
            });
            if with_me || before.ends_with("I and ") {
                self.companions.insert(id.clone());
            }
        }
        let last_start = sentences(text).last().map_or(0, |l| text.len() - l.len());
        self.last_named = named
            .iter()
            .filter(|(at, _)| *at >= last_start)
            .map(|(_, id)| Speaker::Focus(id.clone()))
            .collect();
        self.mentioned
            .extend(named.into_iter().map(|(_, id)| (Speaker::Focus(id), p)));
    }

    /// "he" or "she" in a retelling: the one the teller named in its last sentence,
    /// else retold last, else named in this paragraph or the three before, that is known to take it, else that it fits; never the
    /// teller.
    pub(super) fn resolve(&self, pronoun: Gender, p: usize, facts: &BookFacts) -> Option<Speaker> {
        let candidates = || {
            self.last_named
                .iter()
                .rev()
                .chain(self.spoken.iter().rev())
                .chain(
                    self.mentioned
                        .iter()
                        .rev()
                        .filter(|(_, at)| at + 3 >= p)
                        .map(|(s, _)| s),
                )
                .filter(|s| Some(*s) != self.teller.as_ref())
        };
        candidates()
            .find(|s| facts.is(s, pronoun))
            .or_else(|| candidates().find(|s| facts.fits(s, pronoun)))
            .cloned()
    }
}
