//! The structured action a character returns each turn: its JSON schema (handed to the
//! model so constrained decoders can enforce it), and a parser that validates model
//! output — repairing what it can — without ever evaluating it.

use serde::Deserialize;
use serde_json::{Value, json};

use dramatis_llm::parse_json;

use crate::emotion::EMOTIONS;

/// Name of the action schema in `response_format`.
pub const ACTION_SCHEMA_NAME: &str = "character_action";

/// The JSON schema of an action for one turn: `target` must be someone present (or
/// empty) and `destination` a reachable place (or empty), so a constrained decoder
/// cannot produce anything the world would have to reject.
#[must_use]
pub fn action_schema(present: &[String], exits: &[String]) -> Value {
    let choices = |ids: &[String]| {
        let mut all = vec![String::new()];
        all.extend(ids.iter().cloned());
        all
    };
    json!({
        "type": "object",
        "properties": {
            "kind": {"type": "string", "enum": ["speech", "action", "move"]},
            "target": {"type": "string", "enum": choices(present)},
            "text": {"type": "string", "minLength": 1, "maxLength": 160},
            "thought": {"type": "string", "maxLength": 60},
            "emotion": {"type": "string", "enum": EMOTIONS},
            "intensity": {"type": "integer", "minimum": 1, "maximum": 3},
            "intent": {"type": "string", "maxLength": 40},
            "goal": {"type": "string", "maxLength": 60},
            "destination": {"type": "string", "enum": choices(exits)}
        },
        "required": ["kind", "target", "text", "thought", "emotion", "intensity", "intent",
            "goal", "destination"],
        "additionalProperties": false
    })
}

/// What the character does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParsedKind {
    Speech,
    Action,
    Move,
}

/// A validated action.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedAction {
    pub kind: ParsedKind,
    pub text: String,
    pub target: String,
    pub destination: String,
    pub thought: String,
    /// How the character feels saying it (one of [`EMOTIONS`]), how strongly (0–1), and
    /// what it wants: an entry for its emotion-transition record.
    pub emotion: String,
    pub intensity: f32,
    pub intent: String,
    /// What the character now wants (empty: unchanged).
    pub goal: String,
    /// The output needed repair (extracted from prose, truncated JSON closed, ...).
    pub repaired: bool,
}

#[derive(Debug, Deserialize)]
struct Wire {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default, alias = "speech", alias = "line", alias = "say")]
    text: Option<String>,
    #[serde(default, alias = "to")]
    target: Option<String>,
    #[serde(default)]
    destination: Option<String>,
    #[serde(default)]
    thought: Option<String>,
    #[serde(default)]
    emotion: Option<String>,
    #[serde(default)]
    intensity: Option<f32>,
    #[serde(default)]
    intent: Option<String>,
    #[serde(default)]
    goal: Option<String>,
}

const MAX_TEXT: usize = 400;

/// Parses model output into an action, repairing what [`parse_json`] can.
/// Returns `None` when nothing usable is there.
#[must_use]
pub fn parse_action(output: &str) -> Option<ParsedAction> {
    let (wire, repaired) = parse_json::<Wire>(output, |w| {
        !clean(w.text.as_deref().unwrap_or_default()).is_empty()
    })?;
    from_wire(&wire).map(|mut a| {
        a.repaired = repaired;
        a
    })
}

