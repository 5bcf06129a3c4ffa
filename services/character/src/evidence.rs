//! The evidence gate as a character applies it, one for turns and interviews alike.
//!
//! - **Abstention.** Nothing the character remembers bears on a query when ReverieMem's
//!   recall found no fact above its `relevant` floor (and no anchoring scene), and no
//!   module item reached its module's floor ([`ModuleKind::relevance_floor`]). A turn
//!   that answers a question its memory does not support carries the same refusal
//!   instruction as an interview answer.
//! - **Evidence.** What the character holds (the recall pool, the scene memories it
//!   started with, what the option search found, the scene's lines, module items) is
//!   weighed by `dramatis_memory::evidence::Gate`: an option is answered only when a
//!   text on the question's subject supports it ([`weigh`]).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::OnceLock;

use dramatis_memory::evidence::{Gate, Held};
use dramatis_memory::modules::Grounding;
use dramatis_memory::thesaurus::{Thesaurus, WORDNET_DIR};

use crate::shard::Shard;
use dramatis_memory::reverie::Recalled;

/// Whether the character must abstain: ReverieMem's verdict stands unless a module
/// item bears on the query (with ReverieMem off it recalled nothing, so only module
/// items that bear count).
#[must_use]
pub fn abstains(reverie_abstains: bool, grounding: &[Grounding]) -> bool {
    reverie_abstains && !grounding.iter().any(Grounding::bears)
}

/// What the evidence gate ([`dramatis_memory::evidence::Gate`]) decided about a
/// question, from what recall and the modules brought to mind.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Verdict {
    /// Nothing held supports an answer: the character refuses.
    pub abstain: bool,
    /// With options: the one a held text supports (an index into the options).
    pub choice: Option<usize>,
    /// The id of the held text that supports it.
    pub support: Option<String>,
}

/// The evidence gate, one for interviews, recall-only questions and questions put in a
/// scene. What it weighs: ReverieMem's pool and the anchoring scene memory (found by
/// the question's own search, so on its subject when they reach the `relevant` floor),
/// what weighing the options found, the lines of the current scene (`lines`, the
/// question's own line left out), and module items that reach their module's floor
/// (on the subject: their module has judged them so). With ReverieMem off it recalled
/// nothing, so only lines and module items count.
#[must_use]
pub fn weigh<'a>(
    (gate, relevant): (&Gate, f32),
    recalled: &'a Recalled,
    grounding: &'a [Grounding],
    (own, lines): (Option<&'a str>, &'a [String]),
    (question, options): (&str, &[String]),
    words: (&dyn Fn(&str) -> f32, &Thesaurus),
) -> Verdict {
    // What is held, with the id of each text.
    let mut held: Vec<(&str, Held<'_>)> = Vec::new();
    let fits = |id: &str| recalled.fits.get(id).map_or(&[][..], Vec::as_slice);
    let asked = |id: &str, text: &'a str, closeness: f32| Held {
        text,
        closeness,
        asked: closeness >= relevant,
        fits: fits(id),
    };
    // The character's own description, when the question is about the character.
    // Between options, or asked about its standing ("what do you do for a living?"), it
    // is on the subject; any other free question ("what did you hide?") must share a
    // word with it, or "you" alone would cancel every refusal.
    held.extend(own.map(|own| {
        let text = Held {
            text: own,
            closeness: 0.0,
            asked: !options.is_empty() || asks_standing(question),
            fits: &[],
        };
        ("", text)
    }));
    held.extend(
        recalled
            .facts
            .iter()
            .map(|(fact, closeness)| (fact.id.as_str(), asked(&fact.id, &fact.text, *closeness))),
    );
    // A scene's digest lists all that happened and who was there: about too many
    // things to be evidence for one (its lines are facts of their own).
    held.extend(
        recalled
            .anchor
            .iter()
            .filter(|a| !is_digest(&a.id))
            .map(|a| {
                (
                    a.id.as_str(),
                    asked(&a.id, &a.text, recalled.anchor_closeness),
                )
            }),
    );
    held.extend(
        recalled
            .evidence
            .iter()
            .filter(|f| !is_digest(&f.id))
            .map(|f| {
                let text = Held {
                    text: &f.text,
                    closeness: f.closeness,
                    asked: false,
                    fits: fits(&f.id),
                };
                (f.id.as_str(), text)
            }),
    );
    held.extend(lines.iter().map(|line| {
        let text = Held {
            text: line,
            closeness: 0.0,
            asked: false,
            fits: &[],
        };
        ("", text)
    }));
    held.extend(grounding.iter().filter(|g| g.bears()).map(|g| {
        let text = Held {
            text: &g.text,
            closeness: 1.0,
            asked: true,
            fits: &[],
        };
        (g.id.as_str(), text)
    }));
    let texts: Vec<Held<'_>> = held.iter().map(|(_, h)| *h).collect();
    if options.is_empty() {
        return Verdict {
            abstain: !gate.bears_on(question, &texts, words.1),
            ..Verdict::default()
        };
    }
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    match gate.choose(question, &options, &texts, words) {
        Some((option, text)) => Verdict {
            abstain: false,
            choice: Some(option),
            support: held
                .get(text)
                .map(|(id, _)| (*id).to_owned())
                .filter(|id| !id.is_empty()),
        },
        None => Verdict {
            abstain: true,
            ..Verdict::default()
        },
    }
}

