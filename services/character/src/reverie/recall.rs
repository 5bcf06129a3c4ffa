//! The read path: ReverieMem's inference (§3.4, Algorithm 1) over one character's
//! shard, arranged to spend as few model calls as the paper allows.
//!
//! 1. `Anchor`: the nearest first-person scene memory frames the query.
//! 2. Round 1 probes are the query itself, each of its lines, and the query blended with
//!    the anchor (no call); `Vis-Retrieve` searches only facts visible to the character.
//! 3. `Sufficient` without a call when the best fact already covers the query; when
//!    nothing at all is relevant the character refuses rather than searching harder.
//!    Only in between does the model run `Self-Probe`, which also decides `Sufficient`
//!    for the next round (one call per round, at most `max_rounds`).
//! 4. Personality track: `Emo-Gate` from the moment's cues (no call), `Emo-Transition`
//!    from the emotion record, `Pattern` by embedding match.

use std::fmt::Write as _;

use dramatis_embed::{Embedder, embed_composed, normalise};
use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, ResponseSchema};
use dramatis_memory::evidence::Gate;
use dramatis_memory::{EpisodicMemory, Fact, PersonalityPattern, SemanticLayer};
use dramatis_proto::v1::Usage;
use serde::Deserialize;
use serde_json::json;

use crate::error::AgentError;
use crate::reverie::emotion::{gate_fires, transition};
use crate::shard::Mood;
use crate::shard::{AuditEntry, EPISODIC, SEMANTIC, Shard};
use dramatis_llm::parse_json;

/// Name of the Self-Probe schema.
pub const SELF_PROBE_SCHEMA: &str = "self_probe";

/// Thresholds and sizes of the read path. Similarities are cosines of the agent's
/// embedder (all-MiniLM-L6-v2 by default).
#[derive(Debug, Clone)]
pub struct RecallSettings {
    /// A scene memory must be at least this similar to frame the query.
    pub anchor_min: f32,
    /// A fact must be at least this similar to some probe to enter the pool.
    pub relevant: f32,
    /// A fact this similar to a probe covers the query: no Self-Probe needed.
    pub covered: f32,
    /// Facts per probe per round.
    pub per_probe: usize,
    /// Facts handed to Memory-Fusion at most.
    pub pool_max: usize,
    /// Self-Probe rounds at most (model calls), for interview answers and for turns.
    pub answer_rounds: u32,
    pub act_rounds: u32,
    /// Search the visible facts by vector, and by their words (BM25); with both, the
    /// two rankings are fused.
    pub dense: bool,
    pub lexical: bool,
    /// The BM25 score a fact found by words must reach: about one shared word that
    /// few facts hold, so a common word alone brings nothing.
    pub lexical_min: f32,
    /// ReverieMem's layers the read path uses (all by default; the evaluation switches
    /// one off at a time, the paper's Table 2).
    pub layers: Layers,
    /// The evidence gate that decides refusal ([`crate::boundary::weigh`]); `None`
    /// for the older rule, where anything recalled at all cancels a refusal.
    pub gate: Option<Gate>,
    /// Search the facts for each option of a multiple-choice question too.
    pub option_search: bool,
    /// The gate counts a word in other words (WordNet's synonyms,
    /// [`crate::boundary::thesaurus`]).
    pub synonyms: bool,
}

/// Which of ReverieMem's three layers the read path consults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layers {
    /// Scene memories: the anchor that frames a query.
    pub episodic: bool,
    /// Visible facts and perceived lines: `Vis-Retrieve`.
    pub semantic: bool,
    /// The emotion track and behaviour patterns.
    pub personality: bool,
}

impl Default for Layers {
    fn default() -> Self {
        Self::ALL
    }
}

