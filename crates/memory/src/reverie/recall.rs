//! The read path: ReverieMem's inference (§3.4, Algorithm 1) over one character's
//! shard, arranged to spend as few model calls as the paper allows.
//!
//! 1. `Anchor`: the nearest first-person scene memory frames the query.
//! 2. Round 1 probes are the query itself, each of its lines, and the query blended with
//!    the anchor (no call); `Vis-Retrieve` searches only facts visible to the character.
//! 3. `Sufficient` without a call when the best fact already covers the query; when
//!    nothing at all is relevant the character refuses rather than searching harder.
//!    Only in between does the model run `Self-Probe`, which also decides `Sufficient`
//!    for the next round (one call per round, at most `max_rounds`).
//! 4. Personality track: `Emo-Gate` from the moment's cues (no call), `Emo-Transition`
//!    from the emotion record, `Pattern` by embedding match.

use tracing::Instrument as _;

use crate::modules::{Mind, MindError, Spent};
use crate::{EpisodicMemory, Fact, PersonalityPattern};

use super::emotion::{gate_fires, transition};
use super::options::weigh_options;
use super::probe::self_probe;
use super::search::{Fits, Found, Query, retrieve};
use super::settings::RecallSettings;
use super::{Mood, Reverie, blend};

/// What recall produced: the workspace handed to Memory-Fusion.
#[derive(Debug, Clone, Default)]
pub struct Recalled {
    pub anchor: Option<EpisodicMemory>,
    /// The terminal pool M(τ), best first.
    pub facts: Vec<(Fact, f32)>,
    pub pattern: Option<PersonalityPattern>,
    /// The mood after the personality track.
    pub mood: Mood,
    /// Whether Emo-Gate fired.
    pub gate_fired: bool,
    /// The anchor's cosine to the query (0 without one).
    pub anchor_closeness: f32,
    /// What weighing each option of a multiple-choice question found in the character's
    /// facts and scene memories, beyond the pool and the anchor: evidence for the gate.
    pub evidence: Vec<Found>,
    /// Per id of a held fact or scene memory (the pool, the anchor, the evidence): the
    /// cosine of each option, asked together with the question, to it.
    pub fits: Fits,
    /// Nothing in memory bears on the query: the character should say so.
    pub abstain: bool,
    /// Retrieval rounds run (τ) and the model calls Self-Probe spent.
    pub rounds: u32,
    pub spent: Spent,
}

impl Recalled {
    /// No recall at all (ReverieMem's layers are off): nothing bears on the query, so
    /// only the other modules' items can cancel a refusal; the mood stays as it was.
    #[must_use]
    pub fn nothing(mood: Mood) -> Self {
        Self {
            anchor: None,
            facts: Vec::new(),
            pattern: None,
            mood,
            gate_fired: false,
            anchor_closeness: 0.0,
            evidence: Vec::new(),
            fits: Fits::new(),
            abstain: true,
            rounds: 0,
            spent: Spent::default(),
        }
    }
}

