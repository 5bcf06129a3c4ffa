//! Stage 3, the knowledge graph (deterministic path): entities of seven types named in
//! each scene, with aliases unified across scenes; fact candidates (sentences naming an
//! entity, a time or a number) as (s, p, o, cause) with their text; visibility in two
//! phases: local (the subject's direct experience, observation by those present at that
//! point of the scene, common knowledge for world background), then propagation
//! through the character–organisation membership graph.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

mod facts;
mod knowledge;

use facts::FactReader;

use super::clause::Clause;
use super::lexicon::TIME_WORDS;
use super::proper::{FUNCTION_WORDS, clean_word, kind_of, mid_sentence_capitals, proper_phrases};
use super::scenes::{Scene, Speaker};
use super::text::{FocusCharacter, Mention, Namer, contains_phrase, words};

/// The paper's seven entity types.
pub const ENTITY_KINDS: [&str; 7] = [
    "person",
    "organisation",
    "place",
    "object",
    "event",
    "time",
    "concept",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    pub name: String,
    pub kind: String,
    pub aliases: BTreeSet<String>,
    /// Scenes (1-based) it is named in.
    pub scenes: BTreeSet<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Organisation {
    pub name: String,
    pub aliases: BTreeSet<String>,
    /// Focus characters who belong to it.
    pub members: BTreeSet<String>,
}

/// A SPOCV fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphFact {
    pub scene: usize,
    pub text: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub cause: String,
    pub route: String,
    pub known_by: BTreeSet<String>,
    /// `text` (a sentence of the book) or `model` (a relation the model induced).
    pub source: String,
    /// The book offset of the paragraph that tells it.
    #[serde(default)]
    pub at: usize,
    /// The sentence as the book words it (`text` may add who said it): with `at`, which
    /// sentence of the book this is, in this run only (not written out).
    #[serde(skip)]
    pub sentence: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Graph {
    pub entities: Vec<Entity>,
    pub organisations: Vec<Organisation>,
    pub facts: Vec<GraphFact>,
}

/// Builds the graph from prepared scenes. `world` are the focus characters ever on
/// stage: the only ones visibility can name.
#[must_use]
pub fn extract(
    scenes: &[Scene],
    characters: &[FocusCharacter],
    namer: &Namer,
    world: &BTreeSet<String>,
) -> Graph {
    let places: BTreeSet<String> = scenes.iter().map(|s| s.location.clone()).collect();
    let proper = mid_sentence_capitals(scenes);
    let focus_names: BTreeMap<&str, &str> = characters
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    let mut entities = named_entities(scenes, characters, namer, &proper, &places, &focus_names);
    fold_aliases(&mut entities);
    let objects = objects(scenes, namer, &proper, &places, &mut entities);
    let organisations = organisations(scenes, &entities, namer);
    let reader = FactReader {
        namer,
        world,
        focus_names: &focus_names,
        proper: &proper,
        objects: &objects,
        organisations: &organisations,
    };
    let mut facts: Vec<GraphFact> = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for s in scenes {
        for fact in reader.scene(s) {
            let key = fact.text.to_lowercase();
            if let Some(at) = seen.get(&key) {
                facts[*at].known_by.extend(fact.known_by);
                continue;
            }
            seen.insert(key, facts.len());
            facts.push(fact);
        }
    }
    Graph {
        entities: entities.into_values().collect(),
        organisations,
        facts,
    }
}

/// Counts scene `scene` for the entity `name`, adding it with `kind` if it is new.
fn add_entity(entities: &mut BTreeMap<String, Entity>, name: &str, kind: &str, scene: usize) {
    let e = entities.entry(name.to_owned()).or_insert_with(|| Entity {
        name: name.to_owned(),
        kind: kind.to_owned(),
        aliases: BTreeSet::new(),
        scenes: BTreeSet::new(),
    });
    e.scenes.insert(scene);
}

/// The focus characters in the scenes that show or name them, the scenes' places, and
/// every other proper phrase of the text.
fn named_entities(
    scenes: &[Scene],
    characters: &[FocusCharacter],
    namer: &Namer,
    proper: &BTreeSet<String>,
    places: &BTreeSet<String>,
    focus_names: &BTreeMap<&str, &str>,
) -> BTreeMap<String, Entity> {
    let mut entities: BTreeMap<String, Entity> = BTreeMap::new();
    for c in characters {
        for s in scenes {
            if s.present().any(|p| *p == c.id) || s.referenced.contains(&c.id) {
                add_entity(&mut entities, &c.name, "person", s.number);
            }
        }
    }
    for s in scenes {
        add_entity(&mut entities, &s.location, "place", s.number);
        for sentence in &s.sentences {
            let mentioned: BTreeSet<&str> = namer
                .mentions(&sentence.text)
                .iter()
                .map(|m| m.character)
                .collect();
            for phrase in proper_phrases(&sentence.text, proper) {
                // A focus character's name form is that character.
                if namer
                    .mentions(&phrase)
                    .first()
                    .is_some_and(|m| m.start == 0)
                    || mentioned.iter().any(|id| focus_names[id].contains(&phrase))
                {
                    continue;
                }
                add_entity(
                    &mut entities,
                    &phrase,
                    kind_of(&phrase, &sentence.text, places),
                    s.number,
                );
            }
        }
    }
    entities
}

/// Aliases: a one-word organisation or person name folds into the longer name that ends
/// with it ("Society" into "Lantern Society", "Silas" into "Silas Penrose").
fn fold_aliases(entities: &mut BTreeMap<String, Entity>) {
    let names: Vec<String> = entities.keys().cloned().collect();
    for short in &names {
        if short.contains(' ') {
            continue;
        }
        let long = names.iter().find(|n| {
            *n != short
                && n.split_whitespace().any(|w| w == short.as_str())
                && entities[*n].kind == entities[short].kind
        });
        if let Some(long) = long.cloned()
            && let Some(e) = entities.remove(short)
        {
            let target = entities.get_mut(&long).expect("present");
            target.aliases.insert(short.clone());
            target.scenes.extend(e.scenes);
        }
    }
}

/// Objects: a thing the book keeps returning to ("the token", "the logbook"), named with
/// "the" in at least three scenes. Each is added as an entity unless it names a
/// character or a place; the set holds the nouns.
fn objects(
    scenes: &[Scene],
    namer: &Namer,
    proper: &BTreeSet<String>,
    places: &BTreeSet<String>,
    entities: &mut BTreeMap<String, Entity>,
) -> BTreeSet<String> {
    let mut object_scenes: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for s in scenes {
        for sentence in &s.sentences {
            let tokens: Vec<&str> = sentence.text.split_whitespace().collect();
            for (i, pair) in tokens.windows(2).enumerate() {
                let w = clean_word(pair[1]);
                let lower = w.to_lowercase();
                // A noun ends its phrase: punctuation or a function word follows it.
                let next = tokens.get(i + 2).map(|t| clean_word(t).to_lowercase());
                let ends = pair[1].ends_with([',', '.', ';', ':', '!', '?'])
                    || next.is_none()
                    || next.as_deref().is_some_and(|n| FUNCTION_WORDS.contains(&n));
                if pair[0].eq_ignore_ascii_case("the")
                    && ends
                    && w.len() >= 4
                    && w.chars().all(|c| c.is_lowercase())
                    && !proper.iter().any(|p| p.to_lowercase() == lower)
                {
                    object_scenes.entry(lower).or_default().insert(s.number);
                }
            }
        }
    }
    object_scenes
        .into_iter()
        .filter(|(w, found)| found.len() >= 3 && !TIME_WORDS.contains(&w.as_str()))
        .map(|(w, found)| {
            let name = format!("the {w}");
            if namer.mentions(&name).is_empty() && !places.iter().any(|p| p.ends_with(&name)) {
                for n in &found {
                    add_entity(entities, &name, "object", *n);
                }
            }
            w
        })
        .collect()
}

/// Verbs by which a group learns something: a fact reaches a group's members only
/// when the text says the group itself learned it ("the Council was told").
const LEARNING: &[&str] = &[
    "knew",
    "knows",
    "learned",
    "learnt",
    "heard",
    "discovered",
    "was told",
    "were told",
    "was informed",
    "were informed",
    "has been informed",
    "had been informed",
    "found out",
];

/// Does `text` say that the group named `name` learned what it tells, or tell what the
/// group itself does ("The Society will meet on Friday": the group is the subject)?
fn group_learns(text: &str, name: &str) -> bool {
    let lower = text.to_lowercase();
    let name = name.to_lowercase();
    let opening = lower
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .trim_start_matches("the ");
    if opening.starts_with(&name) {
        return true;
    }
    lower.match_indices(&name).any(|(at, _)| {
        let rest = &lower[at + name.len()..];
        let head: String = rest
            .split_whitespace()
            .take(4)
            .collect::<Vec<_>>()
            .join(" ");
        LEARNING
            .iter()
            .any(|v| head.starts_with(v) || head.contains(&format!(" {v}")))
    })
}

/// The membership graph, from what the text says: "Gregson, of Scotland Yard", "Lestrade
/// of the Yard", "a member of the Council", "Maren joined the Guild", or a speaker who
/// names the group as "we" ("We swore, when we made the Lantern Society…"). A group is
/// a name ending in an organisation word; naming it near a character is not membership.
fn organisations(
    scenes: &[Scene],
    entities: &BTreeMap<String, Entity>,
    namer: &Namer,
) -> Vec<Organisation> {
    let mut out = Vec::new();
    for e in entities.values().filter(|e| e.kind == "organisation") {
        let mut members = BTreeSet::new();
        let forms: Vec<&String> = e.aliases.iter().chain([&e.name]).collect();
        for s in scenes.iter().filter(|s| e.scenes.contains(&s.number)) {
            for u in &s.utterances {
                let Speaker::Focus(id) = &u.speaker else {
                    continue;
                };
                let ours = words(&u.text).any(|w| matches!(w.as_str(), "we" | "us" | "our"));
                if ours && forms.iter().any(|f| contains_phrase(&u.text, f)) {
                    members.insert(id.clone());
                }
            }
            for sentence in &s.sentences {
                for form in &forms {
                    for (at, _) in sentence.text.match_indices(form.as_str()) {
                        let before = sentence.text[..at].trim_end();
                        let joined = ["of", "of the", "joined", "joined the", "member of the"]
                            .iter()
                            .find_map(|w| before.strip_suffix(w))
                            .map(|b| b.trim_end().trim_end_matches(',').trim_end());
                        let Some(who) = joined else { continue };
                        // The name that ends right before the link.
                        let named = namer
                            .mentions(who)
                            .into_iter()
                            .rfind(|m| who[m.end..].trim().is_empty() && m.by_name)
                            .or_else(|| {
                                // "a member of the Council": the sentence's subject.
                                before
                                    .ends_with("member of the")
                                    .then(|| namer.mentions(before).into_iter().next())
                                    .flatten()
                            });
                        if let Some(m) = named {
                            members.insert(m.character.to_owned());
                        }
                    }
                }
            }
        }
        if !members.is_empty() {
            out.push(Organisation {
                name: e.name.clone(),
                aliases: e.aliases.clone(),
                members,
            });
        }
    }
    out
}

/// Subject, predicate, object and cause of a sentence, read off its surface: the
/// subject is the speaker for a first-person line or the first entity named, the
/// predicate the word after the subject, the object the next entity, the cause what
/// follows "because", "so that" or "to pay".
fn spo(
    text: &str,
    mentions: &[Mention<'_>],
    phrases: &[String],
    speaker: &Option<Speaker>,
    focus_names: &BTreeMap<&str, &str>,
    he_or_she: Option<&str>,
) -> GraphFact {
    let mut named: Vec<(usize, usize, String)> = mentions
        .iter()
        .map(|m| (m.start, m.end, focus_names[m.character].to_owned()))
        .collect();
    for p in phrases {
        if let Some(at) = text.find(p.as_str()) {
            named.push((at, at + p.len(), p.clone()));
        }
    }
    named.sort();
    let teller = match speaker {
        Some(Speaker::Focus(id)) => focus_names.get(id.as_str()).map(|n| (*n).to_owned()),
        Some(Speaker::Other(n)) => Some(n.clone()),
        None => None,
    };
    let clause = Clause::read(text, &named, teller.as_deref(), he_or_she);
    let lower = text.to_lowercase();
    let cause = ["because ", "so that ", "to pay "]
        .iter()
        .find_map(|m| {
            lower
                .find(m)
                .map(|at| text[at..].trim_end_matches(['.', '"']).to_owned())
        })
        .unwrap_or_default();
    GraphFact {
        scene: 0,
        text: text.to_owned(),
        subject: clause.subject,
        predicate: clause.predicate,
        object: clause.object,
        cause,
        route: String::new(),
        known_by: BTreeSet::new(),
        source: "text".into(),
        at: 0,
        sentence: text.to_owned(),
    }
}
