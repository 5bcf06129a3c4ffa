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

use super::World;
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
        judgement
            .usage
            .count_call(completion.prompt_tokens, completion.completion_tokens);
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

/// What the narrator decided that no event records yet. Kept in the log beside the
/// events (written at each judgement), so a restart neither loses the proposed event
/// nor tells it twice.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct NarratorNotes {
    /// The round whose scene was judged.
    pub judged: Option<usize>,
    /// The event proposed for the next round: location and text.
    pub proposal: Option<(String, String)>,
    /// Narrator usage not yet attached to an event.
    #[serde(with = "usage_figures")]
    pub usage: Option<Usage>,
    /// The sequence number the next event had when these notes were made.
    pub at_seq: u64,
}

impl NarratorNotes {
    /// The notes as they stand after `history` (the world's logged events): a proposal
    /// already told, or usage already attached to a later event, is spent.
    pub(super) fn after(mut self, history: &[Event]) -> Self {
        let later: Vec<&Event> = history.iter().filter(|e| e.seq >= self.at_seq).collect();
        if !later.is_empty() {
            self.usage = None;
        }
        if let Some((at, text)) = &self.proposal
            && later
                .iter()
                .any(|e| e.kind() == EventKind::Narration && e.location == *at && e.text == *text)
        {
            self.proposal = None;
        }
        self
    }
}

/// `Usage` (a wire type) in the notes: calls and tokens only.
mod usage_figures {
    use dramatis_proto::v1::Usage;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(usage: &Option<Usage>, out: S) -> Result<S::Ok, S::Error> {
        usage
            .as_ref()
            .map(|u| (u.llm_calls, u.prompt_tokens, u.completion_tokens))
            .serialize(out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(input: D) -> Result<Option<Usage>, D::Error> {
        Ok(
            Option::<(u32, u32, u32)>::deserialize(input)?.map(|(calls, prompt, completion)| {
                Usage {
                    llm_calls: calls,
                    prompt_tokens: prompt,
                    completion_tokens: completion,
                    latency_ms: 0,
                }
            }),
        )
    }
}

impl World {
    pub(super) fn notes(&self) -> std::sync::MutexGuard<'_, NarratorNotes> {
        dramatis_runtime::lock(&self.notes)
    }

    /// The narrator's judgement of the scene running, with the next round's event.
    pub(super) async fn judge_scene(&self, state: &WorldState) -> Judgement {
        let Some(model) = &self.narrator else {
            return Judgement::default();
        };
        let Some(open) = &self.scenario.open else {
            return Judgement::default();
        };
        let scene: Vec<Event> = self
            .hub
            .events_from(1)
            .into_iter()
            .filter(|e| e.scene_id == state.scene_id)
            .collect();
        judge(model.as_ref(), &self.scenario, open, state, &scene).await
    }
}
