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

use crate::shard::{AuditEntry, EPISODIC, PERCEIVED, PERSONALITY, SEMANTIC, Shard};
use dramatis_memory::modules::clip;
use dramatis_memory::reverie::Recalled;

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

/// Tokens a prompt may take by default, by [`dramatis_runtime::estimate_tokens`]: the
/// built-in model's context of 2,048 tokens, less a turn's 160 tokens of reply and a
/// margin for the chat template and the estimate's error (the built-in model's
/// tokenizer makes 4.0 to 4.2 characters a token of English).
pub const PROMPT_BUDGET_TOKENS: usize = 1_700;
/// Tokens one line of the scene, one fact or one lore entry may take in a prompt: a
/// card's greeting or a lorebook entry can run to a page.
const ITEM_TOKENS: usize = 200;

/// What a prompt may still spend, in estimated tokens. A prompt is built in the order
/// of what matters most to a reply (who the character is, the scene under way, what
/// recall found, what the modules add) and each part is cut or left out when the rest
/// no longer fits, so a long card or a long scene costs context, never the call.
struct Budget {
    left: usize,
}

impl Budget {
    /// A budget of `total` less what `fixed` (the parts always sent) and the body's
    /// headings cost.
    fn new(total: usize, fixed: &[&str]) -> Self {
        const HEADINGS: usize = 16;
        let spent: usize = fixed.iter().map(|t| cost(t)).sum::<usize>() + HEADINGS;
        Self {
            left: total.saturating_sub(spent),
        }
    }

    /// Spends `text`'s cost and says so, or spends nothing when it does not fit.
    fn take(&mut self, text: &str) -> bool {
        let cost = cost(text);
        let fits = cost <= self.left;
        if fits {
            self.left -= cost;
        }
        fits
    }
}

/// A part's cost: its tokens and the line break before it.
fn cost(text: &str) -> usize {
    dramatis_runtime::estimate_tokens(text) + 1
}

/// One item of a prompt's body cut to [`ITEM_TOKENS`].
fn item(text: &str) -> String {
    dramatis_runtime::clip_tokens(text, ITEM_TOKENS).into_owned()
}

/// Who the character is, cut to a third of what `budget` has left: its name is never
/// cut, and its profile's first sentences are the ones kept.
fn character_line(shard: &Shard, budget: &mut Budget) -> String {
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
    let share = (budget.left / 3).max(cost(&p.name) + 4);
    let text = dramatis_runtime::clip_tokens(&text, share).into_owned();
    budget.left = budget.left.saturating_sub(cost(&text));
    text
}

/// A part of a prompt and the memory item (id, layer) it shows.
type Part = (String, (String, String));

/// The parts of a prompt's body, each already within budget.
#[derive(Default)]
struct Body {
    pattern: Option<Part>,
    anchor: Option<Part>,
    /// Facts recall found, then lore entries the scene triggered.
    facts: Vec<Part>,
    grounding: Vec<Part>,
    recent: Vec<Part>,
}

