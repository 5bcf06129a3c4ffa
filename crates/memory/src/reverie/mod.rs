//! ReverieMem's read path over one character's layers (§3.4, Algorithm 1): the anchor,
//! Self-Probe, visibility-bounded retrieval, the weighing of a question's options, and
//! the personality track (Emo-Gate, Emo-Transition, Pattern). It reaches the embedder
//! and the model only through [`Mind`], like every other memory module, and returns
//! what a turn or an answer needs: the items recalled, whether to abstain, the mood
//! and the calls spent.

mod emotion;
mod options;
mod probe;
mod recall;
mod search;
mod settings;

use serde::{Deserialize, Serialize};

pub use emotion::{
    EMOTIONS, RECORD_MATCH, cue_emotion, gate_fires, is_refusal, normalise_emotion, transition,
};
pub use probe::SELF_PROBE_SCHEMA;
pub use recall::{EmotionVectors, Recalled, Reverie};
pub use search::{Fits, Found, Query, refs};
pub use settings::{Layers, RecallSettings};

/// The audit's names of ReverieMem's layers.
pub const EPISODIC: &str = "episodic";
pub const SEMANTIC: &str = "semantic";
pub const PERSONALITY: &str = "personality";

/// The character's current emotional state and the pattern it is speaking in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Mood {
    pub emotion: String,
    pub intensity: f32,
    /// Id of the selected personality pattern, if one has been chosen.
    pub pattern: Option<String>,
    /// The scene the pattern was chosen in.
    pub scene_id: String,
}

/// The normalised sum of two unit vectors: a probe that means both (the query framed
/// by its scene memory; the emotion in the situation that triggers it).
fn blend(a: &[f32], b: &[f32]) -> Vec<f32> {
    let mut sum: Vec<f32> = a.iter().zip(b).map(|(x, y)| x + y).collect();
    dramatis_base::normalise(&mut sum);
    sum
}
