//! KBF on a book of the corpus: items written by reading it, each asked where the
//! story stands at the item's position, and the table ReverieMem's Table 2 reports
//! (the full memory, without its episodic layer, without its semantic layer, and the
//! two baselines).
//!
//! A position in a book is an anchor (`after`: a phrase that occurs once in it; absent,
//! the end of the book). The item is asked of a world whose characters' past is the
//! scenes over at that point, cut from the book's ingest (the Source-to-Memory stages
//! run once; each cut is the scenario `ingest --past N` would write). The memory a
//! character holds at a position is thus what ingest gives it from the book up to there,
//! and nothing after. Replaying the script half of an ingested book on the scripted
//! model would not do: its lines are placeholders, so everything the book tells after
//! the split would be missing from every shard.
//!
//! Each item is scored on its file's gold: a reader wrote it, knowing the whole book.
//! What the shard holds is reported beside it, not put in its place (an item whose gold
//! followed the shard could not show a leak): per item, whether the character's shard
//! at its position holds one of its evidence words.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, anyhow, bail};
use dramatis_embed::Embedder;
use dramatis_ingest::answers::Anchors;
use dramatis_ingest::book::Analysed;
use dramatis_ingest::file::{Open, ScenarioFile};
use dramatis_proto::v1::{DeleteWorldRequest, Usage};
use dramatis_runtime::client::WorldRpc;
use dramatis_scenario::Scenario;
use serde::Serialize;

use crate::answerers::{Answerer as _, Pool, PoolAnswerer, RecallAnswerer};
use crate::kbf::{Probe, Score, Split, probe_from, score};
use crate::walk::Walk;

/// The table's answerers, in column order.
pub const ANSWERERS: [&str; 5] = [
    "retrieval",
    "no-episodic",
    "no-semantic",
    "naive-rag",
    "direct",
];

/// One item of a book's file.
#[derive(Debug, Clone)]
pub struct BookItem {
    /// The item, its character by id.
    pub probe: Probe,
    /// The anchor it is asked after (`None`: at the end of the book).
    pub after: Option<String>,
    /// What kind of knowledge it asks about (`witnessed`, `told`, `never_witnessed`,
    /// `learned_later`, `secret`), as its writer said.
    pub kind: Option<String>,
}

/// Reads a book's item file (JSONL, `eval/corpus/README.md`). A character is named by
/// its canonical name or id; an item whose character has no agent (the ingest found it
/// on stage nowhere) is left out and its id returned second. Errors name the file, the
/// line and the field.
pub fn load_items(path: &Path, book: &Analysed) -> anyhow::Result<(Vec<BookItem>, Vec<String>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let on_stage = book.analysis.on_stage();
    let mut items = Vec::new();
    let mut no_agent = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}:{}", path.display(), n + 1);
        let mut value: serde_json::Value =
            serde_json::from_str(line).with_context(|| at.clone())?;
        let object = value
            .as_object_mut()
            .ok_or_else(|| anyhow!("{at}: an item is a JSON object"))?;
        let text_of = |v: Option<serde_json::Value>, field: &str| match v {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(anyhow!("{at}: {field}: not a string")),
        };
        let after = text_of(object.remove("after"), "after")?;
        let kind = text_of(object.remove("kind"), "kind")?;
        let named = object
            .get("character")
            .and_then(|c| c.as_str())
            .unwrap_or_default()
            .to_owned();
        let id = book
            .characters
            .iter()
            .find(|c| c.name == named || c.id == named)
            .map(|c| c.id.clone())
            .ok_or_else(|| anyhow!("{at}: character: {named:?} is not on the character list"))?;
        let on = on_stage.contains(&id);
        object.insert("character".into(), id.into());
        let probe = probe_from(value, &at, &|_| true)?;
        if on {
            items.push(BookItem { probe, after, kind });
        } else {
            no_agent.push(probe.id);
        }
    }
    if items.is_empty() {
        bail!("{}: no items whose character has an agent", path.display());
    }
    Ok((items, no_agent))
}

/// Which of the memory's factual layers a cut's shards are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layers {
    All,
    /// No episodic layer: no memories of scenes lived.
    NoEpisodic,
    /// No semantic layer: no facts.
    NoSemantic,
}

impl Layers {
    fn name(self) -> &'static str {
        match self {
            Self::All => "retrieval",
            Self::NoEpisodic => "no-episodic",
            Self::NoSemantic => "no-semantic",
        }
    }
}

