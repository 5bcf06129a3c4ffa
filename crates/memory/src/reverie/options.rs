//! A multiple-choice question's options weighed against memory: each option searched
//! as the question is (and by its rare names), and how close each option sits to
//! everything held.

use crate::modules::{Mind, MindError};
use crate::{EpisodicMemory, Fact, ReverieLayers, SemanticLayer};

use super::Reverie;
use super::search::{Fits, Found, Query, retrieve};
use super::settings::RecallSettings;

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
                .flat_map(crate::modules::content_words)
                .filter(|w| {
                    let held = crate::lexical::stems(w)
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
    layers: &ReverieLayers,
    vectors: &[Vec<f32>],
    (pool, anchor): (&[(Fact, f32)], Option<&EpisodicMemory>),
    found: &[Found],
) -> Fits {
    let semantic = &layers.semantic;
    let fact_vector = |id: &str| semantic.vector_of(id);
    let mut fits = Fits::new();
    let held = pool
        .iter()
        .map(|(f, _)| (f.id.as_str(), fact_vector(&f.id)))
        .chain(anchor.map(|a| (a.id.as_str(), layers.episodic.vector_of(&a.id))))
        .chain(found.iter().map(|f| {
            let vector = if f.fact.is_some() {
                fact_vector(&f.id)
            } else {
                layers.episodic.vector_of(&f.id)
            };
            (f.id.as_str(), vector)
        }));
    for (id, vector) in held {
        if let Some(vector) = vector {
            let each = vectors
                .iter()
                .map(|o| crate::vector::dot(o, vector))
                .collect();
            fits.insert(id.to_owned(), each);
        }
    }
    fits
}

/// What each option of a multiple-choice question finds, searched by the question and
/// option together (facts and scene memories) and by the option's words (facts), that
/// the pool and the anchor do not hold yet, with its cosine to the question itself.
pub(super) async fn weigh_options(
    reverie: &Reverie<'_>,
    query: &Query<'_>,
    query_vector: &[f32],
    (pool, anchor): (&[(Fact, f32)], Option<&EpisodicMemory>),
    settings: &RecallSettings,
    mind: &dyn Mind,
) -> Result<(Vec<Found>, Fits), MindError> {
    let (layers, me) = (reverie.layers, reverie.character);
    if query.options.is_empty() || !settings.option_search {
        return Ok((Vec::new(), Fits::new()));
    }
    let asked: Vec<String> = query
        .options
        .iter()
        .map(|o| format!("{} {}", query.text.trim(), o.trim()))
        .collect();
    let vectors = mind.try_embed(&asked).await?;
    let semantic = &layers.semantic;
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
    let hits = retrieve(layers, me, &vectors, &every, &usual);
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
    let named = retrieve(layers, me, &[], &words, &by_name);
    for (fact, _) in hits.into_iter().chain(named) {
        if held(&found, &fact.id) {
            continue;
        }
        // A fact only an option's name found is on the question's subject only by the
        // words they share, never by closeness: a distractor's word turns up in
        // memories about anything.
        let closeness = semantic
            .vector_of(&fact.id)
            .filter(|_| usual.contains(&fact.id))
            .map_or(0.0, |v| crate::vector::dot(v, query_vector));
        found.push(Found {
            id: fact.id.clone(),
            text: fact.text.clone(),
            closeness,
            fact: Some(fact),
            memory: None,
        });
    }
    if settings.layers.episodic {
        let episodic = &layers.episodic;
        for vector in &vectors {
            for (memory, score) in episodic.anchor(vector, settings.per_probe) {
                if score < settings.relevant || held(&found, &memory.id) {
                    continue;
                }
                let closeness = episodic
                    .vector_of(&memory.id)
                    .map_or(0.0, |v| crate::vector::dot(v, query_vector));
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
    let fits = option_fits(layers, &vectors, (pool, anchor), &found);
    Ok((found, fits))
}
