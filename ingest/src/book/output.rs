//! The ingest's folder: `scenario.toml` (checked by the world's loader), the full
//! layers in `layers/*.json`, and `ingest-report.json` (cost per stage, rejected
//! refinements, the layer-size table). The scenario splits the book: scenes up to
//! `past` are the characters' past (their memories, facts, patterns and the names they
//! know), the rest is the script. Nothing from a script scene reaches a starting shard.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use super::refine::{Refiner, Rejection, StageCost};
use super::text::{FocusCharacter, Namer, Segment, is_description, paragraphs, prefix, sentences};
use super::{Analysis, Options, STAGES, personality};
use crate::file::{
    Character, Fact, Location, Memory, Open, PathEntry, Pattern, ScenarioFile, Scene, World,
    id_from,
};

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
    /// Characters of the list never on stage but talked about.
    pub offstage: Vec<String>,
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
    let scenario = if stopped {
        None
    } else {
        let file = scenario_file(analysis, characters, book, &name, past, &shard_patterns)?;
        let header = format!(
            "# Ingested by `dramatis ingest` from {} (scenes 1–{past} are the characters' past,\n\
             # the rest the script). The full layers are in layers/; see ingest-report.json.",
            book_path
                .file_name()
                .map_or_else(|| "the book".into(), |n| n.to_string_lossy())
        );
        Some(file.write(out, &header)?)
    };
    let layers = layer_table(analysis, &world, past, scenario.is_some(), &shard_patterns);
    let costs = refiner.costs();
    let done = Done {
        scenario,
        name,
        words: book.split_whitespace().count(),
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
            .filter(|c| !world.contains(&c.id) && named.contains(&c.id))
            .map(|c| c.id.clone())
            .collect(),
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
fn past_patterns(analysis: &Analysis, past: usize) -> Vec<personality::PatternOut> {
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
    world: &BTreeSet<String>,
    past: usize,
    written: bool,
    shard_patterns: &[personality::PatternOut],
) -> Vec<LayerRow> {
    world
        .iter()
        .map(|c| {
            let scenes = analysis
                .scenes
                .iter()
                .filter(|s| s.present().any(|p| p == c))
                .count();
            let memories = analysis.summaries.iter().filter(|s| s.character == *c);
            let facts = analysis
                .graph
                .facts
                .iter()
                .filter(|f| f.known_by.contains(c));
            let shard = |n: usize| if written { n } else { 0 };
            LayerRow {
                character: c.clone(),
                scenes,
                memories: memories.clone().count(),
                facts: facts.clone().count(),
                patterns: analysis
                    .patterns
                    .iter()
                    .filter(|p| p.character == *c)
                    .count(),
                shard_memories: shard(memories.filter(|s| s.scene <= past).count()),
                shard_facts: shard(facts.filter(|f| f.scene <= past).count()),
                shard_patterns: shard(shard_patterns.iter().filter(|p| p.character == *c).count()),
            }
        })
        .collect()
}

fn location_ids(analysis: &Analysis) -> (Vec<Location>, BTreeMap<usize, String>) {
    let mut locations: Vec<Location> = Vec::new();
    let mut of_scene = BTreeMap::new();
    for s in &analysis.scenes {
        let short: String = s
            .location
            .trim_start_matches("the ")
            .split_whitespace()
            .take(5)
            .collect::<Vec<_>>()
            .join(" ");
        let base = id_from(&short, "place");
        let id = match locations.iter().find(|l| l.name == s.location) {
            Some(l) => l.id.clone(),
            None => {
                let mut id = base.clone();
                let mut n = 2;
                while locations.iter().any(|l| l.id == id) {
                    id = format!("{base}-{n}");
                    n += 1;
                }
                locations.push(Location {
                    id: id.clone(),
                    name: s.location.clone(),
                    description: format!(
                        "{}{}.",
                        capitalise(&s.location),
                        if s.atmosphere.is_empty() {
                            String::new()
                        } else {
                            format!(", {}", s.atmosphere)
                        }
                    ),
                });
                id
            }
        };
        of_scene.insert(s.number, id);
    }
    (locations, of_scene)
}

fn capitalise(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// The names in `text` of focus characters `knower` does not know by name at `row`,
/// each replaced by that character's description.
fn as_known(
    text: &str,
    knower: &str,
    names: &BTreeMap<String, BTreeSet<String>>,
    characters: &[FocusCharacter],
    namer: &Namer,
) -> String {
    let mut out = String::new();
    let mut at = 0;
    for m in namer.mentions(text) {
        let known = m.character == knower
            || !m.by_name
            || names.get(knower).is_some_and(|k| k.contains(m.character));
        if known {
            continue;
        }
        let description = characters
            .iter()
            .find(|c| c.id == m.character)
            .and_then(FocusCharacter::description)
            .unwrap_or("someone");
        out.push_str(&text[at..m.start]);
        out.push_str(description);
        at = m.end;
    }
    out.push_str(&text[at..]);
    out
}

fn scenario_file(
    analysis: &Analysis,
    characters: &[FocusCharacter],
    book: &str,
    name: &str,
    past: usize,
    shard_patterns: &[personality::PatternOut],
) -> anyhow::Result<ScenarioFile> {
    let world = analysis.on_stage();
    let namer = Namer::new(characters);
    let empty = BTreeMap::new();
    let names_at = |scenes_done: usize| {
        if scenes_done == 0 {
            &empty
        } else {
            &analysis.names[scenes_done - 1]
        }
    };
    let (locations, location_of) = location_ids(analysis);
    let mut paths: Vec<PathEntry> = Vec::new();
    for pair in analysis.scenes.windows(2) {
        let (a, b) = (&location_of[&pair[0].number], &location_of[&pair[1].number]);
        let known = paths
            .iter()
            .any(|p| (p.from == *a && p.to == *b) || (p.from == *b && p.to == *a));
        if a != b && !known {
            paths.push(PathEntry {
                from: a.clone(),
                to: b.clone(),
                distance: 1,
            });
        }
    }
    let script: Vec<&super::scenes::Scene> = analysis.scenes[past..]
        .iter()
        .filter(|s| s.present().any(|c| world.contains(c)))
        .collect();
    let at_start = names_at(past);
    let mut out_characters = Vec::new();
    for c in characters.iter().filter(|c| world.contains(&c.id)) {
        let first_cast = script
            .iter()
            .find(|s| s.present().any(|p| *p == c.id))
            .copied()
            .or_else(|| {
                analysis
                    .scenes
                    .iter()
                    .rev()
                    .find(|s| s.present().any(|p| *p == c.id))
            })
            .map(|s| location_of[&s.number].clone())
            .unwrap_or_else(|| locations[0].id.clone());
        let memories = analysis
            .summaries
            .iter()
            .filter(|s| s.character == c.id && s.scene <= past)
            .map(|s| Memory {
                id: format!("scene-{}", s.scene),
                text: s.text.clone(),
            })
            .collect();
        let patterns = shard_patterns
            .iter()
            .filter(|p| p.character == c.id)
            .enumerate()
            .map(|(i, p)| Pattern {
                id: format!("pattern-{}", i + 1),
                description: p.description.clone(),
                excerpts: p.excerpts.clone(),
            })
            .collect();
        // What strangers see: the first description that holds no form of the name.
        let name_forms: Vec<&str> = c.forms().filter(|f| !is_description(f)).collect();
        let known_as = c
            .aliases
            .iter()
            .filter(|a| is_description(a))
            .find(|d| !name_forms.iter().any(|n| d.contains(n)))
            .cloned()
            .unwrap_or_default();
        out_characters.push(Character {
            id: c.id.clone(),
            name: c.name.clone(),
            aliases: c
                .aliases
                .iter()
                .filter(|a| !is_description(a))
                .cloned()
                .collect(),
            profile: profile(analysis, c, past),
            style: style(analysis, &c.id, past),
            location: first_cast,
            knows: at_start
                .get(&c.id)
                .map(|k| k.iter().filter(|w| world.contains(*w)).cloned().collect())
                .unwrap_or_default(),
            known_as,
            memories,
            patterns,
            ..Character::default()
        });
    }
    let mut facts = Vec::new();
    for (n, f) in analysis
        .graph
        .facts
        .iter()
        .filter(|f| f.scene <= past)
        .enumerate()
    {
        // One copy per wording: a knower who does not know a name gets the description,
        // in the sentence and in its subject and object alike.
        let mut wordings: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
        for knower in f.known_by.iter().filter(|k| world.contains(*k)) {
            let known = |t: &str| as_known(t, knower, names_at(f.scene), characters, &namer);
            wordings
                .entry((known(&f.text), known(&f.subject), known(&f.object)))
                .or_default()
                .push(knower.clone());
        }
        let several = wordings.len() > 1;
        for (i, ((text, subject, object), known_by)) in wordings.into_iter().enumerate() {
            facts.push(Fact {
                id: if several {
                    format!("s{}-f{}-{}", f.scene, n + 1, i + 1)
                } else {
                    format!("s{}-f{}", f.scene, n + 1)
                },
                text,
                known_by,
                subject,
                predicate: f.predicate.clone(),
                object,
                cause: String::new(),
                route: f.route.clone(),
            });
        }
    }
    let mut scenes = Vec::new();
    for s in &script {
        let cast: Vec<String> = s
            .present()
            .filter(|c| world.contains(*c))
            .cloned()
            .collect();
        let learned = names_at(s.number - 1);
        let knows: BTreeMap<String, Vec<String>> = cast
            .iter()
            .filter_map(|c| {
                let k: Vec<String> = learned
                    .get(c)
                    .map(|k| {
                        k.iter()
                            .filter(|w| world.contains(*w) && *w != c)
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                (!k.is_empty()).then(|| (c.clone(), k))
            })
            .collect();
        let text = &book[s.span.start..s.span.end];
        let lines = s.utterances.len();
        let max_turns = u32::try_from((lines / 2).clamp(4, 10)).unwrap_or(10);
        scenes.push(Scene {
            id: format!("scene-{}", s.number),
            location: location_of[&s.number].clone(),
            cast,
            beat: beat(text),
            min_turns: max_turns.min(3),
            max_turns,
            opening: opening(text),
            knows,
        });
    }
    let open = scenes.is_empty().then(|| {
        let last = analysis.scenes.last().expect("scenes");
        Open {
            premise: format!(
                "After the end of the book. Its last scene: {}",
                beat(&book[last.span.start..last.span.end])
            ),
            opening: String::new(),
            opening_location: location_of[&last.number].clone(),
            rounds: 6,
            scene_turns: 4,
        }
    });
    let title = analysis.title.clone().unwrap_or_else(|| name.to_owned());
    Ok(ScenarioFile {
        version: 1,
        name: name.to_owned(),
        title: title.clone(),
        description: format!(
            "Ingested from a book: {} scenes, the first {past} as the characters' past.",
            analysis.scenes.len()
        ),
        world: World {
            description: format!("The world of {title}."),
        },
        open,
        locations,
        paths,
        characters: out_characters,
        facts,
        scenes,
    })
}

fn narration(text: &str) -> Vec<String> {
    paragraphs(text)
        .into_iter()
        .flat_map(|p| {
            p.into_iter().filter_map(|s| match s {
                Segment::Narration(n) => Some(n),
                Segment::Quote(_) => None,
            })
        })
        .collect()
}

/// The world-side beat: the scene's first and last narration sentences.
fn beat(text: &str) -> String {
    let told = narration(text).join(" ");
    let all: Vec<&str> = sentences(&told)
        .into_iter()
        .filter(|s| s.split_whitespace().count() >= 6)
        .collect();
    match (all.first(), all.last()) {
        (Some(first), Some(last)) if first != last => prefix(&format!("{first} … {last}"), 600),
        (Some(first), _) => prefix(first, 600),
        _ => "The scene as the book tells it.".to_owned(),
    }
}

/// The opening narration: the scene's first paragraph of narration, for those present.
fn opening(text: &str) -> String {
    narration(text)
        .first()
        .map_or_else(String::new, |n| prefix(n, 500))
}

/// The character's own description: the first narration sentences naming it, from its
/// past scenes only.
fn profile(analysis: &Analysis, c: &FocusCharacter, past: usize) -> String {
    let namer = Namer::new(std::slice::from_ref(c));
    let told: Vec<&str> = analysis.scenes[..past]
        .iter()
        .flat_map(|s| &s.sentences)
        .filter(|s| s.spoken_by.is_none() && !namer.mentions(&s.text).is_empty())
        .map(|s| s.text.as_str())
        .take(2)
        .collect();
    let mut out = c.name.clone();
    if let Some(d) = c.description() {
        out.push_str(&format!(", {d}"));
    }
    out.push('.');
    if !told.is_empty() {
        out.push(' ');
        out.push_str(&prefix(&told.join(" "), 400));
    }
    out
}

/// How it speaks, from its lines in the past scenes: length and questions.
fn style(analysis: &Analysis, id: &str, past: usize) -> String {
    let lines: Vec<&str> = analysis.scenes[..past]
        .iter()
        .flat_map(|s| &s.utterances)
        .filter(|u| u.speaker.focus() == Some(id))
        .map(|u| u.text.as_str())
        .collect();
    if lines.is_empty() {
        return "in their own voice".to_owned();
    }
    let words: usize = lines.iter().map(|l| l.split_whitespace().count()).sum();
    let mean = words / lines.len();
    let questions = lines.iter().filter(|l| l.trim_end().ends_with('?')).count();
    let length = match mean {
        0..=6 => "in short, plain sentences",
        7..=15 => "in measured sentences",
        _ => "at length",
    };
    if questions * 3 >= lines.len() {
        format!("{length}, often asking questions")
    } else {
        length.to_owned()
    }
}
