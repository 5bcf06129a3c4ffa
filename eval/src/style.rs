//! Voice, measured per character: ReverieMem's *stylistic monotony* (every character
//! speaking in one flat voice) made a number.
//!
//! For each character: distinct-1 and distinct-2 of its lines (distinct words and word
//! pairs over all words and pairs it said), and, with the agents' embedder, its mean
//! line vector. Between characters: the cosine of every two mean line vectors. Against
//! its own personality patterns: the cosine of its mean line vector with the mean of its
//! patterns' excerpts, beside the nearest other character's excerpts. A cast whose every
//! two characters' mean lines sit within [`FLAT_COSINE`] is flagged flat.

use std::collections::HashSet;

use dramatis_embed::Embedder;
use serde::Serialize;

/// Two characters whose mean line vectors have at least this cosine sound alike; a
/// cast where every two do is flat. Measured with all-MiniLM-L6-v2: two casts given one
/// stock line each in many wordings sit above 0.9, the shipped scenario's four characters
/// on the built-in model from 0.38 to 0.79, mean 0.58 (README, "Is the story any good?").
pub const FLAT_COSINE: f64 = 0.9;

/// What one character said, and the excerpts of its personality patterns.
#[derive(Debug, Clone, Default)]
pub struct Voice {
    pub id: String,
    pub name: String,
    pub lines: Vec<String>,
    pub excerpts: Vec<String>,
}

/// One character's figures.
#[derive(Debug, Clone, Serialize)]
pub struct CharacterStyle {
    pub id: String,
    pub name: String,
    pub lines: usize,
    pub distinct_1: f64,
    pub distinct_2: f64,
    /// Cosine of its mean line vector with the mean of its own excerpts (none without
    /// excerpts).
    pub own_excerpts: Option<f64>,
    /// The other character whose excerpts its lines sit closest to, and that cosine.
    pub nearest_other_excerpts: Option<(String, f64)>,
}

/// Two characters' mean lines compared.
#[derive(Debug, Clone, Serialize)]
pub struct PairStyle {
    pub a: String,
    pub b: String,
    pub cosine: f64,
}

/// A cast's voices measured.
#[derive(Debug, Clone, Serialize)]
pub struct StyleReport {
    pub characters: Vec<CharacterStyle>,
    pub pairs: Vec<PairStyle>,
    /// The mean cosine over every two characters (lower: more distinct voices).
    pub mean_pair_cosine: Option<f64>,
    /// Every two characters' mean lines within [`FLAT_COSINE`].
    pub flat: bool,
}

/// Lower-cased words of `text`.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// distinct-n of `lines`: distinct n-grams over all n-grams (each taken within a line);
/// 0 when there are none.
#[must_use]
pub fn distinct_n(lines: &[String], n: usize) -> f64 {
    let mut all = 0usize;
    let mut distinct = HashSet::new();
    for line in lines {
        let words = words(line);
        for gram in words.windows(n.max(1)) {
            all += 1;
            distinct.insert(gram.join(" "));
        }
    }
    if all == 0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let share = distinct.len() as f64 / all as f64;
    share
}

/// The mean of `vectors`, scaled to unit length (`None` for no vectors).
fn mean(vectors: &[Vec<f32>]) -> Option<Vec<f32>> {
    let first = vectors.first()?;
    let mut sum = vec![0.0f32; first.len()];
    for vector in vectors {
        for (s, x) in sum.iter_mut().zip(vector) {
            *s += x;
        }
    }
    dramatis_embed::normalise(&mut sum);
    Some(sum)
}

/// The similarity of two unit vectors.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    f64::from(dramatis_memory::vector::dot(a, b))
}

/// The mean vector of `texts` under `embedder`.
async fn mean_of(embedder: &dyn Embedder, texts: &[String]) -> anyhow::Result<Option<Vec<f32>>> {
    if texts.is_empty() {
        return Ok(None);
    }
    let vectors = embedder.embed(texts).await?;
    Ok(mean(&vectors))
}

