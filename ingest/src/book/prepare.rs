//! Stage 1's deterministic path for one scene: who speaks each quoted line, who is on
//! stage from which paragraph, who leaves, the sentences with their actors.

use std::collections::{BTreeMap, BTreeSet};

use super::lexicon::{ALONE_PHRASES, EXIT_PHRASES, TIME_WORDS, atmosphere_of};
use super::narration::{dominant_emotion, in_first_or_second_person, place_phrase};
use super::partition::{Span, moves_in_time};
use super::presence::{comes_back, exit_of, moves_on, newcomer_in, shows, they_go};
use super::retelling::Retelling;
use super::scenes::{
    BookFacts, FADE_PARAGRAPHS, LISTEN_PARAGRAPHS, Scene, Sentence, Speaker, Tag, Utterance,
};
use super::speech::{Voices, actors, introduces, lead_in, subject_at};
use super::text::{
    Mention, Namer, Paragraph, Segment, prefix, quoted_paragraphs, sentences, words,
};

mod quotes;

/// Prepares one reading unit from its text (the deterministic path): a stretch
/// between two breaks the text marks (`Partition::units`), read from its first
/// paragraph with no one on stage but its narrator. `narrator` is the focus character
/// telling it in the first person, if any: on stage throughout, and "I". Scenes are
/// made of units, whole or in part ([`slice`], [`join`]), so who is on stage at a
/// paragraph follows from the text around it, never from how scenes are grouped.
#[must_use]
pub fn prepare(
    number: usize,
    span: Span,
    text: &str,
    (namer, facts): (&Namer, &BookFacts),
    narrator: Option<&str>,
) -> Scene {
    let paras = quoted_paragraphs(text);
    let mut reading = Reading::new(number, namer, facts, narrator, &paras);
    let mut open_speaker: Option<Speaker> = None;
    for (p, para) in paras.iter().enumerate() {
        open_speaker = reading.paragraph(p, para, open_speaker);
    }
    reading.into_scene(span, text, &paras)
}

/// Paragraphs `[from, to)` of a prepared unit as a scene of their own: what is said,
/// shown and told there, and each character on stage where it was in the whole unit.
#[must_use]
pub fn slice(unit: &Scene, from: usize, to: usize) -> Scene {
    let to = to.min(unit.paragraph_starts.len());
    let inside = |p: usize| (from..to).contains(&p);
    let mut stays: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    for p in from..to {
        for c in unit.present_at(p) {
            if unit.narrator.as_ref() == Some(&c) {
                continue;
            }
            let list = stays.entry(c).or_default();
            match list.last_mut() {
                Some(last) if last.1 == p - from => last.1 += 1,
                _ => list.push((p - from, p - from + 1)),
            }
        }
    }
    let lines = |list: &[Utterance]| -> Vec<Utterance> {
        list.iter()
            .filter(|u| inside(u.paragraph))
            .map(|u| Utterance {
                paragraph: u.paragraph - from,
                ..u.clone()
            })
            .collect()
    };
    let utterances = lines(&unit.utterances);
    let active: BTreeSet<String> = utterances
        .iter()
        .filter_map(|u| u.speaker.focus().map(str::to_owned))
        .collect();
    let mut entries: BTreeMap<String, usize> =
        stays.iter().map(|(c, l)| (c.clone(), l[0].0)).collect();
    if let Some(n) = &unit.narrator {
        entries.insert(n.clone(), 0);
    }
    let silent: BTreeSet<String> = entries
        .keys()
        .filter(|c| !active.contains(*c))
        .cloned()
        .collect();
    let total = to.saturating_sub(from);
    let exits = stays
        .iter()
        .filter_map(|(c, l)| l.last().filter(|r| r.1 < total).map(|r| (c.clone(), r.1)))
        .collect();
    for c in &active {
        if unit.narrator.as_ref() != Some(c) {
            stays.entry(c.clone()).or_default();
        }
    }
    Scene {
        referenced: unit
            .referenced
            .iter()
            .chain(unit.present())
            .filter(|c| !entries.contains_key(*c) && !active.contains(*c))
            .cloned()
            .collect(),
        utterances,
        retold: lines(&unit.retold),
        unattributed: unit
            .unattributed
            .iter()
            .filter(|(p, _)| inside(*p))
            .map(|(p, t)| (p - from, t.clone()))
            .collect(),
        sentences: unit
            .sentences
            .iter()
            .filter(|s| inside(s.paragraph))
            .map(|s| Sentence {
                paragraph: s.paragraph - from,
                ..s.clone()
            })
            .collect(),
        active,
        silent,
        exits,
        entries,
        stays,
        paragraph_starts: unit.paragraph_starts[from.min(to)..to].to_vec(),
        unit_starts: vec![0],
        ..unit.clone()
    }
}