impl Layers {
    pub const ALL: Self = Self {
        episodic: true,
        semantic: true,
        personality: true,
    };
    /// The layer names, as `--layers` takes them.
    pub const NAMES: [&'static str; 3] = ["episodic", "semantic", "personality"];

    /// A comma list of layer names (`all` for every layer).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut layers = Self {
            episodic: false,
            semantic: false,
            personality: false,
        };
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "all" => layers = Self::ALL,
                "episodic" => layers.episodic = true,
                "semantic" => layers.semantic = true,
                "personality" => layers.personality = true,
                other => {
                    return Err(format!(
                        "unknown layer {other:?}; expected a comma list of {}",
                        Self::NAMES.join(", ")
                    ));
                }
            }
        }
        Ok(layers)
    }

    /// Every layer but `name`.
    #[must_use]
    pub fn without(name: &str) -> Option<Self> {
        let mut layers = Self::ALL;
        match name {
            "episodic" => layers.episodic = false,
            "semantic" => layers.semantic = false,
            "personality" => layers.personality = false,
            _ => return None,
        }
        Some(layers)
    }
}

impl std::fmt::Display for Layers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on: Vec<&str> = Self::NAMES
            .into_iter()
            .zip([self.episodic, self.semantic, self.personality])
            .filter(|(_, on)| *on)
            .map(|(name, _)| name)
            .collect();
        f.write_str(&on.join(","))
    }
}

impl Default for RecallSettings {
    fn default() -> Self {
        Self {
            anchor_min: 0.25,
            relevant: 0.35,
            covered: 0.55,
            per_probe: 3,
            pool_max: 5,
            answer_rounds: 2,
            act_rounds: 1,
            dense: true,
            lexical: false,
            lexical_min: 2.0,
            layers: Layers::ALL,
            gate: Some(Gate::default()),
            option_search: true,
            synonyms: true,
        }
    }
}

/// What recall produced: the workspace handed to Memory-Fusion.
#[derive(Debug, Clone, Default)]
pub struct Recalled {
    pub anchor: Option<EpisodicMemory>,
    /// The terminal pool M(τ), best first.
    pub facts: Vec<(Fact, f32)>,
    pub pattern: Option<PersonalityPattern>,
    /// The mood after the personality track.
    pub mood: Mood,
    /// Whether Emo-Gate fired.
    pub gate_fired: bool,
    /// The anchor's cosine to the query (0 without one).
    pub anchor_closeness: f32,
    /// What weighing each option of a multiple-choice question found in the character's
    /// facts and scene memories, beyond the pool and the anchor: evidence for the gate.
    pub evidence: Vec<Found>,
    /// Per id of a held fact or scene memory (the pool, the anchor, the evidence): the
    /// cosine of each option, asked together with the question, to it.
    pub fits: Fits,
    /// Nothing in memory bears on the query: the character should say so.
    pub abstain: bool,
    /// Retrieval rounds run (τ) and model calls spent on Self-Probe.
    pub rounds: u32,
    pub usage: Usage,
}

impl Recalled {
    /// No recall at all (ReverieMem's layers are off): the mood stays as it was.
    #[must_use]
    pub fn nothing(mood: Mood) -> Self {
        Self {
            anchor: None,
            facts: Vec::new(),
            pattern: None,
            mood,
            gate_fired: false,
            anchor_closeness: 0.0,
            evidence: Vec::new(),
            fits: Fits::new(),
            abstain: false,
            rounds: 0,
            usage: Usage::default(),
        }
    }
}

/// A fact or scene memory that weighing an option found.
#[derive(Debug, Clone)]
pub struct Found {
    pub id: String,
    pub text: String,
    /// Its cosine to the question itself.
    pub closeness: f32,
    /// The fact, when it is one (a scene memory otherwise).
    pub fact: Option<Fact>,
    /// The scene memory, when it is one.
    pub memory: Option<EpisodicMemory>,
}

