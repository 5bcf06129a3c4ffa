//! MOOM's persona branch: typed keys per person, the merge strategy of each key, the
//! snapshot of who said what about themselves, and the description a read shows.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::Moom;
use crate::modules::text::clip;
use crate::modules::{Line, LineKind, Mind, ask_text, cosine, object_schema};

/// How a persona key merges a new value (MOOM Appendix B).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeStrategy {
    Replace,
    Append,
    Trajectory,
    Contradictory,
    Complex,
}

/// The persona keys and their strategies. `likes` and `dislikes` contradict each other.
pub const PERSONA_KEYS: [(&str, MergeStrategy); 8] = [
    ("name", MergeStrategy::Replace),
    ("occupation", MergeStrategy::Replace),
    ("residence", MergeStrategy::Replace),
    ("skills", MergeStrategy::Append),
    ("whereabouts", MergeStrategy::Trajectory),
    ("likes", MergeStrategy::Contradictory),
    ("dislikes", MergeStrategy::Contradictory),
    ("relationship_to_me", MergeStrategy::Complex),
];

/// Cosine at or above which a new value cancels the opposite key's old value.
const CONTRADICTION_SIMILARITY: f32 = 0.8;

fn strategy(key: &str) -> Option<MergeStrategy> {
    PERSONA_KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, s)| *s)
}

fn opposite(key: &str) -> Option<&'static str> {
    match key {
        "likes" => Some("dislikes"),
        "dislikes" => Some("likes"),
        _ => None,
    }
}

/// A value under a key, with the round it was learned and its embedding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonaValue {
    pub text: String,
    pub round: u64,
    #[serde(default)]
    pub vector: Vec<f32>,
}

/// What the character knows of one person.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Persona {
    pub name: String,
    pub keys: BTreeMap<String, Vec<PersonaValue>>,
}

/// One value a snapshot found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotValue {
    pub person: String,
    pub key: String,
    pub value: String,
}

impl Moom {
    /// A persona snapshot of the people speaking in `lines`: from the model, else from
    /// plain first-person statements ("I am a …", "I like …", a movement).
    pub(super) async fn snapshot(&mut self, mind: &dyn Mind, lines: &[Line]) -> Vec<SnapshotValue> {
        let people: Vec<&str> = {
            let mut p: Vec<&str> = lines
                .iter()
                .filter(|l| !l.speaker.is_empty() && l.speaker != self.character)
                .map(|l| l.speaker.as_str())
                .collect();
            p.sort_unstable();
            p.dedup();
            p
        };
        if people.is_empty() {
            return Vec::new();
        }
        let keys: Vec<&str> = PERSONA_KEYS.iter().map(|(k, _)| *k).collect();
        let prompt = format!(
            "From these lines {} witnessed, note what they reveal about each other person \
             ({}). Keys: {}. Only values the lines state or clearly show; none is fine.\n\n{}",
            self.character,
            people.join(", "),
            keys.join(", "),
            lines
                .iter()
                .map(Line::render)
                .collect::<Vec<_>>()
                .join("\n")
        );
        let value = object_schema(json!({
            "person": {"type": "string", "enum": people},
            "key": {"type": "string", "enum": keys},
            "value": {"type": "string", "minLength": 1}
        }));
        let schema = object_schema(json!({
            "values": {"type": "array", "maxItems": 12, "items": value}
        }));
        self.calls += 1;
        if let Some(values) = mind
            .json("moom-persona-snapshot", &prompt, &schema)
            .await
            .and_then(|v| serde_json::from_value::<Vec<SnapshotValue>>(v["values"].clone()).ok())
        {
            return values
                .into_iter()
                .filter(|v| people.contains(&v.person.as_str()) && strategy(&v.key).is_some())
                .collect();
        }
        rule_snapshot(&self.character, lines)
    }

