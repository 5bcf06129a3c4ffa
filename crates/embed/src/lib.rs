//! `dramatis-embed` turns sentences into vectors for a character agent's own memory.
//! It owns the [`Embedder`] trait, the ONNX Runtime implementation (any sentence-
//! embedding model directory with `model.onnx` and `tokenizer.json`; all-MiniLM-L6-v2
//! int8 by default) and a deterministic fake for tests.
//!
//! It never touches the network: models come from files that set-up placed on disk.

mod cache;
mod compose;
mod error;
mod fake;
mod onnx;

use async_trait::async_trait;
pub use cache::{CachedEmbedder, DEFAULT_CACHED_TEXTS};
pub use compose::embed_composed;
pub use error::EmbedError;
pub use fake::{FakeEmbedder, RecordingEmbedder};
pub use onnx::{OnnxEmbedder, OnnxEmbedderConfig};

/// Turns texts into L2-normalised vectors of a fixed dimension.
#[async_trait]
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// Length of every vector.
    fn dimension(&self) -> usize;

    /// Embeds a batch; the result has one vector per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// How long `text` is in the model's input units (word pieces for a transformer;
    /// words, at least one, unless an embedder knows better): the weight of a piece in
    /// a composed text ([`embed_composed`]).
    fn tokens(&self, text: &str) -> usize {
        text.split_whitespace().count().max(1)
    }
}

pub use dramatis_base::normalise;