/// The moment recall works on.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    /// What the character must respond to (a question, or the scene's latest lines).
    pub text: &'a str,
    /// The scene's latest lines in pieces ([`crate::shard::Phrase::pieces`]), when the
    /// query is made of them: their vectors are then composed from pieces, most of
    /// which this process has embedded already. Empty for a question, which is
    /// embedded whole.
    pub lines: &'a [Vec<String>],
    /// The line that triggers the character's response (for the emotion track).
    pub trigger: &'a str,
    /// Its pieces, or empty to embed it whole.
    pub trigger_pieces: &'a [String],
    pub scene_id: &'a str,
    /// Self-Probe rounds allowed.
    pub rounds: u32,
    /// A multiple-choice question's options (empty otherwise): the character searches
    /// its own facts for each one too, as a person weighs each answer against memory.
    pub options: &'a [String],
}

#[derive(Debug, Deserialize)]
struct ProbeReply {
    #[serde(default)]
    sufficient: bool,
    #[serde(default)]
    probes: Vec<String>,
}

/// Runs the read path on `shard`. Self-Probe prompts are recorded in the shard's audit.
pub async fn recall(
    shard: &mut Shard,
    query: &Query<'_>,
    settings: &RecallSettings,
    embedder: &dyn Embedder,
    emotion_vectors: &EmotionVectors,
    model: &dyn LanguageModel,
) -> Result<Recalled, AgentError> {
    let me = shard.id().to_owned();
    let texts = query_texts(query);
    let vectors = embed_composed(embedder, &texts).await?;
    let query_vector = &vectors[0];

    // Anchor(q, c).
    let (anchor, anchor_closeness) = if settings.layers.episodic {
        shard
            .layers()
            .episodic
            .anchor(query_vector, 1)
            .into_iter()
            .find(|(_, score)| *score >= settings.anchor_min)
            .map_or((None, 0.0), |(m, score)| (Some(m.clone()), score))
    } else {
        (None, 0.0)
    };

    // Round 1: the query, its lines, and the query framed by the anchor.
    let mut probes: Vec<Vec<f32>> = vectors[1..].to_vec();
    probes.insert(0, query_vector.clone());
    if let Some(framed) = anchor
        .as_ref()
        .and_then(|a| shard.layers().episodic.vector_of(&a.id))
        .map(|a| blend(query_vector, a))
    {
        probes.push(framed);
    }
    let mut pool = retrieve(shard, &me, &probes, &[query.text], settings);
    let mut rounds = 1;
    let mut usage = Usage::default();
    // Nothing found by vector or by word, and no scene memory frames it.
    let abstain = pool.is_empty() && anchor.is_none();
    // Self-Probe + Sufficient, only when partly covered.
    if !abstain {
        rounds = self_probe(
            shard,
            query,
            anchor.as_ref(),
            &mut pool,
            settings,
            (embedder, model),
            &mut usage,
        )
        .await?;
    }
    let (evidence, fits) = weigh_options(
        shard,
        &me,
        query,
        query_vector,
        (&pool, anchor.as_ref()),
        settings,
        embedder,
    )
    .await?;

    // Personality track: Emo-Gate, Emo-Transition, Pattern.
    let (mood, pattern, gate_fired) = personality(
        shard,
        query,
        query_vector,
        settings,
        embedder,
        emotion_vectors,
    )
    .await?;
    Ok(Recalled {
        anchor,
        facts: pool,
        pattern,
        mood,
        gate_fired,
        anchor_closeness,
        evidence,
        fits,
        abstain,
        rounds,
        usage,
    })
}

/// What one embedding run of a query embeds: the query and, when it has several, its
/// lines (of at least two words, at most six). Lines given in pieces are composed from
/// them; the whole query is then the composition of all its lines' pieces.
fn query_texts(query: &Query<'_>) -> Vec<Vec<String>> {
    let pieces = |line: &str| vec![line.to_owned()];
    let (whole, given): (Vec<String>, Vec<Vec<String>>) = if query.lines.is_empty() {
        let lines = query.text.lines().map(str::trim).map(pieces).collect();
        (pieces(query.text), lines)
    } else {
        (query.lines.concat(), query.lines.to_vec())
    };
    let mut texts = vec![whole];
    let lines: Vec<Vec<String>> = given
        .into_iter()
        .filter(|l| {
            l.iter()
                .map(|p| p.split_whitespace().count())
                .sum::<usize>()
                >= 2
        })
        .take(6)
        .collect();
    if lines.len() > 1 {
        texts.extend(lines);
    }
    texts
}