impl Body {
    /// Fills the body from what `budget` has left, in order of weight: the scene under
    /// way (up to half), the facts recall found, the lore the scene triggers (turns
    /// only), the scene memory, the manner, what the modules add.
    fn fill(
        budget: &mut Budget,
        shard: &Shard,
        recalled: &Recalled,
        grounding: &[Grounding],
        with_lore: bool,
    ) -> Self {
        let mut body = Self::default();
        body.recent(budget, shard);
        for (fact, _) in &recalled.facts {
            let text = item(&fact.text);
            if budget.take(&text) {
                body.facts
                    .push((text, (fact.id.clone(), SEMANTIC.to_owned())));
            }
        }
        if with_lore {
            body.lore(budget, shard, recalled);
        }
        if let Some(anchor) = &recalled.anchor {
            let text = clip(&anchor.text, ANCHOR_WORDS);
            if budget.take(&text) {
                body.anchor = Some((text, (anchor.id.clone(), EPISODIC.to_owned())));
            }
        }
        if let Some(pattern) = &recalled.pattern {
            let mut text = pattern.description.trim().to_owned();
            let excerpts: Vec<String> = pattern
                .excerpts
                .iter()
                .take(EXCERPTS)
                .map(|e| format!("\"{}\"", clip(e, 25)))
                .collect();
            if !excerpts.is_empty() {
                dramatis_runtime::push!(text, " Like: {}", excerpts.join(" "));
            }
            if budget.take(&text) {
                body.pattern = Some((text, (pattern.id.clone(), PERSONALITY.to_owned())));
            }
        }
        for module in grounding {
            let text = item(module.text.trim());
            if budget.take(&text) {
                let layer = format!("{}.{}", module.module, module.kind);
                body.grounding.push((text, (module.id.clone(), layer)));
            }
        }
        body
    }

    /// The latest lines of the scene under way, at most [`RECENT_LINES`] and half of
    /// what `budget` has left, the newest kept first.
    fn recent(&mut self, budget: &mut Budget, shard: &Shard) {
        let me = shard.id();
        let lines: Vec<(String, String)> = shard
            .current_scene()
            .iter()
            .filter_map(|p| p.line(me).map(|line| (p.memory_id(), line)))
            .collect();
        let mut share = Budget {
            left: budget.left / 2,
        };
        let mut kept = Vec::new();
        for (id, line) in lines.iter().rev().take(RECENT_LINES) {
            let text = item(line);
            if !share.take(&text) {
                break;
            }
            kept.push((id.clone(), text));
        }
        budget.left -= budget.left / 2 - share.left;
        for (id, text) in kept.into_iter().rev() {
            self.recent.push((text, (id, PERCEIVED.to_owned())));
        }
    }

    /// The facts this character holds whose lorebook keys the scene under way brings up
    /// (see [`crate::lore`]), after those recall found.
    fn lore(&mut self, budget: &mut Budget, shard: &Shard, recalled: &Recalled) {
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
        for fact in crate::lore::select(&shard.profile.knowledge, &scene, &shown) {
            let text = item(fact.text.trim());
            if budget.take(&text) {
                let id = format!("fact:{}", fact.id);
                self.facts.push((text, (id, SEMANTIC.to_owned())));
            }
        }
    }

    /// The body as prompt text after `character`: manner, scene memory, known facts,
    /// what the modules add, the scene under way.
    fn render(&self, character: String) -> String {
        let mut text = character;
        if let Some((pattern, _)) = &self.pattern {
            dramatis_runtime::push!(text, "\nManner now: {pattern}");
        }
        if let Some((anchor, _)) = &self.anchor {
            dramatis_runtime::push!(text, "\nYou remember: {anchor}");
        }
        for (heading, lines) in [
            ("You know:", &self.facts),
            ("You also recall:", &self.grounding),
            ("Recent:", &self.recent),
        ] {
            if !lines.is_empty() {
                dramatis_runtime::push!(text, "\n{heading}");
                for (line, _) in lines {
                    dramatis_runtime::push!(text, "\n- {line}");
                }
            }
        }
        text
    }

    /// The items the body shows, in the order it shows them.
    fn items(&self) -> Vec<(String, String)> {
        self.pattern
            .iter()
            .chain(&self.anchor)
            .chain(&self.facts)
            .chain(&self.grounding)
            .chain(&self.recent)
            .map(|(_, item)| item.clone())
            .collect()
    }
}

/// The end of a turn's prompt: where the character is, with whom, what it is after,
/// where it can go.
fn frame_text(shard: &Shard, frame: &SceneFrame, refuse: bool, restless: bool) -> String {
    let mut user = format!("\nPlace: {}.", frame.location_name);
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
    user
}