/// Measures `cast` (characters with no line are left out).
pub async fn measure(cast: &[Voice], embedder: &dyn Embedder) -> anyhow::Result<StyleReport> {
    let speaking: Vec<&Voice> = cast.iter().filter(|v| !v.lines.is_empty()).collect();
    let mut lines_mean = Vec::with_capacity(speaking.len());
    let mut excerpts_mean = Vec::with_capacity(speaking.len());
    for voice in &speaking {
        lines_mean.push(mean_of(embedder, &voice.lines).await?);
        excerpts_mean.push(mean_of(embedder, &voice.excerpts).await?);
    }
    let mut characters = Vec::with_capacity(speaking.len());
    for (i, voice) in speaking.iter().enumerate() {
        let Some(own) = &lines_mean[i] else { continue };
        let own_excerpts = excerpts_mean[i].as_ref().map(|e| cosine(own, e));
        let nearest_other_excerpts = speaking
            .iter()
            .zip(&excerpts_mean)
            .enumerate()
            .filter(|(j, _)| *j != i)
            .filter_map(|(_, (other, e))| Some((other.id.clone(), cosine(own, e.as_ref()?))))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        characters.push(CharacterStyle {
            id: voice.id.clone(),
            name: voice.name.clone(),
            lines: voice.lines.len(),
            distinct_1: distinct_n(&voice.lines, 1),
            distinct_2: distinct_n(&voice.lines, 2),
            own_excerpts,
            nearest_other_excerpts,
        });
    }
    let mut pairs = Vec::new();
    for i in 0..speaking.len() {
        for j in i + 1..speaking.len() {
            if let (Some(a), Some(b)) = (&lines_mean[i], &lines_mean[j]) {
                pairs.push(PairStyle {
                    a: speaking[i].id.clone(),
                    b: speaking[j].id.clone(),
                    cosine: cosine(a, b),
                });
            }
        }
    }
    #[allow(clippy::cast_precision_loss)] // pair counts far below 2^52
    let mean_pair_cosine = (!pairs.is_empty())
        .then(|| pairs.iter().map(|p| p.cosine).sum::<f64>() / pairs.len() as f64);
    let flat = !pairs.is_empty() && pairs.iter().all(|p| p.cosine >= FLAT_COSINE);
    Ok(StyleReport {
        characters,
        pairs,
        mean_pair_cosine,
        flat,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voice(id: &str, lines: &[&str], excerpts: &[&str]) -> Voice {
        Voice {
            id: id.into(),
            name: id.into(),
            lines: lines.iter().map(|l| (*l).to_owned()).collect(),
            excerpts: excerpts.iter().map(|l| (*l).to_owned()).collect(),
        }
    }

    /// The agents' embedder, from the models set-up fetched.
    fn embedder() -> dramatis_embed::OnnxEmbedder {
        use dramatis_runtime::models::{DEFAULT_EMBEDDER_DIR, ONNX_RUNTIME_LIBRARY};
        let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
        let config = dramatis_embed::OnnxEmbedderConfig::new(
            models.join(DEFAULT_EMBEDDER_DIR),
            models.join(ONNX_RUNTIME_LIBRARY),
        );
        dramatis_embed::OnnxEmbedder::load(&config)
            .expect("the embedder (run `bash scripts/setup.sh` to fetch it)")
    }

    #[tokio::test]
    async fn a_cast_speaking_in_one_voice_is_flagged_and_ranked_flatter_than_a_varied_one() {
        let flat = [
            voice(
                "holmes",
                &[
                    "What a curious affair this is, my friend.",
                    "A most curious affair, I must say.",
                ],
                &[],
            ),
            voice(
                "watson",
                &[
                    "This is a curious affair, my friend.",
                    "I must say, a curious affair indeed.",
                ],
                &[],
            ),
            voice(
                "lestrade",
                &[
                    "Truly a curious affair, my friend.",
                    "A curious affair, I must say it.",
                ],
                &[],
            ),
        ];
        let varied = [
            voice(
                "holmes",
                &[
                    "You have been in Afghanistan, I perceive.",
                    "The mud on your boot is from the clay of Brixton.",
                ],
                &["I perceive that you have been in Afghanistan."],
            ),
            voice(
                "cabman",
                &[
                    "Hop in, guv'nor, the fare's a shilling to Brixton.",
                    "My horse is tired and so am I.",
                ],
                &["Where to, guv'nor?"],
            ),
            voice(
                "child",
                &[
                    "Mummy, I want a sweet from the shop!",
                    "Can we play in the park after tea?",
                ],
                &["I want to go and play!"],
            ),
        ];
        let embedder = embedder();
        let flat = measure(&flat, &embedder).await.expect("measured");
        let varied = measure(&varied, &embedder).await.expect("measured");
        let (f, v) = (
            flat.mean_pair_cosine.expect("pairs"),
            varied.mean_pair_cosine.expect("pairs"),
        );
        assert!(f > v, "flat {f} vs varied {v}");
        assert!(flat.flat, "{:?}", flat.pairs);
        assert!(!varied.flat, "{:?}", varied.pairs);
        assert_eq!(varied.pairs.len(), 3);
        // Each varied character's lines sit closer to its own excerpts than to anyone's.
        for c in &varied.characters {
            let own = c.own_excerpts.expect("excerpts");
            let (_, other) = c.nearest_other_excerpts.clone().expect("others");
            assert!(own > other, "{c:?}");
        }
    }

    #[test]
    fn distinct_n_counts_repeated_words_and_pairs_once() {
        let lines = vec!["the cab, the cab".to_owned(), "The cab waits".to_owned()];
        // Words: the cab the cab | the cab waits: 3 distinct of 7.
        assert!((distinct_n(&lines, 1) - 3.0 / 7.0).abs() < 1e-9);
        // Pairs: "the cab" "cab the" "the cab" | "the cab" "cab waits": 3 distinct of 5.
        assert!((distinct_n(&lines, 2) - 3.0 / 5.0).abs() < 1e-9);
        assert!(distinct_n(&[], 2).abs() < f64::EPSILON);
    }
}
