//! KBF items generated from a scenario and a played run (`dramatis eval probes`), and
//! the gold answer of any item, generated or hand-written, at its story position.
//!
//! An item is a cloze: a fact or a perceived line with one distinctive word blanked
//! out, put to one character at one position, with four candidate words and the
//! refusal. The character *could know* the blanked word at that position when some
//! source it knew by then (a fact it was given, its own profile and memories, a line
//! or narration it perceived) contains it. Then the gold is that word's letter (a KRf
//! item); otherwise it is E, the refusal (a KR item). Distractors are words of the same
//! kind (numbers, proper names, other content words) from other sources of the same
//! story that the character could not know at that position.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hasher as _;

use dramatis_scenario::Scenario;

use crate::kbf::{Probe, REFUSAL, REFUSAL_TEXT, Split, option_with_text};
use crate::walk::{Run, Source, sources};
use crate::words::{Token, contains_word, tokens};

/// Where items are asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// Facts at the end of the story; a line at the end of its scene, and to its
    /// perceivers also at the end of the scene before (when it had not been said yet).
    Scene,
    /// Facts before the first turn; a line right after it was logged, and to its
    /// perceivers also one turn before.
    Line,
}

/// A word's kind, for choosing distractors like it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Number,
    Name,
    Word,
}

/// Common words too long for the length rule to drop.
const COMMON: &[&str] = &[
    "about",
    "after",
    "again",
    "against",
    "always",
    "another",
    "around",
    "because",
    "before",
    "behind",
    "being",
    "between",
    "cannot",
    "could",
    "during",
    "either",
    "enough",
    "every",
    "everything",
    "little",
    "nothing",
    "other",
    "perhaps",
    "rather",
    "should",
    "someone",
    "something",
    "still",
    "their",
    "there",
    "these",
    "thing",
    "things",
    "those",
    "though",
    "through",
    "under",
    "until",
    "where",
    "which",
    "while",
    "without",
    "would",
    "himself",
    "herself",
    "myself",
    "yourself",
    "itself",
    "already",
    "almost",
    "scripted",
];

fn kind_of(token: &Token<'_>) -> Option<Kind> {
    let word = token.word;
    if word.chars().all(|c| c.is_ascii_digit()) {
        return (word.len() <= 6).then_some(Kind::Number);
    }
    if !word.chars().all(char::is_alphabetic) {
        return None;
    }
    if word.chars().next().is_some_and(char::is_uppercase) {
        return (!token.opens_sentence && word.len() > 1).then_some(Kind::Name);
    }
    let lower = word.to_lowercase();
    (word.chars().count() >= 6 && !COMMON.contains(&lower.as_str())).then_some(Kind::Word)
}

/// Words of everyone's names (lowercased): no answer turns on who someone is.
fn names(scenario: &Scenario) -> BTreeSet<String> {
    words_of(scenario.characters.iter().flat_map(|c| {
        [c.name.as_str(), c.id.as_str()]
            .into_iter()
            .chain(c.aliases.iter().map(String::as_str))
    }))
}

/// Words no blank may be: everyone's names and every place's name (frames show
/// them), lowercased.
fn blocked(scenario: &Scenario) -> BTreeSet<String> {
    let mut out = names(scenario);
    out.extend(words_of(
        scenario
            .locations
            .iter()
            .flat_map(|l| [l.name.as_str(), l.id.as_str()]),
    ));
    out
}

fn words_of<'a>(texts: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    texts
        .flat_map(|t| tokens(t).into_iter().map(|t| t.word.to_lowercase()))
        .collect()
}

/// Whether `character` could know any of `words` once `at` turns have been played:
/// some source it knew by then contains one.
fn could_know(all: &[Source], character: &str, at: u32, words: &[String]) -> bool {
    all.iter()
        .any(|s| s.known_by(character, at) && words.iter().any(|w| s.holds(w)))
}

fn hash(parts: &[&str]) -> u64 {
    let mut hasher = fnv::FnvHasher::default();
    for part in parts {
        hasher.write(part.as_bytes());
        hasher.write_u8(0);
    }
    hasher.finish()
}

/// One probed text: sources with the same text are one (its knowers from the earliest
/// position each perceived it).
struct Probed {
    source: Source,
    /// The blanked word, its kind, and the text with the blank.
    word: String,
    kind: Kind,
    cloze: String,
}

const BLANK: &str = "____";

