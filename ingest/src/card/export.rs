//! The way back: a character as it stands (the world's `ExportCharacter`, or a loaded
//! scenario's start) written as a V3 card, from what import carried.

use serde_json::{Map, Value};

use dramatis_formats::card::{self, Card, resolve_placeholders};
use dramatis_formats::lore::Lorebook;

use super::profile_of;

/// What a character is at export: its name, profile, tags and carried card, and the
/// facts it holds (each with its text, keys and carried entry).
#[derive(Debug, Clone, Default)]
pub struct Standing {
    pub name: String,
    pub profile: String,
    pub tags: Vec<String>,
    pub card: String,
    pub facts: Vec<HeldFact>,
    /// What the director revealed to it.
    pub revealed: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct HeldFact {
    pub id: String,
    pub text: String,
    pub keys: Vec<String>,
    pub secondary_keys: Vec<String>,
    pub selective: bool,
    pub constant: bool,
    pub case_sensitive: bool,
    pub entry: String,
}

impl Standing {
    /// The character as the world's `ExportCharacter` gives it.
    #[must_use]
    pub fn from_export(view: &dramatis_proto::v1::ExportCharacterResponse) -> Self {
        let profile = view.profile.clone().unwrap_or_default();
        let no_entry = String::new();
        Self {
            name: profile.name.clone(),
            profile: profile.profile.clone(),
            tags: view.tags.clone(),
            card: view.card.clone(),
            facts: profile
                .knowledge
                .iter()
                .zip(view.entries.iter().chain(std::iter::repeat(&no_entry)))
                .map(|(f, entry)| {
                    let keys = f.keys.clone().unwrap_or_default();
                    HeldFact {
                        id: f.id.clone(),
                        text: f.text.clone(),
                        keys: keys.keys,
                        secondary_keys: keys.secondary_keys,
                        selective: keys.selective,
                        constant: keys.constant,
                        case_sensitive: keys.case_sensitive,
                        entry: entry.clone(),
                    }
                })
                .collect(),
            revealed: view.revealed.clone(),
        }
    }
}

fn object(json: &str) -> Map<String, Value> {
    match serde_json::from_str(json) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// A lorebook entry for a held fact: the carried entry, with each field the fact has
/// changed since import written over.
fn entry_of(fact: &HeldFact, n: usize, name: &str, user: &str) -> Value {
    let mut raw = object(&fact.entry);
    let was = Lorebook::from_value(&serde_json::json!({ "entries": [Value::Object(raw.clone())] }))
        .ok()
        .and_then(|b| b.entries.into_iter().next());
    let same_text = was.as_ref().is_some_and(|e| {
        resolve_placeholders(&e.content, name, user) == fact.text
            || resolve_placeholders(&e.content, "{{char}}", user) == fact.text
    });
    if !same_text {
        raw.insert("content".into(), fact.text.clone().into());
    }
    let list = |v: &[String]| Value::Array(v.iter().map(|k| Value::String(k.clone())).collect());
    if was.as_ref().is_none_or(|e| e.keys != fact.keys) {
        raw.remove("key");
        raw.insert("keys".into(), list(&fact.keys));
    }
    if was
        .as_ref()
        .is_none_or(|e| e.secondary_keys != fact.secondary_keys)
    {
        raw.remove("keysecondary");
        raw.insert("secondary_keys".into(), list(&fact.secondary_keys));
    }
    for (field, now, then) in [
        (
            "selective",
            fact.selective,
            was.as_ref().map(|e| e.selective),
        ),
        ("constant", fact.constant, was.as_ref().map(|e| e.constant)),
        (
            "case_sensitive",
            fact.case_sensitive,
            was.as_ref().map(|e| e.case_sensitive),
        ),
    ] {
        if then != Some(now) {
            raw.insert(field.into(), now.into());
        }
    }
    if was.is_none() {
        raw.insert("enabled".into(), true.into());
        raw.insert("insertion_order".into(), (100 + n).into());
        raw.insert("id".into(), n.into());
    }
    Value::Object(raw)
}

/// The card of a character as it stands: its carried card, with the name, tags,
/// profile and book written over where they changed since import. The book holds the
/// facts the character holds and what the director revealed to it, nothing else.
#[must_use]
pub fn export(standing: &Standing) -> Card {
    let carried = object(&standing.card);
    let user = carried
        .get("user")
        .and_then(Value::as_str)
        .unwrap_or("a stranger")
        .to_owned();
    let user = user.as_str();
    let mut data = match carried.get("data") {
        Some(Value::Object(data)) => data.clone(),
        _ => Map::new(),
    };
    let old_name = data
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(&standing.name)
        .to_owned();
    if old_name != standing.name {
        data.insert("name".into(), standing.name.clone().into());
    }
    let tags = Card {
        spec: card::Spec::V3,
        data: data.clone(),
    }
    .texts("tags");
    if tags != standing.tags {
        data.insert(
            "tags".into(),
            Value::Array(standing.tags.iter().cloned().map(Value::String).collect()),
        );
    }
    let text = |d: &Map<String, Value>, f: &str| {
        resolve_placeholders(
            d.get(f).and_then(Value::as_str).unwrap_or_default(),
            &old_name,
            user,
        )
    };
    if profile_of(&text(&data, "description"), &text(&data, "personality")) != standing.profile {
        data.insert("description".into(), standing.profile.clone().into());
        data.insert("personality".into(), String::new().into());
    }
    let mut entries: Vec<Value> = match data.get("character_book").and_then(|b| b.get("entries")) {
        Some(Value::Array(kept)) => kept.clone(),
        _ => Vec::new(),
    };
    for (n, fact) in standing.facts.iter().enumerate() {
        entries.push(entry_of(fact, n, &standing.name, user));
    }
    for (n, revealed) in standing.revealed.iter().enumerate() {
        let fact = HeldFact {
            text: revealed.clone(),
            ..HeldFact::default()
        };
        entries.push(entry_of(
            &fact,
            standing.facts.len() + n,
            &standing.name,
            user,
        ));
    }
    if !entries.is_empty() || data.contains_key("character_book") {
        let book = data
            .entry("character_book")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(book) = book {
            book.insert("entries".into(), Value::Array(entries));
        }
    }
    Card {
        spec: card::Spec::V3,
        data,
    }
}

/// A character of a loaded scenario as it stands at the start (what the world's
/// `ExportCharacter` gives before anything is revealed): for a round trip with no world.
#[must_use]
pub fn standing_of(scenario: &dramatis_scenario::Scenario, id: &str) -> Option<Standing> {
    let c = scenario.character(id)?;
    Some(Standing {
        name: c.name.clone(),
        profile: c.profile.clone(),
        tags: c.tags.clone(),
        card: c.card.clone(),
        facts: scenario
            .knowledge_of(id)
            .map(|f| HeldFact {
                id: f.id.clone(),
                text: f.text.clone(),
                keys: f.keys.keys.clone(),
                secondary_keys: f.keys.secondary_keys.clone(),
                selective: f.keys.selective,
                constant: f.keys.constant,
                case_sensitive: f.keys.case_sensitive,
                entry: f.entry.clone(),
            })
            .collect(),
        revealed: Vec::new(),
    })
}
