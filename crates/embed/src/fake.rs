//! A deterministic embedder for tests: words hash into buckets, so texts that share
//! words are close and texts that share none are orthogonal. Vectors can also be pinned
//! per text, for tests that need exact geometry.

use std::collections::HashMap;

use async_trait::async_trait;

use crate::{EmbedError, Embedder, normalise};

/// The fake embedder.
#[derive(Debug, Clone)]
pub struct FakeEmbedder {
    dimension: usize,
    pinned: HashMap<String, Vec<f32>>,
}

impl FakeEmbedder {
    #[must_use]
    pub fn new(dimension: usize) -> Self {
        Self {
            dimension: dimension.max(1),
            pinned: HashMap::new(),
        }
    }

    /// Makes `text` embed to `vector` (normalised).
    #[must_use]
    pub fn pin(mut self, text: &str, mut vector: Vec<f32>) -> Self {
        vector.resize(self.dimension, 0.0);
        normalise(&mut vector);
        self.pinned.insert(text.to_owned(), vector);
        self
    }

    fn one(&self, text: &str) -> Vec<f32> {
        if let Some(v) = self.pinned.get(text) {
            return v.clone();
        }
        let mut vector = vec![0.0; self.dimension];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
        {
            // FNV-1a over the lowercase word: stable across runs and platforms.
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in word.to_lowercase().bytes() {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            let bucket = usize::try_from(hash % self.dimension as u64).unwrap_or(0);
            vector[bucket] += 1.0;
        }
        normalise(&mut vector);
        vector
    }
}

#[async_trait]
impl Embedder for FakeEmbedder {
    fn dimension(&self) -> usize {
        self.dimension
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.one(t)).collect())
    }
}

/// The fake embedder that records every text it is asked to embed and pauses once
/// (yields to the runtime) before answering, so callers that ask together overlap. For
/// tests that count model runs.
#[derive(Debug)]
pub struct RecordingEmbedder {
    fake: FakeEmbedder,
    asked: std::sync::Mutex<Vec<String>>,
}

impl RecordingEmbedder {
    #[must_use]
    pub fn new(dimension: usize) -> Self {
        Self {
            fake: FakeEmbedder::new(dimension),
            asked: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Every text embedded so far, in order.
    #[must_use]
    pub fn asked(&self) -> Vec<String> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl Embedder for RecordingEmbedder {
    fn dimension(&self) -> usize {
        self.fake.dimension()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(texts.iter().cloned());
        tokio::task::yield_now().await;
        self.fake.embed(texts).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dramatis_memory::vector::dot as cosine;

    #[tokio::test]
    async fn shared_words_are_close_and_pins_win() {
        let fake = FakeEmbedder::new(64).pin("pinned", vec![1.0, 0.0]);
        let texts: Vec<String> = [
            "the blood test works",
            "a test for blood",
            "cab horses",
            "pinned",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let v = fake.embed(&texts).await.expect("embeds");
        assert!(cosine(&v[0], &v[1]) > 0.5);
        assert!(cosine(&v[0], &v[2]).abs() < 1e-6);
        assert_eq!(v[3][0], 1.0);
        assert!(v.iter().all(|x| x.len() == 64));
    }
}
