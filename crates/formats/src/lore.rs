//! SillyTavern's World Info (a lorebook file: `{"entries": {"<uid>": {…}}}`, in its old
//! and its newer field sets) and a card's `character_book` (`{"entries": […]}`), read
//! into one shape. Fields Dramatis gives meaning to: the keys (`keys`/`key`,
//! `secondary_keys`/`keysecondary`), `content`, the entry's name (`comment`/`name`),
//! `constant`, `selective`, whether it is on (`enabled`, or `disable`), its order
//! (`insertion_order`/`order`) and `case_sensitive`. Every other field (`depth`,
//! `probability`, `group`, `sticky`, the scan and recursion settings, an extension's
//! keys…) is kept in the entry as read and listed once in [`Lorebook::unused`], so
//! nothing is lost in silence.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// Why a lorebook was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoreError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a lorebook: no `entries` object or list")]
    NoEntries,
    /// `entry` is quoted short ([`dramatis_base::quote`]): a key may be any length.
    #[error("entry {entry}: field `{field}` {problem}")]
    Field {
        entry: String,
        field: String,
        problem: String,
    },
}

/// One entry of a lorebook.
#[derive(Debug, Clone, PartialEq)]
pub struct LoreEntry {
    /// Its uid or id as the file gives it, or its place in the book.
    pub id: String,
    /// Its name (`comment` in World Info).
    pub name: String,
    pub keys: Vec<String>,
    pub secondary_keys: Vec<String>,
    pub content: String,
    /// Always in the prompt of whoever holds it, keys or not.
    pub constant: bool,
    /// Triggered only when a secondary key matches too.
    pub selective: bool,
    pub enabled: bool,
    pub order: i64,
    pub case_sensitive: bool,
    /// The entry as read, every field.
    pub raw: Map<String, Value>,
}

/// A lorebook.
#[derive(Debug, Clone, PartialEq)]
pub struct Lorebook {
    pub name: String,
    pub entries: Vec<LoreEntry>,
    /// The fields present that Dramatis gives no meaning to, by name (an extension's
    /// key as `extensions.<key>`), each once.
    pub unused: BTreeSet<String>,
}

/// Entry fields with a meaning here.
const USED: [&str; 18] = [
    "keys",
    "key",
    "secondary_keys",
    "keysecondary",
    "content",
    "comment",
    "name",
    "constant",
    "selective",
    "enabled",
    "disable",
    "insertion_order",
    "order",
    "case_sensitive",
    "caseSensitive",
    "id",
    "uid",
    "extensions",
];

/// A lorebook file (World Info, or a `character_book` saved alone).
pub fn read_lorebook(bytes: &[u8]) -> Result<Lorebook, LoreError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| LoreError::NotJson(e.to_string()))?;
    Lorebook::from_value(&value)
}

impl Lorebook {
    /// A lorebook from its JSON value.
    pub fn from_value(value: &Value) -> Result<Self, LoreError> {
        let book = value.as_object().ok_or(LoreError::NoEntries)?;
        let listed: Vec<(String, &Value)> = match book.get("entries") {
            Some(Value::Array(entries)) => entries
                .iter()
                .enumerate()
                .map(|(i, e)| (i.to_string(), e))
                .collect(),
            // An entry keyed by nothing is known by its place in the book.
            Some(Value::Object(entries)) => entries
                .iter()
                .enumerate()
                .map(|(i, (k, e))| {
                    (
                        if k.is_empty() {
                            i.to_string()
                        } else {
                            k.clone()
                        },
                        e,
                    )
                })
                .collect(),
            _ => return Err(LoreError::NoEntries),
        };
        let mut unused = BTreeSet::new();
        for (field, _) in book {
            if !matches!(
                field.as_str(),
                "name" | "description" | "entries" | "extensions"
            ) {
                unused.insert(field.clone());
            }
        }
        let mut entries = Vec::with_capacity(listed.len());
        for (place, value) in listed {
            let entry = entry(&place, value)?;
            for field in entry.raw.keys() {
                if !USED.contains(&field.as_str()) {
                    unused.insert(field.clone());
                }
            }
            if let Some(Value::Object(extensions)) = entry.raw.get("extensions") {
                unused.extend(extensions.keys().map(|k| format!("extensions.{k}")));
            }
            entries.push(entry);
        }
        entries.sort_by_key(|e| e.order);
        Ok(Self {
            name: book
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            entries,
            unused,
        })
    }
}

fn entry(place: &str, value: &Value) -> Result<LoreEntry, LoreError> {
    let quoted = dramatis_base::quote(place);
    let raw = value.as_object().ok_or_else(|| LoreError::Field {
        entry: quoted.clone(),
        field: "(entry)".into(),
        problem: "is not an object".into(),
    })?;
    let problem = |field: &str, problem: &str| LoreError::Field {
        entry: quoted.clone(),
        field: field.to_owned(),
        problem: problem.to_owned(),
    };
    let first = |names: [&'static str; 2]| {
        names
            .into_iter()
            .find_map(|n| raw.get(n).map(move |v| (n, v)))
    };
    let texts = |names: [&'static str; 2]| -> Result<Vec<String>, LoreError> {
        match first(names) {
            None | Some((_, Value::Null)) => Ok(Vec::new()),
            Some((_, Value::Array(items))) => Ok(items
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect()),
            // Some exports write the keys as one comma list.
            Some((_, Value::String(list))) => Ok(list
                .split(',')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect()),
            Some((name, _)) => Err(problem(name, "is not a list of strings")),
        }
    };
    let flag = |names: [&'static str; 2]| -> Result<Option<bool>, LoreError> {
        match first(names) {
            None | Some((_, Value::Null)) => Ok(None),
            Some((_, Value::Bool(b))) => Ok(Some(*b)),
            Some((name, _)) => Err(problem(name, "is not true or false")),
        }
    };
    let content = match raw.get("content") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(_) => return Err(problem("content", "is not a string")),
    };
    let id = first(["uid", "id"])
        .and_then(|(_, v)| match v {
            Value::Number(n) => Some(n.to_string()),
            Value::String(s) if !s.is_empty() => Some(s.clone()),
            _ => None,
        })
        .unwrap_or_else(|| place.to_owned());
    let name = first(["comment", "name"])
        .and_then(|(_, v)| v.as_str())
        .unwrap_or_default()
        .to_owned();
    let enabled = match (flag(["enabled", "enabled"])?, flag(["disable", "disable"])?) {
        (Some(enabled), _) => enabled,
        (None, Some(disable)) => !disable,
        (None, None) => true,
    };
    let order = first(["insertion_order", "order"])
        .and_then(|(_, v)| v.as_i64())
        .unwrap_or(100);
    Ok(LoreEntry {
        id,
        name,
        keys: texts(["keys", "key"])?,
        secondary_keys: texts(["secondary_keys", "keysecondary"])?,
        content,
        constant: flag(["constant", "constant"])?.unwrap_or(false),
        selective: flag(["selective", "selective"])?.unwrap_or(false),
        enabled,
        order,
        case_sensitive: flag(["case_sensitive", "caseSensitive"])?.unwrap_or(false),
        raw: raw.clone(),
    })
}

#[cfg(test)]
mod tests;
