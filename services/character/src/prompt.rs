//! Memory-Fusion prompts (ReverieMem Eq. 3): built from one shard's recall workspace —
//! the anchored scene memory, the visibility-bounded fact pool, the selected pattern's
//! description and excerpts as style anchors — plus the scene under way and the scene
//! frame. Nothing else is in scope here.
//!
//! Prompts stay short: the built-in model is small and every token costs time. A single
//! worked example (about people who are not in any story) shows small models the shape
//! of a reply without lending them any facts.

use dramatis_llm::ChatMessage;
use dramatis_memory::modules::Grounding;
use dramatis_proto::v1::SceneFrame;

use crate::shard::{AuditEntry, PERCEIVED, PERSONALITY, SEMANTIC, Shard};
use dramatis_memory::reverie::{Recalled, refs};

/// A prompt and the memory items (id, layer) it was built from.
#[derive(Debug, Clone)]
pub(crate) struct BuiltPrompt {
    pub messages: Vec<ChatMessage>,
    pub items: Vec<(String, String)>,
    /// The sampling seed a line asked again is drawn with (`SceneFrame.seed`).
    pub seed: Option<u32>,
}

impl BuiltPrompt {
    /// Records this prompt in `shard`'s audit, under `purpose` ("act", "answer").
    pub(crate) fn audit(&self, shard: &mut Shard, purpose: &str) {
        let prompt = self
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        shard.record_prompt(AuditEntry {
            purpose: purpose.to_owned(),
            prompt,
            items: self.items.clone(),
            timestamp_ms: dramatis_runtime::now_ms(),
            flagged: Vec::new(),
            guard: Vec::new(),
        });
    }
}

/// The turn instruction when the character was asked something its memory does not
/// support (the answer path's refusal, worded for a turn).
pub const TURN_ABSTAIN_INSTRUCTION: &str = "You were just asked something nothing you \
    remember bears on. Say in character that you do not know; do not make anything up.";

/// Lines of the scene under way a turn sees at most.
pub const RECENT_LINES: usize = 6;
/// Words of the anchored scene memory a prompt carries at most.
const ANCHOR_WORDS: usize = 60;
/// Excerpts of the selected pattern a prompt carries at most.
const EXCERPTS: usize = 2;

const ACT_SYSTEM: &str = "You play one character in a story. Reply with one JSON object: what \
    your character says or does next, in their own voice. Use only what your character knows.";

const EXAMPLE_USER: &str = "Character: Martha, a baker. Speaks briskly.\nRecent:\n- Tom: \"Is the \
    bread fresh today?\"\nPlace: the bakery. With you: Tom (id tom).\nYour aim: sell Tom a loaf.";

/// A second worked example, shown when the character may want to move on: leaving.
const MOVE_EXAMPLE_USER: &str = "Character: Martha, a baker. Speaks briskly.\nRecent:\n- Tom: \
    \"The miller has no flour left.\"\nPlace: the bakery. With you: Tom (id tom).\nYou want: \
    flour for tomorrow's bread.\nYou have been at the bakery for 3 scenes. You can go to: mill, \
    market.";

const MOVE_EXAMPLE_REPLY: &str = r#"{"kind":"move","target":"","text":"Martha ties on her shawl and hurries off to the market.","thought":"Someone there will sell flour.","emotion":"curiosity","intensity":2,"intent":"find flour","goal":"buy flour at the market","destination":"market"}"#;

/// Scenes in a row at one place after which a character is reminded it can leave.
pub const RESTLESS_AFTER: u32 = 2;

const EXAMPLE_REPLY: &str = r#"{"kind":"speech","target":"tom","text":"Fresh from the oven this very hour, Tom. Shall I wrap you a loaf?","thought":"He always haggles.","emotion":"joy","intensity":1,"intent":"make a sale","goal":"sell Tom a loaf","destination":""}"#;

fn character_line(shard: &Shard) -> String {
    let p = &shard.profile;
    // A profile may be empty, or begin with the name itself (an ingested book's, a
    // hand-written "Ada Lovelace, mathematician."): the name is said once.
    let profile = p.profile.trim();
    let mut text = if profile.is_empty() {
        format!("Character: {}.", p.name)
    } else if profile.starts_with(p.name.as_str()) {
        format!("Character: {profile}")
    } else {
        format!("Character: {}, {profile}", p.name)
    };
    if !p.speaking_style.trim().is_empty() {
        dramatis_runtime::push!(
            text,
            " Speaks {}.",
            p.speaking_style.trim().trim_end_matches('.')
        );
    }
    text
}

fn truncate_words(text: &str, words: usize) -> String {
    let all: Vec<&str> = text.split_whitespace().collect();
    if all.len() <= words {
        all.join(" ")
    } else {
        format!("{} …", all[..words].join(" "))
    }
}