/// Parts of scenes (units or their slices, in book order, with one narrator) as one
/// scene: paragraphs numbered on, each character on stage exactly where it was in its
/// part, and where each part starts (`Scene::unit_starts`).
#[must_use]
pub fn join(parts: Vec<Scene>, text: &str) -> Scene {
    let mut parts = parts.into_iter();
    let mut out = parts.next().expect("a first part");
    let narrator = out.narrator.clone();
    // Presence as ranges only: entries, stays and exits folded into one list each.
    let ranges = |s: &Scene, offset: usize| -> BTreeMap<String, Vec<(usize, usize)>> {
        let mut out: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
        for p in 0..s.paragraph_starts.len() {
            for c in s.present_at(p) {
                if narrator.as_ref() == Some(&c) {
                    continue;
                }
                let list = out.entry(c).or_default();
                match list.last_mut() {
                    Some(last) if last.1 == p + offset => last.1 += 1,
                    _ => list.push((p + offset, p + offset + 1)),
                }
            }
        }
        out
    };
    let mut stays = ranges(&out, 0);
    for part in parts {
        let offset = out.paragraph_starts.len();
        out.unit_starts
            .extend(part.unit_starts.iter().map(|p| p + offset));
        for (c, list) in ranges(&part, offset) {
            stays.entry(c).or_default().extend(list);
        }
        let shift = |p: usize| p + offset;
        out.active.extend(part.active);
        out.referenced.extend(part.referenced);
        out.utterances
            .extend(part.utterances.into_iter().map(|u| Utterance {
                paragraph: shift(u.paragraph),
                ..u
            }));
        out.retold
            .extend(part.retold.into_iter().map(|u| Utterance {
                paragraph: shift(u.paragraph),
                ..u
            }));
        out.unattributed
            .extend(part.unattributed.into_iter().map(|(p, t)| (shift(p), t)));
        out.sentences
            .extend(part.sentences.into_iter().map(|s| Sentence {
                paragraph: shift(s.paragraph),
                ..s
            }));
        out.silent.extend(part.silent);
        for (c, p) in part.entries {
            out.entries.entry(c).or_insert(shift(p));
        }
        out.paragraph_starts.extend(part.paragraph_starts);
    }
    let total = out.paragraph_starts.len();
    // Whoever is on the roster but never on stage in any part stays nowhere.
    for c in out.active.iter().chain(&out.silent) {
        if narrator.as_ref() != Some(c) {
            stays.entry(c.clone()).or_default();
        }
    }
    out.silent.retain(|c| !out.active.contains(c));
    out.referenced
        .retain(|c| !out.active.contains(c) && !out.silent.contains(c));
    // Gone after its last stay, if that ends before the scene does.
    out.exits = stays
        .iter()
        .filter_map(|(c, list)| {
            list.last()
                .filter(|l| l.1 < total)
                .map(|l| (c.clone(), l.1))
        })
        .collect();
    for (c, list) in &stays {
        if let Some(first) = list.first() {
            out.entries.insert(c.clone(), first.0);
        }
    }
    out.stays = stays;
    out.atmosphere = atmosphere_of(dominant_emotion(text)).to_owned();
    out
}

/// A scene read paragraph by paragraph: what the reading has found so far.
struct Reading<'a> {
    number: usize,
    namer: &'a Namer,
    facts: &'a BookFacts,
    narrator: Option<&'a str>,
    voices: Voices<'a>,
    utterances: Vec<Utterance>,
    sentences: Vec<Sentence>,
    /// Who is on stage from which paragraph: by speaking, or named on stage by the
    /// narration.
    entries: BTreeMap<String, usize>,
    named: BTreeSet<String>,
    retold: Vec<Utterance>,
    unattributed: Vec<(usize, String)>,
    retelling: Retelling,
    /// Who comes back at which paragraph, after being away.
    returns: BTreeSet<(String, usize)>,
}

/// What the reading of one paragraph keeps from one segment to the next.
struct InParagraph {
    p: usize,
    /// Who this paragraph has shown so far.
    shown: Vec<Speaker>,
    /// The subject of the narration just before a quote in this paragraph.
    actor: Option<Speaker>,
    /// Who spoke a quote of this paragraph last.
    speaker: Option<Speaker>,
    /// The speaker of the previous paragraph's open quote, which this one continues.
    continued: Option<Speaker>,
    /// Whom a quote of this paragraph says it is ("I'm Joseph Stangerson").
    introduced: Option<String>,
    /// Whom this paragraph's quotes address by name: the likely next speaker.
    addressed: Option<Speaker>,
}