/// Self-Probe with Sufficient: while the best fact found scores under
/// `settings.covered`, asks the model for up to three more probes and adds what they
/// find to `pool`, for at most `query.rounds` rounds. The rounds run, the first search
/// counted. Every prompt is recorded in the shard's audit.
async fn self_probe(
    shard: &mut Shard,
    query: &Query<'_>,
    anchor: Option<&EpisodicMemory>,
    pool: &mut Vec<(Fact, f32)>,
    settings: &RecallSettings,
    (embedder, model): (&dyn Embedder, &dyn LanguageModel),
    usage: &mut Usage,
) -> Result<u32, AgentError> {
    let me = shard.id().to_owned();
    let mut rounds = 1;
    let mut asked: Vec<String> = Vec::new();
    let best = |pool: &[(Fact, f32)]| pool.iter().map(|(_, s)| *s).fold(0.0, f32::max);
    while best(pool) < settings.covered && rounds <= query.rounds {
        let request = self_probe_request(shard, query.text, anchor, pool, &asked);
        let items = refs(anchor, pool);
        shard.record_prompt(AuditEntry {
            purpose: "self_probe".into(),
            prompt: request.prompt_text(),
            items,
            timestamp_ms: dramatis_runtime::now_ms(),
            flagged: Vec::new(),
        });
        let completion = model.complete(&request, None).await?;
        usage.count_call(completion.prompt_tokens, completion.completion_tokens);
        let Some((reply, _)) = parse_json::<ProbeReply>(&completion.text, |_| true) else {
            tracing::warn!(character = me, output = %completion.text, "unusable self-probe output");
            break;
        };
        let fresh: Vec<String> = reply
            .probes
            .into_iter()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty() && !asked.contains(p))
            .take(3)
            .collect();
        if reply.sufficient || fresh.is_empty() {
            break;
        }
        let vectors = embedder.embed(&fresh).await?;
        let texts: Vec<&str> = fresh.iter().map(String::as_str).collect();
        let found = retrieve(shard, &me, &vectors, &texts, settings);
        asked.extend(fresh);
        for (fact, score) in found {
            if !pool.iter().any(|(f, _)| f.id == fact.id) {
                pool.push((fact, score));
            }
        }
        pool.sort_by(|a, b| b.1.total_cmp(&a.1));
        pool.truncate(settings.pool_max);
        rounds += 1;
    }
    Ok(rounds)
}

/// The personality track: Emo-Gate, then (when it fires) Emo-Transition and the
/// nearest pattern to the new emotion in the triggering situation; otherwise the mood
/// and pattern stay. The mood, its pattern, and whether the gate fired.
async fn personality(
    shard: &Shard,
    query: &Query<'_>,
    query_vector: &[f32],
    settings: &RecallSettings,
    embedder: &dyn Embedder,
    emotion_vectors: &EmotionVectors,
) -> Result<(Mood, Option<PersonalityPattern>, bool), AgentError> {
    let previous = shard.mood().clone();
    let gate_fired =
        settings.layers.personality && gate_fires(&previous, query.scene_id, query.trigger);
    let (mood, pattern) = if gate_fired {
        // The trigger is embedded only when the gate fires: routine turns skip it.
        let trigger_vector = if query.trigger == query.text {
            query_vector.to_vec()
        } else {
            let trigger = if query.trigger_pieces.is_empty() {
                vec![query.trigger.to_owned()]
            } else {
                query.trigger_pieces.to_vec()
            };
            embed_composed(embedder, &[trigger])
                .await?
                .pop()
                .unwrap_or_default()
        };
        let trigger_vector = &trigger_vector;
        let (emotion, intensity) = transition(
            &shard.layers().personality,
            &previous,
            query.trigger,
            trigger_vector,
        );
        let emotion_vector = emotion_vectors.get(&emotion, embedder).await?;
        let vector = blend(&emotion_vector, trigger_vector);
        let pattern = shard
            .layers()
            .personality
            .nearest_pattern(&vector)
            .map(|(p, _)| p.clone());
        (
            Mood {
                emotion,
                intensity,
                pattern: pattern.as_ref().map(|p| p.id.clone()),
                scene_id: query.scene_id.to_owned(),
            },
            pattern,
        )
    } else if !settings.layers.personality {
        (previous, None)
    } else {
        let pattern = previous.pattern.as_ref().and_then(|id| {
            shard
                .layers()
                .personality
                .patterns()
                .iter()
                .find(|p| &p.id == id)
                .cloned()
        });
        (previous, pattern)
    };
    Ok((mood, pattern, gate_fired))
}