/// The scenario whose characters' past is the book's first `past` scenes, with only
/// `cast` in it and `layers` in their shards, as an open story (nothing of the script
/// is played: the items are asked before the first turn).
pub fn cut_scenario(
    book: &Analysed,
    past: usize,
    cast: &BTreeSet<String>,
    layers: Layers,
) -> anyhow::Result<ScenarioFile> {
    let mut file = book.scenario_at(past)?;
    file.characters.retain(|c| cast.contains(&c.id));
    for c in &mut file.characters {
        c.knows.retain(|k| cast.contains(k));
        if layers == Layers::NoEpisodic {
            c.memories.clear();
        }
    }
    if layers == Layers::NoSemantic {
        file.facts.clear();
    }
    for fact in &mut file.facts {
        fact.known_by.retain(|k| cast.contains(k));
    }
    file.facts.retain(|f| !f.known_by.is_empty());
    let first = file
        .characters
        .first()
        .map(|c| c.location.clone())
        .ok_or_else(|| anyhow!("no character of {cast:?} is in the book's world"))?;
    file.scenes.clear();
    file.open = Some(Open {
        premise: format!("The story after its first {past} scenes."),
        opening: String::new(),
        opening_location: first,
        rounds: 1,
        scene_turns: 4,
        openings: Vec::new(),
    });
    Ok(file)
}

/// Whether `character`'s shard in `file` holds one of `evidence` (case aside).
fn shard_holds(file: &ScenarioFile, character: &str, evidence: &[String]) -> bool {
    let words: Vec<String> = evidence.iter().map(|e| e.to_lowercase()).collect();
    let holds = |text: &str| {
        let text = text.to_lowercase();
        words
            .iter()
            .any(|w| !w.is_empty() && text.contains(w.as_str()))
    };
    file.facts
        .iter()
        .filter(|f| f.known_by.iter().any(|k| k == character))
        .any(|f| holds(&f.text))
        || file
            .characters
            .iter()
            .filter(|c| c.id == character)
            .flat_map(|c| &c.memories)
            .any(|m| holds(&m.text))
}

/// What asking a book's items needs: the world service, a folder for the cut
/// scenarios (a scenario root of that service), the embedder and the support threshold.
pub struct Asker<'a> {
    pub client: WorldRpc,
    pub work: PathBuf,
    pub embedder: &'a dyn Embedder,
    pub threshold: f32,
}

/// One book's items, each answered by every answerer.
#[derive(Debug, Clone)]
pub struct BookRun {
    pub book: String,
    pub items: Vec<BookItem>,
    /// Per item, the scenes over at its position.
    pub cuts: Vec<usize>,
    pub scenes: usize,
    /// Per answerer, per item, the letter (`None`: no option matched).
    pub letters: BTreeMap<&'static str, Vec<Option<char>>>,
    /// Per item: whether its character's shard at its position holds an evidence word.
    pub in_shard: Vec<bool>,
    /// Per item, the first texts the retrieval answerer's recall brought back.
    pub recalled: Vec<Vec<String>>,
    pub seconds: f64,
}

/// Asks every item of `items` of `book` (`name`) with every answerer; `each` is called
/// once per item and answerer.
pub async fn run_book(
    asker: &mut Asker<'_>,
    name: &str,
    book: &Analysed,
    items: Vec<BookItem>,
    each: &(dyn Fn() + Sync),
) -> anyhow::Result<BookRun> {
    let started = Instant::now();
    let anchors = Anchors::new(&book.book);
    let scenes = book.analysis.scenes.len();
    let mut cuts = Vec::with_capacity(items.len());
    for item in &items {
        cuts.push(match &item.after {
            Some(anchor) => {
                let at = anchors
                    .find(anchor)
                    .with_context(|| format!("item {}: after", item.probe.id))?;
                book.scenes_over_at(at)
            }
            None => scenes,
        });
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, cut) in cuts.iter().enumerate() {
        groups.entry(*cut).or_default().push(i);
    }
    let mut run = BookRun {
        book: name.to_owned(),
        letters: ANSWERERS
            .iter()
            .map(|a| (*a, vec![None; items.len()]))
            .collect(),
        in_shard: vec![false; items.len()],
        recalled: vec![Vec::new(); items.len()],
        items,
        cuts,
        scenes,
        seconds: 0.0,
    };
    for layers in [Layers::All, Layers::NoEpisodic, Layers::NoSemantic] {
        for (cut, members) in &groups {
            ask_cut(asker, book, &mut run, (*cut, members), layers, each).await?;
        }
    }
    naive_rag(asker, book, &mut run, each).await?;
    run.seconds = started.elapsed().as_secs_f64();
    Ok(run)
}

