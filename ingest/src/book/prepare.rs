//! Stage 1's deterministic path for one scene: who speaks each quoted line, who is on
//! stage from which paragraph, who leaves, the sentences with their actors.

use std::collections::{BTreeMap, BTreeSet};

use super::lexicon::{EXIT_PHRASES, TIME_WORDS, atmosphere_of};
use super::narration::{dominant_emotion, place_phrase};
use super::partition::{Span, moves_in_time};
use super::presence::{comes_back, exit_of, moves_on, newcomer_in, present_mention, they_go};
use super::retelling::Retelling;
use super::scenes::{BookFacts, FADE_PARAGRAPHS, Scene, Sentence, Speaker, Tag, Utterance};
use super::speech::{
    Voices, actors, holds, introduces, lead_in, said_to, speech_tag, subject_at, vocative,
};
use super::text::{Namer, Segment, prefix, quoted_paragraphs, sentences, words};

/// Prepares one scene from its text (the deterministic path). `narrator` is the focus
/// character telling it in the first person, if any: on stage throughout, and "I".
#[expect(clippy::too_many_lines, reason = "issue 33: not yet cut into steps")]
#[must_use]
pub fn prepare(
    number: usize,
    span: Span,
    text: &str,
    namer: &Namer,
    facts: &BookFacts,
    narrator: Option<&str>,
) -> Scene {
    let paras = quoted_paragraphs(text);
    let mut voices = Voices {
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
    let mut utterances = Vec::new();
    let mut all_sentences = Vec::new();
    // Who is on stage from which paragraph: by speaking, or named on stage by the
    // narration.
    let mut entries: BTreeMap<String, usize> = BTreeMap::new();
    if let Some(n) = narrator {
        entries.insert(n.to_owned(), 0);
    }
    let mut named: BTreeSet<String> = BTreeSet::new();
    let other_in = |text: &str| {
        facts
            .other_speakers
            .iter()
            .find(|n| {
                text.split_whitespace()
                    .next()
                    .is_some_and(|w| w.trim_end_matches("'s") == n.as_str())
            })
            .map(|n| Speaker::Other(n.clone()))
    };
    let mut open_speaker: Option<Speaker> = None;
    let mut retold = Vec::new();
    let mut unattributed = Vec::new();
    let mut retelling = Retelling::default();
    let mut returns: BTreeSet<(String, usize)> = BTreeSet::new();
    for (p, para) in paras.iter().enumerate() {
        voices.now = p;
        let segs = &para.segments;
        let mut in_paragraph: Vec<Speaker> = Vec::new();
        // The subject of the narration just before a quote in this paragraph.
        let mut actor: Option<Speaker> = None;
        let mut paragraph_speaker: Option<Speaker> = None;
        let continued = open_speaker.take();
        // A retelling goes on only through one teller's quoted paragraphs.
        if matches!(segs.first(), Some(Segment::Narration(_))) {
            retelling = Retelling::default();
        }
        let introduced = segs.iter().find_map(|s| match s {
            Segment::Quote(q) => introduces(q, namer),
            Segment::Narration(_) => None,
        });
        // Whom this paragraph's quotes address by name: the likely next speaker.
        let mut addressed: Option<Speaker> = None;
        for (i, seg) in segs.iter().enumerate() {
            match seg {
                Segment::Narration(n) => {
                    actor = None;
                    for s in sentences(n) {
                        let lower: Vec<String> = words(s).collect();
                        let mentions = namer.mentions(s);
                        for m in &mentions {
                            named.insert(m.character.to_owned());
                            // Only a mention on stage can be a speaker later.
                            if !present_mention(s, m.start, m.end) {
                                continue;
                            }
                            tracing::debug!(
                                target: "dramatis_ingest::presence",
                                scene = number,
                                paragraph = p,
                                character = m.character,
                                "shown by narration: {}",
                                prefix(s, 160)
                            );
                            entries.entry(m.character.to_owned()).or_insert(p);
                            // "Lestrade, who had been in the front room…, reappeared":
                            // he was away since the text last showed him.
                            if comes_back(s, m.end) {
                                returns.insert((m.character.to_owned(), p));
                            }
                            voices.show(m.character, p);
                            in_paragraph.push(Speaker::Focus(m.character.to_owned()));
                            voices
                                .mentioned
                                .push(Speaker::Focus(m.character.to_owned()));
                        }
                        if let Some(o) = other_in(s) {
                            in_paragraph.push(o);
                        }
                        if mentions.is_empty()
                            && let Some((noun, gender)) = newcomer_in(&lower)
                        {
                            voices.newcomer =
                                Some((Speaker::Other(format!("the {noun}")), gender, p));
                        }
                        actor = match subject_at(s, &lower, namer) {
                            Some(Tag::Focus(id)) => Some(Speaker::Focus(id)),
                            Some(Tag::Narrator) => voices.speaker_of(Tag::Narrator, &[]),
                            Some(Tag::Pronoun(g)) => voices.resolve(&in_paragraph, g),
                            _ => other_in(s),
                        };
                        let moves = (narrator.is_some() && moves_on(&lower)) || moves_in_time(s);
                        if moves && voices.moved.last() != Some(&p) {
                            tracing::debug!(
                                target: "dramatis_ingest::presence",
                                scene = number,
                                paragraph = p,
                                "moves on: {}",
                                prefix(s, 120)
                            );
                            voices.moved.push(p);
                        }
                        if let Some(who) = exit_of(s, namer, &voices) {
                            voices.exits.entry(who).or_insert(p + 1);
                        }
                        // "…," remarked the wary Jones as they left the room: the people
                        // it names and the one the line was said to leave.
                        let lower_s = s.to_lowercase();
                        if lower_s.contains("they ")
                            && EXIT_PHRASES
                                .iter()
                                .any(|x| lower_s.contains(&format!("they {x}")))
                        {
                            let leaving: Vec<String> = mentions
                                .iter()
                                .map(|m| m.character.to_owned())
                                .chain(
                                    addressed
                                        .as_ref()
                                        .and_then(Speaker::focus)
                                        .map(str::to_owned),
                                )
                                .collect();
                            for who in leaving {
                                voices.exits.entry(who).or_insert(p + 1);
                            }
                        } else if mentions.is_empty() && they_go(&lower) {
                            // "He handed them a shilling each, and away they buzzed down
                            // the stairs": those sent off, everyone on stage but the
                            // narrator, the one who spoke last and those this paragraph
                            // shows.
                            let last = voices.spoken.last().and_then(Speaker::focus);
                            let leaving: Vec<String> = voices
                                .shown
                                .iter()
                                .filter(|(id, seen)| {
                                    Some(id.as_str()) != last
                                        && narrator != Some(id.as_str())
                                        && seen.last() != Some(&p)
                                        && voices.on_stage(&Speaker::Focus((*id).clone()))
                                })
                                .map(|(id, _)| id)
                                .cloned()
                                .collect();
                            for who in leaving {
                                voices.exits.entry(who).or_insert(p + 1);
                            }
                        }
                        all_sentences.push(Sentence {
                            text: s.to_owned(),
                            paragraph: p,
                            spoken_by: None,
                            actors: actors(s, narrator, None, namer, facts),
                        });
                    }
                }
                Segment::Quote(q) => {
                    for m in namer.mentions(q) {
                        named.insert(m.character.to_owned());
                    }
                    let after = match segs.get(i + 1) {
                        Some(Segment::Narration(n)) => speech_tag(n, namer),
                        _ => None,
                    };
                    let before = match i.checked_sub(1).map(|j| &segs[j]) {
                        Some(Segment::Narration(n)) => lead_in(n, namer),
                        _ => None,
                    };
                    // "I'm Joseph Stangerson": the speaker says who it is, for every
                    // quote of the paragraph a name does not tag.
                    let named_tag =
                        matches!(after.as_ref().or(before.as_ref()), Some(Tag::Focus(_)));
                    let after_is_tag = after.is_some();
                    let tag = introduced
                        .clone()
                        .filter(|_| !named_tag)
                        .map(Tag::Focus)
                        .or(after)
                        .or(before);
                    let has_tag = tag.is_some();
                    let tagged = tag.and_then(|tag| match tag {
                        // A pronoun in a paragraph that already has a speaker who
                        // fits it is that speaker.
                        Tag::Pronoun(g) => paragraph_speaker
                            .clone()
                            .filter(|s| facts.fits(s, g) && !voices.is_narrator(s))
                            .or_else(|| voices.speaker_of(tag, &in_paragraph)),
                        _ => voices.speaker_of(tag, &in_paragraph),
                    });
                    // "…," I said to Mrs. Hudson: she is addressed, and likely answers.
                    let told = match segs.get(i + 1) {
                        Some(Segment::Narration(n)) if after_is_tag => said_to(n, namer),
                        _ => None,
                    };
                    let vocative = vocative(q, namer).or(told).map(Speaker::Focus);
                    // A tag that names no one who can be found leaves the line unknown;
                    // only an untagged line is given by the conversation.
                    let untagged = || !has_tag;
                    let speaker = tagged
                        .or_else(|| paragraph_speaker.clone().filter(|_| untagged()))
                        .or_else(|| (i == 0 && untagged()).then(|| continued.clone()).flatten())
                        .or_else(|| actor.clone().filter(|_| untagged()))
                        .or_else(|| {
                            voices.addressed.clone().filter(|a| {
                                untagged() && Some(a) != voices.spoken.last() && voices.on_stage(a)
                            })
                        })
                        .or_else(|| voices.alternate().filter(|_| untagged()))
                        .filter(|s| Some(s) != vocative.as_ref());
                    if retelling.teller != speaker {
                        retelling = Retelling {
                            teller: speaker.clone(),
                            ..Retelling::default()
                        };
                    }
                    let lines = retelling.lines(q, p, namer, facts);
                    for s in sentences(q) {
                        let retold_by =
                            lines.iter().find(|u| holds(&u.text, s)).map(|u| &u.speaker);
                        let mut actors = actors(
                            s,
                            speaker.as_ref().and_then(Speaker::focus),
                            retold_by,
                            namer,
                            facts,
                        );
                        // "When we entered his room…": the teller's companions lived it.
                        if retold_by.is_some() || words(s).any(|w| w == "we") {
                            actors.extend(retelling.companions.iter().cloned());
                        }
                        all_sentences.push(Sentence {
                            text: s.to_owned(),
                            paragraph: p,
                            spoken_by: speaker.clone(),
                            actors,
                        });
                    }
                    for u in &lines {
                        tracing::debug!(
                            target: "dramatis_ingest::presence",
                            scene = number,
                            paragraph = p,
                            speaker = ?u.speaker,
                            "retold: {}",
                            prefix(&u.text, 80)
                        );
                    }
                    retold.extend(lines);
                    if vocative.is_some() {
                        addressed = vocative;
                    }
                    if speaker.is_none() {
                        unattributed.push((p, q.clone()));
                    }
                    if let Some(speaker) = speaker {
                        if let Some(id) = speaker.focus() {
                            tracing::debug!(
                                target: "dramatis_ingest::presence",
                                scene = number,
                                paragraph = p,
                                character = id,
                                "speaks: {}",
                                prefix(q, 80)
                            );
                            entries.entry(id.to_owned()).or_insert(p);
                            voices.show(id, p);
                        }
                        paragraph_speaker = Some(speaker.clone());
                        if voices.spoken.last() != Some(&speaker) {
                            voices.spoken.push(speaker.clone());
                        }
                        utterances.push(Utterance {
                            speaker,
                            text: q.clone(),
                            paragraph: p,
                        });
                    }
                }
            }
        }
        if segs.iter().any(|s| matches!(s, Segment::Quote(_))) {
            voices.addressed = addressed;
        }
        if para.open {
            open_speaker = paragraph_speaker;
        }
    }
    let mut stays: BTreeMap<String, Vec<(usize, usize)>> = BTreeMap::new();
    for (id, seen) in &voices.shown {
        if narrator == Some(id.as_str()) {
            continue;
        }
        // Gone at the first paragraph more than FADE_PARAGRAPHS of narration later…
        let faded = |p: usize| {
            (p..paras.len())
                .find(|q| voices.clock[*q] - voices.clock[p] > FADE_PARAGRAPHS)
                .unwrap_or(paras.len())
        };
        // …or, when the text does not show them again by then, where the narrator
        // moves on after the last time it did: who is shown again soon went along.
        let left_behind = |p: usize| {
            voices
                .moved
                .iter()
                .find(|m| **m > p)
                .map_or(faded(p), |m| faded(p).min(*m))
        };
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
    let active: BTreeSet<String> = utterances
        .iter()
        .filter_map(|u| u.speaker.focus().map(str::to_owned))
        .collect();
    let silent: BTreeSet<String> = entries
        .keys()
        .filter(|c| !active.contains(*c))
        .cloned()
        .collect();
    let referenced: BTreeSet<String> = named
        .iter()
        .filter(|c| !entries.contains_key(*c))
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
        utterances,
        retold,
        unattributed,
        sentences: all_sentences,
        exits: voices.exits,
        entries,
        stays,
        paragraph_starts: paras.iter().map(|p| span.start + p.start).collect(),
        narrator: narrator.map(str::to_owned),
    }
}
