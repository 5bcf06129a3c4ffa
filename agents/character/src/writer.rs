//! The write path (ReverieMem §3.3, run as the story goes instead of offline): when a
//! scene the character lived through ends, its draft — only the events it perceived —
//! becomes a first-person episodic memory, SPOCV facts whose visibility is exactly the
//! characters who perceived each event, and emotion-transition entries for its own
//! utterances. Everything is embedded in one batch.
//!
//! The episodic memory is written by the character model when the agent is configured
//! with a capable one, in the same call that extracts extra facts with their causes;
//! otherwise it is a deterministic first-person digest, which costs no call at all.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use dramatis_embed::Embedder;
use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, ResponseSchema};
use dramatis_memory::{EmotionTransition, EpisodicMemory, Fact, VisibilityRoute};
use dramatis_proto::v1::Usage;
use serde::Deserialize;
use serde_json::json;

use crate::AgentError;
use crate::action::parse_json;
use crate::shard::{Perceived, PerceivedKind, SceneDraft, WrittenScene};

/// Name of the scene-memory schema.
pub const SCENE_MEMORY_SCHEMA: &str = "scene_memory";

/// Words a deterministic digest keeps at most.
const DIGEST_WORDS: usize = 110;

/// Who is writing: the character's id and display name.
#[derive(Debug, Clone, Copy)]
pub struct Writer<'a> {
    pub id: &'a str,
    pub name: &'a str,
}

/// A model-written scene memory.
#[derive(Debug, Deserialize)]
struct ModelMemory {
    summary: String,
    #[serde(default)]
    facts: Vec<ModelFact>,
}

#[derive(Debug, Deserialize)]
struct ModelFact {
    line: usize,
    subject: String,
    predicate: String,
    object: String,
    #[serde(default)]
    cause: String,
}

/// Writes a scene; `model` is used only when given. Returns the written scene, the
/// prompt sent (for the audit) and the model's usage.
pub async fn write_scene(
    writer: Writer<'_>,
    draft: &SceneDraft,
    model: Option<&dyn LanguageModel>,
    embedder: &dyn Embedder,
) -> Result<(WrittenScene, Option<String>, Usage), AgentError> {
    let mut facts = event_facts(writer, &draft.events);
    let mut summary = None;
    let mut prompt_text = None;
    let mut usage = Usage::default();
    if let Some(model) = model {
        let request = scene_request(writer, draft);
        prompt_text = Some(request.prompt_text());
        let completion = model.complete(&request, None).await?;
        usage.llm_calls = 1;
        usage.prompt_tokens = completion.prompt_tokens;
        usage.completion_tokens = completion.completion_tokens;
        if let Some((memory, _)) =
            parse_json::<ModelMemory>(&completion.text, |m| !m.summary.trim().is_empty())
        {
            summary = Some(memory.summary.trim().to_owned());
            facts.extend(model_facts(writer, &draft.events, memory.facts));
        } else {
            tracing::warn!(
                character = writer.id,
                "unusable scene memory; using the digest"
            );
        }
    }
    let summary = summary.unwrap_or_else(|| digest(writer, draft));
    let transitions: Vec<EmotionTransition> = draft
        .moments
        .iter()
        .map(|m| EmotionTransition {
            emotion: m.emotion.clone(),
            intensity: m.intensity,
            trigger: m.trigger.clone(),
            intent: m.intent.clone(),
            seq: m.seq,
            trigger_vector: Vec::new(),
        })
        .collect();
    let mut texts = vec![summary.clone()];
    texts.extend(facts.iter().map(|f| f.text.clone()));
    texts.extend(transitions.iter().map(|t| t.trigger.clone()));
    let mut vectors = embedder.embed(&texts).await?.into_iter();
    let episode = (
        EpisodicMemory {
            id: format!("episode:{}", draft.scene_id),
            scene_id: draft.scene_id.clone(),
            text: summary,
        },
        vectors.next().unwrap_or_default(),
    );
    let facts = facts
        .into_iter()
        .map(|f| (f, vectors.next().unwrap_or_default()))
        .collect();
    let transitions = transitions
        .into_iter()
        .map(|mut t| {
            t.trigger_vector = vectors.next().unwrap_or_default();
            t
        })
        .collect();
    Ok((
        WrittenScene {
            episode,
            facts,
            transitions,
        },
        prompt_text,
        usage,
    ))
}

