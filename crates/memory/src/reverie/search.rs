//! One search of a character's own shard: the query recall answers, `Vis-Retrieve`
//! over the facts visible to the character (by vector, by word, or both, fused by
//! rank), and what an option search found.

use crate::{EpisodicMemory, Fact, ReverieLayers};

use super::settings::RecallSettings;
use super::{EPISODIC, SEMANTIC};

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
    /// The scene's latest lines in pieces (each line as the agent embedded it), when the
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

/// Vis-Retrieve over the character's visible facts: by vector (each probe), keeping
/// those at least `relevant`, and by words (each text), keeping those that share a
/// rare enough word (`lexical_min`). The two rankings are fused by reciprocal rank;
/// each fact keeps its best cosine to a probe as its score.
pub(super) fn retrieve(
    layers: &ReverieLayers,
    me: &str,
    probes: &[Vec<f32>],
    texts: &[&str],
    settings: &RecallSettings,
) -> Vec<(Fact, f32)> {
    if !settings.layers.semantic {
        return Vec::new();
    }
    let semantic = &layers.semantic;
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
                    .map(|probe| crate::vector::dot(vector, probe))
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

/// Per held id, the cosine of each option (asked with the question) to it.
pub type Fits = std::collections::HashMap<String, Vec<f32>>;

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