/// The probed texts of a run with their blanks; texts with no distinctive word, and
/// texts whose blanked form another text shares ("Scripted line ____."), are left out.
fn probed(scenario: &Scenario, all: &[Source]) -> Vec<Probed> {
    let blocked = blocked(scenario);
    let mut merged: Vec<Source> = Vec::new();
    for s in all.iter().filter(|s| s.probed()) {
        if let Some(same) = merged.iter_mut().find(|m| m.text == s.text) {
            for (who, from) in &s.known_from {
                let entry = same.known_from.entry(who.clone()).or_insert(*from);
                *entry = (*entry).min(*from);
            }
        } else {
            merged.push(s.clone());
        }
    }
    let frequency = |word: &str| all.iter().filter(|s| s.holds(word)).count();
    let mut out: Vec<Probed> = Vec::new();
    for source in merged {
        let chosen = tokens(&source.text)
            .into_iter()
            .filter_map(|t| {
                let kind = kind_of(&t)?;
                if blocked.contains(&t.word.to_lowercase()) {
                    return None;
                }
                let df = frequency(t.word);
                (df <= 3).then_some((kind, df, std::cmp::Reverse(t.word.len()), t.start, t.word))
            })
            .min();
        let Some((kind, _, _, start, word)) = chosen else {
            continue;
        };
        let cloze = format!(
            "{}{BLANK}{}",
            &source.text[..start],
            &source.text[start + word.len()..]
        );
        out.push(Probed {
            word: word.to_owned(),
            kind,
            cloze,
            source,
        });
    }
    let mut contexts: BTreeMap<String, usize> = BTreeMap::new();
    for p in &out {
        *contexts.entry(p.cloze.to_lowercase()).or_default() += 1;
    }
    out.retain(|p| contexts[&p.cloze.to_lowercase()] == 1);
    out
}

/// Generates the items of `run` (played with `played_with`, recorded on each item).
#[must_use]
pub fn generate(scenario: &Scenario, run: &Run, at: At, played_with: &str) -> Vec<Probe> {
    let all = sources(scenario, run);
    let texts = probed(scenario, &all);
    let blocked = blocked(scenario);
    // Every candidate word of every probed text, by kind: the distractor pool.
    let mut pool: Vec<(Kind, String)> = Vec::new();
    for p in &texts {
        for t in tokens(&p.source.text) {
            if let Some(kind) = kind_of(&t)
                && !blocked.contains(&t.word.to_lowercase())
                && !pool.iter().any(|(_, w)| w.eq_ignore_ascii_case(t.word))
            {
                pool.push((kind, t.word.to_owned()));
            }
        }
    }
    let mut probes = Vec::new();
    for p in &texts {
        for (position, who) in positions(scenario, run, &p.source, at) {
            let item_id = format!("{}:{who}@{position}", p.source.id);
            let words = [p.word.clone()];
            let mut distractors: Vec<&(Kind, String)> = pool
                .iter()
                .filter(|(_, w)| {
                    !w.eq_ignore_ascii_case(&p.word)
                        && !p.source.holds(w)
                        && !could_know(&all, &who, position, std::slice::from_ref(w))
                })
                .collect();
            distractors.sort_by_key(|(kind, w)| (*kind != p.kind, hash(&[&item_id, w])));
            if distractors.len() < 3 {
                continue;
            }
            let truth = ['A', 'B', 'C', 'D'][(hash(&[&item_id]) % 4) as usize];
            let mut others = distractors.iter().map(|(_, w)| w.clone());
            let mut options = BTreeMap::new();
            for letter in ['A', 'B', 'C', 'D'] {
                let text = if letter == truth {
                    p.word.clone()
                } else {
                    others.next().unwrap_or_default()
                };
                options.insert(letter, text);
            }
            options.insert(REFUSAL, REFUSAL_TEXT.to_owned());
            let known = could_know(&all, &who, position, &words);
            let question = if p.source.fact.is_some() {
                format!("Fill the blank from your own knowledge: \"{}\"", p.cloze)
            } else {
                format!("Fill the blank in what was said or seen: \"{}\"", p.cloze)
            };
            probes.push(Probe {
                id: item_id,
                character: who.clone(),
                question,
                options,
                gold: if known { truth } else { REFUSAL },
                split: if known { Split::Krf } else { Split::Kr },
                at: Some(position),
                fact: p.source.fact.clone(),
                line: p.source.line,
                line_text: p.source.line.map(|_| p.source.text.clone()),
                truth: Some(truth),
                evidence: words.to_vec(),
                played_with: Some(played_with.to_owned()),
                cloze: None,
                kind: None,
            });
        }
    }
    probes
}

