//! A mind for module tests: bag-of-words vectors and scripted JSON answers.

use std::sync::Mutex;

use super::{Call, Mind, MindError, Reply, Spent};

/// Embeds by hashing lower-cased words into 64 buckets, so texts sharing words are
/// near; answers `json` from a queue (None when empty: the fallback path), and each
/// [`Call`] with the next of `replies` (a call with none left fails), keeping its prompt.
#[derive(Debug, Default)]
pub struct TestMind {
    pub answers: Mutex<Vec<serde_json::Value>>,
    pub asked: Mutex<Vec<String>>,
    pub replies: Mutex<Vec<String>>,
    /// Every call's system and user text, joined by a line break, in order.
    pub prompts: Mutex<Vec<String>>,
}

impl TestMind {
    pub fn answering(answers: Vec<serde_json::Value>) -> Self {
        Self {
            answers: Mutex::new(answers),
            ..Self::default()
        }
    }

    /// A mind whose calls are answered by `replies`, in order.
    pub fn replying(replies: &[&str]) -> Self {
        Self {
            replies: Mutex::new(replies.iter().map(|r| (*r).to_owned()).collect()),
            ..Self::default()
        }
    }

    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().expect("lock").clone()
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

    async fn call(&self, call: Call<'_>) -> Result<Reply, MindError> {
        self.prompts
            .lock()
            .expect("lock")
            .push(format!("{}\n{}", call.system, call.user));
        let mut replies = self.replies.lock().expect("lock");
        if replies.is_empty() {
            return Err(MindError::Model {
                message: "no reply left".into(),
                retryable: false,
            });
        }
        let text = replies.remove(0);
        Ok(Reply {
            value: serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .filter(serde_json::Value::is_object),
            text,
            spent: Spent::call(10, 5),
        })
    }
}