/// Asks the items `members` of one cut with `layers`; with every layer, also the
/// profile-only baseline and what the shards hold.
async fn ask_cut(
    asker: &mut Asker<'_>,
    book: &Analysed,
    run: &mut BookRun,
    (cut, members): (usize, &[usize]),
    layers: Layers,
    each: &(dyn Fn() + Sync),
) -> anyhow::Result<()> {
    let cast: BTreeSet<String> = members
        .iter()
        .map(|i| run.items[*i].probe.character.clone())
        .collect();
    let file = cut_scenario(book, cut, &cast, layers)?;
    let dir = asker.work.join(format!("{}-{cut}", layers.name()));
    let header = format!(
        "# {} after {cut} of {} scenes, for `dramatis eval corpus`; rewritten on every run.",
        run.book, run.scenes
    );
    let path = file.write(&dir, &header)?;
    let mut walk = Walk::start(asker.client.clone(), &path).await?;
    let mut recall = RecallAnswerer {
        embedder: asker.embedder,
        threshold: asker.threshold,
        recalled: Vec::new(),
        usage: Usage::default(),
    };
    let mut asked = Ok(());
    for &i in members {
        match recall.answer(&mut walk, &[], &run.items[i].probe).await {
            Ok(letter) => {
                run.letters.get_mut(layers.name()).expect("answerer")[i] = letter;
                if layers == Layers::All {
                    run.recalled[i] = recall
                        .recalled
                        .last()
                        .map(|texts| {
                            texts
                                .iter()
                                .take(RECALLED_SHOWN)
                                .map(|t| short(t))
                                .collect()
                        })
                        .unwrap_or_default();
                }
            }
            Err(e) => {
                asked = Err(e);
                break;
            }
        }
        each();
    }
    // The world was the walk's scratch copy: a failed deletion leaves it to the
    // service's own end, and the answers stand.
    let _ = walk
        .client
        .delete_world(DeleteWorldRequest {
            world_id: walk.world.clone(),
        })
        .await;
    asked?;
    if layers != Layers::All {
        return Ok(());
    }
    let scenario = Scenario::load(&path)?;
    let mut direct = PoolAnswerer::new(&scenario, asker.embedder, Pool::Profile, asker.threshold);
    for &i in members {
        let probe = &run.items[i].probe;
        let profile = direct.profile(&probe.character);
        run.letters.get_mut("direct").expect("answerer")[i] =
            Some(direct.answer_from(&profile, probe).await?);
        run.in_shard[i] = shard_holds(&file, &probe.character, &probe.evidence);
        each();
    }
    Ok(())
}

/// The naive-RAG baseline: one index over every fact of the whole book, whoever knows
/// it and whenever it is told (ReverieMem's baseline retrieves from the whole book).
async fn naive_rag(
    asker: &Asker<'_>,
    book: &Analysed,
    run: &mut BookRun,
    each: &(dyn Fn() + Sync),
) -> anyhow::Result<()> {
    let whole = book
        .done
        .scenario
        .as_ref()
        .ok_or_else(|| anyhow!("the ingest of {} stopped before its scenario", run.book))?;
    let scenario = Scenario::load(whole)?;
    let texts: Vec<String> = scenario.facts.iter().map(|f| f.text.clone()).collect();
    let mut naive = PoolAnswerer::new(&scenario, asker.embedder, Pool::Everyone, asker.threshold);
    for (i, item) in run.items.iter().enumerate() {
        run.letters.get_mut("naive-rag").expect("answerer")[i] =
            Some(naive.answer_from(&texts, &item.probe).await?);
        each();
    }
    Ok(())
}

/// Recalled texts kept per item for the report, and the characters kept of each.
const RECALLED_SHOWN: usize = 3;
const RECALLED_CHARS: usize = 160;

