//! The narrator of open stories. It runs in the world service and sees the whole world
//! — the premise, where everyone is, the scene so far — and makes the two control
//! decisions of a round in one call, once per scene: is the scene over, and what
//! happens next, where. Its answer is JSON checked against a schema (retried once, then
//! a deterministic fallback: the scene goes on, nothing is proposed). What it proposes
//! reaches characters only as a narration event at one location, perceived by those
//! there.

use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, ResponseSchema, parse_json};
use dramatis_proto::v1::{Event, EventKind, Usage};
use serde::Deserialize;
use serde_json::json;

use std::sync::Arc;

use crate::hub::TranscriptHub;
use dramatis_scenario::{OpenStory, Scenario};
use dramatis_story::attention::Cast;
use dramatis_story::scheduler::Verdict;
use dramatis_story::state::WorldState;

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
    let mut user = format!("Premise: {}\nWhere people are:", open.premise.trim());
    let shown = places_shown(scenario, state);
    for (at, people) in &shown.places {
        let names = if *at == state.scene_location {
            scene_names(scenario, state, people)
        } else {
            some_names(scenario, people)
        };
        dramatis_runtime::push!(user, "\n- {} ({at}): {names}", place(scenario, at));
    }
    if shown.other_places > 0 {
        dramatis_runtime::push!(
            user,
            "\n- and {} more people in {} other places",
            shown.other_people,
            shown.other_places
        );
    }
    if !state.travelling.is_empty() {
        let travellers: Vec<&str> = state.travelling.keys().map(String::as_str).collect();
        dramatis_runtime::push!(
            user,
            "\n- on the road: {}",
            some_names(scenario, &travellers)
        );
    }
    dramatis_runtime::push!(
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
        dramatis_runtime::push!(user, "\n- {line}");
    }
    // The next event happens at a place the narrator was shown.
    let ids: Vec<&str> = shown.places.iter().map(|(at, _)| *at).collect();
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

/// Places the narrator's prompt lists (the scene's first, then the most crowded), so
/// that its length does not grow with the cast: a thousand-character world fits the
/// built-in model's context as a four-character one does.
const PLACES_SHOWN: usize = 12;

/// Names the prompt lists per place (the rest are counted).
const NAMES_SHOWN: usize = 6;

/// The places the narrator's prompt lists, with who is there, and what it only counts.
struct Shown<'a> {
    places: Vec<(&'a str, Vec<&'a str>)>,
    other_places: usize,
    other_people: usize,
}

/// The scene's place, then the other occupied places by crowd (ties by id), up to
/// [`PLACES_SHOWN`].
fn places_shown<'a>(scenario: &'a Scenario, state: &'a WorldState) -> Shown<'a> {
    let mut by_place: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for c in &scenario.characters {
        if let Some(at) = state.locations.get(&c.id) {
            by_place.entry(at.as_str()).or_default().push(c.id.as_str());
        }
    }
    let scene = state.scene_location.as_str();
    let here = by_place.remove(scene).unwrap_or_default();
    let mut others: Vec<(&str, Vec<&str>)> = by_place.into_iter().collect();
    others.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let mut places = Vec::with_capacity(PLACES_SHOWN);
    if scenario.location(scene).is_some() {
        places.push((scene, here));
    }
    let room = PLACES_SHOWN.saturating_sub(places.len());
    let hidden = others.split_off(room.min(others.len()));
    places.extend(others);
    Shown {
        places,
        other_places: hidden.len(),
        other_people: hidden.iter().map(|(_, people)| people.len()).sum(),
    }
}

/// The people at the scene's place as the narrator attends to them: at most the
/// scenario's attention, the scene's latest speakers first, then by the cast list; and
/// how many more.
fn scene_names(scenario: &Scenario, state: &WorldState, people: &[&str]) -> String {
    if people.is_empty() {
        return "nobody".to_owned();
    }
    let position = |id: &str| scenario.position(id);
    let cast = Cast {
        position: &position,
        knows: &|_: &str| false,
    };
    let listed = state
        .attention
        .rank("", people, &[], &cast, scenario.attention_limit());
    let names: Vec<&str> = listed.named.iter().map(|id| scenario.name_of(id)).collect();
    match listed.more {
        0 => names.join(", "),
        more => format!("{} and {more} more", names.join(", ")),
    }
}

/// Up to [`NAMES_SHOWN`] names of `people`, and how many more.
fn some_names(scenario: &Scenario, people: &[&str]) -> String {
    if people.is_empty() {
        return "nobody".to_owned();
    }
    let names: Vec<&str> = people
        .iter()
        .take(NAMES_SHOWN)
        .map(|id| scenario.character(id).map_or(*id, |c| c.name.as_str()))
        .collect();
    match people.len().saturating_sub(NAMES_SHOWN) {
        0 => names.join(", "),
        more => format!("{} and {more} more", names.join(", ")),
    }
}