/// The workspace sections: manner (pattern), scene memory (anchor), known facts.
fn workspace(text: &mut String, items: &mut Vec<(String, String)>, recalled: &Recalled) {
    if let Some(pattern) = &recalled.pattern {
        dramatis_runtime::push!(text, "\nManner now: {}", pattern.description.trim());
        let excerpts: Vec<String> = pattern
            .excerpts
            .iter()
            .take(EXCERPTS)
            .map(|e| format!("\"{}\"", truncate_words(e, 25)))
            .collect();
        if !excerpts.is_empty() {
            dramatis_runtime::push!(text, " Like: {}", excerpts.join(" "));
        }
        items.push((pattern.id.clone(), PERSONALITY.to_owned()));
    }
    if let Some(anchor) = &recalled.anchor {
        dramatis_runtime::push!(
            text,
            "\nYou remember: {}",
            truncate_words(&anchor.text, ANCHOR_WORDS)
        );
    }
    if !recalled.facts.is_empty() {
        text.push_str("\nYou know:");
        for (fact, _) in &recalled.facts {
            dramatis_runtime::push!(text, "\n- {}", fact.text);
        }
    }
    items.extend(refs(recalled.anchor.as_ref(), &recalled.facts));
}

/// The facts this character holds whose lorebook keys the scene under way brings up
/// (see [`crate::lore`]), after those recall found, under the same heading.
fn lore(text: &mut String, items: &mut Vec<(String, String)>, shard: &Shard, recalled: &Recalled) {
    let me = shard.id();
    let scene: Vec<String> = shard
        .current_scene()
        .iter()
        .filter_map(|p| p.line(me))
        .collect();
    let scene = scene[scene.len().saturating_sub(RECENT_LINES)..].join("\n");
    let shown: Vec<&str> = recalled
        .facts
        .iter()
        .filter_map(|(f, _)| f.id.strip_prefix("fact:"))
        .collect();
    let picked = crate::lore::select(&shard.profile.knowledge, &scene, &shown);
    if picked.is_empty() {
        return;
    }
    if recalled.facts.is_empty() {
        text.push_str("\nYou know:");
    }
    for fact in picked {
        dramatis_runtime::push!(text, "\n- {}", fact.text.trim());
        items.push((format!("fact:{}", fact.id), SEMANTIC.to_owned()));
    }
}

/// What the other memory modules contributed, each item audited under its module.
fn modules(text: &mut String, items: &mut Vec<(String, String)>, grounding: &[Grounding]) {
    if grounding.is_empty() {
        return;
    }
    text.push_str("\nYou also recall:");
    for item in grounding {
        dramatis_runtime::push!(text, "\n- {}", item.text.trim());
        items.push((item.id.clone(), format!("{}.{}", item.module, item.kind)));
    }
}

/// The latest lines of the scene under way.
fn recent(text: &mut String, items: &mut Vec<(String, String)>, shard: &Shard) {
    let me = shard.id();
    let lines: Vec<(String, String)> = shard
        .current_scene()
        .iter()
        .filter_map(|p| p.line(me).map(|line| (p.memory_id(), line)))
        .collect();
    let lines = &lines[lines.len().saturating_sub(RECENT_LINES)..];
    if !lines.is_empty() {
        text.push_str("\nRecent:");
        for (id, line) in lines {
            dramatis_runtime::push!(text, "\n- {line}");
            items.push((id.clone(), PERCEIVED.to_owned()));
        }
    }
}