fn visibility(event: &Perceived) -> BTreeSet<String> {
    event.perceivers.iter().cloned().collect()
}

fn route(writer: Writer<'_>, event: &Perceived) -> VisibilityRoute {
    if event.speaker == writer.id || event.target == writer.id {
        VisibilityRoute::DirectExperience
    } else {
        VisibilityRoute::Observation
    }
}

/// One SPOCV fact per perceived speech, action or movement, visible to exactly the
/// characters who perceived it.
fn event_facts(writer: Writer<'_>, events: &[Perceived]) -> Vec<Fact> {
    events
        .iter()
        .filter_map(|event| {
            let (predicate, text) = match event.kind {
                PerceivedKind::Speech if event.target.is_empty() => (
                    "said".to_owned(),
                    format!("{} said: \"{}\"", event.speaker_name, event.text),
                ),
                PerceivedKind::Speech => (
                    format!("said to {}", event.target_name),
                    format!(
                        "{} said to {}: \"{}\"",
                        event.speaker_name, event.target_name, event.text
                    ),
                ),
                PerceivedKind::Action | PerceivedKind::Movement => {
                    ("did".to_owned(), deed(&event.speaker_name, &event.text))
                }
                PerceivedKind::Narration => ("saw".to_owned(), event.text.clone()),
                PerceivedKind::SceneStart | PerceivedKind::SceneEnd => return None,
            };
            let subject = if event.kind == PerceivedKind::Narration {
                writer.name.to_owned()
            } else {
                event.speaker_name.clone()
            };
            Some(Fact {
                id: format!("fact:e{}", event.seq),
                subject,
                predicate,
                object: event.text.clone(),
                cause: String::new(),
                visibility: visibility(event),
                route: route(writer, event),
                text,
            })
        })
        .collect()
}

/// An action as a sentence: the world usually writes "Holmes goes to …"; a bare
/// "pricks his finger" gets its doer in front.
fn deed(doer: &str, text: &str) -> String {
    if text.starts_with(doer) {
        text.to_owned()
    } else {
        format!("{doer} {text}")
    }
}

/// Facts the model extracted, each tied to the numbered line it cites: a fact citing no
/// line the character perceived is dropped.
fn model_facts(writer: Writer<'_>, events: &[Perceived], facts: Vec<ModelFact>) -> Vec<Fact> {
    let lines = numbered(writer, events);
    facts
        .into_iter()
        .filter_map(|f| {
            let event = lines.get(f.line.checked_sub(1)?)?.0;
            let clean = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
            let (subject, predicate, object) =
                (clean(&f.subject), clean(&f.predicate), clean(&f.object));
            if subject.is_empty() || predicate.is_empty() || object.is_empty() {
                return None;
            }
            let cause = clean(&f.cause);
            let mut text = format!("{subject} {predicate} {object}");
            if !cause.is_empty() {
                let _ = write!(text, " because {cause}");
            }
            Some(Fact {
                id: format!("fact:e{}:{}", event.seq, f.line),
                subject,
                predicate,
                object,
                cause,
                visibility: visibility(event),
                route: route(writer, event),
                text,
            })
        })
        .collect()
}

/// The scene's lines as the model sees them: numbered, in the character's terms.
fn numbered<'e>(writer: Writer<'_>, events: &'e [Perceived]) -> Vec<(&'e Perceived, String)> {
    events
        .iter()
        .filter_map(|e| e.line(writer.id).map(|line| (e, line)))
        .collect()
}

fn scene_request(writer: Writer<'_>, draft: &SceneDraft) -> CompletionRequest {
    let mut lines = String::new();
    for (i, (_, line)) in numbered(writer, &draft.events).iter().enumerate() {
        let _ = writeln!(lines, "{}. {line}", i + 1);
    }
    for moment in &draft.moments {
        let _ = writeln!(
            lines,
            "(You felt {} when you spoke; you wanted to {}.)",
            moment.emotion, moment.intent
        );
    }
    let system = format!(
        "You are {name}. Write your memory of the scene below in the first person, in two \
         to four sentences: what you did, felt, saw and concluded. Then list up to three \
         facts you learned, each with the number of the line it comes from and its cause \
         if the scene gives one. Reply with JSON.",
        name = writer.name
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string", "minLength": 1, "maxLength": 600},
            "facts": {
                "type": "array",
                "maxItems": 3,
                "items": {
                    "type": "object",
                    "properties": {
                        "line": {"type": "integer", "minimum": 1},
                        "subject": {"type": "string", "maxLength": 40},
                        "predicate": {"type": "string", "maxLength": 40},
                        "object": {"type": "string", "maxLength": 80},
                        "cause": {"type": "string", "maxLength": 80}
                    },
                    "required": ["line", "subject", "predicate", "object", "cause"]
                }
            }
        },
        "required": ["summary", "facts"]
    });
    CompletionRequest::new(vec![ChatMessage::system(system), ChatMessage::user(lines)])
        .with_max_tokens(220)
        .with_temperature(0.3)
        .with_schema(ResponseSchema {
            name: SCENE_MEMORY_SCHEMA.into(),
            schema,
        })
}

