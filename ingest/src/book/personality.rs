//! Stage 4, personality: each utterance annotated with (emotion, intensity, trigger)
//! and intent, in order (the emotion-transition record); then each character's scenes
//! clustered by behaviour into K patterns, each with a one-line description and the
//! excerpts nearest its centre. A scene's behaviour is the mean embedding of the lines
//! the character speaks in it, from the agent's own embedder.

use dramatis_memory::vector::dot;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::lexicon::EMOTIONS;
use super::narration::dominant_emotion;
use super::scenes::{Scene, Speaker};
use super::text::{prefix, words};

/// One line, annotated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    pub character: String,
    pub scene: usize,
    pub line: String,
    pub emotion: String,
    pub intensity: f32,
    pub trigger: String,
    pub intent: String,
    pub by: String,
}

/// The emotions an annotation may name.
pub const EMOTION_NAMES: [&str; 6] = ["fear", "sadness", "anger", "joy", "surprise", "calm"];
/// The intents an annotation may name.
pub const INTENTS: [&str; 5] = ["ask", "tell", "direct", "refuse", "reassure"];

/// The deterministic annotation of `line`, said after `previous` (speaker label, text).
#[must_use]
pub fn annotate(line: &str, previous: Option<(&str, &str)>) -> (String, f32, String, String) {
    let emotion = match dominant_emotion(line) {
        "" => "calm",
        e => e,
    };
    let hits = words(line)
        .filter(|w| EMOTIONS.iter().any(|(_, list)| list.contains(&w.as_str())))
        .count();
    let bangs = line.matches('!').count();
    let intensity = ((hits as f32 * 0.2) + (bangs as f32 * 0.2) + 0.2).min(1.0);
    let trigger = previous.map_or_else(
        || "the scene's opening".to_owned(),
        |(who, text)| format!("{who}: {}", prefix(text, 60)),
    );
    let lower = line.to_lowercase();
    let first = words(line).next().unwrap_or_default();
    let intent = if line.trim_end().ends_with('?') {
        "ask"
    } else if matches!(first.as_str(), "no" | "not" | "never")
        || lower.contains("you must not")
        || lower.contains("i won't")
    {
        "refuse"
    } else if matches!(
        first.as_str(),
        "give" | "tell" | "mind" | "bring" | "stay" | "go" | "come" | "keep" | "look" | "listen"
    ) {
        "direct"
    } else if lower.contains("don't worry")
        || lower.contains("i will")
        || lower.contains("it's only")
    {
        "reassure"
    } else {
        "tell"
    };
    (emotion.to_owned(), intensity, trigger, intent.to_owned())
}

/// One behaviour pattern of a character.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatternOut {
    pub character: String,
    pub scenes: Vec<usize>,
    pub description: String,
    pub excerpts: Vec<String>,
    pub by: String,
}

/// A character's behaviour in one scene: the mean of its lines' embeddings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneBehaviour {
    pub character: String,
    pub scene: usize,
    pub vector: Vec<f32>,
    /// Each line spoken there, with its embedding.
    pub lines: Vec<(String, Vec<f32>)>,
}

/// K for `n` scenes: `fixed`, or ⌈√n⌉, at most 8 and at most `n`.
#[must_use]
pub fn pattern_count(n: usize, fixed: Option<usize>) -> usize {
    let k = fixed
        .unwrap_or_else(|| (n as f64).sqrt().ceil() as usize)
        .min(8);
    k.clamp(usize::from(n > 0), n)
}

fn mean(vectors: &[&[f32]]) -> Vec<f32> {
    let dim = vectors.first().map_or(0, |v| v.len());
    let mut out = vec![0.0; dim];
    for v in vectors {
        for (o, x) in out.iter_mut().zip(v.iter()) {
            *o += x;
        }
    }
    dramatis_embed::normalise(&mut out);
    out
}

/// Spherical k-means with farthest-first seeding from the first point: deterministic.
/// Returns the cluster of each point.
#[must_use]
pub fn cluster(points: &[&[f32]], k: usize) -> Vec<usize> {
    if points.is_empty() || k == 0 {
        return Vec::new();
    }
    let mut centres: Vec<Vec<f32>> = vec![points[0].to_vec()];
    while centres.len() < k {
        let far = (0..points.len())
            .max_by(|a, b| {
                let near = |i: usize| {
                    centres
                        .iter()
                        .map(|c| dot(points[i], c))
                        .fold(f32::MIN, f32::max)
                };
                near(*b).total_cmp(&near(*a)).then(b.cmp(a))
            })
            .unwrap_or(0);
        centres.push(points[far].to_vec());
    }
    let mut assign = vec![0; points.len()];
    for _ in 0..20 {
        let next: Vec<usize> = points
            .iter()
            .map(|p| {
                (0..centres.len())
                    .max_by(|a, b| {
                        dot(p, &centres[*a])
                            .total_cmp(&dot(p, &centres[*b]))
                            .then(b.cmp(a))
                    })
                    .unwrap_or(0)
            })
            .collect();
        let changed = next != assign;
        assign = next;
        for (c, centre) in centres.iter_mut().enumerate() {
            let members: Vec<&[f32]> = points
                .iter()
                .zip(&assign)
                .filter(|(_, a)| **a == c)
                .map(|(p, _)| *p)
                .collect();
            if !members.is_empty() {
                *centre = mean(&members);
            }
        }
        if !changed {
            break;
        }
    }
    assign
}