/// The Memory-Fusion prompt for a turn, within `budget_tokens`.
pub(crate) fn act(
    shard: &Shard,
    recalled: &Recalled,
    grounding: &[Grounding],
    frame: &SceneFrame,
    refuse: bool,
    budget_tokens: usize,
) -> BuiltPrompt {
    let restless = frame.scenes_here >= RESTLESS_AFTER && !frame.exits.is_empty();
    let tail = frame_text(shard, frame, refuse, restless);
    let mut messages = vec![
        ChatMessage::system(ACT_SYSTEM),
        ChatMessage::user(EXAMPLE_USER),
        ChatMessage::assistant(EXAMPLE_REPLY),
    ];
    if restless {
        messages.push(ChatMessage::user(MOVE_EXAMPLE_USER));
        messages.push(ChatMessage::assistant(MOVE_EXAMPLE_REPLY));
    }
    let fixed: Vec<&str> = messages
        .iter()
        .map(|m| m.content.as_str())
        .chain([tail.as_str()])
        .collect();
    let mut budget = Budget::new(budget_tokens, &fixed);
    let character = character_line(shard, &mut budget);
    let body = Body::fill(&mut budget, shard, recalled, grounding, true);
    let user = body.render(character) + &tail;
    messages.push(ChatMessage::user(user));
    BuiltPrompt {
        messages,
        items: body.items(),
        seed: (frame.seed != 0).then_some(frame.seed),
    }
}

/// The instruction that closes an answer prompt when nothing in memory bears on the
/// question.
pub const ABSTAIN_INSTRUCTION: &str = "Nothing you remember bears on this question. Say in \
    character, in one sentence, that you cannot answer it from your own knowledge.";

