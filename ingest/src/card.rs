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
use serde_json::Value;

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
    /// Which greeting opens the story: 0 the first card's first message, then every
    /// other greeting of the cards in order (`dramatis import card` lists them).
    pub opening: usize,
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
fn unique(base: &str, taken: &mut BTreeSet<String>) -> String {
    let mut id = base.to_owned();
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

/// A card from its file; every refusal names the file, once.
fn read_card(path: &Path) -> anyhow::Result<Card> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let place = path.display().to_string();
    card::read(&bytes, &place).map_err(|e| {
        let said = e.to_string();
        if said.contains(&place) {
            anyhow::anyhow!(said)
        } else {
            anyhow::anyhow!("{place}: {said}")
        }
    })
}

/// The story being put together, card by card and book by book.
#[derive(Default)]
struct Cast {
    user: String,
    ids: BTreeSet<String>,
    fact_ids: BTreeSet<String>,
    characters: Vec<Character>,
    facts: Vec<Fact>,
    unused: BTreeSet<String>,
    notes: Vec<String>,
    premises: Vec<String>,
    openings: Vec<String>,
    secret: usize,
}

impl Cast {
    /// One card as a character; its own book's enabled entries as facts it alone holds
    /// (the others stay in the carried card).
    fn add_card(&mut self, n: usize, card: &Card, path: &Path) -> anyhow::Result<()> {
        let user = self.user.clone();
        let name = card.name().trim().to_owned();
        let id = unique(
            &id_from(&name, &format!("character-{}", n + 1)),
            &mut self.ids,
        );
        let mut carried = card.data.clone();
        if let Some(book) = card
            .book()
            .with_context(|| format!("{}: character_book", path.display()))?
        {
            self.unused.extend(book.unused.iter().cloned());
            let mut kept = Vec::new();
            for entry in &book.entries {
                if !entry.enabled || entry.content.trim().is_empty() {
                    kept.push(Value::Object(entry.raw.clone()));
                    continue;
                }
                let fact_id = unique(
                    &format!("{id}-book-{}", id_from(&entry.id, "entry")),
                    &mut self.fact_ids,
                );
                let text = resolve_placeholders(&entry.content, &name, &user);
                self.facts.push(Fact {
                    route: "direct_experience".into(),
                    ..entry_fact(fact_id, entry, text, vec![id.clone()])
                });
            }
            if let Some(Value::Object(raw_book)) = carried.get_mut("character_book") {
                raw_book.insert("entries".into(), Value::Array(kept));
            }
        }
        let scenario = card.resolved("scenario", &user);
        if !scenario.trim().is_empty() {
            self.premises.push(scenario.trim().to_owned());
        }
        let mut greetings = vec![card.resolved("first_mes", &user)];
        greetings.extend(
            card.texts("alternate_greetings")
                .iter()
                .map(|g| resolve_placeholders(g, &name, &user)),
        );
        self.openings.extend(
            greetings
                .iter()
                .map(|g| g.trim().to_owned())
                .filter(|g| !g.is_empty()),
        );
        let lines = example_lines(card, &user);
        let patterns = if lines.is_empty() {
            Vec::new()
        } else {
            vec![Pattern {
                id: "speech".into(),
                description: format!("how {name} speaks, in the card's examples"),
                excerpts: lines,
            }]
        };
        self.characters.push(Character {
            id,
            aliases: Some(card.text("nickname").trim())
                .filter(|a| !a.is_empty() && *a != name)
                .map(str::to_owned)
                .into_iter()
                .collect(),
            profile: profile_of(
                &card.resolved("description", &user),
                &card.resolved("personality", &user),
            ),
            name,
            style: String::new(),
            location: PLACE.into(),
            patterns,
            tags: card.texts("tags"),
            card: serde_json::json!({ "user": user, "data": carried }).to_string(),
            ..Character::default()
        });
        Ok(())
    }

    /// The id of the character `who` names (id or name).
    fn who(&self, who: &str) -> anyhow::Result<String> {
        self.characters
            .iter()
            .find(|c| c.id == who.trim() || c.name.eq_ignore_ascii_case(who.trim()))
            .map(|c| c.id.clone())
            .with_context(|| {
                let ids: Vec<&str> = self.characters.iter().map(|c| c.id.as_str()).collect();
                format!(
                    "{who:?} is none of the cards' characters ({})",
                    ids.join(", ")
                )
            })
    }

