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

pub mod characters;
pub mod cjk;
mod clause;
pub mod episodic;
pub mod graph;
pub mod identity;
mod lexicon;
pub mod narration;
pub mod output;
pub mod partition;
pub mod personality;
pub mod prepare;
mod presence;
mod progress;
mod proper;
pub mod refine;
mod refine_graph;
mod refine_personality;
mod refine_scenes;
mod refine_summary;
mod retelling;
mod scenario_out;
pub mod scenes;
mod speech;
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

use self::episodic::{Summary, Upto};
use self::graph::Graph;
use self::identity::NameTable;
use self::partition::partition;
use self::personality::{Annotation, PatternOut, SceneBehaviour};
pub use self::progress::{Progress, Quiet};
use self::refine::{Refiner, Rejection, StageCache, content_hash};
use self::refine_graph::refine_graph;
use self::refine_personality::personality_stage;
use self::refine_scenes::{refine_scene, refine_speakers};
use self::refine_summary::summarise;
use self::scenes::{BookFacts, Scene};
use self::text::{FocusCharacter, Namer, prefix};

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
    /// Read the book's first N chapters only (the rest is left out, as front matter
    /// is).
    pub chapters: Option<usize>,
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
        let mut out = std::collections::BTreeMap::new();
        for s in &self.scenes {
            // A chapter of documents by several writers: the first one's.
            if let Some(n) = &s.narrator {
                out.entry(s.span.chapter).or_insert_with(|| n.clone());
            }
        }
        out
    }

    /// Focus characters on stage in at least one scene: the world's cast, each with an
    /// agent that is scheduled.
    #[must_use]
    pub fn on_stage(&self) -> BTreeSet<String> {
        self.scenes
            .iter()
            .flat_map(|s| s.present().cloned())
            .collect()
    }

    /// Focus characters never on stage whom some sentence shows living, saying or
    /// being told what it tells (a father whose deathbed words a son retells, a man
    /// dead before the story): each gets an agent that can be interviewed and is
    /// never cast, so the dead do not walk in a sandbox.
    #[must_use]
    pub fn interview_only(&self) -> BTreeSet<String> {
        let on_stage = self.on_stage();
        self.graph
            .facts
            .iter()
            .flat_map(|f| &f.known_by)
            .filter(|c| !on_stage.contains(*c))
            .cloned()
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
    let base = base_key(book, characters, refiner)?;
    let mut analysis = Analysis::default();
    let stop = |stage: &str| options.stop_after.as_deref() == Some(stage);

    // 1. Scenes.
    let key = content_hash(&[b"scenes", &base.to_le_bytes()]);
    (analysis.title, analysis.chapters, analysis.scenes) =
        cached("scenes", key, cache, refiner, async {
            Ok(scene_stage(refiner, book, characters, &namer, progress).await)
        })
        .await?;
    check_story(book, &analysis, characters)?;
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
        Ok(episodic_stage(refiner, book, characters, &analysis, &namer, progress).await)
    })
    .await?;
    progress.finish(
        "episodic",
        &format!("{} summaries", analysis.summaries.len()),
    );
    if stop("episodic") {
        return Ok((analysis, true));
    }

    // 3. Knowledge graph. Every listed character may know what a sentence tells: one
    // never on stage (the dead, the absent) knows what the sentence itself shows it
    // living or saying, and becomes an interview-only agent.
    let world: BTreeSet<String> = characters.iter().map(|c| c.id.clone()).collect();
    let key = content_hash(&[b"graph", &key.to_le_bytes()]);
    analysis.graph = cached("graph", key, cache, refiner, async {
        Ok(graph_stage(
            refiner,
            book,
            characters,
            (&analysis.scenes, &world),
            &namer,
            progress,
        )
        .await)
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
            personality_stage(
                refiner,
                &analysis.scenes,
                embedder,
                options.patterns,
                progress,
            )
            .await
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

/// What every stage's cache key starts from: this build's stage code, the book, the
/// characters and the model.
fn base_key(book: &str, characters: &[FocusCharacter], refiner: &Refiner) -> anyhow::Result<u64> {
    let chars_json = serde_json::to_vec(characters)?;
    let model = refiner.model_name();
    Ok(content_hash(&[
        STAGE_VERSION.as_bytes(),
        book.as_bytes(),
        &chars_json,
        model.as_bytes(),
    ]))
}

/// Stage 1: the book cut into chapters and scenes, each scene prepared (and refined
/// when a model is configured): the title, the number of chapters, the scenes.
async fn scene_stage(
    refiner: &Refiner,
    book: &str,
    characters: &[FocusCharacter],
    namer: &Namer,
    progress: &dyn Progress,
) -> (Option<String>, usize, Vec<Scene>) {
    let parts = partition(book);
    progress.start("scenes", parts.scenes.len() as u64);
    let read = read_scenes(book, characters, namer, &parts, &parts.scenes);
    let mut scenes = Vec::with_capacity(read.len());
    for mut scene in read {
        let text = &book[scene.span.start..scene.span.end];
        refine_scene(refiner, &mut scene, text, namer).await;
        refine_speakers(refiner, &mut scene, book, characters, namer).await;
        scenes.push(scene);
        progress.step();
    }
    (parts.title, parts.chapters, scenes)
}

/// Stage 1's deterministic path: the scenes `spans` cut the book into (`parts.scenes`,
/// or another grouping of the same book). Each of the book's reading units
/// (`parts.units`) is read whole, told by its document's writer or its chapter's
/// narrator; a scene is the units it covers, each cut to the scene where the scene
/// cuts it. A span that runs across the start of a document is two scenes.
#[must_use]
pub fn read_scenes(
    book: &str,
    characters: &[FocusCharacter],
    namer: &Namer,
    parts: &partition::Partition,
    spans: &[partition::Span],
) -> Vec<Scene> {
    let facts = BookFacts::read(book, characters, namer);
    let chapters = narration::narrators(book, spans, characters, namer);
    let tellers = narration::Tellers::new(book, &parts.documents, chapters, namer);
    let read = |number: usize, span: &partition::Span| {
        let narrator = tellers.at(span.start, span.chapter);
        let text = &book[span.start..span.end];
        prepare::prepare(number, *span, text, (namer, &facts), narrator.as_deref())
    };
    let units: Vec<Scene> = parts
        .units
        .iter()
        .enumerate()
        .map(|(i, u)| read(i + 1, u))
        .collect();
    let mut cut = Vec::with_capacity(spans.len());
    for span in spans {
        let mut start = span.start;
        for at in tellers
            .starts()
            .filter(|at| span.start < *at && *at < span.end)
        {
            cut.push(partition::Span {
                start,
                end: at,
                ..*span
            });
            start = at;
        }
        cut.push(partition::Span { start, ..*span });
    }
    cut.iter()
        .enumerate()
        .map(|(i, span)| {
            let mut pieces: Vec<Scene> = units
                .iter()
                .filter(|u| u.span.start < span.end && span.start < u.span.end)
                .filter_map(|u| {
                    let from = u.paragraph_starts.partition_point(|at| *at < span.start);
                    let to = u.paragraph_starts.partition_point(|at| *at < span.end);
                    match (from, to) {
                        _ if from >= to => None,
                        (0, to) if to == u.paragraph_starts.len() => Some(u.clone()),
                        _ => Some(prepare::slice(u, from, to)),
                    }
                })
                .collect();
            let mut scene = match pieces.len() {
                0 => read(i + 1, span),
                1 => pieces.pop().expect("one piece"),
                _ => prepare::join(pieces, &book[span.start..span.end]),
            };
            scene.number = i + 1;
            scene.span = *span;
            scene
        })
        .collect()
}

/// Who may know what, as the deterministic path reads it off `spans`: every (book
/// offset of the paragraph, sentence as written, character) a fact of the graph
/// grants. However the scenes are grouped or split, the pairs of a coarser or finer
/// grouping are among those of the book's own (`ingest/tests/regroup.rs`).
#[must_use]
pub fn knowledge_pairs(
    book: &str,
    characters: &[FocusCharacter],
    parts: &partition::Partition,
    spans: &[partition::Span],
) -> BTreeSet<(usize, String, String)> {
    let namer = Namer::new(characters);
    let scenes = read_scenes(book, characters, &namer, parts, spans);
    let world: BTreeSet<String> = characters.iter().map(|c| c.id.clone()).collect();
    let graph = graph::extract(&scenes, characters, &namer, &world);
    graph
        .facts
        .into_iter()
        .flat_map(|f| {
            f.known_by
                .into_iter()
                .map(move |c| (f.at, f.sentence.clone(), c))
        })
        .collect()
}

/// Stage 3: the knowledge graph of the characters on stage (`world`), read off the
/// scenes, then refined scene by scene.
async fn graph_stage(
    refiner: &Refiner,
    book: &str,
    characters: &[FocusCharacter],
    (scenes, world): (&[Scene], &BTreeSet<String>),
    namer: &Namer,
    progress: &dyn Progress,
) -> Graph {
    progress.start("graph", scenes.len() as u64 + 1);
    let mut graph = graph::extract(scenes, characters, namer, world);
    progress.step();
    for scene in scenes {
        refine_graph(refiner, &mut graph, scene, book, world).await;
        progress.step();
    }
    graph
}

/// Fails when the book holds no story to ingest: too few words under its chapters, or
/// none of the listed characters on stage.
fn check_story(
    book: &str,
    analysis: &Analysis,
    characters: &[FocusCharacter],
) -> anyhow::Result<()> {
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
    Ok(())
}

/// Stage 2: each present character's summary of each scene. Structural: a scene's
/// summaries see the scenes up to it and the book's text up to its end, nothing later.
async fn episodic_stage(
    refiner: &Refiner,
    book: &str,
    characters: &[FocusCharacter],
    analysis: &Analysis,
    namer: &Namer,
    progress: &dyn Progress,
) -> Vec<Summary> {
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
                refiner, characters, &upto, text_upto, namer, who, &summaries,
            )
            .await;
            summaries.push(summary);
            progress.step();
        }
    }
    summaries
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