/// What the narrator decided that no event records yet. Kept in the log beside the
/// events (written at each judgement), so a restart neither loses the proposed event
/// nor tells it twice.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct NarratorNotes {
    /// The round whose scene was judged.
    pub judged: Option<usize>,
    /// Whether that judgement ended the scene (kept with the judgement, so a restart
    /// between it and the scene's end closes the scene as the judgement said).
    #[serde(default)]
    pub over: bool,
    /// The event proposed for the next round: location and text.
    pub proposal: Option<(String, String)>,
    /// Narrator usage not yet attached to an event.
    #[serde(with = "usage_figures")]
    pub usage: Option<Usage>,
    /// The sequence number the next event had when these notes were made.
    pub at_seq: u64,
}

impl NarratorNotes {
    /// What the narrator made of round `scene`'s scene.
    pub(super) fn verdict(&self, scene: usize) -> Verdict {
        match (self.judged == Some(scene), self.over) {
            (false, _) => Verdict::Unjudged,
            (true, false) => Verdict::GoOn,
            (true, true) => Verdict::Over,
        }
    }

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

/// The narrator of open stories. It is world-side: it sees the whole world, and what
/// it says reaches characters only as events at a location. Its notes (the scene it
/// judged last, the next round's proposal, what judging cost) are logged beside the
/// world's events.
pub(super) struct Narrator {
    model: Option<Arc<dyn LanguageModel>>,
    notes: std::sync::Mutex<NarratorNotes>,
}

impl Narrator {
    pub fn new(model: Option<Arc<dyn LanguageModel>>, notes: NarratorNotes) -> Self {
        Self {
            model,
            notes: std::sync::Mutex::new(notes),
        }
    }

    pub fn notes(&self) -> std::sync::MutexGuard<'_, NarratorNotes> {
        dramatis_runtime::lock(&self.notes)
    }

    /// The narrator's judgement of the scene running, with the next round's event.
    pub async fn judge_scene(
        &self,
        scenario: &Scenario,
        hub: &TranscriptHub,
        state: &WorldState,
    ) -> Judgement {
        let Some(model) = &self.model else {
            return Judgement::default();
        };
        let Some(open) = &scenario.open else {
            return Judgement::default();
        };
        let scene = hub.scene_events(&state.scene_id);
        judge(model.as_ref(), scenario, open, state, &scene).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An open story of `districts` copies of four places with two people each.
    fn crowd(districts: usize) -> Scenario {
        let mut text = String::from(
            "version = 1\nname = \"crowd\"\ntitle = \"Crowd\"\n[world]\ndescription = \"A town.\"\n\
             [open]\npremise = \"Everyone wants the ledger.\"\nopening = \"Fog.\"\n\
             opening_location = \"p0-0\"\nrounds = 3\n",
        );
        for d in 0..districts {
            for p in 0..4 {
                dramatis_runtime::push!(
                    text,
                    "[[locations]]\nid = \"p{d}-{p}\"\nname = \"Place {d} {p}\"\ndescription = \"A place.\"\n"
                );
                if p > 0 {
                    dramatis_runtime::push!(
                        text,
                        "[[paths]]\nfrom = \"p{d}-{}\"\nto = \"p{d}-{p}\"\ndistance = 1\n",
                        p - 1
                    );
                }
                for k in 0..2 {
                    dramatis_runtime::push!(
                        text,
                        "[[characters]]\nid = \"c{d}-{p}-{k}\"\nname = \"Person {d} {p} {k}\"\n\
                         profile = \"Someone.\"\nlocation = \"p{d}-{p}\"\n"
                    );
                }
            }
            if d > 0 {
                dramatis_runtime::push!(
                    text,
                    "[[paths]]\nfrom = \"p{}-0\"\nto = \"p{d}-0\"\ndistance = 1\n",
                    d - 1
                );
            }
        }
        Scenario::parse(&text, std::path::Path::new("crowd.toml")).expect("valid")
    }

    fn prompt_and_places(scenario: &Scenario) -> (String, Vec<String>) {
        let open = scenario.open.as_ref().expect("open");
        let state = WorldState::initial(scenario);
        let request = request(scenario, open, &state, &[]);
        let schema = &request.schema.as_ref().expect("schema").schema;
        let places = schema["properties"]["event"]["properties"]["location"]["enum"]
            .as_array()
            .expect("enum")
            .iter()
            .map(|v| v.as_str().expect("id").to_owned())
            .collect();
        (request.prompt_text(), places)
    }

    #[test]
    fn a_small_world_is_shown_whole() {
        let (prompt, places) = prompt_and_places(&crowd(2));
        assert_eq!(places.len(), 8, "{places:?}");
        assert_eq!(places[0], "p0-0", "the scene's place first");
        for d in 0..2 {
            for p in 0..4 {
                assert!(prompt.contains(&format!("Person {d} {p} 1")), "{prompt}");
            }
        }
        assert!(!prompt.contains("other places"));
    }

    #[test]
    fn a_thousand_people_make_a_prompt_no_longer_than_a_hundred() {
        let (small, _) = prompt_and_places(&crowd(13));
        let (large, places) = prompt_and_places(&crowd(125));
        assert_eq!(places.len(), PLACES_SHOWN);
        assert_eq!(places[0], "p0-0");
        assert!(
            large.contains("and 976 more people in 488 other places"),
            "{large}"
        );
        assert!(
            large.len() <= small.len() + 16,
            "{} bytes for 1,000 people, {} for 104",
            large.len(),
            small.len()
        );
    }
}
