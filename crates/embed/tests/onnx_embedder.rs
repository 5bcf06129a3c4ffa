//! The real ONNX embedder on all-MiniLM-L6-v2 (int8), as fetched by set-up.

use std::path::PathBuf;

use dramatis_embed::{Embedder, OnnxEmbedder, OnnxEmbedderConfig};
use dramatis_memory::vector::dot as cosine;

fn config() -> Option<OnnxEmbedderConfig> {
    let models = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let config = OnnxEmbedderConfig {
        model_dir: models.join("all-MiniLM-L6-v2-int8"),
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
