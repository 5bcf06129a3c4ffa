//! Stage 1's model refinements: a scene's place, time and atmosphere, and who speaks
//! the lines the deterministic path could not attribute.

use super::{scenes, speech};
use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::json;

use super::refine::{Ask, Refiner};
use super::scenes::Scene;
use super::text::{FocusCharacter, Namer, contains_phrase, prefix};

#[derive(Deserialize)]
pub(super) struct SceneAnswer {
    location: String,
    time: String,
    atmosphere: String,
    silent: Vec<String>,
}

pub(super) async fn refine_scene(refiner: &Refiner, scene: &mut Scene, text: &str, namer: &Namer) {
    if !refiner.has_model() {
        return;
    }
    let first_paragraph = text
        .split("\n\n")
        .find(|p| !p.trim().is_empty())
        .unwrap_or("");
    let narrated: BTreeSet<String> = scene
        .referenced
        .iter()
        .chain(&scene.silent)
        .cloned()
        .collect();
    let schema = json!({
        "type": "object",
        "properties": {
            "location": {"type": "string"},
            "time": {"type": "string"},
            "atmosphere": {"type": "string"},
            "silent": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["location", "time", "atmosphere", "silent"]
    });
    let task = "Where does this scene take place (a short place phrase from its first \
                paragraph), when (time of day or year, or \"\"), and in what atmosphere (one \
                or two words)? List by name the people who are there but never speak.";
    let answer: Option<SceneAnswer> = refiner
        .ask(
            Ask {
                stage: "scenes",
                chunk: format!("scene {}", scene.number),
                task,
                body: &prefix(text, 6000),
                schema,
                max_tokens: 120,
            },
            |a: &SceneAnswer| {
                if a.location.trim().is_empty() || a.location.chars().count() > 80 {
                    return Err("location must be a short phrase".into());
                }
                if !contains_phrase(
                    first_paragraph,
                    a.location.trim().trim_start_matches("the "),
                ) {
                    return Err(format!(
                        "location `{}` is not in the scene's first paragraph",
                        prefix(&a.location, 40)
                    ));
                }
                if a.time.chars().count() > 40 || a.atmosphere.chars().count() > 40 {
                    return Err("time and atmosphere must be a few words".into());
                }
                for name in &a.silent {
                    let ok = namer
                        .mentions(name)
                        .first()
                        .is_some_and(|m| narrated.contains(m.character));
                    if !ok {
                        return Err(format!(
                            "`{}` is not someone the scene's narration names without a line",
                            prefix(name, 40)
                        ));
                    }
                }
                Ok(())
            },
        )
        .await;
    if let Some(a) = answer {
        scene.location = a.location.trim().to_owned();
        scene.time = a.time.trim().to_owned();
        scene.atmosphere = a.atmosphere.trim().to_owned();
        for name in &a.silent {
            if let Some(m) = namer.mentions(name).first() {
                scene.referenced.remove(m.character);
                scene.silent.insert(m.character.to_owned());
            }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct SpeakersAnswer {
    speakers: Vec<SpeakerAnswer>,
}

#[derive(Deserialize)]
pub(super) struct SpeakerAnswer {
    line: usize,
    speaker: String,
}

/// Lines a model may be asked about in one call.
pub(super) const SPEAKER_LINES_PER_CALL: usize = 24;

/// The model path of speaker attribution: for the lines no rule gave a speaker, the
/// model picks one of those on stage at that line (the narrator as "I") or "unknown".
/// A name off that list, or the one the line addresses, refuses the answer; a speaker
/// is never put on stage by the model, so no one hears more for it.
pub(super) async fn refine_speakers(
    refiner: &Refiner,
    scene: &mut Scene,
    book: &str,
    characters: &[FocusCharacter],
    namer: &Namer,
) {
    if !refiner.has_model() || scene.unattributed.is_empty() {
        return;
    }
    // Each line with its paragraph and whom it may be.
    let asked: Vec<Asked> = scene
        .unattributed
        .iter()
        .take(SPEAKER_LINES_PER_CALL)
        .map(|(p, text)| Asked {
            paragraph: *p,
            text: text.clone(),
            cast: scene.present_at(*p).into_iter().collect(),
        })
        .filter(|a| !a.cast.is_empty())
        .collect();
    if asked.is_empty() {
        return;
    }
    let body = speakers_body(scene, book, characters, &asked);
    let task = "Who speaks each numbered line of quoted speech? For each line answer with one                 of the names it may be said by, or \"unknown\" when the text does not make it                 clear. Someone a line addresses by name does not say it. Answer every line.";
    let narrator = scene.narrator.clone();
    let resolve =
        |name: &str, cast: &[String]| resolve_speaker(name, cast, narrator.as_deref(), namer);
    let answer: Option<SpeakersAnswer> = refiner
        .ask(
            Ask {
                stage: "scenes",
                chunk: format!("scene {} speakers", scene.number),
                task,
                body: &body,
                schema: speakers_schema(),
                max_tokens: 40 + 16 * asked.len() as u32,
            },
            |a: &SpeakersAnswer| check_speakers(a, &asked, &resolve, namer),
        )
        .await;
    let Some(answer) = answer else { return };
    for s in answer.speakers {
        let Some(line) = s.line.checked_sub(1).and_then(|i| asked.get(i)) else {
            continue;
        };
        if let Some(id) = resolve(&s.speaker, &line.cast) {
            give_line(scene, line, id);
        }
    }
}

/// A line the model is asked about: its paragraph, its text and who on stage may say it.
struct Asked {
    paragraph: usize,
    text: String,
    cast: Vec<String>,
}

/// The question's body: each numbered line, whom it may be said by, and the paragraph
/// before it and its own as context.
fn speakers_body(
    scene: &Scene,
    book: &str,
    characters: &[FocusCharacter],
    asked: &[Asked],
) -> String {
    let name_of = |id: &str| {
        characters
            .iter()
            .find(|c| c.id == id)
            .map_or_else(|| id.to_owned(), |c| c.name.clone())
    };
    let paragraph = |p: usize| -> &str {
        let start = scene
            .paragraph_starts
            .get(p)
            .copied()
            .unwrap_or(scene.span.start);
        let end = scene
            .paragraph_starts
            .get(p + 1)
            .copied()
            .unwrap_or(scene.span.end);
        book.get(start..end).unwrap_or("").trim()
    };
    let mut body = String::new();
    for (n, line) in asked.iter().enumerate() {
        let names: Vec<String> = line
            .cast
            .iter()
            .map(|id| {
                if scene.narrator.as_deref() == Some(id.as_str()) {
                    format!("{} (the narrator, \"I\")", name_of(id))
                } else {
                    name_of(id)
                }
            })
            .collect();
        let before = line.paragraph.checked_sub(1).map(paragraph).unwrap_or("");
        body.push_str(&format!(
            "Line {}: \"{}\"\nIt may be said by: {}\nContext:\n{}\n{}\n\n",
            n + 1,
            prefix(&line.text, 200),
            names.join(", "),
            prefix(before, 500),
            prefix(paragraph(line.paragraph), 700),
        ));
    }
    body
}

fn speakers_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "speakers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "line": {"type": "integer"},
                        "speaker": {"type": "string"}
                    },
                    "required": ["line", "speaker"]
                }
            }
        },
        "required": ["speakers"]
    })
}