/// A speaker outside the focus list whose name starts the text.
fn other_in(facts: &BookFacts, text: &str) -> Option<Speaker> {
    facts
        .other_speakers
        .iter()
        .find(|n| {
            text.split_whitespace()
                .next()
                .is_some_and(|w| w.trim_end_matches("'s") == n.as_str())
        })
        .map(|n| Speaker::Other(n.clone()))
}

impl<'a> Reading<'a> {
    fn new(
        number: usize,
        namer: &'a Namer,
        facts: &'a BookFacts,
        narrator: Option<&'a str>,
        paras: &[Paragraph],
    ) -> Self {
        let voices = Voices {
            facts,
            narrator,
            spoken: Vec::new(),
            mentioned: Vec::new(),
            addressed: None,
            shown: BTreeMap::new(),
            now: 0,
            clock: paras
                .iter()
                .scan(0, |n, p| {
                    *n += usize::from(!p.segments.iter().any(|s| matches!(s, Segment::Quote(_))));
                    Some(*n)
                })
                .collect(),
            moved: Vec::new(),
            newcomer: None,
            exits: BTreeMap::new(),
        };
        let mut entries = BTreeMap::new();
        if let Some(n) = narrator {
            entries.insert(n.to_owned(), 0);
        }
        Self {
            number,
            namer,
            facts,
            narrator,
            voices,
            utterances: Vec::new(),
            sentences: Vec::new(),
            entries,
            named: BTreeSet::new(),
            retold: Vec::new(),
            unattributed: Vec::new(),
            retelling: Retelling::default(),
            returns: BTreeSet::new(),
        }
    }

    /// Reads paragraph `p`. `continued` is the speaker of the previous paragraph's open
    /// quote, or the one its closing lead-in names; returns this paragraph's: the
    /// speaker of its last quote if that stays open, or the one its narration leads in.
    fn paragraph(
        &mut self,
        p: usize,
        para: &Paragraph,
        continued: Option<Speaker>,
    ) -> Option<Speaker> {
        self.voices.now = p;
        let segs = &para.segments;
        // A retelling goes on only through one teller's quoted paragraphs.
        if matches!(segs.first(), Some(Segment::Narration(_))) {
            self.retelling = Retelling::default();
        }
        let mut here = InParagraph {
            p,
            shown: Vec::new(),
            actor: None,
            speaker: None,
            continued,
            introduced: segs.iter().find_map(|s| match s {
                Segment::Quote(q) => introduces(q, self.namer),
                Segment::Narration(_) => None,
            }),
            addressed: None,
        };
        for (i, seg) in segs.iter().enumerate() {
            match seg {
                Segment::Narration(n) => {
                    here.actor = None;
                    for s in sentences(n) {
                        self.narration(s, &mut here);
                    }
                }
                Segment::Quote(q) => self.quote(q, i, segs, &mut here),
            }
        }
        if segs.iter().any(|s| matches!(s, Segment::Quote(_))) {
            self.voices.addressed = here.addressed;
        }
        if para.open {
            return here.speaker;
        }
        // "Then Mr. Morris said to Dr. Seward:--": a paragraph of narration that leads
        // into the next one's quote.
        match segs.last() {
            Some(Segment::Narration(n)) => {
                lead_in(n, self.namer).and_then(|tag| self.voices.speaker_of(tag, &here.shown))
            }
            _ => None,
        }
    }

    /// One sentence of narration: whom it shows on stage, who acts in it, whether the
    /// narrator moves on, who leaves.
    fn narration(&mut self, s: &str, here: &mut InParagraph) {
        let p = here.p;
        let lower: Vec<String> = words(s).collect();
        let mentions = self.namer.mentions(s);
        self.show_mentions(s, &mentions, here);
        if let Some(o) = other_in(self.facts, s) {
            here.shown.push(o);
        }
        if mentions.is_empty()
            && let Some((noun, gender)) = newcomer_in(&lower)
        {
            self.voices.newcomer = Some((Speaker::Other(format!("the {noun}")), gender, p));
        }
        here.actor = match subject_at(s, &lower, self.namer) {
            Some(Tag::Focus(id)) => Some(Speaker::Focus(id)),
            Some(Tag::Narrator) => self.voices.speaker_of(Tag::Narrator, &[]),
            Some(Tag::Pronoun(g)) => self.voices.resolve(&here.shown, g),
            _ => other_in(self.facts, s),
        };
        let moves = (self.narrator.is_some() && moves_on(&lower)) || moves_in_time(s);
        if moves && self.voices.moved.last() != Some(&p) {
            tracing::debug!(
                target: "dramatis_ingest::presence",
                scene = self.number,
                paragraph = p,
                "moves on: {}",
                prefix(s, 120)
            );
            self.voices.moved.push(p);
        }
        if let Some(who) = exit_of(s, self.namer, &self.voices) {
            self.voices.exits.entry(who).or_insert(p + 1);
        }
        self.group_exits(s, &lower, &mentions, here);
        self.sentences.push(Sentence {
            text: s.to_owned(),
            paragraph: p,
            spoken_by: None,
            actors: actors(s, self.narrator, None, self.namer, self.facts),
        });
    }