/// The Memory-Fusion prompt for a turn.
pub(crate) fn act(
    shard: &Shard,
    recalled: &Recalled,
    grounding: &[Grounding],
    frame: &SceneFrame,
    refuse: bool,
) -> BuiltPrompt {
    let mut items = Vec::new();
    let mut user = character_line(shard);
    workspace(&mut user, &mut items, recalled);
    lore(&mut user, &mut items, shard, recalled);
    modules(&mut user, &mut items, grounding);
    recent(&mut user, &mut items, shard);
    dramatis_runtime::push!(user, "\nPlace: {}.", frame.location_name);
    if frame.present.is_empty() {
        user.push_str(" You are alone.");
    } else {
        let present: Vec<String> = frame
            .present
            .iter()
            .map(|p| format!("{} (id {})", p.name, p.id))
            .collect();
        match frame.others_present {
            0 => dramatis_runtime::push!(user, " With you: {}.", present.join(", ")),
            1 => dramatis_runtime::push!(user, " With you: {} and 1 other.", present.join(", ")),
            more => dramatis_runtime::push!(
                user,
                " With you: {} and {more} others.",
                present.join(", ")
            ),
        }
    }
    // The world's direction for this scene, and the character's own goal.
    if !frame.direction.trim().is_empty() {
        dramatis_runtime::push!(user, "\nYour aim: {}", frame.direction.trim());
    }
    if !shard.goal().is_empty() {
        dramatis_runtime::push!(user, "\nYou want: {}", shard.goal());
    }
    let restless = frame.scenes_here >= RESTLESS_AFTER && !frame.exits.is_empty();
    if restless {
        dramatis_runtime::push!(
            user,
            "\nYou have been at {} for {} scenes.",
            frame.location_name,
            frame.scenes_here
        );
    }
    if !frame.exits.is_empty() {
        dramatis_runtime::push!(user, "\nYou can go to: {}.", frame.exits.join(", "));
    }
    if refuse {
        dramatis_runtime::push!(user, "\n{}", TURN_ABSTAIN_INSTRUCTION);
    }
    let mut messages = vec![
        ChatMessage::system(ACT_SYSTEM),
        ChatMessage::user(EXAMPLE_USER),
        ChatMessage::assistant(EXAMPLE_REPLY),
    ];
    if restless {
        messages.push(ChatMessage::user(MOVE_EXAMPLE_USER));
        messages.push(ChatMessage::assistant(MOVE_EXAMPLE_REPLY));
    }
    messages.push(ChatMessage::user(user));
    BuiltPrompt {
        messages,
        items,
        seed: (frame.seed != 0).then_some(frame.seed),
    }
}

/// The instruction that closes an answer prompt when nothing in memory bears on the
/// question.
pub const ABSTAIN_INSTRUCTION: &str = "Nothing you remember bears on this question. Say in \
    character, in one sentence, that you cannot answer it from your own knowledge.";

/// The Memory-Fusion prompt for an interview question.
pub(crate) fn answer(
    shard: &Shard,
    recalled: &Recalled,
    grounding: &[Grounding],
    question: &str,
) -> BuiltPrompt {
    let mut items = Vec::new();
    let mut context = character_line(shard);
    workspace(&mut context, &mut items, recalled);
    modules(&mut context, &mut items, grounding);
    recent(&mut context, &mut items, shard);
    let name = &shard.profile.name;
    let system = if recalled.abstain {
        format!("You are {name}. {ABSTAIN_INSTRUCTION}")
    } else {
        format!(
            "You are {name}. Answer in character, in one or two sentences, using only what \
             you remember below. If it is not there, say in character that you cannot answer \
             from your own knowledge."
        )
    };
    BuiltPrompt {
        messages: vec![
            ChatMessage::system(system),
            ChatMessage::user(format!("{context}\n\nQuestion: {}", question.trim())),
        ],
        items,
        seed: None,
    }
}

/// The text of every item a prompt built from `recalled` and `grounding` can hold, by id.
pub(crate) fn item_texts(
    shard: &Shard,
    recalled: &Recalled,
    grounding: &[Grounding],
) -> std::collections::BTreeMap<String, String> {
    let mut texts = std::collections::BTreeMap::new();
    if let Some(pattern) = &recalled.pattern {
        texts.insert(pattern.id.clone(), pattern.description.clone());
    }
    if let Some(anchor) = &recalled.anchor {
        texts.insert(anchor.id.clone(), anchor.text.clone());
    }
    for (fact, _) in &recalled.facts {
        texts.insert(fact.id.clone(), fact.text.clone());
    }
    for item in grounding {
        texts.insert(item.id.clone(), item.text.clone());
    }
    let me = shard.id();
    for p in shard.current_scene() {
        if let Some(line) = p.line(me) {
            texts.insert(p.memory_id(), line);
        }
    }
    texts
}

#[cfg(test)]
mod tests {
    use dramatis_embed::FakeEmbedder;
    use dramatis_proto::v1::CharacterProfile;

    use super::character_line;
    use crate::shard::Shard;

    async fn line(name: &str, profile: &str) -> String {
        let shard = Shard::new(
            CharacterProfile {
                id: "wiggins".into(),
                name: name.into(),
                profile: profile.into(),
                ..CharacterProfile::default()
            },
            &FakeEmbedder::new(8),
        )
        .await
        .expect("shard");
        character_line(&shard)
    }

    #[tokio::test]
    async fn the_character_line_says_the_name_once() {
        assert_eq!(
            line("Wiggins", "a street boy.").await,
            "Character: Wiggins, a street boy."
        );
        // An ingested book's profile may begin with the name, or be only the name.
        assert_eq!(
            line("Wiggins", "Wiggins, a street boy.").await,
            "Character: Wiggins, a street boy."
        );
        assert_eq!(line("Wiggins", "Wiggins.").await, "Character: Wiggins.");
        assert_eq!(line("Wiggins", "").await, "Character: Wiggins.");
    }
}