/// The normalised sum of two unit vectors: a probe that means both (the query framed
/// by its scene memory; the emotion in the situation that triggers it).
fn blend(a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut sum: Vec<f32> = a.iter().zip(b).map(|(x, y)| x + y).collect();
    normalise(&mut sum);
    sum
}

/// Embeddings of the emotion labels, computed once per agent.
#[derive(Debug, Default)]
pub struct EmotionVectors(tokio::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>);

impl EmotionVectors {
    async fn get(&self, emotion: &str, embedder: &dyn Embedder) -> Result<Vec<f32>, AgentError> {
        let mut cache = self.0.lock().await;
        if let Some(vector) = cache.get(emotion) {
            return Ok(vector.clone());
        }
        let vector = embedder
            .embed(&[emotion.to_owned()])
            .await?
            .pop()
            .unwrap_or_default();
        cache.insert(emotion.to_owned(), vector.clone());
        Ok(vector)
    }
}

/// Vis-Retrieve over the character's visible facts: by vector (each probe), keeping
/// those at least `relevant`, and by words (each text), keeping those that share a
/// rare enough word (`lexical_min`). The two rankings are fused by reciprocal rank;
/// each fact keeps its best cosine to a probe as its score.
fn retrieve(
    shard: &Shard,
    me: &str,
    probes: &[Vec<f32>],
    texts: &[&str],
    settings: &RecallSettings,
) -> Vec<(Fact, f32)> {
    if !settings.layers.semantic {
        return Vec::new();
    }
    let semantic = &shard.layers().semantic;
    let dense: Vec<(usize, f32)> = if settings.dense {
        semantic
            .vis_retrieve_at(me, probes, settings.per_probe)
            .into_iter()
            .filter(|(_, score)| *score >= settings.relevant)
            .collect()
    } else {
        Vec::new()
    };
    let mut lexical: Vec<(usize, f32)> = Vec::new();
    if settings.lexical {
        for text in texts {
            for (position, score) in semantic.vis_search_words(me, text, settings.per_probe) {
                if score < settings.lexical_min {
                    continue;
                }
                match lexical.iter_mut().find(|(p, _)| *p == position) {
                    Some((_, best)) => *best = best.max(score),
                    None => lexical.push((position, score)),
                }
            }
        }
        lexical.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    }
    // Reciprocal rank fusion (k = 60): a fact high in either ranking comes first.
    let mut fused: Vec<(usize, f32)> = Vec::new();
    for ranking in [&dense, &lexical] {
        for (rank, (position, _)) in ranking.iter().enumerate() {
            let gain = 1.0 / (60.0 + rank as f32 + 1.0);
            match fused.iter_mut().find(|(p, _)| p == position) {
                Some((_, sum)) => *sum += gain,
                None => fused.push((*position, gain)),
            }
        }
    }
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused.truncate(settings.pool_max);
    let cosine = |position: usize| {
        dense
            .iter()
            .find(|(p, _)| *p == position)
            .map(|(_, s)| *s)
            .or_else(|| {
                let vector = semantic.vector_at(position)?;
                probes
                    .iter()
                    .map(|probe| dramatis_memory::vector::dot(vector, probe))
                    .reduce(f32::max)
            })
            .unwrap_or(0.0)
    };
    fused
        .into_iter()
        .filter_map(|(position, _)| {
            let fact = semantic.facts().get(position)?;
            Some((fact.clone(), cosine(position)))
        })
        .collect()
}