    /// The focus characters a narration sentence names: each is on stage from here if
    /// the mention puts it there.
    fn show_mentions(&mut self, s: &str, mentions: &[Mention<'_>], here: &mut InParagraph) {
        let p = here.p;
        // In a telling with no narrator, narration in the first or second person is a
        // document copied into it (a letter, a will): whom it names is not there.
        let document = self.narrator.is_none() && in_first_or_second_person(s);
        for m in mentions {
            self.named.insert(m.character.to_owned());
            // Only a mention on stage can be a speaker later.
            if document || !shows(s, m, self.narrator.is_some()) {
                continue;
            }
            tracing::debug!(
                target: "dramatis_ingest::presence",
                scene = self.number,
                paragraph = p,
                character = m.character,
                "shown by narration: {}",
                prefix(s, 160)
            );
            self.entries.entry(m.character.to_owned()).or_insert(p);
            // "Lestrade, who had been in the front room…, reappeared": he was away
            // since the text last showed him.
            if comes_back(s, m.end) {
                self.returns.insert((m.character.to_owned(), p));
            }
            self.voices.show(m.character, p);
            here.shown.push(Speaker::Focus(m.character.to_owned()));
            self.voices
                .mentioned
                .push(Speaker::Focus(m.character.to_owned()));
        }
    }

    /// "They" leaving: whom a narration sentence sends off together.
    fn group_exits(
        &mut self,
        s: &str,
        lower: &[String],
        mentions: &[Mention<'_>],
        here: &InParagraph,
    ) {
        let p = here.p;
        // "…," remarked the wary Jones as they left the room: the people it names and
        // the one the line was said to leave.
        let lower_s = s.to_lowercase();
        let leaving: Vec<String> = if lower_s.contains("they ")
            && EXIT_PHRASES
                .iter()
                .any(|x| lower_s.contains(&format!("they {x}")))
        {
            mentions
                .iter()
                .map(|m| m.character.to_owned())
                .chain(
                    here.addressed
                        .as_ref()
                        .and_then(Speaker::focus)
                        .map(str::to_owned),
                )
                .collect()
        } else if ALONE_PHRASES.iter().any(|x| lower_s.contains(x)) {
            // Gone from this paragraph on, whose talk is the private one.
            for who in self.alone(mentions, here) {
                self.voices.exits.entry(who).or_insert(p);
            }
            Vec::new()
        } else if mentions.is_empty() && they_go(lower) {
            // "He handed them a shilling each, and away they buzzed down the stairs":
            // those sent off, everyone on stage but the narrator, the one who spoke
            // last and those this paragraph shows.
            let last = self.voices.spoken.last().and_then(Speaker::focus);
            self.voices
                .shown
                .iter()
                .filter(|(id, seen)| {
                    Some(id.as_str()) != last
                        && self.narrator != Some(id.as_str())
                        && seen.last() != Some(&p)
                        && self.voices.on_stage(&Speaker::Focus((*id).clone()))
                })
                .map(|(id, _)| id)
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        for who in leaving {
            self.voices.exits.entry(who).or_insert(p + 1);
        }
    }

    /// Those a sentence leaves alone together ("When they had gained their own room,
    /// Jane…"): whom it names, whom this paragraph shows, and for a "they" that names
    /// one, the one heard last before (or, if no one else spoke, shown last); everyone
    /// else on stage is sent off.
    fn alone(&self, mentions: &[Mention<'_>], here: &InParagraph) -> Vec<String> {
        let mut kept: BTreeSet<&str> = mentions.iter().map(|m| m.character).collect();
        kept.extend(here.shown.iter().filter_map(Speaker::focus));
        if kept.len() < 2
            && let Some(other) = self
                .voices
                .mentioned
                .iter()
                .chain(self.voices.spoken.iter())
                .rev()
                .filter_map(Speaker::focus)
                .find(|id| !kept.contains(id))
        {
            kept.insert(other);
        }
        self.voices
            .shown
            .keys()
            .filter(|id| !kept.contains(id.as_str()) && self.narrator != Some(id.as_str()))
            .cloned()
            .collect()
    }

    /// The scene as read: who is active, silent or only referred to, where and when it
    /// opens, and when each character is on stage.
    fn into_scene(self, span: Span, text: &str, paras: &[Paragraph]) -> Scene {
        let stays = stays(&self.voices, &self.returns, self.narrator, paras.len());
        let active: BTreeSet<String> = self
            .utterances
            .iter()
            .filter_map(|u| u.speaker.focus().map(str::to_owned))
            .collect();
        let silent: BTreeSet<String> = self
            .entries
            .keys()
            .filter(|c| !active.contains(*c))
            .cloned()
            .collect();
        let referenced: BTreeSet<String> = self
            .named
            .iter()
            .filter(|c| !self.entries.contains_key(*c))
            .cloned()
            .collect();
        let opening: String = paras
            .first()
            .map(|p| {
                p.segments
                    .iter()
                    .filter_map(|s| match s {
                        Segment::Narration(n) => Some(n.as_str()),
                        Segment::Quote(_) => None,
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let number = self.number;
        let location = place_phrase(&opening).unwrap_or_else(|| format!("scene {number}"));
        let time = words(&opening)
            .find(|w| {
                TIME_WORDS.contains(&w.as_str())
                    && !matches!(
                        w.as_str(),
                        "years" | "months" | "weeks" | "winters" | "o'clock"
                    )
            })
            .unwrap_or_default();
        Scene {
            number,
            span,
            location,
            time,
            atmosphere: atmosphere_of(dominant_emotion(text)).to_owned(),
            active,
            silent,
            referenced,
            utterances: self.utterances,
            retold: self.retold,
            unattributed: self.unattributed,
            sentences: self.sentences,
            exits: self.voices.exits,
            entries: self.entries,
            stays,
            paragraph_starts: paras.iter().map(|p| span.start + p.start).collect(),
            unit_starts: vec![0],
            narrator: self.narrator.map(str::to_owned),
        }
    }
}

/// When each focus character but the narrator is on stage, from the paragraphs the text
/// shows it: paragraph ranges `[from, until)`. One shown stays until
/// [`FADE_PARAGRAPHS`] paragraphs of narration pass without it, or
/// [`LISTEN_PARAGRAPHS`] of any kind (a talk between others does not keep a silent
/// listener in the room for ever), or the narrator moves on without it.
fn stays(
    voices: &Voices<'_>,
    returns: &BTreeSet<(String, usize)>,
    narrator: Option<&str>,
    paragraphs: usize,
) -> BTreeMap<String, Vec<(usize, usize)>> {
    let mut stays: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    // Gone at the first paragraph more than FADE_PARAGRAPHS of narration later…
    let faded = |p: usize| {
        (p..paragraphs)
            .find(|q| voices.clock[*q] - voices.clock[p] > FADE_PARAGRAPHS)
            .unwrap_or(paragraphs)
            .min(p + LISTEN_PARAGRAPHS + 1)
            .min(paragraphs)
    };
    // …or, when the text does not show them again by then, where the narrator moves on
    // after the last time it did: who is shown again soon went along.
    let left_behind = |p: usize| {
        voices
            .moved
            .iter()
            .find(|m| **m > p)
            .map_or(faded(p), |m| faded(p).min(*m))
    };
    for (id, seen) in &voices.shown {
        if narrator == Some(id.as_str()) {
            continue;
        }
        let ranges = stays.entry(id.clone()).or_default();
        let mut last_seen = None;
        for p in seen {
            let returned = returns.contains(&(id.clone(), *p));
            match (ranges.last_mut(), last_seen) {
                // Back from somewhere: away since the paragraph after the last showing.
                (Some(last), Some(before)) if returned && before < *p => {
                    last.1 = last.1.min(before + 1);
                    ranges.push((*p, faded(*p)));
                }
                (Some(last), Some(before)) if *p < faded(before) => last.1 = faded(*p),
                (Some(last), _) => {
                    if let Some(before) = last_seen {
                        last.1 = left_behind(before);
                    }
                    ranges.push((*p, faded(*p)));
                }
                (None, _) => ranges.push((*p, faded(*p))),
            }
            last_seen = Some(*p);
        }
        if let (Some(last), Some(before)) = (ranges.last_mut(), last_seen) {
            last.1 = left_behind(before);
        }
    }
    stays
}