    /// A world lorebook's entries as facts: everyone's, or `--known-by`'s, or secret.
    /// The flags that named an entry are put in `used`.
    fn add_world_book(
        &mut self,
        path: &Path,
        request: &CardImport,
        used: &mut BTreeSet<String>,
    ) -> anyhow::Result<()> {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        let book: Lorebook =
            read_lorebook(&bytes).with_context(|| format!("{}", path.display()))?;
        self.unused.extend(book.unused.iter().cloned());
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
        // `{{char}}` in a world book is the card's name when there is one card.
        let lone_name = match self.characters.as_slice() {
            [one] => one.name.clone(),
            _ => "{{char}}".to_owned(),
        };
        for entry in &book.entries {
            if !entry.enabled || entry.content.trim().is_empty() {
                self.notes.push(format!(
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
                    used.insert(w.clone());
                    self.secret += 1;
                    Vec::new()
                }
                (None, Some((w, who))) => {
                    used.insert(w.clone());
                    who.iter()
                        .map(|w| self.who(w))
                        .collect::<anyhow::Result<Vec<_>>>()?
                }
                (None, None) => self.characters.iter().map(|c| c.id.clone()).collect(),
            };
            let fact_id = unique(
                &format!("{book_id}-{}", id_from(&entry.id, "entry")),
                &mut self.fact_ids,
            );
            let text = resolve_placeholders(&entry.content, &lone_name, &self.user);
            self.facts.push(Fact {
                route: if mapped.is_none() && secret.is_none() {
                    "common_knowledge".into()
                } else {
                    "observation".into()
                },
                secret: secret.is_some(),
                ..entry_fact(fact_id, entry, text, known_by)
            });
        }
        Ok(())
    }

    /// `--knows`: whom each character knows by name at the start.
    fn acquaint(&mut self, knows: &[(String, Vec<String>)]) -> anyhow::Result<()> {
        for (who, whom) in knows {
            let id = self.who(who)?;
            let whom = whom
                .iter()
                .map(|w| self.who(w))
                .collect::<anyhow::Result<Vec<_>>>()?;
            if let Some(c) = self.characters.iter_mut().find(|c| c.id == id) {
                c.knows.extend(whom.into_iter().filter(|w| *w != id));
            }
        }
        Ok(())
    }

    /// The open story: the premise from the cards' scenarios, the chosen opening.
    fn story(&mut self, chosen: usize) -> anyhow::Result<Open> {
        let names: Vec<&str> = self.characters.iter().map(|c| c.name.as_str()).collect();
        let premise = if self.premises.is_empty() {
            match names.as_slice() {
                [one] => format!("{one} meets {}.", self.user),
                _ => format!("{} meet.", names.join(" and ")),
            }
        } else {
            self.premises.join("\n\n")
        };
        // The opening chosen (the first card's first greeting unless told otherwise);
        // the others stay in the story's `openings`.
        let opening = match (chosen, self.openings.len()) {
            (_, 0) => String::new(),
            (n, len) if n < len => self.openings.remove(n),
            (n, len) => bail!(
                "there is no opening {n}: the cards have {len} (0 to {})",
                len - 1
            ),
        };
        Ok(Open {
            premise,
            opening,
            opening_location: PLACE.into(),
            rounds: 6,
            scene_turns: 6,
            openings: self.openings.clone(),
        })
    }
}

/// Reads the cards and lorebooks and writes `DIR/scenario.toml`.
pub fn import(request: &CardImport, dir: &Path) -> anyhow::Result<Imported> {
    if request.cards.is_empty() {
        bail!("give at least one card");
    }
    let cards = request
        .cards
        .iter()
        .map(|p| read_card(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut cast = Cast {
        user: Some(request.user.trim())
            .filter(|u| !u.is_empty())
            .unwrap_or("a stranger")
            .to_owned(),
        ..Cast::default()
    };
    for (n, (card, path)) in cards.iter().zip(&request.cards).enumerate() {
        cast.add_card(n, card, path)?;
    }
    let mut used = BTreeSet::new();
    for path in &request.lorebooks {
        cast.add_world_book(path, request, &mut used)?;
    }
    if let Some(wanted) = request
        .secret
        .iter()
        .chain(request.known_by.iter().map(|(w, _)| w))
        .find(|w| !used.contains(*w))
    {
        bail!(
            "no lorebook entry is named {wanted:?} (give an entry's uid, name or one of its keys)"
        );
    }
    cast.acquaint(&request.knows)?;
    let open = cast.story(request.opening)?;
    let names: Vec<String> = cast.characters.iter().map(|c| c.name.clone()).collect();
    let place = Some(request.place.trim())
        .filter(|p| !p.is_empty())
        .unwrap_or("where the story begins");
    let file = ScenarioFile {
        version: 1,
        name: request
            .name
            .clone()
            .unwrap_or_else(|| id_from(&names.join("-"), "cards")),
        title: names.join(", "),
        description: format!("Imported from {} character card(s).", cards.len()),
        world: World {
            description: String::new(),
        },
        open: Some(open),
        locations: vec![Location {
            id: PLACE.into(),
            name: place.to_owned(),
            description: String::new(),
        }],
        paths: Vec::new(),
        characters: std::mem::take(&mut cast.characters),
        facts: std::mem::take(&mut cast.facts),
        scenes: Vec::new(),
    };
    let header = "# Written by `dramatis import card`. Each character's `card` carries its card's \
                  fields for export;\n# each fact's `entry`, the lorebook entry it came from.";
    let scenario = file.write(dir, header)?;
    Ok(Imported {
        scenario,
        characters: file.characters.len(),
        facts: file.facts.len(),
        secret: cast.secret,
        openings: cast.openings.len(),
        unused: cast.unused,
        notes: cast.notes,
    })
}

mod export;
pub use export::{HeldFact, Standing, export, standing_of};

#[cfg(test)]
mod tests;
