//! Source-to-Memory (ReverieMem §3.3): a book and its focus characters become a
//! scenario folder. Five stages, each with a deterministic path and, when a model is
//! configured, JSON-schema refinements that are validated, retried and reported:
//!
//! 1. `scenes`: partition, place/time/atmosphere, speakers, rosters (`scenes.rs`);
//! 2. `episodic`: first-person summaries, handed only the text up to each scene's end
//!    (`episodic.rs`);
//! 3. `graph`: entities, (s, p, o, cause) facts, visibility, organisation
//!    propagation (`graph.rs`);
//! 4. `personality`: annotated lines, scene behaviours clustered into K patterns with
//!    the agent's own embedder (`personality.rs`);
//! 5. `identity`: who knows whom by name after each scene (`identity.rs`).
//!
//! Each stage's result is cached under a hash of its inputs (`refine.rs`); `output.rs`
//! writes the folder. The split between the characters' past (their starting shards)
//! and the script is `Options::past`.

pub mod episodic;
pub mod graph;
pub mod identity;
mod lexicon;
pub mod output;
pub mod personality;
pub mod refine;
pub mod scenes;
pub mod text;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use std::sync::Arc;

use anyhow::{Context as _, bail};
use dramatis_embed::Embedder;
use dramatis_llm::LanguageModel;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::json;

use self::episodic::{Summary, Upto};
use self::graph::{ENTITY_KINDS, Graph, GraphFact};
use self::identity::NameTable;
use self::personality::{Annotation, EMOTION_NAMES, INTENTS, PatternOut, SceneBehaviour};
use self::refine::{Ask, Refiner, Rejection, StageCache, content_hash};
use self::scenes::{BookFacts, Scene};
use self::text::{FocusCharacter, Namer, contains_phrase, partition, prefix};

/// The stages, in order.
pub const STAGES: [&str; 5] = ["scenes", "episodic", "graph", "personality", "identity"];

/// A fingerprint of the ingest's own sources (see `build.rs`): a stage result cached by
/// one build is read only by a build that computes it the same way.
const STAGE_VERSION: &str = env!("DRAMATIS_INGEST_SOURCE");

/// Where the book splits into the characters' past and the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Past {
    /// The first half of the scenes (rounded down).
    Half,
    /// The first N scenes.
    Scenes(usize),
    /// The whole book: the world is an open story after its end.
    All,
}

impl Past {
    #[must_use]
    pub fn count(self, scenes: usize) -> usize {
        match self {
            Self::Half => scenes / 2,
            Self::Scenes(n) => n.min(scenes),
            Self::All => scenes,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub past: Past,
    /// K for every character; default ⌈√scenes it speaks in⌉.
    pub patterns: Option<usize>,
    /// Stop after this stage (its result and every call so far are kept).
    pub stop_after: Option<String>,
}

/// Reports progress: a stage starts with a number of steps, steps, and finishes.
pub trait Progress: Send + Sync {
    fn start(&self, stage: &str, steps: u64);
    fn step(&self);
    fn finish(&self, stage: &str, note: &str);
}

/// Progress reporting that shows nothing.
#[derive(Debug, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _: &str, _: u64) {}
    fn step(&self) {}
    fn finish(&self, _: &str, _: &str) {}
}

/// Fewer words than this under the book's chapters is no story to ingest (a contents
/// list, a title page).
const MIN_STORY_WORDS: usize = 100;

/// The analysis of the whole book: every stage's result.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Analysis {
    pub title: Option<String>,
    pub chapters: usize,
    pub scenes: Vec<Scene>,
    pub summaries: Vec<Summary>,
    pub graph: Graph,
    pub annotations: Vec<Annotation>,
    pub behaviours: Vec<SceneBehaviour>,
    pub patterns: Vec<PatternOut>,
    pub names: NameTable,
}

impl Analysis {
    /// The first-person narrator of each chapter that has one (1-based chapter → id).
    #[must_use]
    pub fn narrators(&self) -> std::collections::BTreeMap<usize, String> {
        self.scenes
            .iter()
            .filter_map(|s| Some((s.span.chapter, s.narrator.clone()?)))
            .collect()
    }