impl Reverie<'_> {
    /// Runs the read path for `query`. Self-Probe's calls go through `mind`, which
    /// audits them.
    pub async fn read(
        &self,
        mind: &dyn Mind,
        query: &Query<'_>,
        settings: &RecallSettings,
        emotion_vectors: &EmotionVectors,
    ) -> Result<Recalled, MindError> {
        if !self.on {
            return Ok(Recalled::nothing(self.mood.clone()));
        }
        let texts = query_texts(query);
        let vectors = mind
            .compose(&texts)
            .instrument(tracing::info_span!("embed_query"))
            .await?;
        let query_vector = vectors.first().cloned().unwrap_or_default();
        let query_vector = &query_vector;
        let layers = self.layers;
        let anchoring = tracing::info_span!("anchor").entered();

        // Anchor(q, c).
        let (anchor, anchor_closeness) = if settings.layers.episodic {
            layers
                .episodic
                .anchor(query_vector, 1)
                .into_iter()
                .find(|(_, score)| *score >= settings.anchor_min)
                .map_or((None, 0.0), |(m, score)| (Some(m.clone()), score))
        } else {
            (None, 0.0)
        };

        // Round 1: the query, its lines, and the query framed by the anchor.
        let mut probes: Vec<Vec<f32>> = vectors.iter().skip(1).cloned().collect();
        probes.insert(0, query_vector.clone());
        if let Some(framed) = anchor
            .as_ref()
            .and_then(|a| layers.episodic.vector_of(&a.id))
            .map(|a| blend(query_vector, a))
        {
            probes.push(framed);
        }
        drop(anchoring);
        let mut pool = tracing::info_span!("retrieve")
            .in_scope(|| retrieve(layers, self.character, &probes, &[query.text], settings));
        let mut rounds = 1;
        let mut spent = Spent::default();
        // Nothing found by vector or by word, and no scene memory frames it.
        let abstain = pool.is_empty() && anchor.is_none();
        // Self-Probe + Sufficient, only when partly covered.
        if !abstain {
            rounds = self_probe(
                self,
                query,
                anchor.as_ref(),
                &mut pool,
                settings,
                mind,
                &mut spent,
            )
            .await?;
        }
        let (evidence, fits) = weigh_options(
            self,
            query,
            query_vector,
            (&pool, anchor.as_ref()),
            settings,
            mind,
        )
        .await?;

        // Personality track: Emo-Gate, Emo-Transition, Pattern.
        let (mood, pattern, gate_fired) = self
            .personality(query, query_vector, settings, mind, emotion_vectors)
            .await?;
        Ok(Recalled {
            anchor,
            facts: pool,
            pattern,
            mood,
            gate_fired,
            anchor_closeness,
            evidence,
            fits,
            abstain,
            rounds,
            spent,
        })
    }

    /// The personality track: Emo-Gate, then (when it fires) Emo-Transition and the
    /// nearest pattern to the new emotion in the triggering situation; otherwise the mood
    /// and pattern stay. The mood, its pattern, and whether the gate fired.
    async fn personality(
        &self,
        query: &Query<'_>,
        query_vector: &[f32],
        settings: &RecallSettings,
        mind: &dyn Mind,
        emotion_vectors: &EmotionVectors,
    ) -> Result<(Mood, Option<PersonalityPattern>, bool), MindError> {
        let previous = self.mood.clone();
        let gate_fired =
            settings.layers.personality && gate_fires(&previous, query.scene_id, query.trigger);
        let (mood, pattern) = if gate_fired {
            // The trigger is embedded only when the gate fires: routine turns skip it.
            let trigger_vector = if query.trigger == query.text {
                query_vector.to_vec()
            } else {
                let trigger = if query.trigger_pieces.is_empty() {
                    vec![query.trigger.to_owned()]
                } else {
                    query.trigger_pieces.to_vec()
                };
                mind.compose(&[trigger]).await?.pop().unwrap_or_default()
            };
            let trigger_vector = &trigger_vector;
            let (emotion, intensity) = transition(
                &self.layers.personality,
                &previous,
                query.trigger,
                trigger_vector,
            );
            let emotion_vector = emotion_vectors.get(&emotion, mind).await?;
            let vector = blend(&emotion_vector, trigger_vector);
            let pattern = self
                .layers
                .personality
                .nearest_pattern(&vector)
                .map(|(p, _)| p.clone());
            (
                Mood {
                    emotion,
                    intensity,
                    pattern: pattern.as_ref().map(|p| p.id.clone()),
                    scene_id: query.scene_id.to_owned(),
                },
                pattern,
            )
        } else if !settings.layers.personality {
            (previous, None)
        } else {
            let pattern = previous.pattern.as_ref().and_then(|id| {
                self.layers
                    .personality
                    .patterns()
                    .iter()
                    .find(|p| &p.id == id)
                    .cloned()
            });
            (previous, pattern)
        };
        Ok((mood, pattern, gate_fired))
    }
}

/// What one embedding run of a query embeds: the query and, when it has several, its
/// lines (of at least two words, at most six). Lines given in pieces are composed from
/// them; the whole query is then the composition of all its lines' pieces.
fn query_texts(query: &Query<'_>) -> Vec<Vec<String>> {
    let pieces = |line: &str| vec![line.to_owned()];
    let (whole, given): (Vec<String>, Vec<Vec<String>>) = if query.lines.is_empty() {
        let lines = query.text.lines().map(str::trim).map(pieces).collect();
        (pieces(query.text), lines)
    } else {
        (query.lines.concat(), query.lines.to_vec())
    };
    let mut texts = vec![whole];
    let lines: Vec<Vec<String>> = given
        .into_iter()
        .filter(|l| {
            l.iter()
                .map(|p| p.split_whitespace().count())
                .sum::<usize>()
                >= 2
        })
        .take(6)
        .collect();
    if lines.len() > 1 {
        texts.extend(lines);
    }
    texts
}

/// Embeddings of the emotion labels, computed once per agent.
#[derive(Debug, Default)]
pub struct EmotionVectors(std::sync::Mutex<std::collections::HashMap<String, Vec<f32>>>);

impl EmotionVectors {
    async fn get(&self, emotion: &str, mind: &dyn Mind) -> Result<Vec<f32>, MindError> {
        if let Some(vector) = dramatis_base::lock(&self.0).get(emotion) {
            return Ok(vector.clone());
        }
        let vector = mind
            .try_embed(&[emotion.to_owned()])
            .await?
            .pop()
            .unwrap_or_default();
        dramatis_base::lock(&self.0).insert(emotion.to_owned(), vector.clone());
        Ok(vector)
    }
}