/// A first-person digest of the scene: who was there, what the character said and
/// did, what was said to it, then what else it saw, within [`DIGEST_WORDS`], in story
/// order; and how it felt.
#[must_use]
pub fn digest(writer: Writer<'_>, draft: &SceneDraft) -> String {
    let me = writer.id;
    let mut text = String::new();
    if let Some(start) = draft
        .events
        .iter()
        .find(|e| e.kind == PerceivedKind::SceneStart)
    {
        let _ = write!(text, "{}.", start.text.trim_end_matches('.'));
    }
    let mut others: Vec<&str> = draft
        .events
        .iter()
        .flat_map(|e| e.perceivers.iter())
        .filter(|p| p.as_str() != me)
        .map(String::as_str)
        .collect();
    others.sort_unstable();
    others.dedup();
    let names: Vec<&str> = others
        .iter()
        .map(|id| draft.names.get(*id).map_or(*id, String::as_str))
        .collect();
    if !names.is_empty() {
        let _ = write!(text, " I was with {}.", names.join(", "));
    }
    let sentences: Vec<(u8, String)> = draft
        .events
        .iter()
        .filter_map(|e| first_person(me, e))
        .collect();
    let mut budget = DIGEST_WORDS.saturating_sub(text.split_whitespace().count());
    let mut keep = vec![false; sentences.len()];
    for priority in [2, 1] {
        for (i, (p, sentence)) in sentences.iter().enumerate() {
            let words = sentence.split_whitespace().count();
            if *p == priority && words <= budget {
                keep[i] = true;
                budget -= words;
            }
        }
    }
    for ((_, sentence), kept) in sentences.iter().zip(keep) {
        if kept {
            let _ = write!(text, " {sentence}");
            if !sentence.ends_with(['.', '!', '?', '"', '…']) {
                text.push('.');
            }
        }
    }
    if let Some(feeling) = draft
        .moments
        .iter()
        .max_by(|a, b| a.intensity.total_cmp(&b.intensity))
    {
        let _ = write!(text, " I felt {}", feeling.emotion);
        if !feeling.intent.is_empty() {
            let _ = write!(
                text,
                "; I wanted to {}",
                feeling.intent.trim_end_matches('.')
            );
        }
        text.push('.');
    }
    text.trim().to_owned()
}

/// An event in the first person, with its priority (2: the character's own or aimed at
/// it; 1: something it witnessed).
fn first_person(me: &str, e: &Perceived) -> Option<(u8, String)> {
    let mine = e.speaker == me;
    let to_me = e.target == me;
    let who = if mine { "I" } else { e.speaker_name.as_str() };
    let to = if to_me {
        " to me".to_owned()
    } else if e.target.is_empty() {
        String::new()
    } else {
        format!(" to {}", e.target_name)
    };
    let sentence = match e.kind {
        PerceivedKind::Speech => format!("{who} said{to}: \"{}\"", e.text),
        PerceivedKind::Action | PerceivedKind::Movement => deed(who, &e.text),
        PerceivedKind::Narration => e.text.clone(),
        PerceivedKind::SceneStart | PerceivedKind::SceneEnd => return None,
    };
    Some((if mine || to_me { 2 } else { 1 }, sentence))
}

#[cfg(test)]
mod tests {
    use dramatis_embed::FakeEmbedder;
    use dramatis_llm::{ScriptRule, ScriptedModel};

    use std::collections::BTreeMap;

    use super::*;
    use crate::shard::Moment;

