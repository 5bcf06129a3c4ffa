//! The structured action a character returns each turn: its JSON schema (handed to the
//! model so constrained decoders can enforce it), and a parser that validates model
//! output — repairing what it can — without ever evaluating it.

use serde::Deserialize;
use serde_json::{Value, json};

use dramatis_llm::parse_json;

use dramatis_memory::reverie::EMOTIONS;

/// Name of the action schema in `response_format`.
pub const ACTION_SCHEMA_NAME: &str = "character_action";

/// The longest `text` the schema allows, in characters.
pub const TEXT_MAX_CHARS: usize = 160;

/// What `text` may be: it starts with a letter, a digit or an opening mark (never with
/// stray punctuation such as ". I am…"), and holds no quote, backslash or control
/// character, so a grammar built from it (llama.cpp turns `pattern` into GBNF inside the
/// JSON string) can only produce valid JSON. Its length bound repeats `maxLength`, which a
/// grammar built from a pattern does not read.
const TEXT_PATTERN: &str = r#"^[A-Za-z0-9'(*\u00C0-\u024F\u2018\u201C][^"\\\x00-\x1F\x7F]{0,159}$"#;

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
            "text": {"type": "string", "minLength": 1, "maxLength": TEXT_MAX_CHARS,
                "pattern": TEXT_PATTERN},
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

/// The longest line kept; what streams to watchers stops here too.
pub(crate) const MAX_TEXT: usize = 400;

/// Parses model output into an action, repairing what [`parse_json`] can.
/// Returns `None` when nothing usable is there.
#[must_use]
pub fn parse_action(output: &str) -> Option<ParsedAction> {
    let (wire, repaired) = parse_json::<Wire>(output, |w| {
        !strip_leading_punctuation(&clean(w.text.as_deref().unwrap_or_default())).is_empty()
    })?;
    from_wire(&wire, repaired).map(|mut a| {
        a.repaired = repaired;
        a
    })
}

fn from_wire(wire: &Wire, repaired: bool) -> Option<ParsedAction> {
    let raw = wire.text.as_deref().unwrap_or_default();
    // A line that needed repair (truncated JSON closed) or fills the schema's length was
    // cut off: its last words may be half a word.
    let cut = repaired || raw.trim().chars().count() >= TEXT_MAX_CHARS;
    let text = end_of_sentence(strip_leading_punctuation(&clean(raw)), cut);
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
        emotion: dramatis_memory::reverie::normalise_emotion(
            wire.emotion.as_deref().unwrap_or_default(),
        )
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

/// The text from its first letter, digit or opening mark: a model's stray lead-in
/// (". I am not a man.", "- yes") is not part of the line.
fn strip_leading_punctuation(text: &str) -> &str {
    text.trim_start_matches(|c: char| !(c.is_alphanumeric() || OPENERS.contains(&c)))
}

/// Marks a line may open with besides letters and digits.
const OPENERS: [char; 7] = ['"', '\'', '(', '*', '‘', '“', '['];
/// Marks that end a sentence, and the closing marks that may follow them.
const TERMINATORS: [char; 4] = ['.', '!', '?', '…'];
const CLOSERS: [char; 7] = ['"', '\'', ')', '*', '’', '”', ']'];
/// Words whose full stop does not end a sentence ("Mr. Holmes").
const ABBREVIATIONS: [&str; 11] = [
    "mr", "mrs", "ms", "dr", "st", "mt", "jr", "sr", "vs", "e.g", "i.e",
];

/// The line ended at a sentence boundary. A line that already ends with a sentence's
/// closing mark is kept. A cut-off line (`cut`) ends at its last complete sentence, or,
/// with none, loses its last (possibly half) word and trails off with "…". A line that
/// was not cut but lacks a closing mark gets a full stop.
fn end_of_sentence(text: &str, cut: bool) -> String {
    let text = text.trim_end();
    if text.is_empty() || ends_a_sentence(text) {
        return text.to_owned();
    }
    if !cut {
        return format!("{}.", text.trim_end_matches([',', ';', ':', '-']));
    }
    if let Some(end) = last_sentence_end(text) {
        return text[..end].to_owned();
    }
    let whole_words = match text.rfind(' ') {
        Some(space) => &text[..space],
        None => text,
    };
    let kept =
        whole_words.trim_end_matches(|c: char| !(c.is_alphanumeric() || CLOSERS.contains(&c)));
    if kept.is_empty() {
        format!("{text}…")
    } else {
        format!("{kept}…")
    }
}

fn ends_a_sentence(text: &str) -> bool {
    let body = text.trim_end_matches(CLOSERS);
    body.ends_with(TERMINATORS) && !ends_with_abbreviation(body)
}

/// `body` ends with "Mr." or a similar abbreviation (or a lone initial such as "J.").
fn ends_with_abbreviation(body: &str) -> bool {
    let Some(stem) = body.strip_suffix('.') else {
        return false;
    };
    let word = stem
        .rsplit(|c: char| c.is_whitespace() || OPENERS.contains(&c))
        .next()
        .unwrap_or_default();
    let lower = word.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str())
        || (word.chars().count() == 1 && word.chars().all(char::is_uppercase))
}