/// Patterns of every character from its scene behaviours (only scenes in `keep`).
#[must_use]
pub fn patterns(
    behaviours: &[SceneBehaviour],
    annotations: &[Annotation],
    scenes: &[Scene],
    keep: &BTreeSet<usize>,
    fixed_k: Option<usize>,
) -> Vec<PatternOut> {
    let mut by_character: BTreeMap<&str, Vec<&SceneBehaviour>> = BTreeMap::new();
    for b in behaviours.iter().filter(|b| keep.contains(&b.scene)) {
        by_character.entry(&b.character).or_default().push(b);
    }
    let mut out = Vec::new();
    for (character, list) in by_character {
        let points: Vec<&[f32]> = list.iter().map(|b| b.vector.as_slice()).collect();
        let k = pattern_count(points.len(), fixed_k);
        let assign = cluster(&points, k);
        for c in 0..k {
            let members: Vec<&SceneBehaviour> = list
                .iter()
                .zip(&assign)
                .filter(|(_, a)| **a == c)
                .map(|(b, _)| *b)
                .collect();
            if members.is_empty() {
                continue;
            }
            let centre = mean(
                &members
                    .iter()
                    .map(|b| b.vector.as_slice())
                    .collect::<Vec<_>>(),
            );
            let mut lines: Vec<(&str, f32)> = members
                .iter()
                .flat_map(|b| &b.lines)
                .map(|(text, v)| (text.as_str(), dot(v, &centre)))
                .collect();
            lines.sort_by(|a, b| b.1.total_cmp(&a.1));
            let excerpts: Vec<String> = lines.iter().take(2).map(|(t, _)| prefix(t, 200)).collect();
            let scene_numbers: Vec<usize> = members.iter().map(|b| b.scene).collect();
            out.push(PatternOut {
                character: character.to_owned(),
                description: describe(character, &scene_numbers, annotations, scenes),
                scenes: scene_numbers,
                excerpts,
                by: "digest".into(),
            });
        }
    }
    out
}

/// "wary, mostly asking (as at the Crane house)": the cluster's most frequent emotion
/// and intent, and the place of its first scene.
fn describe(
    character: &str,
    scenes_in: &[usize],
    annotations: &[Annotation],
    scenes: &[Scene],
) -> String {
    let mine: Vec<&Annotation> = annotations
        .iter()
        .filter(|a| a.character == character && scenes_in.contains(&a.scene))
        .collect();
    let most = |field: fn(&Annotation) -> &str| {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for a in &mine {
            *counts.entry(field(a)).or_default() += 1;
        }
        counts
            .into_iter()
            .max_by_key(|(k, c)| (*c, std::cmp::Reverse(*k)))
            .map_or("", |(k, _)| k)
            .to_owned()
    };
    let mood = match most(|a| a.emotion.as_str()).as_str() {
        "fear" => "wary",
        "sadness" => "grieving",
        "anger" => "hard",
        "joy" => "warm",
        "surprise" => "startled",
        _ => "steady",
    };
    let doing = match most(|a| a.intent.as_str()).as_str() {
        "ask" => "asking questions",
        "refuse" => "refusing",
        "direct" => "giving orders",
        "reassure" => "reassuring",
        _ => "telling what it knows",
    };
    let place = scenes_in
        .first()
        .and_then(|n| scenes.iter().find(|s| s.number == *n))
        .map_or(String::new(), |s| format!(" (as at {})", s.location));
    format!("{mood}, mostly {doing}{place}")
}

/// One line a character speaks, and the line before it (speaker label, text).
#[derive(Debug, Clone)]
pub struct Line {
    pub text: String,
    pub previous: Option<(String, String)>,
}

/// The lines one character speaks in one scene.
#[derive(Debug, Clone)]
pub struct SceneLines {
    pub character: String,
    pub scene: usize,
    pub lines: Vec<Line>,
}

/// Lines each character speaks, per scene, in book order.
#[must_use]
pub fn lines_by_scene(scenes: &[Scene]) -> Vec<SceneLines> {
    let mut out = Vec::new();
    for s in scenes {
        let mut per: BTreeMap<String, Vec<Line>> = BTreeMap::new();
        let mut previous: Option<(String, String)> = None;
        for u in &s.utterances {
            if let Speaker::Focus(id) = &u.speaker {
                per.entry(id.clone()).or_default().push(Line {
                    text: u.text.clone(),
                    previous: previous.clone(),
                });
            }
            let label = match &u.speaker {
                Speaker::Focus(id) | Speaker::Other(id) => id.clone(),
            };
            previous = Some((label, u.text.clone()));
        }
        out.extend(per.into_iter().map(|(character, lines)| SceneLines {
            character,
            scene: s.number,
            lines,
        }));
    }
    out
}