    fn perceived(
        seq: u64,
        kind: PerceivedKind,
        speaker: &str,
        target: &str,
        text: &str,
    ) -> Perceived {
        let name = |id: &str| match id {
            "holmes" => "Holmes".to_owned(),
            "watson" => "Watson".to_owned(),
            other => other.to_owned(),
        };
        Perceived {
            seq,
            scene_id: "lab".into(),
            kind,
            speaker: speaker.into(),
            speaker_name: name(speaker),
            target: target.into(),
            target_name: name(target),
            text: text.into(),
            thought: String::new(),
            perceivers: vec!["holmes".into(), "watson".into()],
        }
    }

    fn draft() -> SceneDraft {
        SceneDraft {
            scene_id: "lab".into(),
            events: vec![
                perceived(
                    1,
                    PerceivedKind::SceneStart,
                    "",
                    "",
                    "The laboratory at Bart's",
                ),
                perceived(
                    2,
                    PerceivedKind::Speech,
                    "holmes",
                    "watson",
                    "You have been in Afghanistan.",
                ),
                perceived(
                    3,
                    PerceivedKind::Speech,
                    "watson",
                    "holmes",
                    "How on earth did you know?",
                ),
                perceived(4, PerceivedKind::Action, "holmes", "", "pricks his finger"),
                perceived(5, PerceivedKind::SceneEnd, "", "", ""),
            ],
            moments: vec![Moment {
                seq: 3,
                emotion: "surprise".into(),
                intensity: 1.0,
                intent: "learn how".into(),
                trigger: "You have been in Afghanistan.".into(),
            }],
            names: BTreeMap::from([("holmes".to_owned(), "Holmes".to_owned())]),
        }
    }

    const WATSON: Writer<'static> = Writer {
        id: "watson",
        name: "Watson",
    };

    #[test]
    fn the_digest_is_first_person_and_in_story_order() {
        assert_eq!(
            digest(WATSON, &draft()),
            "The laboratory at Bart's. I was with Holmes. Holmes said to me: \"You have been \
             in Afghanistan.\" I said to Holmes: \"How on earth did you know?\" Holmes pricks \
             his finger. I felt surprise; I wanted to learn how."
        );
    }

    #[tokio::test]
    async fn facts_carry_the_perceivers_and_the_route() {
        let (written, prompt, usage) = write_scene(WATSON, &draft(), None, &FakeEmbedder::new(8))
            .await
            .expect("written");
        assert!(prompt.is_none());
        assert_eq!(usage.llm_calls, 0);
        let facts: Vec<(&str, VisibilityRoute)> = written
            .facts
            .iter()
            .map(|(f, _)| (f.id.as_str(), f.route))
            .collect();
        assert_eq!(
            facts,
            [
                ("fact:e2", VisibilityRoute::DirectExperience),
                ("fact:e3", VisibilityRoute::DirectExperience),
                ("fact:e4", VisibilityRoute::Observation)
            ]
        );
        assert!(written.facts.iter().all(|(f, v)| {
            f.visibility == BTreeSet::from(["holmes".to_owned(), "watson".to_owned()])
                && v.len() == 8
        }));
        assert_eq!(written.transitions.len(), 1);
        assert_eq!(written.transitions[0].trigger_vector.len(), 8);
        assert_eq!(written.episode.0.id, "episode:lab");
    }

    #[tokio::test]
    async fn a_model_writes_the_memory_and_facts_citing_perceived_lines_only() {
        let model = ScriptedModel::new(vec![ScriptRule {
            when: vec!["first person".into()],
            reply: r#"{"summary":"I met a remarkable man.","facts":[
                {"line":2,"subject":"Holmes","predicate":"knew","object":"my service","cause":"my tan"},
                {"line":99,"subject":"x","predicate":"y","object":"z","cause":""}]}"#
                .into(),
        }]);
        let (written, prompt, usage) =
            write_scene(WATSON, &draft(), Some(&model), &FakeEmbedder::new(8))
                .await
                .expect("written");
        assert_eq!(written.episode.0.text, "I met a remarkable man.");
        assert!(prompt.expect("prompt").contains("2. Holmes (to you)"));
        assert_eq!(usage.llm_calls, 1);
        let model_fact = written
            .facts
            .iter()
            .find(|(f, _)| f.cause == "my tan")
            .expect("model fact kept");
        assert_eq!(model_fact.0.text, "Holmes knew my service because my tan");
        assert_eq!(written.facts.len(), 4, "three event facts + one cited fact");
    }
}
