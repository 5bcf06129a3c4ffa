//! The personality layer: K situational patterns (a one-line description, embedded, and
//! canonical excerpts used as style anchors) and the emotion-transition record.

use serde::{Deserialize, Serialize};

use crate::index::{Indexed, Keyed};
use crate::vector::dot;

/// A way the character behaves in a kind of situation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonalityPattern {
    pub id: String,
    pub description: String,
    pub excerpts: Vec<String>,
}

impl Keyed for PersonalityPattern {
    fn key(&self) -> &str {
        &self.id
    }
}

/// One step of the character's emotional trajectory, from one of its utterances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmotionTransition {
    pub emotion: String,
    pub intensity: f32,
    pub trigger: String,
    pub intent: String,
    /// Event sequence number of the utterance.
    pub seq: u64,
    /// Embedding of the trigger, for finding how the character met similar moments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trigger_vector: Vec<f32>,
}

/// The layer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PersonalityLayer {
    patterns: Indexed<PersonalityPattern>,
    transitions: Vec<EmotionTransition>,
}

impl PersonalityLayer {
    pub fn add_pattern(&mut self, pattern: PersonalityPattern, vector: &[f32]) {
        self.patterns.push(pattern, vector);
    }

    pub fn record(&mut self, transition: EmotionTransition) {
        self.transitions.push(transition);
    }

    #[must_use]
    pub fn patterns(&self) -> &[PersonalityPattern] {
        self.patterns.items()
    }

    /// The stored embedding of the pattern at `position`.
    #[must_use]
    pub fn pattern_vector_at(&self, position: usize) -> Option<&[f32]> {
        self.patterns.vector_at(position)
    }

    /// The layer with every pattern and only the transitions `keep` accepts.
    #[must_use]
    pub fn retained(&self, keep: impl Fn(&EmotionTransition) -> bool) -> Self {
        Self {
            patterns: self.patterns.clone(),
            transitions: self
                .transitions
                .iter()
                .filter(|t| keep(t))
                .cloned()
                .collect(),
        }
    }

    #[must_use]
    pub fn transitions(&self) -> &[EmotionTransition] {
        &self.transitions
    }

    /// The recorded transition whose trigger is most like `query`, with its similarity:
    /// how the character met the most similar moment so far. Ties go to the latest.
    #[must_use]
    pub fn nearest_transition(&self, query: &[f32]) -> Option<(&EmotionTransition, f32)> {
        self.transitions
            .iter()
            .filter(|t| !t.trigger_vector.is_empty())
            .map(|t| (t, dot(&t.trigger_vector, query)))
            .fold(None, |best, (t, score)| match best {
                Some((_, b)) if b > score => best,
                _ => Some((t, score)),
            })
    }

    /// `Pattern`: the pattern whose description is nearest the new state and context.
    #[must_use]
    pub fn nearest_pattern(&self, query: &[f32]) -> Option<(&PersonalityPattern, f32)> {
        self.patterns.search(query, 1, |_| true).into_iter().next()
    }
}
