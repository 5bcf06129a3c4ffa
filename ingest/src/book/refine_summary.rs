//! Stage 2's model step: a character's first-person summary of a scene, from the text
//! up to the scene's end.

use super::episodic;

use serde::Deserialize;
use serde_json::json;

use super::episodic::{Summary, Upto};
use super::refine::{Ask, Refiner};
use super::text::{FocusCharacter, Namer, prefix};

#[derive(Deserialize)]
pub(super) struct SummaryAnswer {
    summary: String,
}

pub(super) async fn summarise(
    refiner: &Refiner,
    characters: &[FocusCharacter],
    upto: &Upto<'_>,
    text_upto: &str,
    namer: &Namer,
    who: &str,
    earlier: &[Summary],
) -> Summary {
    let scene = upto.scene();
    let digest = episodic::digest(characters, upto, who);
    let name = characters
        .iter()
        .find(|c| c.id == who)
        .map_or(who, |c| c.name.as_str());
    let mine: Vec<&str> = earlier
        .iter()
        .filter(|s| s.character == who)
        .rev()
        .take(3)
        .map(|s| s.text.as_str())
        .collect();
    let body = format!(
        "Your earlier memories:\n{}\n\nThe scene:\n{}",
        if mine.is_empty() {
            "(none)".to_owned()
        } else {
            mine.join("\n")
        },
        prefix(&text_upto[scene.span.start..], 6000)
    );
    let task = format!(
        "You are {name}. In two to five sentences, in the first person and the past tense, \
         say what you lived through in this scene: what you saw, heard and did. Only what \
         you could perceive. Name people only as you know them."
    );
    let schema = json!({
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"]
    });
    let known = &upto.names;
    let answer: Option<SummaryAnswer> = refiner
        .ask(
            Ask {
                stage: "episodic",
                chunk: format!("{who} in scene {}", scene.number),
                task: &task,
                body: &body,
                schema,
                max_tokens: 220,
            },
            |a: &SummaryAnswer| {
                let s = a.summary.trim();
                if !(20..=900).contains(&s.chars().count()) {
                    return Err("the summary must be 20 to 900 characters".into());
                }
                let lower = format!(" {} ", s.to_lowercase());
                if !(lower.contains(" i ") || lower.contains(" my ") || lower.contains(" me ")) {
                    return Err("the summary must be in the first person".into());
                }
                for m in namer.mentions(s).iter().filter(|m| m.by_name) {
                    if m.character != who
                        && !known.get(who).is_some_and(|k| k.contains(m.character))
                    {
                        return Err(format!(
                            "it names `{}`, whose name {name} has not heard by then",
                            &s[m.start..m.end]
                        ));
                    }
                }
                // Proper names and numbers must come from the text up to here.
                for w in s.split_whitespace().skip(1) {
                    let w = w.trim_matches(|c: char| !c.is_alphanumeric());
                    let proper = w.chars().next().is_some_and(char::is_uppercase) && w != "I";
                    if (proper || w.chars().any(|c| c.is_ascii_digit())) && !text_upto.contains(w) {
                        return Err(format!("`{}` is not in the book so far", prefix(w, 30)));
                    }
                }
                Ok(())
            },
        )
        .await;
    match answer {
        Some(a) => Summary {
            character: who.to_owned(),
            scene: scene.number,
            text: a.summary.trim().to_owned(),
            by: "model".into(),
        },
        None => Summary {
            character: who.to_owned(),
            scene: scene.number,
            text: digest,
            by: "digest".into(),
        },
    }
}