/// The Memory-Fusion prompt for an interview question, within `budget_tokens`.
pub(crate) fn answer(
    shard: &Shard,
    recalled: &Recalled,
    grounding: &[Grounding],
    question: &str,
    budget_tokens: usize,
) -> BuiltPrompt {
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
    let question = format!("\n\nQuestion: {}", question.trim());
    let mut budget = Budget::new(budget_tokens, &[&system, &question]);
    let character = character_line(shard, &mut budget);
    let body = Body::fill(&mut budget, shard, recalled, grounding, false);
    BuiltPrompt {
        messages: vec![
            ChatMessage::system(system),
            ChatMessage::user(body.render(character) + &question),
        ],
        items: body.items(),
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
    use dramatis_memory::reverie::Recalled;
    use dramatis_proto::v1::{
        CharacterProfile, Event, EventKind, KnownFact, LoreKeys, PresentCharacter, SceneFrame,
    };

    use super::{Budget, PROMPT_BUDGET_TOKENS, act, answer};
    use crate::shard::Shard;

    fn character_line(shard: &Shard) -> String {
        super::character_line(shard, &mut Budget { left: 1_000 })
    }

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

    /// A card's character: a page of profile, three constant lorebook entries of a page
    /// each, and a scene of six long lines (the greeting is one).
    async fn long_card(words: usize) -> Shard {
        let page = |what: &str| format!("{what} ").repeat(words);
        let knowledge = (0..3)
            .map(|n| KnownFact {
                id: format!("entry-{n}"),
                text: format!("Entry {n} begins. {}", page("lore")),
                keys: Some(LoreKeys {
                    constant: true,
                    ..LoreKeys::default()
                }),
                ..KnownFact::default()
            })
            .collect();
        let mut shard = Shard::new(
            CharacterProfile {
                id: "seraphina".into(),
                name: "Seraphina".into(),
                profile: format!("guardian of the glade. {}", page("profile")),
                knowledge,
                ..CharacterProfile::default()
            },
            &FakeEmbedder::new(8),
        )
        .await
        .expect("shard");
        let events: Vec<Event> = (1..=6)
            .map(|seq| Event {
                seq,
                scene_id: "s1".into(),
                speaker: "stranger".into(),
                kind: EventKind::Speech as i32,
                text: format!("Line {seq} begins. {}", page("word")),
                perceivers: vec!["seraphina".into(), "stranger".into()],
                ..Event::default()
            })
            .collect();
        shard.perceive(&events).expect("perceived");
        shard
    }

    fn frame() -> SceneFrame {
        SceneFrame {
            location_name: "the glade".into(),
            present: vec![PresentCharacter {
                id: "stranger".into(),
                name: "a stranger".into(),
            }],
            direction: "tend the stranger".into(),
            ..SceneFrame::default()
        }
    }

    fn tokens(prompt: &super::BuiltPrompt) -> usize {
        let text: Vec<&str> = prompt.messages.iter().map(|m| m.content.as_str()).collect();
        dramatis_runtime::estimate_tokens(&text.join("\n"))
    }

    #[tokio::test]
    async fn a_long_card_is_cut_to_the_budget_keeping_the_name_the_newest_line_and_the_frame() {
        let shard = long_card(400).await;
        let nothing = Recalled::nothing(shard.mood().clone());
        let turn = act(&shard, &nothing, &[], &frame(), false, PROMPT_BUDGET_TOKENS);
        let unbounded = act(&shard, &nothing, &[], &frame(), false, usize::MAX / 2);
        // Each part is cut to a page even then; all of them would not fit.
        assert!(
            tokens(&unbounded) > PROMPT_BUDGET_TOKENS,
            "{}",
            tokens(&unbounded)
        );
        assert!(tokens(&turn) <= PROMPT_BUDGET_TOKENS, "{}", tokens(&turn));
        let user = &turn.messages.last().expect("user").content;
        assert!(
            user.starts_with("Character: Seraphina, guardian of the glade."),
            "{user}"
        );
        assert!(
            user.contains("Line 6 begins."),
            "the newest line is kept: {user}"
        );
        assert!(
            user.contains("Entry 0 begins."),
            "a constant entry is kept: {user}"
        );
        assert!(user.ends_with("Your aim: tend the stranger"), "{user}");
        // What is audited is what was shown: each item's text, cut or whole, is there.
        let ids: Vec<&str> = turn.items.iter().map(|(id, _)| id.as_str()).collect();
        let lines = ids.iter().filter(|id| !id.starts_with("fact:")).count();
        assert_eq!(lines, user.matches("Line ").count(), "{ids:?}");
        assert_eq!(ids.len(), user.matches(" begins.").count(), "{ids:?}");
        assert!(ids.contains(&"fact:entry-0"), "{ids:?}");
        assert!((1..6).contains(&lines), "some lines are left out: {ids:?}");
        // The oldest lines go first: the kept lines are the newest, in order.
        let kept: Vec<usize> = (1..=6)
            .filter(|n| user.contains(&format!("Line {n} begins.")))
            .collect();
        assert_eq!(kept, ((7 - lines)..=6).collect::<Vec<_>>());
        let asked = answer(&shard, &nothing, &[], "Who are you?", PROMPT_BUDGET_TOKENS);
        assert!(tokens(&asked) <= PROMPT_BUDGET_TOKENS, "{}", tokens(&asked));
        assert!(
            asked.messages[1]
                .content
                .ends_with("Question: Who are you?")
        );
    }

    #[tokio::test]
    async fn a_prompt_within_the_budget_is_sent_whole() {
        let shard = long_card(5).await;
        let nothing = Recalled::nothing(shard.mood().clone());
        let turn = act(&shard, &nothing, &[], &frame(), false, PROMPT_BUDGET_TOKENS);
        let unbounded = act(&shard, &nothing, &[], &frame(), false, usize::MAX / 2);
        assert_eq!(turn.messages, unbounded.messages);
        assert_eq!(turn.items, unbounded.items);
        assert_eq!(turn.items.len(), 3 + 6, "three entries, six lines");
        assert!(!turn.messages[3].content.contains('…'));
    }
}
