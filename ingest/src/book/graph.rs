//! Stage 3, the knowledge graph (deterministic path): entities of seven types named in
//! each scene, with aliases unified across scenes; fact candidates (sentences naming an
//! entity, a time or a number) as (s, p, o, cause) with their text; visibility in two
//! phases: local (the subject's direct experience, observation by those present at that
//! point of the scene, common knowledge for world background), then propagation
//! through the character–organisation membership graph.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::clause::Clause;
use super::lexicon::{COMMON_MARKERS, TIME_WORDS, UNSEEN_MARKERS};
use super::proper::{
    FUNCTION_WORDS, NUMBER_WORDS, clean_word, kind_of, mid_sentence_capitals, proper_phrases,
};
use super::scenes::{Scene, Sentence, Speaker};
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

/// What the fact pass reads each sentence with.
struct FactReader<'a> {
    namer: &'a Namer,
    world: &'a BTreeSet<String>,
    focus_names: &'a BTreeMap<&'a str, &'a str>,
    proper: &'a BTreeSet<String>,
    objects: &'a BTreeSet<String>,
    organisations: &'a [Organisation],
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
    fn scene(&self, s: &Scene) -> Vec<GraphFact> {
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
    }
}
