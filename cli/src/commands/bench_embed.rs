//! `dramatis bench embed`: sentences per second through the ONNX embedder at batch 1 and
//! 32, and the same through Python onnxruntime when it is available.

use clap::Args;
use std::time::Instant;

use anyhow::Context as _;
use dramatis_embed::{Embedder, OnnxEmbedder, OnnxEmbedderConfig};

#[derive(Debug, Args)]
pub struct EmbedBenchArgs {
    /// How many sentences to embed per batch size.
    #[arg(long, default_value_t = 512)]
    pub sentences: usize,
    /// Intra-op threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    #[command(flatten)]
    pub output: super::bench::JsonArg,
}

const BATCHES: [usize; 2] = [1, 32];

/// Deterministic, varied sentences of story-like length.
fn sentences(n: usize) -> Vec<String> {
    const WHO: [&str; 6] = [
        "Holmes",
        "Watson",
        "Lestrade",
        "Stamford",
        "Mrs Hudson",
        "the cabman",
    ];
    const DID: [&str; 6] = [
        "examined the bloodstain on the wall of",
        "walked slowly through the fog towards",
        "read the telegram twice before leaving",
        "argued about the ring found near",
        "remembered the wound received far from",
        "waited in silence at the door of",
    ];
    const PLACE: [&str; 5] = [
        "the empty house in Brixton",
        "the laboratory at Barts",
        "the sitting-room in Baker Street",
        "the Criterion Bar",
        "Scotland Yard",
    ];
    (0..n)
        .map(|i| {
            format!(
                "{} {} {}, on day {}.",
                WHO[i % 6],
                DID[(i / 6) % 6],
                PLACE[(i / 36) % 5],
                i
            )
        })
        .collect()
}

pub async fn bench_embed(args: &EmbedBenchArgs) -> anyhow::Result<()> {
    let config = OnnxEmbedderConfig {
        threads: args.threads,
        ..crate::models::embedder_config(None)
    };
    let embedder = OnnxEmbedder::load(&config)?;
    let texts = sentences(args.sentences.max(BATCHES[1]));
    embedder.embed(&texts[..4]).await?; // warm-up
    println!(
        "model {} · {} dimensions · {} sentences · {} threads",
        config.model_dir.display(),
        embedder.dimension(),
        texts.len(),
        args.threads
    );
    let mut rust = serde_json::Map::new();
    for batch in BATCHES {
        let started = Instant::now();
        for chunk in texts.chunks(batch) {
            embedder.embed(chunk).await?;
        }
        let rate = texts.len() as f64 / started.elapsed().as_secs_f64();
        println!("rust   batch={batch}: {rate:.0} sentences/s");
        rust.insert(format!("batch_{batch}_sentences_per_s"), rate.into());
    }
    rust.insert("threads".into(), args.threads.into());
    rust.insert("sentences".into(), texts.len().into());
    let python = std::path::Path::new(".cache/venv/bin/python");
    if !python.is_file() {
        println!("python: .cache/venv is absent (scripts/test.sh creates it); no comparison");
        return super::bench::print_json(&args.output, "embed", &rust);
    }
    let file = tempfile::NamedTempFile::new().context("temporary file")?;
    std::fs::write(file.path(), texts.join("\n")).context("write sentences")?;
    let output = tokio::process::Command::new(python)
        .arg("scripts/bench_embed_python.py")
        .arg(&config.model_dir)
        .arg(file.path())
        .args(BATCHES.iter().map(ToString::to_string))
        .output()
        .await
        .context("run the Python comparison")?;
    if output.status.success() {
        let printed = String::from_utf8_lossy(&output.stdout);
        print!("{printed}");
        rust.insert("python".into(), printed.trim().into());
    } else {
        println!(
            "python: comparison failed: {}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    super::bench::print_json(&args.output, "embed", &rust)
}
