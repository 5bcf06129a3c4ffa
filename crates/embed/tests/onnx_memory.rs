//! What an embedder holds once a large batch is done. Alone in its test binary, so
//! no other test's allocations share the process whose resident memory it reads.

use std::path::PathBuf;

use dramatis_embed::{Embedder, OnnxEmbedder, OnnxEmbedderConfig};

fn resident_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS");
    kb / 1024.0
}

/// Ninety-six different sentences of about sixty word pieces: three full runs of 32.
fn long_sentences() -> Vec<String> {
    let words: Vec<&str> =
        "lamp ledger harbour fog lantern captain debt river night signal warehouse clerk storm coin letter bridge"
            .split(' ')
            .collect();
    (0..96)
        .map(|i| {
            (0..55)
                .map(|j| words[(i * 7 + j * 3 + j / 5) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// An agent embeds a character's whole starting shard in batches of 32 when it is
/// placed, then idles for most of its life. Before, ONNX Runtime's arena kept the
/// buffers of the largest batch for good: 96 long sentences left the process over
/// 100 MB larger than before them.
#[tokio::test]
async fn a_large_batch_leaves_little_behind_once_it_is_done() {
    let models = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let config = OnnxEmbedderConfig {
        model_dir: models.join("all-MiniLM-L6-v2-int8-nbits"),
        runtime_library: models.join("onnxruntime/libonnxruntime.so.1.31.1"),
        threads: 2,
        max_tokens: 128,
    };
    if !config.model_dir.join("model.onnx").is_file() || !config.runtime_library.is_file() {
        eprintln!("SKIPPED: embedding model files are absent; run `bash scripts/setup.sh`");
        return;
    }
    let embedder = OnnxEmbedder::load(&config).expect("model loads");
    embedder
        .embed(&["a short warm-up".to_owned()])
        .await
        .expect("warm-up");
    let before = resident_mb();
    let sentences = long_sentences();
    let vectors = embedder.embed(&sentences).await.expect("batch");
    assert_eq!(vectors.len(), 96);
    assert!(
        embedder.tokens(&sentences[0]) >= 50,
        "the sentences are long: {}",
        embedder.tokens(&sentences[0])
    );
    let after = resident_mb();
    eprintln!("resident before {before:.1} MB, after {after:.1} MB");
    assert!(
        after - before < 40.0,
        "the batch left {:.1} MB behind ({before:.1} -> {after:.1} MB)",
        after - before
    );
}
