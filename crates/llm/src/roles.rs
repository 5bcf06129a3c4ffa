use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use dramatis_runtime::{latency, metric};
use prometheus::{HistogramVec, IntCounterVec};

use crate::{Completion, CompletionRequest, LanguageModel, LlmError, TokenSink};

/// The jobs a language model does in Dramatis; each can have its own endpoint and model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModelRole {
    /// Plays characters: turns (Act), memory writes and module steps.
    Character,
    /// Answers interviews (Ask). Falls back to the character model; the evaluation
    /// gives it a model of its own so that a story replays on the scripted model while
    /// a real model answers.
    Answer,
    /// Narrates open stories: judges whether a scene is over and proposes the next
    /// event (one call per scene).
    Narrator,
}

impl ModelRole {
    pub const ALL: [Self; 3] = [Self::Character, Self::Answer, Self::Narrator];

    /// The lowercase name used in config keys and environment variables.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Character => "character",
            Self::Answer => "answer",
            Self::Narrator => "narrator",
        }
    }
}

/// One model per role; roles without their own fall back to the character model.
#[derive(Clone)]
pub struct RoleModels {
    default: Arc<dyn LanguageModel>,
    by_role: HashMap<ModelRole, Arc<dyn LanguageModel>>,
}

impl std::fmt::Debug for RoleModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RoleModels")
            .field("default", &self.default.name())
            .field("roles", &self.by_role.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl RoleModels {
    /// Every role uses `model`.
    #[must_use]
    pub fn uniform(model: Arc<dyn LanguageModel>) -> Self {
        let by_role = ModelRole::ALL
            .into_iter()
            .map(|role| (role, metered(role, Arc::clone(&model))))
            .collect();
        Self {
            default: model,
            by_role,
        }
    }

    /// Gives `role` its own model.
    #[must_use]
    pub fn with_role(mut self, role: ModelRole, model: Arc<dyn LanguageModel>) -> Self {
        self.by_role.insert(role, metered(role, model));
        self
    }

    /// The model for `role`, its calls counted under the role's name.
    #[must_use]
    pub fn get(&self, role: ModelRole) -> &Arc<dyn LanguageModel> {
        self.by_role.get(&role).unwrap_or(&self.default)
    }
}

static CALLS: LazyLock<IntCounterVec> = metric!(
    IntCounterVec,
    "dramatis_llm_calls_total",
    "Language-model calls by role and outcome (ok, error).",
    &["role", "outcome"]
);
static TOKENS: LazyLock<IntCounterVec> = metric!(
    IntCounterVec,
    "dramatis_llm_tokens_total",
    "Language-model tokens by role and kind (prompt, completion).",
    &["role", "kind"]
);
static SECONDS: LazyLock<HistogramVec> = latency!(
    "dramatis_llm_seconds",
    "Language-model call latency by role.",
    &["role"]
);

fn metered(role: ModelRole, inner: Arc<dyn LanguageModel>) -> Arc<dyn LanguageModel> {
    Arc::new(Metered { role, inner })
}

/// A model whose calls are counted for Prometheus under a role.
#[derive(Debug)]
struct Metered {
    role: ModelRole,
    inner: Arc<dyn LanguageModel>,
}

#[async_trait::async_trait]
impl LanguageModel for Metered {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(
        &self,
        request: &CompletionRequest,
        tokens: Option<&dyn TokenSink>,
    ) -> Result<Completion, LlmError> {
        let role = self.role.as_str();
        let timer = SECONDS.with_label_values(&[role]).start_timer();
        let result = self.inner.complete(request, tokens).await;
        timer.observe_duration();
        let outcome = if result.is_ok() { "ok" } else { "error" };
        CALLS.with_label_values(&[role, outcome]).inc();
        if let Ok(done) = &result {
            TOKENS
                .with_label_values(&[role, "prompt"])
                .inc_by(u64::from(done.prompt_tokens));
            TOKENS
                .with_label_values(&[role, "completion"])
                .inc_by(u64::from(done.completion_tokens));
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChatMessage, ScriptedModel};

    #[tokio::test]
    async fn every_role_s_calls_and_tokens_are_counted_under_its_name() {
        let models = RoleModels::uniform(Arc::new(ScriptedModel::default()));
        let request = CompletionRequest::new(vec![ChatMessage::user("Who is there?")]);
        for _ in 0..2 {
            models
                .get(ModelRole::Narrator)
                .complete(&request, None)
                .await
                .expect("scripted answer");
        }
        models
            .get(ModelRole::Answer)
            .complete(&request, None)
            .await
            .expect("scripted answer");
        assert_eq!(CALLS.with_label_values(&["narrator", "ok"]).get(), 2);
        assert_eq!(CALLS.with_label_values(&["answer", "ok"]).get(), 1);
        assert_eq!(CALLS.with_label_values(&["character", "ok"]).get(), 0);
        assert!(TOKENS.with_label_values(&["narrator", "prompt"]).get() > 0);
        assert_eq!(
            SECONDS.with_label_values(&["narrator"]).get_sample_count(),
            2
        );
        let text = dramatis_runtime::metrics::render();
        assert!(
            text.contains("dramatis_llm_calls_total{outcome=\"ok\",role=\"narrator\"} 2"),
            "{text}"
        );
    }
}
