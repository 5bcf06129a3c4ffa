//! `dramatis import card`: SillyTavern/TavernAI character cards, and lorebooks, as the
//! cast and the facts of an open story; and the way back, a character as it stands
//! written as a card (`dramatis export --format card`).
//!
//! - Each card is a character: its name, its `description` and `personality` are the
//!   profile; the card's `scenario`s make the premise; the first card's `first_mes` is
//!   the opening and every other greeting is an opening to choose from; `mes_example`
//!   gives a speaking pattern's excerpts (the character's own lines); tags are kept.
//!   `{{char}}` is the card's name and `{{user}}` the name given with `--user`.
//! - A card's own `character_book`: each enabled entry is a fact known to that character
//!   alone. A world lorebook's entries are known to everyone, or to those `--known-by`
//!   names, or to no one (`--secret`) until a director reveals them. Their keys travel
//!   with the fact, so an entry is triggered only into the prompts of whoever holds it.
//! - Nothing is dropped: the card's data (every field, an extension's too) is carried in
//!   the character's `card`, and each entry as read in its fact's `entry`. Export starts
//!   from those and writes over a field only where the character, as it stands, differs
//!   from what import made of it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use dramatis_formats::card::{self, Card, resolve_placeholders};
use dramatis_formats::lore::{LoreEntry, Lorebook, read_lorebook};
use serde_json::{Map, Value};

use crate::file::{Character, Fact, Location, Open, Pattern, ScenarioFile, World, id_from};

/// Where the cast starts (cards name no places).
pub const PLACE: &str = "meeting-place";

/// What `import card` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct CardImport {
    pub cards: Vec<PathBuf>,
    pub lorebooks: Vec<PathBuf>,
    /// World-book entries (by uid, name or a key) and the characters (ids or names)
    /// that alone know them.
    pub known_by: Vec<(String, Vec<String>)>,
    /// World-book entries known to no one until a director reveals them.
    pub secret: Vec<String>,
    /// Characters (id or name) and whom they know by name at the start.
    pub knows: Vec<(String, Vec<String>)>,
    /// Who `{{user}}` is: whoever the character speaks with.
    pub user: String,
    /// The scenario's name; default: from the first card's name.
    pub name: Option<String>,
    pub place: String,
}

/// What an import produced.
#[derive(Debug, Clone)]
pub struct Imported {
    pub scenario: PathBuf,
    pub characters: usize,
    pub facts: usize,
    pub secret: usize,
    pub openings: usize,
    /// Lorebook fields kept with no meaning here, each once.
    pub unused: BTreeSet<String>,
    pub notes: Vec<String>,
}

/// The profile a card's description and personality make.
#[must_use]
pub fn profile_of(description: &str, personality: &str) -> String {
    let (description, personality) = (description.trim(), personality.trim());
    match (description.is_empty(), personality.is_empty()) {
        (_, true) => description.to_owned(),
        (true, false) => format!("Personality: {personality}"),
        (false, false) => format!("{description}\n\nPersonality: {personality}"),
    }
}