/// WordNet's synonyms, as the gate counts them, read once per process from set-up's
/// files under the models directory. Without them (set-up not run), a warning is
/// logged once and words match only as written.
pub fn thesaurus() -> &'static Thesaurus {
    static LOADED: OnceLock<Thesaurus> = OnceLock::new();
    LOADED.get_or_init(|| {
        let dir = dramatis_runtime::models::model_path(WORDNET_DIR);
        match Thesaurus::load(&dir) {
            Ok(thesaurus) => {
                tracing::debug!(
                    stems = thesaurus.len(),
                    bytes = thesaurus.heap_bytes(),
                    "synonyms loaded"
                );
                thesaurus
            }
            Err(e) => {
                tracing::warn!(
                    "{e}; the evidence gate matches words only as written \
                     (run `bash scripts/setup.sh`)"
                );
                Thesaurus::default()
            }
        }
    })
}

/// No synonyms: words match only as written (`--synonyms off`).
pub fn no_synonyms() -> &'static Thesaurus {
    static NONE: OnceLock<Thesaurus> = OnceLock::new();
    NONE.get_or_init(Thesaurus::default)
}

/// Whether a scene memory is the digest of a scene the character lived through
/// ([`dramatis_memory::reverie::writer::episode_id`]), not one it started with.
fn is_digest(id: &str) -> bool {
    id.starts_with("episode:")
}

/// Whether a question is put in the second person: about the one it is put to.
fn about_you(question: &str) -> bool {
    question
        .split(|c: char| !c.is_alphabetic())
        .any(|w| ["you", "your", "yours", "yourself"].contains(&w.to_lowercase().as_str()))
}

/// What a question put in the second person says when it asks the one it is put to
/// about its own standing: what it does, who it is, how it is called, where it lives or
/// comes from, what it wants. A profile and a goal answer these in their own words ("keeps
/// the lighthouse", "to find the ring"), sharing none with the question, so such a
/// question is on the subject of the character's description as it stands. Whole
/// phrases, not words: "who did you see?" or "what did you do?" ask about events, which
/// only memories answer.
const STANDING: &[&str] = &[
    "who are you",
    "what do you do",
    "for a living",
    "what is your name",
    "what are you called",
    "your name",
    "your job",
    "your work",
    "your trade",
    "your profession",
    "your occupation",
    "how old are you",
    "your age",
    "where do you live",
    "where are you from",
    "where do you come from",
    "your home",
    "your family",
    "are you married",
    "what do you want",
    "what are you after",
    "what do you hope",
    "what do you wish",
    "your goal",
    "your aim",
    "your purpose",
];