/// An option's word held by at most this many facts is searched for by word.
const RARE_HOLDERS: usize = 2;

/// Each option's names (capitalised words: a place, a person, a weekday) that at most
/// `RARE_HOLDERS` facts hold, as one search text per option. A common word, or one many
/// facts hold ("looking", in a novel), finds memories about anything.
fn rare_names(semantic: &SemanticLayer, options: &[String]) -> Vec<String> {
    options
        .iter()
        .map(|option| {
            option
                .split_whitespace()
                .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
                .flat_map(dramatis_memory::modules::content_words)
                .filter(|w| {
                    let held = dramatis_memory::lexical::stems(w)
                        .iter()
                        .map(|s| semantic.word_holders(s))
                        .max()
                        .unwrap_or(0);
                    (1..=RARE_HOLDERS).contains(&held)
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// How close each option (`vectors`, question and option together) is to everything
/// held that has a vector: the pool, the anchor and what the option search found.
fn option_fits(
    shard: &Shard,
    vectors: &[Vec<f32>],
    (pool, anchor): (&[(Fact, f32)], Option<&EpisodicMemory>),
    found: &[Found],
) -> Fits {
    let semantic = &shard.layers().semantic;
    let fact_vector = |id: &str| {
        let at = semantic.facts().iter().position(|f| f.id == id)?;
        semantic.vector_at(at)
    };
    let mut fits = Fits::new();
    let held = pool
        .iter()
        .map(|(f, _)| (f.id.as_str(), fact_vector(&f.id)))
        .chain(anchor.map(|a| (a.id.as_str(), shard.layers().episodic.vector_of(&a.id))))
        .chain(found.iter().map(|f| {
            let vector = if f.fact.is_some() {
                fact_vector(&f.id)
            } else {
                shard.layers().episodic.vector_of(&f.id)
            };
            (f.id.as_str(), vector)
        }));
    for (id, vector) in held {
        if let Some(vector) = vector {
            let each = vectors
                .iter()
                .map(|o| dramatis_memory::vector::dot(o, vector))
                .collect();
            fits.insert(id.to_owned(), each);
        }
    }
    fits
}

/// What each option of a multiple-choice question finds, searched by the question and
/// option together (facts and scene memories) and by the option's words (facts), that
/// the pool and the anchor do not hold yet, with its cosine to the question itself.
async fn weigh_options(
    shard: &Shard,
    me: &str,
    query: &Query<'_>,
    query_vector: &[f32],
    (pool, anchor): (&[(Fact, f32)], Option<&EpisodicMemory>),
    settings: &RecallSettings,
    embedder: &dyn Embedder,
) -> Result<(Vec<Found>, Fits), AgentError> {
    if query.options.is_empty() || !settings.option_search {
        return Ok((Vec::new(), Fits::new()));
    }
    let asked: Vec<String> = query
        .options
        .iter()
        .map(|o| format!("{} {}", query.text.trim(), o.trim()))
        .collect();
    let vectors = embedder.embed(&asked).await?;
    let semantic = &shard.layers().semantic;
    let rare = rare_names(semantic, query.options);
    let words: Vec<&str> = rare.iter().map(String::as_str).collect();
    let mut found: Vec<Found> = Vec::new();
    let held = |found: &[Found], id: &str| {
        pool.iter().any(|(f, _)| f.id == id)
            || anchor.is_some_and(|a| a.id == id)
            || found.iter().any(|f| f.id == id)
    };
    // Found as the question is: by vector (question and option together) and, with
    // recall by words (`--recall-by words|both`), by every word of each option above
    // recall's own BM25 floor.
    let pool_max = settings.per_probe * query.options.len() * 2;
    let every: Vec<&str> = query.options.iter().map(String::as_str).collect();
    let usual = RecallSettings {
        pool_max,
        ..settings.clone()
    };
    let hits = retrieve(shard, me, &vectors, &every, &usual);
    let usual: Vec<String> = hits.iter().map(|(fact, _)| fact.id.clone()).collect();
    // And by an option's names, whatever the recall mode, any hit: a place or a
    // weekday is the surest trace of an option, and recall's BM25 floor is above any
    // score in a shard of twenty facts.
    let by_name = RecallSettings {
        pool_max,
        dense: false,
        lexical: true,
        lexical_min: f32::MIN_POSITIVE,
        ..settings.clone()
    };
    let named = retrieve(shard, me, &[], &words, &by_name);
    for (fact, _) in hits.into_iter().chain(named) {
        if held(&found, &fact.id) {
            continue;
        }
        // A fact only an option's name found is on the question's subject only by the
        // words they share, never by closeness: a distractor's word turns up in
        // memories about anything.
        let closeness = semantic
            .facts()
            .iter()
            .position(|f| f.id == fact.id)
            .and_then(|p| semantic.vector_at(p))
            .filter(|_| usual.contains(&fact.id))
            .map_or(0.0, |v| dramatis_memory::vector::dot(v, query_vector));
        found.push(Found {
            id: fact.id.clone(),
            text: fact.text.clone(),
            closeness,
            fact: Some(fact),
            memory: None,
        });
    }
    if settings.layers.episodic {
        let episodic = &shard.layers().episodic;
        for vector in &vectors {
            for (memory, score) in episodic.anchor(vector, settings.per_probe) {
                if score < settings.relevant || held(&found, &memory.id) {
                    continue;
                }
                let closeness = episodic
                    .vector_of(&memory.id)
                    .map_or(0.0, |v| dramatis_memory::vector::dot(v, query_vector));
                found.push(Found {
                    id: memory.id.clone(),
                    text: memory.text.clone(),
                    closeness,
                    fact: None,
                    memory: Some(memory.clone()),
                });
            }
        }
    }
    let fits = option_fits(shard, &vectors, (pool, anchor), &found);
    Ok((found, fits))
}

/// Per held id, the cosine of each option (asked with the question) to it.
type Fits = std::collections::HashMap<String, Vec<f32>>;

/// Audit references of a workspace.
pub fn refs(anchor: Option<&EpisodicMemory>, facts: &[(Fact, f32)]) -> Vec<(String, String)> {
    anchor
        .map(|a| (a.id.clone(), EPISODIC.to_owned()))
        .into_iter()
        .chain(
            facts
                .iter()
                .map(|(f, _)| (f.id.clone(), SEMANTIC.to_owned())),
        )
        .collect()
}

fn self_probe_request(
    shard: &Shard,
    question: &str,
    anchor: Option<&EpisodicMemory>,
    pool: &[(Fact, f32)],
    asked: &[String],
) -> CompletionRequest {
    let name = &shard.profile.name;
    let system = format!(
        "You help {name} remember. Decide whether what {name} recalls below is enough to \
         respond from {name}'s own knowledge. If it is not, write up to three short search \
         phrases for facts {name} might remember. Reply with JSON."
    );
    let mut user = format!("Question: {}", question.trim());
    if let Some(anchor) = anchor {
        let _ = write!(user, "\nScene memory: {}", anchor.text);
    }
    user.push_str("\nRecalled:");
    if pool.is_empty() {
        user.push_str(" nothing yet");
    }
    for (fact, _) in pool {
        let _ = write!(user, "\n- {}", fact.text);
    }
    if !asked.is_empty() {
        let _ = write!(user, "\nAlready searched: {}", asked.join("; "));
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "sufficient": {"type": "boolean"},
            "probes": {
                "type": "array",
                "maxItems": 3,
                "items": {"type": "string", "minLength": 3, "maxLength": 80}
            }
        },
        "required": ["sufficient", "probes"]
    });
    CompletionRequest::new(vec![ChatMessage::system(system), ChatMessage::user(user)])
        .with_max_tokens(80)
        .with_temperature(0.0)
        .with_schema(ResponseSchema {
            name: SELF_PROBE_SCHEMA.into(),
            schema,
        })
}
