//! ReverieMem over one character's layers. The read path (§3.4, Algorithm 1, in
//! `recall`): the anchor, Self-Probe, visibility-bounded retrieval, the weighing of a
//! question's options and the personality track (Emo-Gate, Emo-Transition, Pattern); it
//! returns what a turn or an answer needs: the items recalled, whether to abstain, the
//! mood and the calls spent. The write path (§3.3, in [`writer`]): a scene the
//! character lived through becomes its memory, facts and emotion record. Both reach
//! the embedder and the model only through [`crate::modules::Mind`], like every other
//! memory module.

mod emotion;
mod options;
mod perceived;
mod probe;
mod recall;
mod scene;
mod search;
mod settings;
pub mod writer;

use serde::{Deserialize, Serialize};

use tracing::Instrument as _;

use crate::modules::{Mind, MindError};
use crate::{Fact, ReverieLayers};
use writer::{Author, arrival_facts, rewrite_scene, write_scene};

pub use emotion::{
    EMOTIONS, RECORD_MATCH, cue_emotion, gate_fires, is_refusal, normalise_emotion, transition,
};
pub use perceived::{Joint, Perceived, PerceivedKind, Phrase};
pub use probe::SELF_PROBE_SCHEMA;
pub use recall::{EmotionVectors, Recalled};
pub use scene::{Annotation, Moment, Rewritten, SceneDraft, WrittenScene};
pub use search::{Fits, Found, Query, refs};
pub use settings::{Layers, RecallSettings};

/// ReverieMem over one character's layers: the module a shard runs, read with
/// [`Reverie::read`] and written with [`Reverie::write`] and [`Reverie::arrive`].
#[derive(Debug, Clone, Copy)]
pub struct Reverie<'a> {
    pub layers: &'a ReverieLayers,
    /// The mood before this moment.
    pub mood: &'a Mood,
    /// The character's id and the name it is called by.
    pub character: &'a str,
    pub name: &'a str,
    /// Whether the module is on for the character: off, a read recalls nothing and
    /// the mood stays (the layers keep the profile's starting memories, unread).
    pub on: bool,
}

impl Reverie<'_> {
    /// Whose memories the write path writes.
    fn author(&self) -> Author<'_> {
        Author {
            id: self.character,
            name: self.name,
        }
    }

    /// Writes the scene `draft`, which just ended, to long-term memory: its digest,
    /// facts and emotion record, and with `rewrite` the model's memory of it, through
    /// `mind`. `None` when the module is off: scenes are not written to the layers then
    /// (the profile's starting memories stay, unread).
    pub async fn write(
        &self,
        mind: &dyn Mind,
        draft: &SceneDraft,
        rewrite: bool,
    ) -> Result<Option<(WrittenScene, Option<Rewritten>)>, MindError> {
        if !self.on {
            return Ok(None);
        }
        let written = write_scene(self.author(), draft, mind)
            .instrument(tracing::info_span!("scene_write"))
            .await?;
        let rewritten = if rewrite {
            Some(rewrite_scene(self.author(), draft, mind).await?)
        } else {
            None
        };
        Ok(Some((written, rewritten)))
    }

    /// The places of the scenes among `events` that the character just arrived in, as
    /// facts it holds from now on; none when the module is off.
    pub async fn arrive(
        &self,
        mind: &dyn Mind,
        events: &[Perceived],
    ) -> Result<Vec<(Fact, Vec<f32>)>, MindError> {
        if !self.on {
            return Ok(Vec::new());
        }
        arrival_facts(self.author(), events, mind).await
    }
}

/// The audit's names of ReverieMem's layers.
pub const EPISODIC: &str = "episodic";
pub const SEMANTIC: &str = "semantic";
pub const PERSONALITY: &str = "personality";
/// The audit's name for the lines the character perceived.
pub const PERCEIVED: &str = "perceived";

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

#[cfg(test)]
mod tests;