/// The character an answer's name means, if it is one of `cast`: "I" is the narrator.
fn resolve_speaker(
    name: &str,
    cast: &[String],
    narrator: Option<&str>,
    namer: &Namer,
) -> Option<String> {
    let id = if name.trim() == "I" {
        narrator?.to_owned()
    } else {
        namer
            .mentions(name)
            .first()
            .map(|m| m.character.to_owned())?
    };
    cast.contains(&id).then_some(id)
}

/// Refuses an answer that numbers a line not asked, names someone who may not say it,
/// or gives a line to the one it addresses.
fn check_speakers(
    answer: &SpeakersAnswer,
    asked: &[Asked],
    resolve: &impl Fn(&str, &[String]) -> Option<String>,
    namer: &Namer,
) -> Result<(), String> {
    for s in &answer.speakers {
        let Some(line) = s.line.checked_sub(1).and_then(|i| asked.get(i)) else {
            return Err(format!("there is no line {}", s.line));
        };
        if s.speaker.trim().eq_ignore_ascii_case("unknown") {
            continue;
        }
        let Some(id) = resolve(&s.speaker, &line.cast) else {
            return Err(format!(
                "`{}` is not one who may say line {}",
                prefix(&s.speaker, 40),
                s.line
            ));
        };
        if speech::vocative(&line.text, namer).as_deref() == Some(id.as_str()) {
            return Err(format!(
                "line {} addresses `{}`",
                s.line,
                prefix(&s.speaker, 40)
            ));
        }
    }
    Ok(())
}

/// Gives `line` to `id`: an utterance in paragraph order, its sentences spoken by it,
/// and `id` active in the scene.
fn give_line(scene: &mut Scene, line: &Asked, id: String) {
    let (p, text) = (line.paragraph, &line.text);
    scene.unattributed.retain(|(q, t)| !(*q == p && t == text));
    let at = scene.utterances.partition_point(|u| u.paragraph <= p);
    scene.utterances.insert(
        at,
        scenes::Utterance {
            speaker: scenes::Speaker::Focus(id.clone()),
            text: text.clone(),
            paragraph: p,
        },
    );
    for sentence in &mut scene.sentences {
        if sentence.paragraph == p
            && sentence.spoken_by.is_none()
            && text.contains(sentence.text.as_str())
        {
            sentence.spoken_by = Some(scenes::Speaker::Focus(id.clone()));
        }
    }
    scene.silent.remove(&id);
    scene.active.insert(id);
}