/// The byte offset just past the last complete sentence of `text` (its closing mark and
/// any closing quotes), when a space follows it.
fn last_sentence_end(text: &str) -> Option<usize> {
    let mut best = None;
    for (at, c) in text.char_indices() {
        if !TERMINATORS.contains(&c) {
            continue;
        }
        let mut end = at + c.len_utf8();
        for next in text[end..].chars() {
            if CLOSERS.contains(&next) || TERMINATORS.contains(&next) {
                end += next.len_utf8();
            } else {
                break;
            }
        }
        if text[end..].starts_with(' ')
            && !ends_with_abbreviation(text[..at + c.len_utf8()].trim_end_matches(CLOSERS))
        {
            best = Some(end);
        }
    }
    best
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
        assert_eq!(
            a.text, "I was about to say that…",
            "the half word is dropped"
        );
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
        // One word, cut: kept whole, trailing off.
        assert_eq!(a.text.chars().count(), MAX_TEXT + 1);
        assert!(a.text.ends_with('…'));
    }

    fn text_of(json: &str) -> String {
        parse_action(json).expect("parses").text
    }

    #[test]
    fn a_line_never_starts_with_stray_punctuation() {
        assert_eq!(
            text_of(r#"{"kind":"speech","text":". I am not a man."}"#),
            "I am not a man."
        );
        assert_eq!(text_of(r#"{"kind":"speech","text":", - yes!"}"#), "yes!");
        assert_eq!(
            text_of(r#"{"kind":"action","text":"*bows* Good day."}"#),
            "*bows* Good day."
        );
        assert_eq!(
            text_of(r#"{"kind":"speech","text":"'Tis nothing."}"#),
            "'Tis nothing."
        );
        assert_eq!(parse_action(r#"{"kind":"speech","text":" . , ;"}"#), None);
    }

    #[test]
    fn a_cut_line_ends_at_its_last_complete_sentence() {
        // Truncated JSON, closed by the repair.
        assert_eq!(
            text_of(
                r#"{"kind":"speech","text":"I read the papers. It was the murder of a 19-year old girl at Brix"#
            ),
            "I read the papers."
        );
        // Valid JSON whose text fills the schema's length: the grammar cut it.
        let filler = "a".repeat(TEXT_MAX_CHARS - 40);
        let full = format!("Look! He said \"no.\" Then {filler} and the murder at Brix");
        let full = &full[..full
            .char_indices()
            .nth(TEXT_MAX_CHARS)
            .map_or(full.len(), |(i, _)| i)];
        let json = serde_json::json!({"kind": "speech", "text": full}).to_string();
        assert_eq!(text_of(&json), "Look! He said \"no.\"");
        // "Mr." does not end a sentence.
        assert_eq!(
            text_of(r#"{"kind":"speech","text":"I met Mr. Holmes at the lab and he sa"#),
            "I met Mr. Holmes at the lab and he…"
        );
        assert_eq!(
            text_of(r#"{"kind":"speech","text":"Is it you? Dr. Wat"#),
            "Is it you?"
        );
    }

    #[test]
    fn a_whole_line_without_a_closing_mark_gets_a_full_stop() {
        assert_eq!(
            text_of(r#"{"kind":"speech","text":"I agree with you,"}"#),
            "I agree with you."
        );
        assert_eq!(
            text_of(r#"{"kind":"speech","text":"Perhaps. Let us go"}"#),
            "Perhaps. Let us go."
        );
        assert_eq!(
            text_of(r#"{"kind":"speech","text":"He said 'wait!'"}"#),
            "He said 'wait!'"
        );
    }

    #[test]
    fn the_schema_pattern_accepts_what_the_parser_keeps() {
        let schema = action_schema(&[], &[]);
        let pattern = schema["properties"]["text"]["pattern"]
            .as_str()
            .expect("pattern");
        assert!(pattern.starts_with("^[A-Za-z0-9'(*") && pattern.ends_with("{0,159}$"));
        assert_eq!(
            schema["properties"]["text"]["maxLength"],
            serde_json::json!(TEXT_MAX_CHARS)
        );
    }
}