fn short(text: &str) -> String {
    let mut s: String = text.chars().take(RECALLED_CHARS).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

/// Calls one book's run makes of `each`: per item, three layer sets, the profile
/// baseline and naive RAG.
#[must_use]
pub fn steps(items: usize) -> u64 {
    items as u64 * 5
}

/// A book's row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct BookScores {
    pub book: String,
    pub items: usize,
    /// Per answerer.
    pub scores: BTreeMap<String, Score>,
    /// Items per kind, and per kind the retrieval answerer's accuracy.
    pub kinds: BTreeMap<String, (usize, f64)>,
    /// KRf items whose character's shard holds none of their evidence words (the
    /// ingest did not give it what the reader says it lived), and KR items whose
    /// shard holds one (a leak, or an evidence word too common to tell).
    pub krf_not_in_shard: Vec<String>,
    pub kr_in_shard: Vec<String>,
    pub seconds: f64,
    pub items_per_second: f64,
    /// How long the book's ingest took, or reading it back from `--work` (set by the
    /// command that ran it).
    pub ingest_seconds: f64,
    /// Every item's outcome, in file order.
    pub outcomes: Vec<Outcome>,
}

/// One item as asked: where, its gold, each answerer's letter, and what the retrieval
/// answerer's recall rested on.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub id: String,
    pub character: String,
    pub kind: Option<String>,
    pub split: Split,
    /// Scenes over at its position.
    pub cut: usize,
    pub gold: char,
    /// Per answerer, the letter (`None`: no option matched).
    pub letters: BTreeMap<String, Option<char>>,
    pub in_shard: bool,
    pub recalled: Vec<String>,
}

/// Scores one book's run.
#[must_use]
pub fn scores(run: &BookRun) -> BookScores {
    let right =
        |answerer: &str, i: usize| run.letters[answerer][i] == Some(run.items[i].probe.gold);
    let scores = ANSWERERS
        .iter()
        .map(|a| {
            let outcomes: Vec<(Split, bool)> = (0..run.items.len())
                .map(|i| (run.items[i].probe.split, right(a, i)))
                .collect();
            ((*a).to_owned(), score(&outcomes))
        })
        .collect();
    let mut kinds: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (i, item) in run.items.iter().enumerate() {
        let kind = item.kind.clone().unwrap_or_else(|| "unmarked".into());
        let entry = kinds.entry(kind).or_default();
        entry.0 += 1;
        entry.1 += usize::from(right("retrieval", i));
    }
    let ids = |split: Split, held: bool| {
        run.items
            .iter()
            .zip(&run.in_shard)
            .filter(|(item, h)| item.probe.split == split && **h == held)
            .map(|(item, _)| item.probe.id.clone())
            .collect()
    };
    BookScores {
        book: run.book.clone(),
        items: run.items.len(),
        scores,
        kinds: kinds
            .into_iter()
            .map(|(k, (n, r))| (k, (n, r as f64 / n.max(1) as f64)))
            .collect(),
        krf_not_in_shard: ids(Split::Krf, false),
        kr_in_shard: ids(Split::Kr, true),
        seconds: run.seconds,
        items_per_second: steps(run.items.len()) as f64 / run.seconds.max(1e-9),
        ingest_seconds: 0.0,
        outcomes: outcomes(run),
    }
}

fn outcomes(run: &BookRun) -> Vec<Outcome> {
    run.items
        .iter()
        .enumerate()
        .map(|(i, item)| Outcome {
            id: item.probe.id.clone(),
            character: item.probe.character.clone(),
            kind: item.kind.clone(),
            split: item.probe.split,
            cut: run.cuts[i],
            gold: item.probe.gold,
            letters: run
                .letters
                .iter()
                .map(|(a, l)| ((*a).to_owned(), l[i]))
                .collect(),
            in_shard: run.in_shard[i],
            recalled: run.recalled[i].clone(),
        })
        .collect()
}

/// The mean of each answerer's KBF, KRf and KR accuracy over books.
#[must_use]
pub fn mean(books: &[BookScores]) -> BTreeMap<String, Score> {
    let n = books.len().max(1) as f64;
    ANSWERERS
        .iter()
        .map(|a| {
            let mut m = Score::default();
            for b in books {
                let s = &b.scores[*a];
                m.n_krf += s.n_krf;
                m.n_kr += s.n_kr;
                m.krf_acc += s.krf_acc / n;
                m.kr_acc += s.kr_acc / n;
                m.kbf += s.kbf / n;
            }
            ((*a).to_owned(), m)
        })
        .collect()
}
