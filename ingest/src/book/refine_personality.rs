//! Stage 4: lines annotated with emotion and intent, scene behaviours, and the K
//! personality patterns clustered with the agent's own embedder.

use super::personality;
use super::progress::Progress;
use std::collections::BTreeSet;

use dramatis_embed::Embedder;
use serde::Deserialize;
use serde_json::json;

use super::personality::{Annotation, EMOTION_NAMES, INTENTS, PatternOut, SceneBehaviour};
use super::refine::{Ask, Refiner};
use super::scenes::Scene;
use super::text::prefix;

#[derive(Deserialize)]
pub(super) struct AnnotationAnswer {
    emotion: String,
    intensity: f32,
    trigger: String,
    intent: String,
}

#[derive(Deserialize)]
pub(super) struct DescriptionAnswer {
    description: String,
}

pub(super) async fn personality_stage(
    refiner: &Refiner,
    scenes: &[Scene],
    embedder: &dyn Embedder,
    patterns: Option<usize>,
    progress: &dyn Progress,
) -> anyhow::Result<(Vec<Annotation>, Vec<SceneBehaviour>, Vec<PatternOut>)> {
    let per_scene = personality::lines_by_scene(scenes);
    let total: usize = per_scene.iter().map(|l| l.lines.len()).sum();
    progress.start("personality", total as u64 + 1);
    let mut annotations = Vec::with_capacity(total);
    let mut behaviours = Vec::new();
    for personality::SceneLines {
        character,
        scene,
        lines,
    } in &per_scene
    {
        let texts: Vec<String> = lines.iter().map(|l| l.text.clone()).collect();
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(32) {
            vectors.extend(embedder.embed(batch).await?);
        }
        for line in lines {
            annotations.push(annotate(refiner, character, *scene, line).await);
            progress.step();
        }
        behaviours.push(behaviour(character, *scene, texts, vectors));
    }
    let every: BTreeSet<usize> = scenes.iter().map(|s| s.number).collect();
    let mut patterns = personality::patterns(&behaviours, &annotations, scenes, &every, patterns);
    for p in &mut patterns {
        describe(refiner, p).await;
    }
    progress.step();
    Ok((annotations, behaviours, patterns))
}

/// One line of `character` in `scene` annotated with emotion, intensity, trigger and
/// intent: the model's answer when it gives a valid one, else the digest's.
async fn annotate(
    refiner: &Refiner,
    character: &str,
    scene: usize,
    personality::Line {
        text: line,
        previous,
    }: &personality::Line,
) -> Annotation {
    let prev = previous.as_ref().map(|(w, t)| (w.as_str(), t.as_str()));
    let (emotion, intensity, trigger, intent) = personality::annotate(line, prev);
    let body = format!(
        "Line before: {}\nThe line ({character}): \"{line}\"",
        prev.map_or("(none)".to_owned(), |(w, t)| format!(
            "{w}: \"{}\"",
            prefix(t, 200)
        ))
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "emotion": {"type": "string", "enum": EMOTION_NAMES},
            "intensity": {"type": "number"},
            "trigger": {"type": "string"},
            "intent": {"type": "string", "enum": INTENTS}
        },
        "required": ["emotion", "intensity", "trigger", "intent"]
    });
    let answer: Option<AnnotationAnswer> = refiner
        .ask(
            Ask {
                stage: "personality",
                chunk: format!("a line of {character} in scene {scene}"),
                task: "Annotate the line: its emotion, intensity (0 to 1), what triggered it (a \
                     few words), and the speaker's intent.",
                body: &body,
                schema,
                max_tokens: 80,
            },
            check_annotation,
        )
        .await;
    match answer {
        Some(a) => Annotation {
            character: character.to_owned(),
            scene,
            line: line.clone(),
            emotion: a.emotion,
            intensity: a.intensity,
            trigger: a.trigger,
            intent: a.intent,
            by: "model".into(),
        },
        None => Annotation {
            character: character.to_owned(),
            scene,
            line: line.clone(),
            emotion,
            intensity,
            trigger,
            intent,
            by: "digest".into(),
        },
    }
}

fn check_annotation(a: &AnnotationAnswer) -> Result<(), String> {
    if !EMOTION_NAMES.contains(&a.emotion.as_str()) {
        return Err(format!("emotion must be one of {EMOTION_NAMES:?}"));
    }
    if !INTENTS.contains(&a.intent.as_str()) {
        return Err(format!("intent must be one of {INTENTS:?}"));
    }
    if !(0.0..=1.0).contains(&a.intensity) {
        return Err("intensity must be between 0 and 1".into());
    }
    if a.trigger.chars().count() > 120 {
        return Err("the trigger must be a few words".into());
    }
    Ok(())
}

/// A character's behaviour in one scene: the mean of its lines' vectors, normalised,
/// with each line and its vector.
fn behaviour(
    character: &str,
    scene: usize,
    texts: Vec<String>,
    vectors: Vec<Vec<f32>>,
) -> SceneBehaviour {
    let mut mean = vec![0.0; vectors.first().map_or(0, Vec::len)];
    for v in &vectors {
        for (m, x) in mean.iter_mut().zip(v.iter()) {
            *m += x;
        }
    }
    dramatis_embed::normalise(&mut mean);
    SceneBehaviour {
        character: character.to_owned(),
        scene,
        vector: mean,
        lines: texts.into_iter().zip(vectors).collect(),
    }
}

/// The model's one-line description of a pattern, from its excerpts, when it gives one.
async fn describe(refiner: &Refiner, p: &mut PatternOut) {
    let body = format!(
        "Lines:\n{}",
        p.excerpts
            .iter()
            .map(|e| format!("- \"{e}\""))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let answer: Option<DescriptionAnswer> = refiner
        .ask(
            Ask {
                stage: "personality",
                chunk: format!("a pattern of {}", p.character),
                task: "In one line of at most 15 words, describe how this character behaves in \
                 situations like these (no names).",
                body: &body,
                schema: json!({"type": "object", "properties": {"description": {"type": "string"}},
                       "required": ["description"]}),
                max_tokens: 60,
            },
            |a: &DescriptionAnswer| {
                let n = a.description.split_whitespace().count();
                if n == 0 || n > 25 {
                    return Err("one line of at most 15 words".into());
                }
                Ok(())
            },
        )
        .await;
    if let Some(a) = answer {
        p.description = a.description.trim().to_owned();
        p.by = "model".into();
    }
}
