//! A scene as the write path takes it (the draft of what the character perceived in
//! it) and what the write path makes of it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::modules::Spent;
use crate::{EmotionTransition, EpisodicMemory, Fact};

use super::Perceived;

/// How the character felt about one of its own utterances, from the action it chose:
/// kept until its own event arrives, then a [`Moment`] of that event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    pub emotion: String,
    pub intensity: f32,
    pub intent: String,
    /// The line it answered.
    pub trigger: String,
    /// That line's pieces, as its vector is composed (empty in shards written before
    /// lines were embedded in pieces: the whole line is embedded then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trigger_pieces: Vec<String>,
}

/// An utterance of the character's own and how it felt saying it, waiting for the scene
/// end to enter the emotion-transition record. Saved flat: `{"seq", "emotion", …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Moment {
    pub seq: u64,
    #[serde(flatten)]
    pub felt: Annotation,
}

/// A scene the character lived through, ready to be written to long-term memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneDraft {
    pub scene_id: String,
    pub events: Vec<Perceived>,
    pub moments: Vec<Moment>,
    /// Display names of the people the character has met, by id.
    pub names: BTreeMap<String, String>,
}

/// What the write path made of a scene, with one vector per item.
#[derive(Debug, Clone)]
pub struct WrittenScene {
    pub episode: (EpisodicMemory, Vec<f32>),
    pub facts: Vec<(Fact, Vec<f32>)>,
    pub transitions: Vec<EmotionTransition>,
}

/// What the model rewrite of one scene produced.
#[derive(Debug, Clone, Default)]
pub struct Rewritten {
    /// New text and vector of the scene's episodic memory (none: the digest stays).
    pub episode: Option<(EpisodicMemory, Vec<f32>)>,
    /// Extra facts the model found, each tied to a line the character perceived.
    pub facts: Vec<(Fact, Vec<f32>)>,
    /// The call it took (its prompt went to the mind's audit).
    pub spent: Spent,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moment_reads_and_writes_the_flat_shape_shards_have_always_saved() {
        let saved =
            r#"{"seq":7,"emotion":"fear","intensity":0.8,"intent":"run","trigger":"A shot!"}"#;
        let moment: Moment = serde_json::from_str(saved).expect("reads");
        assert_eq!(moment.seq, 7);
        assert_eq!(
            (moment.felt.emotion.as_str(), moment.felt.trigger.as_str()),
            ("fear", "A shot!")
        );
        assert!(moment.felt.trigger_pieces.is_empty());
        assert_eq!(serde_json::to_string(&moment).expect("writes"), saved);
    }
}
