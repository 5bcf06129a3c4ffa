//! Prompts, built from one shard and the scene frame — nothing else is in scope here.
//! Prompts stay short: the built-in model is small and every token costs time.

use std::fmt::Write as _;

use dramatis_llm::ChatMessage;
use dramatis_proto::v1::{MemoryItem, SceneFrame};

use crate::shard::Shard;

/// A prompt and the memory items it was built from.
#[derive(Debug, Clone)]
pub(crate) struct BuiltPrompt {
    pub messages: Vec<ChatMessage>,
    pub memory_ids: Vec<String>,
}

fn persona(shard: &Shard) -> String {
    let p = &shard.profile;
    let mut text = format!("You are {}. {}", p.name, p.profile.trim());
    if !p.speaking_style.trim().is_empty() {
        let _ = write!(text, " You speak {}.", p.speaking_style.trim().trim_end_matches('.'));
    }
    text.push_str(
        " Stay in character. You know only what you remember below; never invent what you \
         could not have seen or been told.",
    );
    text
}

fn memories(items: &[&MemoryItem]) -> String {
    if items.is_empty() {
        return "You remember nothing relevant.".into();
    }
    let mut text = String::from("What you remember:");
    for item in items {
        let _ = write!(text, "\n- {}", item.text);
    }
    text
}

/// The prompt for a turn.
pub(crate) fn act(shard: &Shard, frame: &SceneFrame) -> BuiltPrompt {
    let recalled = shard.recall();
    let mut user = memories(&recalled);
    let _ = write!(user, "\n\nYou are at {}.", frame.location_name);
    if !frame.location_description.trim().is_empty() {
        let _ = write!(user, " {}", frame.location_description.trim());
    }
    if frame.present.is_empty() {
        user.push_str(" You are alone.");
    } else {
        let present: Vec<String> = frame
            .present
            .iter()
            .map(|p| format!("{} (id {})", p.name, p.id))
            .collect();
        let _ = write!(user, " Here with you: {}.", present.join(", "));
    }
    if !frame.direction.trim().is_empty() {
        let _ = write!(user, "\nYour aim now: {}", frame.direction.trim());
    }
    let _ = write!(
        user,
        "\n\nWhat do you do next? Reply with JSON only: {{\"kind\": \"speech\" or \"action\" or \
         \"move\", \"text\": your words or deed in one or two sentences, \"target\": id of whom \
         you address or \"\", \"destination\": a place id if you move ({}) or \"\", \
         \"thought\": a short private thought}}.",
        if frame.exits.is_empty() {
            "none".to_owned()
        } else {
            frame.exits.join(", ")
        }
    );
    BuiltPrompt {
        messages: vec![ChatMessage::system(persona(shard)), ChatMessage::user(user)],
        memory_ids: recalled.iter().map(|m| m.id.clone()).collect(),
    }
}

/// The prompt for an interview question.
pub(crate) fn answer(shard: &Shard, question: &str) -> BuiltPrompt {
    let recalled = shard.recall();
    let user = format!(
        "{}\n\nSomeone asks you: {}\nAnswer in character in one or two sentences, from what you \
         remember only. If you do not know, say so in character.",
        memories(&recalled),
        question.trim()
    );
    BuiltPrompt {
        messages: vec![ChatMessage::system(persona(shard)), ChatMessage::user(user)],
        memory_ids: recalled.iter().map(|m| m.id.clone()).collect(),
    }
}