    /// Focus characters on stage in at least one scene: the world's characters, each
    /// with an agent. One who lives only in what others tell (a father whose deathbed
    /// words a son retells) has none: the dead do not walk in a sandbox.
    #[must_use]
    pub fn on_stage(&self) -> BTreeSet<String> {
        self.scenes
            .iter()
            .flat_map(|s| s.present().cloned())
            .collect()
    }
}

/// Runs the stages on `book` (the text) for `characters`. `cache` holds stage results
/// and model calls between runs; `stopped` in the result means `stop_after` ended it.
pub async fn analyse(
    book: &str,
    characters: &[FocusCharacter],
    embedder: &dyn Embedder,
    refiner: &Refiner,
    cache: &StageCache,
    options: &Options,
    progress: &dyn Progress,
) -> anyhow::Result<(Analysis, bool)> {
    let namer = Namer::new(characters);
    let chars_json = serde_json::to_vec(characters)?;
    let model = refiner.model_name();
    let base = content_hash(&[
        STAGE_VERSION.as_bytes(),
        book.as_bytes(),
        &chars_json,
        model.as_bytes(),
    ]);
    let mut analysis = Analysis::default();
    let stop = |stage: &str| options.stop_after.as_deref() == Some(stage);

    // 1. Scenes.
    let key = content_hash(&[b"scenes", &base.to_le_bytes()]);
    (analysis.title, analysis.chapters, analysis.scenes) =
        cached("scenes", key, cache, refiner, async {
            let parts = partition(book);
            let facts = BookFacts::read(book, characters, &namer);
            let narrators = scenes::narrators(book, &parts.scenes, characters, &namer);
            progress.start("scenes", parts.scenes.len() as u64);
            let mut scenes = Vec::with_capacity(parts.scenes.len());
            for (i, span) in parts.scenes.iter().enumerate() {
                let text = &book[span.start..span.end];
                let narrator = narrators.get(&span.chapter).map(String::as_str);
                let mut scene = scenes::prepare(i + 1, *span, text, &namer, &facts, narrator);
                refine_scene(refiner, &mut scene, text, &namer).await;
                refine_speakers(refiner, &mut scene, book, characters, &namer).await;
                scenes.push(scene);
                progress.step();
            }
            Ok((parts.title, parts.chapters, scenes))
        })
        .await?;
    let story_words: usize = analysis
        .scenes
        .iter()
        .map(|s| book[s.span.start..s.span.end].split_whitespace().count())
        .sum();
    if story_words < MIN_STORY_WORDS {
        bail!(
            "no story text: the book's chapters hold {} words (fewer than {}), out of {} \
             in the file; it looks like headings, a contents list or front matter only: give \
             the file with the chapters' text",
            story_words,
            MIN_STORY_WORDS,
            book.split_whitespace().count()
        );
    }
    if analysis.on_stage().is_empty() {
        let looked: Vec<&str> = characters.iter().map(|c| c.name.as_str()).collect();
        bail!(
            "none of the {} characters of the list is on stage in the book (looked for {} and \
             their aliases); check the names against the text",
            characters.len(),
            prefix(&looked.join(", "), 120)
        );
    }
    progress.finish(
        "scenes",
        &format!(
            "{} scenes in {} chapters",
            analysis.scenes.len(),
            analysis.chapters
        ),
    );
    analysis.names = identity::names_known(&analysis.scenes, &namer);
    if stop("scenes") {
        return Ok((analysis, true));
    }

    // 2. Episodic summaries.
    let key = content_hash(&[b"episodic", &key.to_le_bytes()]);
    analysis.summaries = cached("episodic", key, cache, refiner, async {
        let steps: usize = analysis.scenes.iter().map(|s| s.present().count()).sum();
        progress.start("episodic", steps as u64);
        let mut summaries: Vec<Summary> = Vec::with_capacity(steps);
        for i in 0..analysis.scenes.len() {
            // Structural: the stage sees the scenes up to this one, and the book's
            // text up to this scene's end. Nothing later.
            let upto = Upto {
                scenes: &analysis.scenes[..=i],
                names: &analysis.names[i],
            };
            let text_upto = &book[..analysis.scenes[i].span.end];
            for who in upto.scene().present() {
                let summary = summarise(
                    refiner, characters, &upto, text_upto, &namer, who, &summaries,
                )
                .await;
                summaries.push(summary);
                progress.step();
            }
        }
        Ok(summaries)
    })
    .await?;
    progress.finish(
        "episodic",
        &format!("{} summaries", analysis.summaries.len()),
    );
    if stop("episodic") {
        return Ok((analysis, true));
    }

    // 3. Knowledge graph.
    let world = analysis.on_stage();
    let key = content_hash(&[b"graph", &key.to_le_bytes()]);
    analysis.graph = cached("graph", key, cache, refiner, async {
        progress.start("graph", analysis.scenes.len() as u64 + 1);
        let mut graph = graph::extract(&analysis.scenes, characters, &namer, &world);
        progress.step();
        for scene in &analysis.scenes {
            refine_graph(refiner, &mut graph, scene, book, &namer, &world).await;
            progress.step();
        }
        Ok(graph)
    })
    .await?;
    progress.finish(
        "graph",
        &format!(
            "{} entities, {} facts, {} organisations",
            analysis.graph.entities.len(),
            analysis.graph.facts.len(),
            analysis.graph.organisations.len()
        ),
    );
    if stop("graph") {
        return Ok((analysis, true));
    }

    // 4. Personality.
    let key = content_hash(&[
        b"personality",
        &key.to_le_bytes(),
        &options.patterns.unwrap_or(0).to_le_bytes(),
    ]);
    (analysis.annotations, analysis.behaviours, analysis.patterns) =
        cached("personality", key, cache, refiner, async {
            personality_stage(refiner, &analysis.scenes, embedder, options, progress).await
        })
        .await?;
    progress.finish(
        "personality",
        &format!(
            "{} lines annotated, {} patterns",
            analysis.annotations.len(),
            analysis.patterns.len()
        ),
    );
    if stop("personality") {
        return Ok((analysis, true));
    }

    // 5. Identity (deterministic only: who heard which name is read off the text).
    progress.start("identity", 1);
    progress.step();
    progress.finish("identity", "names heard, per scene");
    refiner.cost("identity", |_| {});
    Ok((analysis, false))
}

