use std::collections::HashMap;
use std::sync::Arc;

use crate::LanguageModel;

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
        Self {
            default: model,
            by_role: HashMap::new(),
        }
    }

    /// Gives `role` its own model.
    #[must_use]
    pub fn with_role(mut self, role: ModelRole, model: Arc<dyn LanguageModel>) -> Self {
        self.by_role.insert(role, model);
        self
    }

    /// The model for `role`.
    #[must_use]
    pub fn get(&self, role: ModelRole) -> &Arc<dyn LanguageModel> {
        self.by_role.get(&role).unwrap_or(&self.default)
    }
}
