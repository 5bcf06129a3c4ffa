//! A mind for module tests: bag-of-words vectors and scripted JSON answers.

use std::sync::Mutex;

use super::Mind;

/// Embeds by hashing lower-cased words into 64 buckets, so texts sharing words are
/// near; answers `json` from a queue (None when empty: the fallback path).
#[derive(Debug, Default)]
pub struct TestMind {
    pub answers: Mutex<Vec<serde_json::Value>>,
    pub asked: Mutex<Vec<String>>,
}

impl TestMind {
    pub fn answering(answers: Vec<serde_json::Value>) -> Self {
        Self {
            answers: Mutex::new(answers),
            asked: Mutex::default(),
        }
    }

    pub fn asked(&self) -> Vec<String> {
        self.asked.lock().expect("lock").clone()
    }
}

pub fn bag(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; 64];
    for word in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2)
    {
        let h = word
            .bytes()
            .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
        v[(h % 64) as usize] += 1.0;
    }
    v
}

#[async_trait::async_trait]
impl Mind for TestMind {
    async fn embed(&self, texts: &[String]) -> Vec<Vec<f32>> {
        texts.iter().map(|t| bag(t)).collect()
    }

    async fn json(
        &self,
        purpose: &str,
        _prompt: &str,
        _schema: &serde_json::Value,
    ) -> Option<serde_json::Value> {
        self.asked.lock().expect("lock").push(purpose.to_owned());
        let mut answers = self.answers.lock().expect("lock");
        if answers.is_empty() {
            None
        } else {
            Some(answers.remove(0))
        }
    }
}