/// The (position, character) pairs a probed text is asked at.
fn positions(scenario: &Scenario, run: &Run, source: &Source, at: At) -> Vec<(u32, String)> {
    let everyone = || scenario.characters.iter().map(|c| c.id.clone());
    let logged = source.logged_at;
    let perceivers: Vec<String> = source
        .known_from
        .iter()
        .filter(|(_, from)| **from == logged)
        .map(|(who, _)| who.clone())
        .collect();
    let mut out = Vec::new();
    match (at, source.line.is_some()) {
        (At::Scene, false) => out.extend(everyone().map(|c| (run.turns, c))),
        (At::Line, false) => out.extend(everyone().map(|c| (0, c))),
        (At::Scene, true) => {
            let end = run
                .scene_ends
                .iter()
                .copied()
                .find(|e| *e >= logged)
                .unwrap_or(run.turns);
            out.extend(everyone().map(|c| (end, c)));
            if let Some(before) = run.scene_ends.iter().copied().rfind(|e| *e < logged) {
                out.extend(perceivers.iter().map(|c| (before, c.clone())));
            }
        }
        (At::Line, true) => {
            out.extend(everyone().map(|c| (logged, c)));
            if logged > 0 {
                out.extend(perceivers.iter().map(|c| (logged - 1, c.clone())));
            }
        }
    }
    out
}

/// The gold answer of `probe` asked at position `at` of `run`: its true option when the
/// character could know the answer by then, else the refusal. `None` when the item's
/// true option cannot be found: it has no `truth`, and no sibling item about the same
/// fact gives a true option (`truths`, from [`truths`]) whose text is one of this item's
/// options. A sibling's letter is never carried over: hand-written sets shuffle the
/// options per item, so only the text names the same answer.
#[must_use]
pub fn derive_gold(
    probe: &Probe,
    scenario: &Scenario,
    all: &[Source],
    at: u32,
    truths: &BTreeMap<String, String>,
) -> Option<char> {
    let truth = true_option(probe, truths)?;
    let given = probe.fact.as_ref().is_some_and(|f| {
        scenario
            .facts
            .iter()
            .any(|fact| &fact.id == f && fact.known_by.contains(&probe.character))
    });
    let words = if probe.evidence.is_empty() {
        evidence(probe, truth, scenario, all)
    } else {
        probe.evidence.clone()
    };
    let known = given || (!words.is_empty() && could_know(all, &probe.character, at, &words));
    Some(if known { truth } else { REFUSAL })
}

/// The letter of `probe`'s true option: its own `truth`, else the option whose text is
/// the true text its fact's siblings give.
#[must_use]
pub fn true_option(probe: &Probe, truths: &BTreeMap<String, String>) -> Option<char> {
    if let Some(truth) = probe.truth {
        return Some(truth);
    }
    let text = truths.get(probe.fact.as_ref()?)?;
    option_with_text(&probe.options, text)
}

/// The true option's text of each fact, from the items that give it: an item's own
/// `truth`, else a KRf item's gold (a KRf item's gold is the fact's true option).
#[must_use]
pub fn truths(probes: &[Probe]) -> BTreeMap<String, String> {
    probes
        .iter()
        .filter_map(|p| {
            let truth = p.truth.or((p.split == Split::Krf).then_some(p.gold))?;
            Some((p.fact.clone()?, p.options.get(&truth)?.clone()))
        })
        .collect()
}

/// The words a hand-written item's true option rests on: its proper names (places
/// included, people not) and numbers that neither the question nor another option
/// holds, and that at most three sources of the story contain. A character that perceived one of them, or was at the place, could know the
/// answer.
fn evidence(probe: &Probe, truth: char, scenario: &Scenario, all: &[Source]) -> Vec<String> {
    let blocked = names(scenario);
    let Some(text) = probe.options.get(&truth) else {
        return Vec::new();
    };
    tokens(text)
        .iter()
        .filter(|t| matches!(kind_of(t), Some(Kind::Name | Kind::Number)))
        .filter(|t| !blocked.contains(&t.word.to_lowercase()))
        // As rare as a generated blank: "3" in "Scripted line 3." is not an address.
        .filter(|t| all.iter().filter(|s| s.holds(t.word)).count() <= 3)
        .filter(|t| {
            !contains_word(&probe.question, t.word)
                && !probe
                    .options
                    .iter()
                    .any(|(l, o)| *l != truth && contains_word(o, t.word))
        })
        .map(|t| t.word.to_owned())
        .collect()
}

#[cfg(test)]
mod tests;