    /// Merges one snapshot value at `round` by its key's strategy.
    pub async fn merge(&mut self, mind: &dyn Mind, value: SnapshotValue, name: &str, round: u64) {
        let Some(strategy) = strategy(&value.key) else {
            return;
        };
        let text = value.value.trim().to_owned();
        if text.is_empty() {
            return;
        }
        let vector = if strategy == MergeStrategy::Contradictory {
            mind.embed(std::slice::from_ref(&text))
                .await
                .pop()
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let new = PersonaValue {
            text: text.clone(),
            round,
            vector,
        };
        let merged_complex = if strategy == MergeStrategy::Complex {
            let old = self
                .personas
                .get(&value.person)
                .and_then(|p| p.keys.get(&value.key))
                .and_then(|v| v.first())
                .map(|v| v.text.clone());
            match old {
                Some(old) if old != text => Some(self.merge_complex(mind, name, &old, &text).await),
                _ => None,
            }
        } else {
            None
        };
        let persona = self.personas.entry(value.person.clone()).or_default();
        if persona.name.is_empty() {
            name.clone_into(&mut persona.name);
        }
        let values = persona.keys.entry(value.key.clone()).or_default();
        match strategy {
            MergeStrategy::Replace => *values = vec![new],
            MergeStrategy::Append => {
                if !values.iter().any(|v| v.text.eq_ignore_ascii_case(&text)) {
                    values.push(new);
                }
            }
            MergeStrategy::Trajectory => {
                if values
                    .last()
                    .is_none_or(|v| !v.text.eq_ignore_ascii_case(&text))
                {
                    values.push(new);
                }
            }
            MergeStrategy::Contradictory => {
                let fresh = new.vector.clone();
                if !values.iter().any(|v| v.text.eq_ignore_ascii_case(&text)) {
                    values.push(new);
                }
                if let Some(other) = opposite(&value.key)
                    && let Some(old) = persona.keys.get_mut(other)
                {
                    // The older value under the opposite key is outdated.
                    old.retain(|v| {
                        !v.text.eq_ignore_ascii_case(&text)
                            && cosine(&v.vector, &fresh) < CONTRADICTION_SIMILARITY
                    });
                }
            }
            MergeStrategy::Complex => {
                *values = vec![PersonaValue {
                    text: merged_complex.unwrap_or(text),
                    round,
                    vector: Vec::new(),
                }];
            }
        }
    }

    async fn merge_complex(&mut self, mind: &dyn Mind, name: &str, old: &str, new: &str) -> String {
        let prompt = format!(
            "{}'s view of {name} was: \"{old}\". New evidence: \"{new}\". Write the view \
             now, in at most 25 words, keeping what still holds.",
            self.character
        );
        self.calls += 1;
        ask_text(mind, "moom-persona-merge", &prompt, "merged")
            .await
            .unwrap_or_else(|| format!("{new} (before: {old})"))
    }

    /// The persona of `person` as a line, trajectory values with their age at `now`.
    #[must_use]
    pub fn describe(&self, person: &str, now: u64) -> Option<String> {
        let persona = self.personas.get(person)?;
        let parts: Vec<String> = PERSONA_KEYS
            .iter()
            .filter_map(|(key, strategy)| {
                let values = persona.keys.get(*key).filter(|v| !v.is_empty())?;
                let shown: Vec<String> = if *strategy == MergeStrategy::Trajectory {
                    values
                        .iter()
                        .rev()
                        .take(3)
                        .map(|v| format!("{} ({} rounds ago)", v.text, now.saturating_sub(v.round)))
                        .collect()
                } else {
                    values.iter().map(|v| v.text.clone()).collect()
                };
                Some(format!("{}: {}", key.replace('_', " "), shown.join("; ")))
            })
            .collect();
        (!parts.is_empty()).then(|| format!("{} — {}", persona.name, parts.join(" | ")))
    }
}

/// First-person statements a person makes about themselves, and movements.
pub(super) fn rule_snapshot(me: &str, lines: &[Line]) -> Vec<SnapshotValue> {
    const PATTERNS: [(&str, &str); 11] = [
        ("my name is ", "name"),
        ("i am a ", "occupation"),
        ("i am an ", "occupation"),
        ("i'm a ", "occupation"),
        ("i live ", "residence"),
        ("i can ", "skills"),
        ("i like ", "likes"),
        ("i love ", "likes"),
        ("i hate ", "dislikes"),
        ("i dislike ", "dislikes"),
        ("i can't stand ", "dislikes"),
    ];
    let mut out = Vec::new();
    for line in lines
        .iter()
        .filter(|l| !l.speaker.is_empty() && l.speaker != me)
    {
        if line.kind == LineKind::Movement {
            out.push(SnapshotValue {
                person: line.speaker.clone(),
                key: "whereabouts".into(),
                value: line.text.clone(),
            });
            continue;
        }
        if line.kind != LineKind::Speech {
            continue;
        }
        let lower = line.text.to_lowercase();
        for sentence in lower.split(['.', '!', '?', ';']) {
            let sentence = sentence.trim();
            for (pattern, key) in PATTERNS {
                if let Some(rest) = sentence
                    .find(pattern)
                    .map(|i| &sentence[i + pattern.len()..])
                {
                    let value = clip(rest.split(',').next().unwrap_or(rest).trim(), 8);
                    if !value.is_empty() {
                        out.push(SnapshotValue {
                            person: line.speaker.clone(),
                            key: key.to_owned(),
                            value,
                        });
                    }
                }
            }
        }
    }
    out
}