/// A book ingested, with its analysis kept: the scenario at any split of the book can be
/// cut from it without running a stage again (`dramatis eval corpus` asks each item
/// with the characters' past ending where the item is asked).
pub struct Analysed {
    pub analysis: Analysis,
    pub characters: Vec<FocusCharacter>,
    pub book: String,
    pub done: output::Done,
}

impl Analysed {
    /// The scenario whose characters' past is the first `past` scenes (their memories,
    /// facts, patterns and the names they know from those scenes only).
    pub fn scenario_at(&self, past: usize) -> anyhow::Result<crate::file::ScenarioFile> {
        let past = past.min(self.analysis.scenes.len());
        let patterns = output::past_patterns(&self.analysis, past);
        scenario_out::scenario_file(
            &self.analysis,
            &self.characters,
            &self.book,
            &self.done.name,
            past,
            &patterns,
        )
    }

    /// Scenes that are over at byte offset `at` of the book: a position inside a scene
    /// does not count that scene as lived.
    #[must_use]
    pub fn scenes_over_at(&self, at: usize) -> usize {
        self.analysis
            .scenes
            .iter()
            .take_while(|s| s.span.end <= at)
            .count()
    }
}

/// Reads the book and character list, runs the stages and writes the folder (the whole
/// of `dramatis ingest` but the command line); keeps the analysis and the book's text.
pub async fn ingest_analysed(
    book_path: &Path,
    characters_path: &Path,
    out: &Path,
    embedder: &dyn Embedder,
    model: Option<Arc<dyn LanguageModel>>,
    options: &Options,
    progress: &dyn Progress,
) -> anyhow::Result<Analysed> {
    let book = text::read_book(book_path)?;
    let book = match options.chapters {
        Some(n) => first_chapters(book, n)?,
        None => book,
    };
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
    let done = output::write(
        &analysis,
        &characters,
        &book,
        book_path,
        out,
        refiner,
        options,
        stopped,
        started.elapsed().as_secs_f64(),
    )?;
    Ok(Analysed {
        analysis,
        characters,
        book,
        done,
    })
}

/// The book up to the end of its chapter `n`: the same text, so every offset into it
/// is the whole book's (an answer file's anchors find the same places). An error when
/// the book has fewer chapters.
pub fn first_chapters(book: String, n: usize) -> anyhow::Result<String> {
    let parts = partition(&book);
    if n == 0 || parts.chapters < n {
        bail!(
            "--chapters {n}: the book has {} chapters (headings the ingest reads)",
            parts.chapters
        );
    }
    let end = parts
        .units
        .iter()
        .filter(|s| s.chapter <= n)
        .map(|s| s.end)
        .max()
        .unwrap_or(book.len());
    let mut book = book;
    book.truncate(end);
    Ok(book)
}

#[cfg(test)]
mod tests;