/// The character's own lines of a card's `mes_example` (after `{{char}}:`), resolved.
fn example_lines(card: &Card, user: &str) -> Vec<String> {
    let examples = card.resolved("mes_example", user);
    let prefix = format!("{}:", card.name());
    examples
        .lines()
        .filter_map(|l| l.trim().strip_prefix(prefix.as_str()))
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// A fact of a lorebook entry; `entry` carries the entry as read.
fn entry_fact(id: String, entry: &LoreEntry, text: String, known_by: Vec<String>) -> Fact {
    Fact {
        id,
        text,
        known_by,
        route: "observation".into(),
        keys: entry.keys.clone(),
        secondary_keys: entry.secondary_keys.clone(),
        selective: entry.selective,
        constant: entry.constant,
        case_sensitive: entry.case_sensitive,
        entry: Value::Object(entry.raw.clone()).to_string(),
        ..Fact::default()
    }
}

/// An id not yet in `taken`, from `base` (`base-2`, `base-3`… when it is).
fn unique(base: String, taken: &mut BTreeSet<String>) -> String {
    let mut id = base.clone();
    let mut n = 2;
    while !taken.insert(id.clone()) {
        id = format!("{base}-{n}");
        n += 1;
    }
    id
}

/// Whether `wanted` names `entry`: its uid, its name, or one of its keys.
fn names_entry(entry: &LoreEntry, wanted: &str) -> bool {
    let w = wanted.trim();
    entry.id == w
        || entry.name.eq_ignore_ascii_case(w)
        || entry.keys.iter().any(|k| k.eq_ignore_ascii_case(w))
}

/// Reads the cards and lorebooks and writes `DIR/scenario.toml`.
pub fn import(request: &CardImport, dir: &Path) -> anyhow::Result<Imported> {
    if request.cards.is_empty() {
        bail!("give at least one card");
    }
    let mut cards = Vec::new();
    for path in &request.cards {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let place = path.display().to_string();
        let card = card::read(&bytes, &place).map_err(|e| {
            // Every refusal names the file, once.
            let said = e.to_string();
            if said.contains(&place) {
                anyhow::anyhow!(said)
            } else {
                anyhow::anyhow!("{place}: {said}")
            }
        })?;
        cards.push(card);
    }
    let user = if request.user.trim().is_empty() {
        "a stranger"
    } else {
        request.user.trim()
    };
    let mut ids = BTreeSet::new();
    let mut fact_ids = BTreeSet::new();
    let mut characters = Vec::new();
    let mut facts = Vec::new();
    let mut unused = BTreeSet::new();
    let mut notes = Vec::new();
    let mut premises = Vec::new();
    let mut openings = Vec::new();
    for (n, card) in cards.iter().enumerate() {
        let name = card.name().trim().to_owned();
        let id = unique(id_from(&name, &format!("character-{}", n + 1)), &mut ids);
        let mut carried = card.data.clone();
        if let Some(book) = card
            .book()
            .with_context(|| format!("{}: character_book", request.cards[n].display()))?
        {
            unused.extend(book.unused.iter().cloned());
            // Enabled entries become this character's facts; the rest stay in the card.
            let mut kept = Vec::new();
            for entry in &book.entries {
                if !entry.enabled || entry.content.trim().is_empty() {
                    kept.push(Value::Object(entry.raw.clone()));
                    continue;
                }
                let fact_id = unique(
                    format!("{id}-book-{}", id_from(&entry.id, "entry")),
                    &mut fact_ids,
                );
                let text = resolve_placeholders(&entry.content, &name, user);
                facts.push(Fact {
                    route: "direct_experience".into(),
                    ..entry_fact(fact_id, entry, text, vec![id.clone()])
                });
            }
            if let Some(Value::Object(raw_book)) = carried.get_mut("character_book") {
                raw_book.insert("entries".into(), Value::Array(kept));
            }
        }
        let scenario = card.resolved("scenario", user);
        if !scenario.trim().is_empty() {
            premises.push(scenario.trim().to_owned());
        }
        let first = card.resolved("first_mes", user);
        if !first.trim().is_empty() {
            openings.push(first.trim().to_owned());
        }
        openings.extend(
            card.texts("alternate_greetings")
                .iter()
                .map(|g| resolve_placeholders(g, &name, user).trim().to_owned())
                .filter(|g| !g.is_empty()),
        );
        let lines = example_lines(card, user);
        let patterns = if lines.is_empty() {
            Vec::new()
        } else {
            vec![Pattern {
                id: "speech".into(),
                description: format!("how {name} speaks, in the card's examples"),
                excerpts: lines,
            }]
        };
        characters.push(Character {
            id,
            name: name.clone(),
            aliases: Some(card.text("nickname").trim())
                .filter(|a| !a.is_empty() && *a != name)
                .map(str::to_owned)
                .into_iter()
                .collect(),
            profile: profile_of(
                &card.resolved("description", user),
                &card.resolved("personality", user),
            ),
            style: String::new(),
            location: PLACE.into(),
            patterns,
            tags: card.texts("tags"),
            card: serde_json::json!({ "user": user, "data": carried }).to_string(),
            ..Character::default()
        });
    }
    let everyone: Vec<String> = characters.iter().map(|c| c.id.clone()).collect();
    let cast: Vec<(String, String)> = characters
        .iter()
        .map(|c| (c.id.clone(), c.name.clone()))
        .collect();
    let resolve_who = |who: &str| -> anyhow::Result<String> {
        cast.iter()
            .find(|(id, name)| id == who.trim() || name.eq_ignore_ascii_case(who.trim()))
            .map(|(id, _)| id.clone())
            .with_context(|| {
                format!(
                    "{who:?} is none of the cards' characters ({})",
                    everyone.join(", ")
                )
            })
    };
    let lone_name = match cast.as_slice() {
        [(_, name)] => name.clone(),
        _ => "{{char}}".to_owned(),
    };
    let lone_name = lone_name.as_str();
    let mut used_flags: BTreeSet<String> = BTreeSet::new();
    let mut secret_count = 0;
    for path in &request.lorebooks {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let book: Lorebook =
            read_lorebook(&bytes).with_context(|| format!("{}", path.display()))?;
        unused.extend(book.unused.iter().cloned());
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let book_id = id_from(
            if book.name.trim().is_empty() {
                &stem
            } else {
                &book.name
            },
            "lore",
        );
        for entry in &book.entries {
            if !entry.enabled || entry.content.trim().is_empty() {
                notes.push(format!(
                    "{}: entry {} is disabled or empty: left out",
                    path.display(),
                    entry.id
                ));
                continue;
            }
            let secret = request.secret.iter().find(|w| names_entry(entry, w));
            let mapped = request.known_by.iter().find(|(w, _)| names_entry(entry, w));
            let known_by = match (secret, mapped) {
                (Some(w), Some(_)) => bail!("entry {w:?} is both secret and known by someone"),
                (Some(w), None) => {
                    used_flags.insert(w.clone());
                    secret_count += 1;
                    Vec::new()
                }
                (None, Some((w, who))) => {
                    used_flags.insert(w.clone());
                    who.iter()
                        .map(|w| resolve_who(w))
                        .collect::<anyhow::Result<Vec<_>>>()?
                }
                (None, None) => everyone.clone(),
            };
            let fact_id = unique(
                format!("{book_id}-{}", id_from(&entry.id, "entry")),
                &mut fact_ids,
            );
            // `{{char}}` in a world book is the card's name when there is one card.
            let text = resolve_placeholders(&entry.content, lone_name, user);
            facts.push(Fact {
                route: if mapped.is_none() && secret.is_none() {
                    "common_knowledge".into()
                } else {
                    "observation".into()
                },
                secret: secret.is_some(),
                ..entry_fact(fact_id, entry, text, known_by)
            });
        }
    }
    for wanted in request
        .secret
        .iter()
        .chain(request.known_by.iter().map(|(w, _)| w))
    {
        if !used_flags.contains(wanted) {
            bail!(
                "no lorebook entry is named {wanted:?} (give an entry's uid, name or one of its keys)"
            );
        }
    }
    for (who, whom) in &request.knows {
        let id = resolve_who(who)?;
        let whom = whom
            .iter()
            .map(|w| resolve_who(w))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if let Some(c) = characters.iter_mut().find(|c| c.id == id) {
            c.knows.extend(whom.into_iter().filter(|w| *w != id));
        }
    }
    let names: Vec<&str> = characters.iter().map(|c| c.name.as_str()).collect();
    let premise = if premises.is_empty() {
        match names.as_slice() {
            [one] => format!("{one} meets {user}."),
            _ => format!("{} meet.", names.join(" and ")),
        }
    } else {
        premises.join("\n\n")
    };
    let opening = if openings.is_empty() {
        String::new()
    } else {
        openings.remove(0)
    };
    let name = request
        .name
        .clone()
        .unwrap_or_else(|| id_from(&names.join("-"), "cards"));
    let place = if request.place.trim().is_empty() {
        "where the story begins"
    } else {
        request.place.trim()
    };
    let file = ScenarioFile {
        version: 1,
        name: name.clone(),
        title: names.join(", "),
        description: format!("Imported from {} character card(s).", cards.len()),
        world: World {
            description: String::new(),
        },
        open: Some(Open {
            premise,
            opening,
            opening_location: PLACE.into(),
            rounds: 6,
            scene_turns: 6,
            openings: openings.clone(),
        }),
        locations: vec![Location {
            id: PLACE.into(),
            name: place.to_owned(),
            description: String::new(),
        }],
        paths: Vec::new(),
        characters,
        facts,
        scenes: Vec::new(),
    };
    let header = "# Written by `dramatis import card`. Each character's `card` carries its card's \
                  fields for export;\n# each fact's `entry`, the lorebook entry it came from.";
    let scenario = file.write(dir, header)?;
    Ok(Imported {
        scenario,
        characters: file.characters.len(),
        facts: file.facts.len(),
        secret: secret_count,
        openings: openings.len(),
        unused,
        notes,
    })
}

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

#[cfg(test)]
mod tests;
