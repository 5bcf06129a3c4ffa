//! The write path (ReverieMem §3.3, run as the story goes instead of offline): when a
//! scene the character lived through ends, its draft — only the events it perceived —
//! becomes a first-person episodic memory, SPOCV facts whose visibility is exactly the
//! characters who perceived each event, and emotion-transition entries for its own
//! utterances. Everything is embedded in one batch.
//!
//! The episodic memory is first a deterministic first-person digest, which costs no
//! call. When the agent is configured with a capable model, the model rewrites the
//! digest in the character's voice as soon as the scene ends, and extracts extra facts
//! with their causes: one call per scene, whose prompt holds that scene's lines only.
//! Scenes are never batched into one call, because the memory of the first would then be
//! written with the later ones in view (hindsight the character did not have).

use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::json;

use crate::modules::{Call, Mind, MindError};
use crate::{EmotionTransition, EpisodicMemory, Fact, VisibilityRoute};

use super::{
    Joint, PERCEIVED, Perceived, PerceivedKind, Phrase, Rewritten, SceneDraft, WrittenScene,
};

/// Name of the scene-memory schema.
pub const SCENE_MEMORY_SCHEMA: &str = "scene_memory";

/// Words a deterministic digest keeps at most.
const DIGEST_WORDS: usize = 110;

/// Whose memories are written: the character's id and display name.
#[derive(Debug, Clone, Copy)]
pub struct Author<'a> {
    pub id: &'a str,
    pub name: &'a str,
}

