//! The real ONNX embedder on all-MiniLM-L6-v2 (int8), as fetched by set-up: the
//! model the services load (`all-MiniLM-L6-v2-int8-nbits`, its weights kept in eight
//! bits by `scripts/embedder_int8.py`) and the shipped one it was rewritten from.

use std::path::PathBuf;

use dramatis_embed::{Embedder, OnnxEmbedder, OnnxEmbedderConfig};
use dramatis_memory::vector::dot as cosine;

/// What the services load.
const LOADED: &str = "all-MiniLM-L6-v2-int8-nbits";
/// The shipped model, which ONNX Runtime folds to float weights as it loads it.
const SHIPPED: &str = "all-MiniLM-L6-v2-int8";

fn config() -> Option<OnnxEmbedderConfig> {
    config_of(LOADED)
}

fn config_of(model: &str) -> Option<OnnxEmbedderConfig> {
    let models = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let config = OnnxEmbedderConfig {
        model_dir: models.join(model),
        runtime_library: models.join("onnxruntime/libonnxruntime.so.1.31.1"),
        threads: 2,
        max_tokens: 128,
    };
    let present = config.model_dir.join("model.onnx").is_file()
        && config.model_dir.join("tokenizer.json").is_file()
        && config.runtime_library.is_file();
    if !present {
        eprintln!("SKIPPED: embedding model files are absent; run `bash scripts/setup.sh`");
        return None;
    }
    Some(config)
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn related_sentences_are_closer_than_unrelated_ones_and_batching_changes_nothing() {
    let Some(config) = config() else { return };
    let embedder = OnnxEmbedder::load(&config).expect("model loads");
    assert_eq!(embedder.dimension(), 384);
    let sentences = texts(&[
        "Holmes found a chemical test for bloodstains.",
        "He discovered a reagent that detects blood.",
        "The cab rattled down Baker Street in the fog.",
        "A short one.",
    ]);
    let batch = embedder.embed(&sentences).await.expect("batch");
    assert_eq!(batch.len(), 4);
    for vector in &batch {
        let norm: f32 = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "unit length, got {norm}");
    }
    let related = cosine(&batch[0], &batch[1]);
    let unrelated = cosine(&batch[0], &batch[2]);
    assert!(
        related > unrelated + 0.2,
        "related {related} vs unrelated {unrelated}"
    );
    // Padding in a batch must not change any sentence's vector.
    for (i, sentence) in sentences.iter().enumerate() {
        let single = embedder
            .embed(std::slice::from_ref(sentence))
            .await
            .expect("single");
        let same = cosine(&single[0], &batch[i]);
        assert!(
            same > 0.9999,
            "sentence {i}: batch and single differ ({same})"
        );
    }
    assert!(embedder.embed(&[]).await.expect("empty").is_empty());
}

#[test]
fn a_missing_model_directory_is_named_in_the_error() {
    let error = OnnxEmbedder::load(&OnnxEmbedderConfig {
        model_dir: PathBuf::from("/nonexistent/model-dir"),
        runtime_library: PathBuf::from("/nonexistent/libonnxruntime.so"),
        threads: 1,
        max_tokens: 16,
    })
    .expect_err("nothing to load");
    assert!(
        error
            .to_string()
            .contains("/nonexistent/model-dir/model.onnx"),
        "{error}"
    );
}

/// Sentences of a novel nobody here wrote, of 6 to 40 words, every seventh one.
fn novel_sentences(count: usize) -> Option<Vec<String>> {
    let book = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/books/the-sign-of-the-four.txt");
    let Ok(text) = std::fs::read_to_string(&book) else {
        eprintln!("SKIPPED: {} is absent", book.display());
        return None;
    };
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let sentences: Vec<String> = joined
        .split_inclusive(['.', '?', '!'])
        .map(str::trim)
        .filter(|s| (6..=40).contains(&s.split_whitespace().count()))
        .step_by(7)
        .take(count)
        .map(str::to_owned)
        .collect();
    Some(sentences)
}

/// Issue 36's bar for an embedder that holds less memory: against the model it replaces,
/// a mean cosine of at least 0.99, and the same five nearest neighbours for at least 90%
/// of them.
#[tokio::test]
async fn eight_bit_weights_embed_a_novel_as_the_shipped_model_does() {
    let (Some(loaded), Some(shipped)) = (config(), config_of(SHIPPED)) else {
        return;
    };
    let Some(sentences) = novel_sentences(300) else {
        return;
    };
    assert_eq!(sentences.len(), 300, "the novel gives 300 sentences");
    let ours = OnnxEmbedder::load(&loaded)
        .expect("loads")
        .embed(&sentences)
        .await
        .expect("embeds");
    let theirs = OnnxEmbedder::load(&shipped)
        .expect("loads")
        .embed(&sentences)
        .await
        .expect("embeds");
    let cosines: Vec<f32> = ours
        .iter()
        .zip(&theirs)
        .map(|(a, b)| cosine(a, b))
        .collect();
    let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
    let worst = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    let nearest = |vectors: &[Vec<f32>], i: usize| {
        let mut others: Vec<(usize, f32)> = (0..vectors.len())
            .filter(|&j| j != i)
            .map(|j| (j, cosine(&vectors[i], &vectors[j])))
            .collect();
        others.sort_by(|a, b| b.1.total_cmp(&a.1));
        others
            .into_iter()
            .take(5)
            .map(|(j, _)| j)
            .collect::<Vec<_>>()
    };
    let shared: usize = (0..sentences.len())
        .map(|i| {
            let theirs = nearest(&theirs, i);
            nearest(&ours, i)
                .iter()
                .filter(|j| theirs.contains(j))
                .count()
        })
        .sum();
    let same_neighbours = shared as f32 / (5 * sentences.len()) as f32;
    eprintln!("cosine mean {mean:.4}, worst {worst:.4}; top-5 shared {same_neighbours:.3}");
    assert!(mean >= 0.99, "mean cosine {mean}");
    assert!(worst >= 0.95, "worst cosine {worst}");
    assert!(
        same_neighbours >= 0.9,
        "top-5 neighbours shared {same_neighbours}"
    );
}
