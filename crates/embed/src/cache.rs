//! An embedder that remembers the vectors of recent texts. The same text comes back
//! often in a story: the last lines of a scene are part of every turn's query, and a
//! scene's lines are written to the memory of everyone who heard them. An agent process
//! keeps one cache in front of its model, so a text is embedded once however many of
//! its characters ask.
//!
//! A vector is a function of its text alone, so a cache shared by the characters of a
//! process hands a character nothing but the vector of a text it already holds.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;

use crate::{EmbedError, Embedder};

/// Texts an agent process remembers by default (about 6 MB of 384-dimension vectors).
pub const DEFAULT_CACHED_TEXTS: usize = 4096;

/// An [`Embedder`] in front of another, remembering its last texts.
#[derive(Debug)]
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    cache: std::sync::Mutex<lru::LruCache<String, Arc<[f32]>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl CachedEmbedder {
    /// Remembers the vectors of the last `capacity` texts `inner` embedded.
    #[must_use]
    pub fn new(inner: Arc<dyn Embedder>, capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Self {
            inner,
            cache: std::sync::Mutex::new(lru::LruCache::new(capacity)),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Texts answered from the cache, and texts the model embedded, so far.
    #[must_use]
    pub fn hits_and_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, lru::LruCache<String, Arc<[f32]>>> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl Embedder for CachedEmbedder {
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn tokens(&self, text: &str) -> usize {
        self.inner.tokens(text)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut found: Vec<Option<Arc<[f32]>>> = {
            let mut cache = self.cache();
            texts.iter().map(|t| cache.get(t).cloned()).collect()
        };
        // Each missing text once, in one batch.
        let mut missing: Vec<String> = Vec::new();
        for (text, vector) in texts.iter().zip(&found) {
            if vector.is_none() && !missing.contains(text) {
                missing.push(text.clone());
            }
        }
        let hits = found.iter().filter(|v| v.is_some()).count();
        self.hits.fetch_add(hits as u64, Ordering::Relaxed);
        self.misses
            .fetch_add(missing.len() as u64, Ordering::Relaxed);
        if !missing.is_empty() {
            let vectors = self.inner.embed(&missing).await?;
            let mut cache = self.cache();
            for (text, vector) in missing.into_iter().zip(vectors) {
                let vector: Arc<[f32]> = vector.into();
                for (slot, asked) in found.iter_mut().zip(texts) {
                    if slot.is_none() && *asked == text {
                        *slot = Some(Arc::clone(&vector));
                    }
                }
                cache.put(text, vector);
            }
        }
        Ok(found
            .into_iter()
            .map(|v| v.map(|v| v.to_vec()).unwrap_or_default())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FakeEmbedder;

    fn texts(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[tokio::test]
    async fn gives_the_inner_vectors_and_embeds_each_text_once() {
        let fake: Arc<dyn Embedder> = Arc::new(FakeEmbedder::new(8));
        let cached = CachedEmbedder::new(Arc::clone(&fake), 3);
        let asked = texts(&["a", "b", "a"]);
        let direct = fake.embed(&asked).await.expect("fake");
        assert_eq!(cached.embed(&asked).await.expect("cached"), direct);
        assert_eq!(cached.hits_and_misses(), (0, 2), "a once, b once");
        let again = texts(&["b", "c", "a"]);
        assert_eq!(
            cached.embed(&again).await.expect("cached"),
            fake.embed(&again).await.expect("fake")
        );
        assert_eq!(cached.hits_and_misses(), (2, 3));
        // Capacity 3: d pushes out the least recently used (b).
        cached.embed(&texts(&["d"])).await.expect("cached");
        cached.embed(&texts(&["b"])).await.expect("cached");
        assert_eq!(cached.hits_and_misses(), (2, 5));
        assert!(cached.embed(&[]).await.expect("empty").is_empty());
    }
}