/// Whether `question` asks the one it is put to about its own standing ([`STANDING`]).
#[must_use]
pub fn asks_standing(question: &str) -> bool {
    let words: Vec<String> = question
        .split(|c: char| !c.is_alphabetic() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let text = format!(" {} ", words.join(" "));
    STANDING
        .iter()
        .any(|phrase| text.contains(&format!(" {phrase} ")))
}

/// What a character knows of itself, as the gate weighs it (its name, the names it
/// answers to, its profile and what it wants), when `question` is about the character:
/// put to it in the second person ("your husband"), or naming it.
#[must_use]
pub fn own_description(shard: &Shard, question: &str) -> Option<String> {
    let p = &shard.profile;
    let asked = dramatis_memory::lexical::stems(question);
    let names_me = std::iter::once(&p.name).chain(&p.aliases).any(|name| {
        let name = dramatis_memory::lexical::stems(name);
        !name.is_empty() && name.iter().all(|w| asked.contains(w))
    });
    if !names_me && !about_you(question) {
        return None;
    }
    let mut text = p.name.clone();
    if !p.aliases.is_empty() {
        dramatis_runtime::push!(text, " ({})", p.aliases.join(", "));
    }
    dramatis_runtime::push!(text, ": {}", p.profile.trim());
    if !shard.goal().trim().is_empty() {
        dramatis_runtime::push!(text, " Wants: {}", shard.goal().trim());
    }
    Some(text)
}

/// The other names of everyone `question` names, as this character knows them: each
/// person it perceived under more than one name (a stranger seen as "a tall young man
/// with a test-tube" who later introduced himself as "Holmes": one handle, two names)
/// is the same person whichever name a question or a memory uses. Only names the
/// character perceived count, so no name reaches the gate that the character never
/// heard. A name counts as named when the question holds all its content words.
#[must_use]
pub fn other_names(shard: &Shard, question: &str) -> Vec<String> {
    let me = shard.id();
    let mut names: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for p in shard.perceived() {
        let pairs = [(&p.speaker, &p.speaker_name), (&p.target, &p.target_name)];
        let present = p.perceivers.iter().zip(&p.perceiver_names);
        for (id, name) in pairs.into_iter().chain(present) {
            if !id.is_empty() && id != me && !name.trim().is_empty() {
                names.entry(id).or_default().insert(name.trim());
            }
        }
    }
    let asked: HashSet<String> = dramatis_memory::lexical::stems(question)
        .into_iter()
        .collect();
    let named = |name: &str| {
        let stems = dramatis_memory::lexical::stems(name);
        !stems.is_empty() && stems.iter().all(|s| asked.contains(s))
    };
    let mut others: Vec<String> = Vec::new();
    for known in names.values().filter(|n| n.len() > 1) {
        if known.iter().any(|n| named(n)) {
            others.extend(known.iter().filter(|n| !named(n)).map(|n| (*n).to_owned()));
        }
    }
    others
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_about_standing_is_told_from_one_about_events() {
        for standing in [
            "What do you do for a living?",
            "Who are you, sir?",
            "What's your name?",
            "Where do you live?",
            "What do you want?",
        ] {
            assert!(asks_standing(standing), "{standing}");
        }
        for event in [
            "What did you do last night?",
            "Who did you see?",
            "Who are your enemies' friends hiding?",
            "What did you want from him then?",
            "Where did you live in 1880?",
        ] {
            assert!(!asks_standing(event), "{event}");
        }
    }

    #[test]
    fn a_module_item_below_its_floor_never_cancels_abstention() {
        let item = |module: &str, relevance: f32| Grounding {
            module: module.into(),
            kind: "fact".into(),
            id: "x".into(),
            text: "x".into(),
            relevance,
        };
        assert!(abstains(true, &[item("dualmem", 0.2), item("moom", 0.1)]));
        assert!(!abstains(true, &[item("dualmem", 0.5)]));
        assert!(abstains(true, &[item("bookmarks", 0.4)]));
        assert!(!abstains(false, &[]));
        assert!(abstains(true, &[item("moom", 0.3)]));
        assert!(!abstains(true, &[item("moom", 0.9)]));
    }
}