fn from_wire(wire: &Wire) -> Option<ParsedAction> {
    let text = clean(wire.text.as_deref().unwrap_or_default());
    if text.is_empty() {
        return None;
    }
    let destination = clean(wire.destination.as_deref().unwrap_or_default());
    let kind = match wire
        .kind
        .as_deref()
        .map(str::trim)
        .map(str::to_lowercase)
        .as_deref()
    {
        Some("action" | "act" | "do") => ParsedKind::Action,
        Some("move" | "movement" | "go") if !destination.is_empty() => ParsedKind::Move,
        Some("move" | "movement" | "go") => ParsedKind::Action,
        _ => ParsedKind::Speech,
    };
    Some(ParsedAction {
        kind,
        text,
        target: clean(wire.target.as_deref().unwrap_or_default()),
        destination: if kind == ParsedKind::Move {
            destination
        } else {
            String::new()
        },
        thought: clean(wire.thought.as_deref().unwrap_or_default()),
        emotion: crate::emotion::normalise_emotion(wire.emotion.as_deref().unwrap_or_default())
            .to_owned(),
        // 1–3 on the wire; 0–1 in the record.
        intensity: (wire.intensity.unwrap_or(1.0).clamp(1.0, 3.0) / 3.0),
        intent: clean(wire.intent.as_deref().unwrap_or_default()),
        goal: clean(wire.goal.as_deref().unwrap_or_default()),
        repaired: false,
    })
}

/// Trims, collapses whitespace and caps the length at a character boundary.
fn clean(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => collapsed[..cut].to_owned(),
        None => collapsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_json_parses_without_repair() {
        let a = parse_action(
            r#"{"kind":"speech","text":"  You have been in   Afghanistan. ","target":"watson","destination":"","thought":"tan lines"}"#,
        )
        .expect("parses");
        assert_eq!(a.kind, ParsedKind::Speech);
        assert_eq!(a.text, "You have been in Afghanistan.");
        assert_eq!(a.target, "watson");
        assert_eq!(a.thought, "tan lines");
        assert_eq!(a.emotion, "calm", "missing emotion reads as calm");
        assert!(!a.repaired);
        let b = parse_action(
            r#"{"kind":"speech","text":"How?","emotion":"Surprise","intensity":3,"intent":"learn how"}"#,
        )
        .expect("parses");
        assert_eq!(
            (b.emotion.as_str(), b.intensity, b.intent.as_str()),
            ("surprise", 1.0, "learn how")
        );
    }

    #[test]
    fn json_wrapped_in_chatter_or_fences_is_extracted() {
        let a = parse_action(
            "Sure! ```json\n{\"kind\":\"action\",\"text\":\"He bows {politely}.\"}\n``` done",
        )
        .expect("parses");
        assert_eq!(a.kind, ParsedKind::Action);
        assert_eq!(a.text, "He bows {politely}.");
        assert!(a.repaired);
    }

    #[test]
    fn truncated_json_is_closed() {
        let a = parse_action(r#"{"kind":"speech","text":"I was about to say that the"#)
            .expect("parses");
        assert_eq!(a.text, "I was about to say that the");
        let b = parse_action(r#"{"kind":"speech","text":"Fine.","target":"#).expect("parses");
        assert_eq!((b.text.as_str(), b.target.as_str()), ("Fine.", ""));
    }

    #[test]
    fn move_without_destination_becomes_an_action() {
        let a = parse_action(r#"{"kind":"move","text":"He stands to leave."}"#).expect("parses");
        assert_eq!(a.kind, ParsedKind::Action);
        let b = parse_action(r#"{"kind":"move","text":"Off I go.","destination":"baker-street"}"#)
            .expect("parses");
        assert_eq!(
            (b.kind, b.destination.as_str()),
            (ParsedKind::Move, "baker-street")
        );
    }

    #[test]
    fn garbage_and_empty_text_are_rejected() {
        assert_eq!(parse_action("I think, therefore I am."), None);
        assert_eq!(parse_action(r#"{"kind":"speech","text":"   "}"#), None);
        assert_eq!(parse_action(""), None);
        assert_eq!(parse_action("}}}{{{"), None);
    }

    #[test]
    fn long_text_is_capped_on_a_character_boundary() {
        let long = "é".repeat(1000);
        let a = parse_action(&format!(r#"{{"kind":"speech","text":"{long}"}}"#)).expect("parses");
        assert_eq!(a.text.chars().count(), MAX_TEXT);
    }
}
