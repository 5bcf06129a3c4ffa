//! The narrator of open stories. It runs in the world service and sees the whole world
//! — the premise, where everyone is, the scene so far — and makes the two control
//! decisions of a round in one call, once per scene: is the scene over, and what
//! happens next, where. Its answer is JSON checked against a schema (retried once, then
//! a deterministic fallback: the scene goes on, nothing is proposed). What it proposes
//! reaches characters only as a narration event at one location, perceived by those
//! there.

use std::fmt::Write as _;

use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, ResponseSchema, parse_json};
use dramatis_proto::v1::{Event, EventKind, Usage};
use serde::Deserialize;
use serde_json::json;

use crate::scenario::{OpenStory, Scenario};
use crate::story::state::WorldState;

/// Name of the narrator's schema.
pub const NARRATOR_SCHEMA: &str = "narrator_judgement";

/// Lines of the scene the narrator reads at most.
const SCENE_LINES: usize = 12;

/// What the narrator decided.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judgement {
    pub scene_over: bool,
    /// The next round's event: location id and narration.
    pub proposal: Option<(String, String)>,
    pub usage: Usage,
}

#[derive(Debug, Deserialize)]
struct Reply {
    scene_over: bool,
    event: ReplyEvent,
}

#[derive(Debug, Deserialize)]
struct ReplyEvent {
    location: String,
    text: String,
}

/// Asks `model` to judge the scene `scene` (its events so far) and propose the next
/// event. Never fails: unusable output twice means "go on, nothing proposed".
pub async fn judge(
    model: &dyn LanguageModel,
    scenario: &Scenario,
    open: &OpenStory,
    state: &WorldState,
    scene: &[Event],
) -> Judgement {
    let request = request(scenario, open, state, scene);
    let mut judgement = Judgement::default();
    for attempt in 0..2 {
        let temperature = if attempt == 0 { 0.7 } else { 0.2 };
        let completion = match model
            .complete(&request.clone().with_temperature(temperature), None)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "narrator unavailable; the scene goes on");
                return judgement;
            }
        };
        judgement.usage.llm_calls += 1;
        judgement.usage.prompt_tokens += completion.prompt_tokens;
        judgement.usage.completion_tokens += completion.completion_tokens;
        let known = |id: &str| scenario.location(id).is_some();
        if let Some((reply, _)) = parse_json::<Reply>(&completion.text, |r| {
            known(&r.event.location) && !r.event.text.trim().is_empty()
        }) {
            judgement.scene_over = reply.scene_over;
            judgement.proposal = Some((reply.event.location, reply.event.text.trim().to_owned()));
            return judgement;
        }
        tracing::warn!(attempt, output = %completion.text, "unusable narrator output");
    }
    judgement
}

fn request(
    scenario: &Scenario,
    open: &OpenStory,
    state: &WorldState,
    scene: &[Event],
) -> CompletionRequest {
    fn name<'a>(scenario: &'a Scenario, id: &'a str) -> &'a str {
        scenario.character(id).map_or(id, |c| c.name.as_str())
    }
    fn place<'a>(scenario: &'a Scenario, id: &'a str) -> &'a str {
        scenario.location(id).map_or(id, |l| l.name.as_str())
    }
    let mut user = format!("Premise: {}\nWhere everyone is:", open.premise.trim());
    for c in &scenario.characters {
        if let Some(at) = state.locations.get(&c.id) {
            let _ = write!(user, "\n- {} at {} ({at})", c.name, place(scenario, at));
        } else if let Some((to, _)) = state.travelling.get(&c.id) {
            let _ = write!(
                user,
                "\n- {} on the road to {}",
                c.name,
                place(scenario, to)
            );
        }
    }
    let _ = write!(
        user,
        "\nScene {} at {}:",
        state.scene + 1,
        place(scenario, &state.scene_location)
    );
    let lines: Vec<String> = scene
        .iter()
        .filter(|e| {
            matches!(
                e.kind(),
                EventKind::Speech | EventKind::Action | EventKind::Movement | EventKind::Narration
            )
        })
        .map(|e| {
            if e.speaker.is_empty() {
                e.text.clone()
            } else {
                format!("{}: {}", name(scenario, &e.speaker), e.text)
            }
        })
        .collect();
    for line in &lines[lines.len().saturating_sub(SCENE_LINES)..] {
        let _ = write!(user, "\n- {line}");
    }
    let ids: Vec<&str> = scenario.locations.iter().map(|l| l.id.as_str()).collect();
    let schema = json!({
        "type": "object",
        "properties": {
            "scene_over": {"type": "boolean"},
            "event": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "enum": ids},
                    "text": {"type": "string", "minLength": 1, "maxLength": 240}
                },
                "required": ["location", "text"]
            }
        },
        "required": ["scene_over", "event"]
    });
    CompletionRequest::new(vec![
        ChatMessage::system(
            "You are the narrator of an open story and see the whole world. Decide whether \
             the current scene has run its course, and propose the next event: something that \
             happens at one location, in one or two sentences, that moves the story along its \
             premise. Reply with JSON.",
        ),
        ChatMessage::user(user),
    ])
    .with_max_tokens(120)
    .with_schema(ResponseSchema {
        name: NARRATOR_SCHEMA.into(),
        schema,
    })
}
