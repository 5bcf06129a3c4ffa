//! The ingest's folder: `scenario.toml` (written by `scenario_out.rs`, checked by the scenario loader), the full
//! layers in `layers/*.json`, and `ingest-report.json` (cost per stage, rejected
//! refinements, the layer-size table). The scenario splits the book: scenes up to
//! `past` are the characters' past (their memories, facts, patterns and the names they
//! know), the rest is the script. Nothing from a script scene reaches a starting shard.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use super::refine::{Refiner, Rejection, StageCost};
use super::scenario_out::scenario_file;
use super::text::{FocusCharacter, word_count};
use super::{Analysis, Options, STAGES, personality};
use crate::file::id_from;

/// One row of the layer-size table (the paper's Table 6, per character).
#[derive(Debug, Clone, Serialize)]
pub struct LayerRow {
    pub character: String,
    /// Scenes it is present in, in the whole book.
    pub scenes: usize,
    pub memories: usize,
    pub facts: usize,
    pub patterns: usize,
    /// What its starting shard received (the past only).
    pub shard_memories: usize,
    pub shard_facts: usize,
    pub shard_patterns: usize,
}

/// What an ingest did.
#[derive(Debug, Clone, Serialize)]
pub struct Done {
    /// The scenario written (none when the run stopped after a stage).
    pub scenario: Option<PathBuf>,
    pub name: String,
    pub words: usize,
    pub chapters: usize,
    pub scenes: usize,
    /// Scenes that became the characters' past, and the script's scenes.
    pub past: usize,
    pub script: usize,
    pub organisations: Vec<(String, Vec<String>)>,
    pub stages: Vec<(String, StageCost)>,
    pub rejections: Vec<Rejection>,
    pub layers: Vec<LayerRow>,
    /// Characters of the list never on stage, talked about, whom the book shows knowing
    /// nothing: no agent.
    pub offstage: Vec<String>,
    /// Characters of the list never on stage whom the book shows living, saying or
    /// being told something (the dead, the absent): an agent to interview, never cast.
    #[serde(default)]
    pub interview_only: Vec<String>,
    /// Characters of the list the book never names (by their name or an alias).
    #[serde(default)]
    pub unnamed: Vec<String>,
    /// Quoted lines the book holds (none: no speaker, no speech patterns).
    #[serde(default)]
    pub quoted_lines: usize,
    pub seconds: f64,
    pub stopped_after: Option<String>,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn write(
    analysis: &Analysis,
    characters: &[FocusCharacter],
    book: &str,
    book_path: &Path,
    out: &Path,
    refiner: &Refiner,
    options: &Options,
    stopped: bool,
    seconds: f64,
) -> anyhow::Result<Done> {
    let world = analysis.on_stage();
    let named: std::collections::BTreeSet<&String> = analysis
        .scenes
        .iter()
        .flat_map(|s| s.present().chain(&s.referenced))
        .collect();
    let past = options.past.count(analysis.scenes.len());
    write_layers(analysis, out)?;

    let name = id_from(
        analysis
            .title
            .as_deref()
            .or_else(|| book_path.file_stem().and_then(|s| s.to_str()))
            .unwrap_or("book"),
        "book",
    );
    let shard_patterns = if stopped {
        Vec::new()
    } else {
        past_patterns(analysis, past)
    };
    let file = if stopped {
        None
    } else {
        Some(scenario_file(
            analysis,
            characters,
            book,
            &name,
            past,
            &shard_patterns,
        )?)
    };
    let scenario = if let Some(file) = &file {
        let header = format!(
            "# Ingested by `dramatis ingest` from {} (scenes 1–{past} are the characters' past,\n\
             # the rest the script). The full layers are in layers/; see ingest-report.json.",
            book_path
                .file_name()
                .map_or_else(|| "the book".into(), |n| n.to_string_lossy())
        );
        Some(file.write(out, &header)?)
    } else {
        None
    };
    let interview_only = analysis.interview_only();
    let agents: BTreeSet<String> = world.union(&interview_only).cloned().collect();
    let layers = layer_table(analysis, &agents, file.as_ref());
    let costs = refiner.costs();
    let done = Done {
        scenario,
        name,
        words: word_count(book),
        chapters: analysis.chapters,
        scenes: analysis.scenes.len(),
        past,
        script: analysis.scenes.len() - past,
        organisations: analysis
            .graph
            .organisations
            .iter()
            .map(|o| (o.name.clone(), o.members.iter().cloned().collect()))
            .collect(),
        stages: STAGES
            .iter()
            .filter_map(|s| costs.get(*s).map(|c| ((*s).to_owned(), c.clone())))
            .collect(),
        rejections: refiner.rejections(),
        layers,
        offstage: characters
            .iter()
            .filter(|c| !agents.contains(&c.id) && named.contains(&c.id))
            .map(|c| c.id.clone())
            .collect(),
        interview_only: interview_only.into_iter().collect(),
        unnamed: characters
            .iter()
            .filter(|c| !named.contains(&c.id))
            .map(|c| c.id.clone())
            .collect(),
        quoted_lines: super::text::paragraphs(book)
            .iter()
            .flatten()
            .filter(|s| matches!(s, super::text::Segment::Quote(_)))
            .count(),
        seconds,
        stopped_after: options.stop_after.clone().filter(|_| stopped),
    };
    let report = out.join("ingest-report.json");
    std::fs::write(&report, serde_json::to_vec_pretty(&done)?)
        .with_context(|| format!("cannot write {}", report.display()))?;
    Ok(done)
}

/// Every stage's result under `out/layers/`, as JSON.
fn write_layers(analysis: &Analysis, out: &Path) -> anyhow::Result<()> {
    let layers_dir = out.join("layers");
    std::fs::create_dir_all(&layers_dir)
        .with_context(|| format!("cannot create {}", layers_dir.display()))?;
    let write_json = |name: &str, value: &dyn erased::Json| -> anyhow::Result<()> {
        let path = layers_dir.join(name);
        std::fs::write(&path, value.to_json()?)
            .with_context(|| format!("cannot write {}", path.display()))
    };
    write_json("scenes.json", &analysis.scenes)?;
    write_json("episodic.json", &analysis.summaries)?;
    write_json("graph.json", &analysis.graph)?;
    write_json("narration.json", &analysis.narrators())?;
    write_json(
        "personality.json",
        &serde_json::json!({"annotations": analysis.annotations, "patterns": analysis.patterns}),
    )?;
    let identity: Vec<_> = analysis
        .names
        .iter()
        .enumerate()
        .map(|(i, row)| serde_json::json!({"after_scene": i + 1, "knows": row}))
        .collect();
    write_json("identity.json", &identity)?;
    Ok(())
}

/// Serialising a few different layer types through one closure.
mod erased {
    pub trait Json {
        fn to_json(&self) -> anyhow::Result<Vec<u8>>;
    }
    impl<T: serde::Serialize> Json for T {
        fn to_json(&self) -> anyhow::Result<Vec<u8>> {
            Ok(serde_json::to_vec_pretty(self)?)
        }
    }
}

/// Patterns clustered over the past scenes only; a pattern whose scenes are exactly a
/// whole-book pattern's keeps that pattern's (possibly model-written) description.
pub(super) fn past_patterns(analysis: &Analysis, past: usize) -> Vec<personality::PatternOut> {
    let keep: BTreeSet<usize> = (1..=past).collect();
    let mut list = personality::patterns(
        &analysis.behaviours,
        &analysis.annotations,
        &analysis.scenes,
        &keep,
        None,
    );
    for p in &mut list {
        if let Some(full) = analysis
            .patterns
            .iter()
            .find(|f| f.character == p.character && f.scenes == p.scenes)
        {
            p.description.clone_from(&full.description);
        }
    }
    list
}

fn layer_table(
    analysis: &Analysis,
    agents: &BTreeSet<String>,
    file: Option<&crate::file::ScenarioFile>,
) -> Vec<LayerRow> {
    agents
        .iter()
        .map(|c| {
            let scenes = analysis
                .scenes
                .iter()
                .filter(|s| s.present().any(|p| p == c))
                .count();
            // The starting shard: what the written scenario gives it.
            let written = file.and_then(|f| f.characters.iter().find(|w| w.id == *c));
            LayerRow {
                character: c.clone(),
                scenes,
                memories: analysis
                    .summaries
                    .iter()
                    .filter(|s| s.character == *c)
                    .count(),
                facts: analysis
                    .graph
                    .facts
                    .iter()
                    .filter(|f| f.known_by.contains(c))
                    .count(),
                patterns: analysis
                    .patterns
                    .iter()
                    .filter(|p| p.character == *c)
                    .count(),
                shard_memories: written.map_or(0, |w| w.memories.len()),
                shard_facts: file.map_or(0, |f| {
                    f.facts.iter().filter(|x| x.known_by.contains(c)).count()
                }),
                shard_patterns: written.map_or(0, |w| w.patterns.len()),
            }
        })
        .collect()
}