/// Runs one stage through its cache: a hit restores the stage's result and the
/// rejections it reported; a miss runs `compute`, then stores both. Either way the
/// stage's wall time is added to its cost.
async fn cached<T: Serialize + DeserializeOwned>(
    stage: &str,
    key: u64,
    cache: &StageCache,
    refiner: &Refiner,
    compute: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let started = Instant::now();
    let value = match cache.load::<(T, Vec<Rejection>)>(stage, key) {
        Some((value, rejections)) => {
            refiner.cost(stage, |c| c.from_cache = true);
            refiner.restore(rejections);
            value
        }
        None => {
            let value = compute.await?;
            cache.store(stage, key, &(&value, refiner.rejections_of(stage)))?;
            value
        }
    };
    refiner.cost(stage, |c| c.seconds += started.elapsed().as_secs_f64());
    Ok(value)
}

#[derive(Deserialize)]
struct SceneAnswer {
    location: String,
    time: String,
    atmosphere: String,
    silent: Vec<String>,
}

async fn refine_scene(refiner: &Refiner, scene: &mut Scene, text: &str, namer: &Namer) {
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
struct SpeakersAnswer {
    speakers: Vec<SpeakerAnswer>,
}

#[derive(Deserialize)]
struct SpeakerAnswer {
    line: usize,
    speaker: String,
}

/// Lines a model may be asked about in one call.
const SPEAKER_LINES_PER_CALL: usize = 24;

/// The model path of speaker attribution: for the lines no rule gave a speaker, the
/// model picks one of those on stage at that line (the narrator as "I") or "unknown".
/// A name off that list, or the one the line addresses, refuses the answer; a speaker
/// is never put on stage by the model, so no one hears more for it.
async fn refine_speakers(
    refiner: &Refiner,
    scene: &mut Scene,
    book: &str,
    characters: &[FocusCharacter],
    namer: &Namer,
) {
    if !refiner.has_model() || scene.unattributed.is_empty() {
        return;
    }
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
    // Each line with its context and whom it may be.
    let asked: Vec<(usize, String, Vec<String>)> = scene
        .unattributed
        .iter()
        .take(SPEAKER_LINES_PER_CALL)
        .map(|(p, text)| {
            let cast: Vec<String> = scene.present_at(*p).into_iter().collect();
            (*p, text.clone(), cast)
        })
        .filter(|(_, _, cast)| !cast.is_empty())
        .collect();
    if asked.is_empty() {
        return;
    }
    let mut body = String::new();
    for (n, (p, text, cast)) in asked.iter().enumerate() {
        let names: Vec<String> = cast
            .iter()
            .map(|id| {
                if scene.narrator.as_deref() == Some(id.as_str()) {
                    format!("{} (the narrator, \"I\")", name_of(id))
                } else {
                    name_of(id)
                }
            })
            .collect();
        let before = p.checked_sub(1).map(paragraph).unwrap_or("");
        body.push_str(&format!(
            "Line {}: \"{}\"\nIt may be said by: {}\nContext:\n{}\n{}\n\n",
            n + 1,
            prefix(text, 200),
            names.join(", "),
            prefix(before, 500),
            prefix(paragraph(*p), 700),
        ));
    }
    let schema = json!({
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
    });
    let task = "Who speaks each numbered line of quoted speech? For each line answer with one                 of the names it may be said by, or \"unknown\" when the text does not make it                 clear. Someone a line addresses by name does not say it. Answer every line.";
    let narrator = scene.narrator.clone();
    let resolve = |name: &str, cast: &[String]| -> Option<String> {
        let id = if name.trim() == "I" {
            narrator.clone()?
        } else {
            namer
                .mentions(name)
                .first()
                .map(|m| m.character.to_owned())?
        };
        cast.contains(&id).then_some(id)
    };
    let answer: Option<SpeakersAnswer> = refiner
        .ask(
            Ask {
                stage: "scenes",
                chunk: format!("scene {} speakers", scene.number),
                task,
                body: &body,
                schema,
                max_tokens: 40 + 16 * asked.len() as u32,
            },
            |a: &SpeakersAnswer| {
                for s in &a.speakers {
                    let Some((_, text, cast)) = s.line.checked_sub(1).and_then(|i| asked.get(i))
                    else {
                        return Err(format!("there is no line {}", s.line));
                    };
                    if s.speaker.trim().eq_ignore_ascii_case("unknown") {
                        continue;
                    }
                    let Some(id) = resolve(&s.speaker, cast) else {
                        return Err(format!(
                            "`{}` is not one who may say line {}",
                            prefix(&s.speaker, 40),
                            s.line
                        ));
                    };
                    if scenes::vocative(text, namer).as_deref() == Some(id.as_str()) {
                        return Err(format!(
                            "line {} addresses `{}`",
                            s.line,
                            prefix(&s.speaker, 40)
                        ));
                    }
                }
                Ok(())
            },
        )
        .await;
    let Some(answer) = answer else { return };
    for s in answer.speakers {
        let Some((p, text, cast)) = s.line.checked_sub(1).and_then(|i| asked.get(i)) else {
            continue;
        };
        let Some(id) = resolve(&s.speaker, cast) else {
            continue;
        };
        scene.unattributed.retain(|(q, t)| !(q == p && t == text));
        let at = scene.utterances.partition_point(|u| u.paragraph <= *p);
        scene.utterances.insert(
            at,
            scenes::Utterance {
                speaker: scenes::Speaker::Focus(id.clone()),
                text: text.clone(),
                paragraph: *p,
            },
        );
        for sentence in &mut scene.sentences {
            if sentence.paragraph == *p
                && sentence.spoken_by.is_none()
                && text.contains(sentence.text.as_str())
            {
                sentence.spoken_by = Some(scenes::Speaker::Focus(id.clone()));
            }
        }
        scene.silent.remove(&id);
        scene.active.insert(id);
    }
}

#[derive(Deserialize)]
struct SummaryAnswer {
    summary: String,
}

async fn summarise(
    refiner: &Refiner,
    characters: &[FocusCharacter],
    upto: &Upto<'_>,
    text_upto: &str,
    namer: &Namer,
    who: &str,
    earlier: &[Summary],
) -> Summary {
    let scene = upto.scene();
    let digest = episodic::digest(characters, upto, who);
    let name = characters
        .iter()
        .find(|c| c.id == who)
        .map_or(who, |c| c.name.as_str());
    let mine: Vec<&str> = earlier
        .iter()
        .filter(|s| s.character == who)
        .rev()
        .take(3)
        .map(|s| s.text.as_str())
        .collect();
    let body = format!(
        "Your earlier memories:\n{}\n\nThe scene:\n{}",
        if mine.is_empty() {
            "(none)".to_owned()
        } else {
            mine.join("\n")
        },
        prefix(&text_upto[scene.span.start..], 6000)
    );
    let task = format!(
        "You are {name}. In two to five sentences, in the first person and the past tense, \
         say what you lived through in this scene: what you saw, heard and did. Only what \
         you could perceive. Name people only as you know them."
    );
    let schema = json!({
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"]
    });
    let known = &upto.names;
    let answer: Option<SummaryAnswer> = refiner
        .ask(
            Ask {
                stage: "episodic",
                chunk: format!("{who} in scene {}", scene.number),
                task: &task,
                body: &body,
                schema,
                max_tokens: 220,
            },
            |a: &SummaryAnswer| {
                let s = a.summary.trim();
                if !(20..=900).contains(&s.chars().count()) {
                    return Err("the summary must be 20 to 900 characters".into());
                }
                let lower = format!(" {} ", s.to_lowercase());
                if !(lower.contains(" i ") || lower.contains(" my ") || lower.contains(" me ")) {
                    return Err("the summary must be in the first person".into());
                }
                for m in namer.mentions(s).iter().filter(|m| m.by_name) {
                    if m.character != who
                        && !known.get(who).is_some_and(|k| k.contains(m.character))
                    {
                        return Err(format!(
                            "it names `{}`, whose name {name} has not heard by then",
                            &s[m.start..m.end]
                        ));
                    }
                }
                // Proper names and numbers must come from the text up to here.
                for w in s.split_whitespace().skip(1) {
                    let w = w.trim_matches(|c: char| !c.is_alphanumeric());
                    let proper = w.chars().next().is_some_and(char::is_uppercase) && w != "I";
                    if (proper || w.chars().any(|c| c.is_ascii_digit())) && !text_upto.contains(w) {
                        return Err(format!("`{}` is not in the book so far", prefix(w, 30)));
                    }
                }
                Ok(())
            },
        )
        .await;
    match answer {
        Some(a) => Summary {
            character: who.to_owned(),
            scene: scene.number,
            text: a.summary.trim().to_owned(),
            by: "model".into(),
        },
        None => Summary {
            character: who.to_owned(),
            scene: scene.number,
            text: digest,
            by: "digest".into(),
        },
    }
}

#[derive(Deserialize)]
struct GraphAnswer {
    entities: Vec<EntityAnswer>,
    relations: Vec<RelationAnswer>,
}

#[derive(Deserialize)]
struct EntityAnswer {
    name: String,
    kind: String,
}

#[derive(Deserialize)]
struct RelationAnswer {
    subject: String,
    predicate: String,
    object: String,
    #[serde(default)]
    cause: String,
}

async fn refine_graph(
    refiner: &Refiner,
    graph: &mut Graph,
    scene: &Scene,
    book: &str,
    namer: &Namer,
    world: &BTreeSet<String>,
) {
    if !refiner.has_model() {
        return;
    }
    let text = &book[scene.span.start..scene.span.end];
    let schema = json!({
        "type": "object",
        "properties": {
            "entities": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "kind": {"type": "string", "enum": ENTITY_KINDS}
            }, "required": ["name", "kind"]}},
            "relations": {"type": "array", "items": {"type": "object", "properties": {
                "subject": {"type": "string"}, "predicate": {"type": "string"},
                "object": {"type": "string"}, "cause": {"type": "string"}
            }, "required": ["subject", "predicate", "object", "cause"]}}
        },
        "required": ["entities", "relations"]
    });
    let task = format!(
        "List the entities this scene names (kinds: {}) and the facts it establishes as \
         (subject, predicate, object, cause) relations between them; cause is \"\" unless \
         the text gives one.",
        ENTITY_KINDS.join(", ")
    );
    let answer: Option<GraphAnswer> = refiner
        .ask(
            Ask {
                stage: "graph",
                chunk: format!("scene {}", scene.number),
                task: &task,
                body: &prefix(text, 6000),
                schema,
                max_tokens: 400,
            },
            |a: &GraphAnswer| {
                if a.relations.len() > 20 || a.entities.len() > 40 {
                    return Err("at most 40 entities and 20 relations".into());
                }
                for e in &a.entities {
                    if !contains_phrase(text, &e.name) {
                        return Err(format!(
                            "entity `{}` is not in the scene",
                            prefix(&e.name, 30)
                        ));
                    }
                }
                for r in &a.relations {
                    for part in [&r.subject, &r.object] {
                        if !contains_phrase(text, part) {
                            return Err(format!("`{}` is not in the scene", prefix(part, 30)));
                        }
                    }
                    if r.predicate.trim().is_empty() || r.predicate.chars().count() > 60 {
                        return Err("each predicate is a short verb phrase".into());
                    }
                }
                Ok(())
            },
        )
        .await;
    let Some(a) = answer else { return };
    for e in a.entities {
        match graph.entities.iter_mut().find(|x| x.name == e.name) {
            Some(x) => {
                x.scenes.insert(scene.number);
                x.kind = e.kind;
            }
            None => graph.entities.push(graph::Entity {
                name: e.name,
                kind: e.kind,
                aliases: BTreeSet::new(),
                scenes: [scene.number].into(),
            }),
        }
    }
    for r in a.relations {
        let mut text = format!(
            "{} {} {}",
            r.subject.trim(),
            r.predicate.trim(),
            r.object.trim()
        );
        if !r.cause.trim().is_empty() {
            text.push_str(&format!(", because {}", r.cause.trim()));
        }
        text.push('.');
        // Visibility is never the model's: it follows the same rules as the text's facts.
        let mut known_by = scene.present_at_end();
        let mut route = "observation";
        for part in [&r.subject, &r.object] {
            if let Some(m) = namer.mentions(part).first()
                && world.contains(m.character)
                && known_by.insert(m.character.to_owned())
            {
                route = "direct_experience";
            }
        }
        for org in &graph.organisations {
            if org
                .aliases
                .iter()
                .chain([&org.name])
                .any(|n| contains_phrase(&text, n))
                && !org.members.is_subset(&known_by)
            {
                known_by.extend(org.members.iter().cloned());
                route = "organisation_membership";
            }
        }
        let known_by: BTreeSet<String> = known_by.intersection(world).cloned().collect();
        if known_by.is_empty()
            || graph
                .facts
                .iter()
                .any(|f| f.text.eq_ignore_ascii_case(&text))
        {
            continue;
        }
        graph.facts.push(GraphFact {
            scene: scene.number,
            text,
            subject: r.subject,
            predicate: r.predicate,
            object: r.object,
            cause: r.cause,
            route: route.to_owned(),
            known_by,
            source: "model".into(),
        });
    }
}

