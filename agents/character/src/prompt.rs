//! Prompts, built from one shard and the scene frame — nothing else is in scope here.
//! Prompts stay short: the built-in model is small and every token costs time. A single
//! worked example (about people who are not in any story) shows small models the shape
//! of a reply without lending them any facts.

use std::fmt::Write as _;

use dramatis_llm::ChatMessage;
use dramatis_proto::v1::{MemoryItem, MemoryRef, SceneFrame};

use crate::shard::Shard;

/// A prompt and the memory items it was built from.
#[derive(Debug, Clone)]
pub(crate) struct BuiltPrompt {
    pub messages: Vec<ChatMessage>,
    pub items: Vec<MemoryRef>,
}

fn refs(items: &[&MemoryItem]) -> Vec<MemoryRef> {
    items
        .iter()
        .map(|m| MemoryRef {
            id: m.id.clone(),
            layer: m.source.clone(),
        })
        .collect()
}

const ACT_SYSTEM: &str = "You play one character in a story. Reply with one JSON object: what \
    your character says or does next, in their own voice. Use only what your character knows.";

const EXAMPLE_USER: &str = "Character: Martha, a baker. Speaks briskly.\nRecent:\n- Tom: \"Is the \
    bread fresh today?\"\nPlace: the bakery. With you: Tom (id tom).\nYour aim: sell Tom a loaf.";

const EXAMPLE_REPLY: &str = r#"{"kind":"speech","target":"tom","text":"Fresh from the oven this very hour, Tom. Shall I wrap you a loaf?","thought":"He always haggles.","destination":""}"#;

fn character_line(shard: &Shard) -> String {
    let p = &shard.profile;
    let mut text = format!("Character: {}, {}", p.name, p.profile.trim());
    if !p.speaking_style.trim().is_empty() {
        let _ = write!(
            text,
            " Speaks {}.",
            p.speaking_style.trim().trim_end_matches('.')
        );
    }
    text
}

/// Starting knowledge under "You know", perceived events under "Recent".
fn memories(text: &mut String, items: &[&MemoryItem]) {
    let starting = |m: &&&MemoryItem| m.seq == 0;
    let known: Vec<&&MemoryItem> = items.iter().filter(starting).collect();
    let recent: Vec<&&MemoryItem> = items.iter().filter(|m| !starting(m)).collect();
    if !known.is_empty() {
        text.push_str("\nYou know:");
        for item in known {
            let _ = write!(text, "\n- {}", item.text);
        }
    }
    if !recent.is_empty() {
        text.push_str("\nRecent:");
        for item in recent {
            let _ = write!(text, "\n- {}", item.text);
        }
    }
}

/// The prompt for a turn.
pub(crate) fn act(shard: &Shard, frame: &SceneFrame) -> BuiltPrompt {
    let recalled = shard.recall();
    let mut user = character_line(shard);
    memories(&mut user, &recalled);
    let _ = write!(user, "\nPlace: {}.", frame.location_name);
    if frame.present.is_empty() {
        user.push_str(" You are alone.");
    } else {
        let present: Vec<String> = frame
            .present
            .iter()
            .map(|p| format!("{} (id {})", p.name, p.id))
            .collect();
        let _ = write!(user, " With you: {}.", present.join(", "));
    }
    if !frame.direction.trim().is_empty() {
        let _ = write!(user, "\nYour aim: {}", frame.direction.trim());
    }
    BuiltPrompt {
        messages: vec![
            ChatMessage::system(ACT_SYSTEM),
            ChatMessage::user(EXAMPLE_USER),
            ChatMessage::assistant(EXAMPLE_REPLY),
            ChatMessage::user(user),
        ],
        items: refs(&recalled),
    }
}

/// The prompt for an interview question.
pub(crate) fn answer(shard: &Shard, question: &str) -> BuiltPrompt {
    let recalled = shard.recall();
    let mut context = character_line(shard);
    memories(&mut context, &recalled);
    let system = format!(
        "You are {name}. Answer questions in character, in one or two sentences, using only \
         what {name} knows. If {name} does not know, say so in character.",
        name = shard.profile.name
    );
    BuiltPrompt {
        messages: vec![
            ChatMessage::system(system),
            ChatMessage::user(format!("{context}\n\nQuestion: {}", question.trim())),
        ],
        items: refs(&recalled),
    }
}