/// The model-written memory of one scene.
#[derive(Debug, Deserialize)]
struct ModelMemory {
    #[serde(default)]
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

/// Writes a scene without a model: the digest, one fact per perceived event, the
/// emotion-transition entries, embedded in one batch.
pub async fn write_scene(
    writer: Author<'_>,
    draft: &SceneDraft,
    mind: &dyn Mind,
) -> Result<WrittenScene, MindError> {
    let facts = event_facts(writer, &draft.events);
    let (summary, summary_pieces) = digest_in_pieces(writer, draft);
    let transitions: Vec<EmotionTransition> = draft
        .moments
        .iter()
        .map(|m| EmotionTransition {
            emotion: m.felt.emotion.clone(),
            intensity: m.felt.intensity,
            trigger: m.felt.trigger.clone(),
            intent: m.felt.intent.clone(),
            seq: m.seq,
            trigger_vector: Vec::new(),
        })
        .collect();
    // Composed from pieces: a line's words are shared with everyone in this process who
    // perceived it, so most of them are embedded already.
    let mut texts = vec![summary_pieces];
    texts.extend(facts.iter().map(|(_, phrase)| phrase.pieces()));
    texts.extend(draft.moments.iter().map(|m| {
        if m.felt.trigger_pieces.is_empty() {
            vec![m.felt.trigger.clone()]
        } else {
            m.felt.trigger_pieces.clone()
        }
    }));
    let mut vectors = mind.compose(&texts).await?.into_iter();
    let episode = (
        EpisodicMemory {
            id: episode_id(&draft.scene_id),
            scene_id: draft.scene_id.clone(),
            text: summary,
        },
        vectors.next().unwrap_or_default(),
    );
    let facts = facts
        .into_iter()
        .map(|(f, _)| (f, vectors.next().unwrap_or_default()))
        .collect();
    let transitions = transitions
        .into_iter()
        .map(|mut t| {
            t.trigger_vector = vectors.next().unwrap_or_default();
            t
        })
        .collect();
    Ok(WrittenScene {
        episode,
        facts,
        transitions,
    })
}

/// Id of the episodic memory of a scene.
#[must_use]
pub fn episode_id(scene_id: &str) -> String {
    format!("episode:{scene_id}")
}

/// One model call rewrites the memory of the scene `draft` (just ended) in the
/// character's voice and adds facts with causes. The prompt holds only that scene's
/// lines, so nothing the character lived through later colours it; the mind audits it
/// with those lines. Output it cannot use leaves the digest in place.
pub async fn rewrite_scene(
    writer: Author<'_>,
    draft: &SceneDraft,
    mind: &dyn Mind,
) -> Result<Rewritten, MindError> {
    let (call, lines) = rewrite_call(writer, draft);
    let replied = mind.call(call).await?;
    let mut out = Rewritten {
        spent: replied.spent,
        ..Rewritten::default()
    };
    let Some(reply) = replied
        .value
        .and_then(|v| serde_json::from_value::<ModelMemory>(v).ok())
    else {
        tracing::warn!(
            character = writer.id,
            scene = %draft.scene_id,
            "unusable scene memory; keeping the digest"
        );
        return Ok(out);
    };
    let episode = Some(reply.summary.trim())
        .filter(|summary| !summary.is_empty())
        .map(|summary| EpisodicMemory {
            id: episode_id(&draft.scene_id),
            scene_id: draft.scene_id.clone(),
            text: summary.to_owned(),
        });
    let facts = model_facts(writer, &lines, reply.facts);
    let mut texts: Vec<String> = episode.iter().map(|e| e.text.clone()).collect();
    texts.extend(facts.iter().map(|f| f.text.clone()));
    let mut vectors = mind.try_embed(&texts).await?.into_iter();
    out.episode = episode.map(|e| (e, vectors.next().unwrap_or_default()));
    out.facts = facts
        .into_iter()
        .map(|f| (f, vectors.next().unwrap_or_default()))
        .collect();
    Ok(out)
}

fn visibility(event: &Perceived) -> BTreeSet<String> {
    event.perceivers.iter().cloned().collect()
}

fn route(writer: Author<'_>, event: &Perceived) -> VisibilityRoute {
    if event.speaker == writer.id || event.target == writer.id {
        VisibilityRoute::DirectExperience
    } else {
        VisibilityRoute::Observation
    }
}

/// One SPOCV fact per perceived speech, action or movement, visible to exactly the
/// characters who perceived it, with the phrase its text and vector come from. A
/// scene's start is not among them: the place was written when the character arrived
/// ([`arrival_facts`]).
fn event_facts(writer: Author<'_>, events: &[Perceived]) -> Vec<(Fact, Phrase)> {
    events
        .iter()
        .filter(|event| event.kind != PerceivedKind::SceneStart)
        .filter_map(|event| event_fact(writer, event))
        .collect()
}

/// The place of each scene start in `events` that describes it, as a fact the
/// character holds from the moment it arrives (not when the scene ends, so it can say
/// where it stands while it stands there), embedded in one batch.
pub async fn arrival_facts(
    writer: Author<'_>,
    events: &[Perceived],
    mind: &dyn Mind,
) -> Result<Vec<(Fact, Vec<f32>)>, MindError> {
    let facts: Vec<(Fact, Phrase)> = events
        .iter()
        .filter(|event| event.kind == PerceivedKind::SceneStart)
        .filter_map(|event| event_fact(writer, event))
        .collect();
    if facts.is_empty() {
        return Ok(Vec::new());
    }
    let texts: Vec<Vec<String>> = facts.iter().map(|(_, phrase)| phrase.pieces()).collect();
    let vectors = mind.compose(&texts).await?;
    Ok(facts
        .into_iter()
        .zip(vectors)
        .map(|((fact, _), vector)| (fact, vector))
        .collect())
}

/// The SPOCV fact of one perceived event, with its phrase; `None` for a scene's end and
/// a start that does not describe its place.
fn event_fact(writer: Author<'_>, event: &Perceived) -> Option<(Fact, Phrase)> {
    let (predicate, phrase) = match event.kind {
        PerceivedKind::Speech if event.target.is_empty() => (
            "said".to_owned(),
            Phrase::new(
                format!("{} said", event.speaker_name),
                Joint::Quoted,
                &event.text,
            ),
        ),
        PerceivedKind::Speech => (
            format!("said to {}", event.target_name),
            Phrase::new(
                format!("{} said to {}", event.speaker_name, event.target_name),
                Joint::Quoted,
                &event.text,
            ),
        ),
        PerceivedKind::Action | PerceivedKind::Movement => {
            ("did".to_owned(), deed(&event.speaker_name, &event.text))
        }
        PerceivedKind::Narration => ("saw".to_owned(), Phrase::alone(&event.text)),
        // Being there: the place as it looked.
        PerceivedKind::SceneStart => ("saw".to_owned(), Phrase::alone(&event.sight()?)),
        PerceivedKind::SceneEnd => return None,
    };
    let subject = if matches!(
        event.kind,
        PerceivedKind::Narration | PerceivedKind::SceneStart
    ) {
        writer.name.to_owned()
    } else {
        event.speaker_name.clone()
    };
    let fact = Fact {
        id: format!("fact:e{}", event.seq),
        subject,
        predicate,
        object: event.text.clone(),
        cause: String::new(),
        visibility: visibility(event),
        route: route(writer, event),
        text: phrase.text(),
    };
    Some((fact, phrase))
}

/// An action as a sentence: the world usually writes "Holmes goes to …"; a bare
/// "pricks his finger" gets its doer in front.
fn deed(doer: &str, text: &str) -> Phrase {
    if text.starts_with(doer) {
        Phrase::alone(text)
    } else {
        Phrase::new(doer, Joint::Space, text)
    }
}

/// Facts the model extracted, each tied to the numbered line it cites: a fact citing no
/// line the character perceived is dropped.
fn model_facts(
    writer: Author<'_>,
    lines: &[(&Perceived, String)],
    facts: Vec<ModelFact>,
) -> Vec<Fact> {
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
                dramatis_base::push!(text, " because {cause}");
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

/// The scene's lines as the model sees them, numbered, in the character's terms.
fn numbered<'e>(writer: Author<'_>, draft: &'e SceneDraft) -> Vec<(&'e Perceived, String)> {
    draft
        .events
        .iter()
        .filter_map(|e| e.line(writer.id).map(|line| (e, line)))
        .collect()
}

/// The call that rewrites one scene's memory: that scene's numbered lines and how the
/// character felt when it spoke, nothing else.
fn rewrite_call<'e>(
    writer: Author<'_>,
    draft: &'e SceneDraft,
) -> (Call<'static>, Vec<(&'e Perceived, String)>) {
    let lines = numbered(writer, draft);
    let mut text = String::new();
    for (number, (_, line)) in lines.iter().enumerate() {
        dramatis_base::push!(text, "{}. {line}\n", number + 1);
    }
    for moment in &draft.moments {
        dramatis_base::push!(
            text,
            "(You felt {} when you spoke; you wanted to {}.)\n",
            moment.felt.emotion,
            moment.felt.intent
        );
    }
    let system = format!(
        "You are {name}. Below is a scene you just lived through, its lines numbered. Write \
         your memory of it in the first person, in two to four sentences: what you did, \
         felt, saw and concluded. Then list up to three facts you learned, each with the \
         number of the line it comes from and its cause if the scene gives one. Reply with \
         JSON.",
        name = writer.name,
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
    let items = draft
        .events
        .iter()
        .filter(|e| e.kind != PerceivedKind::SceneEnd)
        .map(|e| (e.memory_id(), PERCEIVED.to_owned()))
        .collect();
    let call = Call {
        purpose: SCENE_MEMORY_SCHEMA,
        system,
        user: text,
        max_tokens: 160,
        temperature: 0.3,
        schema_name: SCENE_MEMORY_SCHEMA,
        schema,
        items,
    };
    (call, lines)
}

/// A first-person digest of the scene: who was there, what the character said and
/// did, what was said to it, then what else it saw, within [`DIGEST_WORDS`], in story
/// order; and how it felt.
#[must_use]
pub fn digest(writer: Author<'_>, draft: &SceneDraft) -> String {
    digest_in_pieces(writer, draft).0
}

/// The digest and the pieces its vector is composed of: each sentence on its own, and
/// each line's words apart from who said them (shared with the other perceivers).
fn digest_in_pieces(writer: Author<'_>, draft: &SceneDraft) -> (String, Vec<String>) {
    let me = writer.id;
    let mut text = String::new();
    let mut pieces = Vec::new();
    let mut sentence = |text: &mut String, words: String| {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(&words);
        pieces.push(words);
    };
    if let Some(start) = draft
        .events
        .iter()
        .find(|e| e.kind == PerceivedKind::SceneStart)
    {
        sentence(&mut text, format!("{}.", start.text.trim_end_matches('.')));
    }
    if let Some(company) = company::company(me, draft) {
        sentence(&mut text, format!("I was with {company}."));
    }
    let phrases: Vec<(u8, Phrase)> = draft
        .events
        .iter()
        .filter_map(|e| first_person(me, e))
        .collect();
    let mut budget = DIGEST_WORDS.saturating_sub(text.split_whitespace().count());
    let mut keep = vec![false; phrases.len()];
    for priority in [2, 1] {
        for (i, (p, phrase)) in phrases.iter().enumerate() {
            let words = phrase.text().split_whitespace().count();
            if *p == priority && words <= budget {
                keep[i] = true;
                budget -= words;
            }
        }
    }
    for ((_, phrase), kept) in phrases.iter().zip(keep) {
        if kept {
            let mut line = phrase.text();
            if !line.ends_with(['.', '!', '?', '"', '…']) {
                line.push('.');
            }
            text.push(' ');
            text.push_str(&line);
            pieces.extend(phrase.pieces());
        }
    }
    if let Some(feeling) = draft
        .moments
        .iter()
        .max_by(|a, b| a.felt.intensity.total_cmp(&b.felt.intensity))
    {
        let mut felt = format!("I felt {}", feeling.felt.emotion);
        if !feeling.felt.intent.is_empty() {
            dramatis_base::push!(
                felt,
                "; I wanted to {}",
                feeling.felt.intent.trim_end_matches('.')
            );
        }
        felt.push('.');
        text.push(' ');
        text.push_str(&felt);
        pieces.push(felt);
    }
    (text.trim().to_owned(), pieces)
}

/// An event in the first person, with its priority (2: the character's own or aimed at
/// it; 1: something it witnessed).
fn first_person(me: &str, e: &Perceived) -> Option<(u8, Phrase)> {
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
    let phrase = match e.kind {
        PerceivedKind::Speech => Phrase::new(format!("{who} said{to}"), Joint::Quoted, &e.text),
        PerceivedKind::Action | PerceivedKind::Movement => deed(who, &e.text),
        PerceivedKind::Narration => Phrase::alone(&e.text),
        PerceivedKind::SceneStart | PerceivedKind::SceneEnd => return None,
    };
    Some((if mine || to_me { 2 } else { 1 }, phrase))
}

mod company;

#[cfg(test)]
mod tests;
