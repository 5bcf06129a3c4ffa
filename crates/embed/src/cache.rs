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

/// What a run hands its waiters: the vector, or `None` when the run failed (a waiter
/// then embeds the text itself). The channel holds `None` until then.
type Outcome = Option<Option<Arc<[f32]>>>;

/// A vector being embedded by another caller.
type Pending = tokio::sync::watch::Receiver<Outcome>;

/// An [`Embedder`] in front of another, remembering its last texts. A text another
/// caller is embedding right now is waited for, not embedded again: the characters of a
/// process perceive a line at the same moment.
#[derive(Debug)]
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    state: std::sync::Mutex<State>,
    hits: AtomicU64,
    misses: AtomicU64,
}

#[derive(Debug)]
struct State {
    cache: lru::LruCache<String, Arc<[f32]>>,
    in_flight: std::collections::HashMap<String, Pending>,
}

/// Where each asked text's vector comes from.
enum Source {
    Cached(Arc<[f32]>),
    Waiting(Pending),
    /// This call embeds it (position in its batch).
    Mine(usize),
}

impl CachedEmbedder {
    /// Remembers the vectors of the last `capacity` texts `inner` embedded.
    #[must_use]
    pub fn new(inner: Arc<dyn Embedder>, capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN);
        Self {
            inner,
            state: std::sync::Mutex::new(State {
                cache: lru::LruCache::new(capacity),
                in_flight: std::collections::HashMap::new(),
            }),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Texts answered from the cache (or from another caller's run), and texts the
    /// model embedded, so far.
    #[must_use]
    pub fn hits_and_misses(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Embeds `mine` (texts nobody else is embedding), then hands the vectors to the
    /// cache and to whoever waits for them.
    async fn run(
        &self,
        mine: &[String],
        senders: Vec<tokio::sync::watch::Sender<Outcome>>,
    ) -> Result<Vec<Arc<[f32]>>, EmbedError> {
        // Cleared on every exit, a cancelled call's included, so nobody waits on a run
        // that will not finish.
        let _clearing = Clearing {
            state: &self.state,
            texts: mine,
        };
        let result = self.inner.embed(mine).await;
        let mut state = self.state();
        for text in mine {
            state.in_flight.remove(text);
        }
        match result {
            Ok(vectors) => {
                let vectors: Vec<Arc<[f32]>> = vectors.into_iter().map(Arc::from).collect();
                for ((text, vector), sender) in mine.iter().zip(&vectors).zip(senders) {
                    state.cache.put(text.clone(), Arc::clone(vector));
                    // A waiter that gave up needs no answer; the vector is cached for the
                    // next.
                    let _ = sender.send(Some(Some(Arc::clone(vector))));
                }
                Ok(vectors)
            }
            Err(error) => {
                for sender in senders {
                    // A waiter that gave up needs no answer.
                    let _ = sender.send(Some(None));
                }
                Err(error)
            }
        }
    }
}

/// Takes a run's texts off the in-flight list when the run ends or is dropped.
struct Clearing<'a> {
    state: &'a std::sync::Mutex<State>,
    texts: &'a [String],
}

impl Drop for Clearing<'_> {
    fn drop(&mut self) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for text in self.texts {
            state.in_flight.remove(text);
        }
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
        let mut mine: Vec<String> = Vec::new();
        let mut senders = Vec::new();
        let sources: Vec<Source> = {
            let mut state = self.state();
            texts
                .iter()
                .map(|text| {
                    if let Some(vector) = state.cache.get(text) {
                        return Source::Cached(Arc::clone(vector));
                    }
                    if let Some(at) = mine.iter().position(|m| m == text) {
                        return Source::Mine(at);
                    }
                    if let Some(pending) = state.in_flight.get(text) {
                        return Source::Waiting(pending.clone());
                    }
                    let (sender, pending) = tokio::sync::watch::channel(None);
                    state.in_flight.insert(text.clone(), pending);
                    senders.push(sender);
                    mine.push(text.clone());
                    Source::Mine(mine.len() - 1)
                })
                .collect()
        };
        let shared = sources
            .iter()
            .filter(|s| !matches!(s, Source::Mine(_)))
            .count();
        self.hits.fetch_add(shared as u64, Ordering::Relaxed);
        self.misses.fetch_add(mine.len() as u64, Ordering::Relaxed);
        let embedded = if mine.is_empty() {
            Vec::new()
        } else {
            self.run(&mine, senders).await?
        };
        let mut out = Vec::with_capacity(texts.len());
        for (text, source) in texts.iter().zip(sources) {
            let vector = match source {
                Source::Cached(vector) => vector,
                Source::Mine(at) => Arc::clone(&embedded[at]),
                Source::Waiting(mut pending) => {
                    let done = pending
                        .wait_for(Option::is_some)
                        .await
                        .ok()
                        .and_then(|v| v.clone());
                    match done.flatten() {
                        Some(vector) => vector,
                        // The other run failed or was dropped: embed it here.
                        None => Arc::from(
                            self.inner
                                .embed(std::slice::from_ref(text))
                                .await?
                                .pop()
                                .unwrap_or_default(),
                        ),
                    }
                }
            };
            out.push(vector.to_vec());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FakeEmbedder, RecordingEmbedder};

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

    #[tokio::test]
    async fn callers_asking_at_once_share_one_run_and_a_dropped_run_leaves_no_waiter() {
        let slow = Arc::new(RecordingEmbedder::new(8));
        let cached = CachedEmbedder::new(slow.clone(), 16);
        let line = texts(&["the ring was in the gutter"]);
        let both = texts(&["the ring was in the gutter", "a cab waited"]);
        let (first, second) = tokio::join!(cached.embed(&line), cached.embed(&both));
        let (first, second) = (first.expect("first"), second.expect("second"));
        assert_eq!(first[0], second[0]);
        assert_eq!(
            slow.asked(),
            texts(&["the ring was in the gutter", "a cab waited"]),
            "the shared text once"
        );
        assert_eq!(cached.hits_and_misses(), (1, 2));

        // A run dropped mid-way: its text is not left in flight.
        let fresh = texts(&["a word on the wall"]);
        {
            let mut run = Box::pin(cached.embed(&fresh));
            let waker = std::task::Waker::noop();
            let poll = run
                .as_mut()
                .poll(&mut std::task::Context::from_waker(waker));
            assert!(poll.is_pending(), "paused inside the model");
        }
        let again = cached.embed(&fresh).await.expect("embedded anew");
        assert_eq!(
            again,
            FakeEmbedder::new(8).embed(&fresh).await.expect("fake")
        );
        cached.embed(&fresh).await.expect("cached now");
        let asked = slow.asked();
        assert_eq!(
            asked.iter().filter(|t| **t == fresh[0]).count(),
            2,
            "the dropped run and the next one; then the cache"
        );
    }
}