#[derive(Deserialize)]
struct AnnotationAnswer {
    emotion: String,
    intensity: f32,
    trigger: String,
    intent: String,
}

#[derive(Deserialize)]
struct DescriptionAnswer {
    description: String,
}

async fn personality_stage(
    refiner: &Refiner,
    scenes: &[Scene],
    embedder: &dyn Embedder,
    options: &Options,
    progress: &dyn Progress,
) -> anyhow::Result<(Vec<Annotation>, Vec<SceneBehaviour>, Vec<PatternOut>)> {
    let per_scene = personality::lines_by_scene(scenes);
    let total: usize = per_scene.iter().map(|l| l.lines.len()).sum();
    progress.start("personality", total as u64 + 1);
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
        for personality::Line {
            text: line,
            previous,
        } in lines
        {
            let prev = previous.as_ref().map(|(w, t)| (w.as_str(), t.as_str()));
            let (emotion, intensity, trigger, intent) = personality::annotate(line, prev);
            let body = format!(
                "Line before: {}\nThe line ({character}): \"{line}\"",
                prev.map_or("(none)".to_owned(), |(w, t)| format!(
                    "{w}: \"{}\"",
                    prefix(t, 200)
                ))
            );
            let answer: Option<AnnotationAnswer> = refiner
                .ask(
            Ask {
                stage: "personality",
                chunk: format!("a line of {character} in scene {scene}"),
                task: "Annotate the line: its emotion, intensity (0 to 1), what triggered it (a \
                     few words), and the speaker's intent.",
                body: &body,
                schema: schema.clone(),
                max_tokens: 80,
            },
            |a: &AnnotationAnswer| {
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
                    },
        )
                .await;
            annotations.push(match answer {
                Some(a) => Annotation {
                    character: character.clone(),
                    scene: *scene,
                    line: line.clone(),
                    emotion: a.emotion,
                    intensity: a.intensity,
                    trigger: a.trigger,
                    intent: a.intent,
                    by: "model".into(),
                },
                None => Annotation {
                    character: character.clone(),
                    scene: *scene,
                    line: line.clone(),
                    emotion,
                    intensity,
                    trigger,
                    intent,
                    by: "digest".into(),
                },
            });
            progress.step();
        }
        let refs: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
        let mut mean = vec![0.0; refs.first().map_or(0, |v| v.len())];
        for v in &refs {
            for (m, x) in mean.iter_mut().zip(v.iter()) {
                *m += x;
            }
        }
        dramatis_embed::normalise(&mut mean);
        behaviours.push(SceneBehaviour {
            character: character.clone(),
            scene: *scene,
            vector: mean,
            lines: texts.into_iter().zip(vectors).collect(),
        });
    }
    let every: BTreeSet<usize> = scenes.iter().map(|s| s.number).collect();
    let mut patterns =
        personality::patterns(&behaviours, &annotations, scenes, &every, options.patterns);
    for p in &mut patterns {
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
    progress.step();
    Ok((annotations, behaviours, patterns))
}

/// Reads the book and character list, runs the stages and writes the folder: the whole
/// of `dramatis ingest` but the command line.
pub async fn ingest(
    book_path: &Path,
    characters_path: &Path,
    out: &Path,
    embedder: &dyn Embedder,
    model: Option<Arc<dyn LanguageModel>>,
    options: &Options,
    progress: &dyn Progress,
) -> anyhow::Result<output::Done> {
    let book = text::read_book(book_path)?;
    let characters = text::read_characters(characters_path)?;
    let cache_dir = out.join(".ingest");
    std::fs::create_dir_all(&cache_dir)
        .with_context(|| format!("cannot create {}", cache_dir.display()))?;
    let cache = StageCache::new(Some(&cache_dir));
    let refiner = &Refiner::new(model, Some(&cache_dir))?;
    let started = Instant::now();
    let (analysis, stopped) = analyse(
        &book,
        &characters,
        embedder,
        refiner,
        &cache,
        options,
        progress,
    )
    .await?;
    output::write(
        &analysis,
        &characters,
        &book,
        book_path,
        out,
        refiner,
        options,
        stopped,
        started.elapsed().as_secs_f64(),
    )
}

#[cfg(test)]
mod tests;
