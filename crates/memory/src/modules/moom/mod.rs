//! MOOM (ultra-long dialogue memory) for one character: a plot branch that packs the
//! storyline into multi-scale summaries, a persona branch that keeps what the character
//! learned of each person under typed keys, and competition–inhibition forgetting over
//! the plot memories.
//!
//! - **Plot.** Every θ1 = 6 lines become a first-level unit (the lines themselves). Every
//!   θ2 = 5 first-level units are summarised into a second-level summary, and every
//!   θ3 = 5 of those into a third-level one (MOOM §3.1). Summaries come from the model,
//!   else from an extractive fallback.
//! - **Persona.** Every θ1 lines a persona snapshot is taken of the people who spoke in
//!   them, and merged key by key: `replace`, `append`, `trajectory` (values with the round
//!   they were seen, shown with their age), `contradictory` (a new value removes a
//!   near-identical value under the opposite key) and `complex` (merged by the model,
//!   else the newer value leads).
//! - **Forgetting.** The plot memories compete on every read (see [`forgetting`]) and are
//!   trimmed to capacity on every write.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::forgetting::{self, ForgettingParams, Trace};
use super::text::clip;
mod persona;
pub use persona::{MergeStrategy, PERSONA_KEYS, Persona, PersonaValue, SnapshotValue};

use super::{Grounding, Line, MemoryModule, Mind, ModuleKind, ReadQuery, ask_text, cosine};

/// MOOM's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MoomConfig {
    /// Lines per first-level unit (θ1).
    pub theta1: usize,
    /// Units per summary at the second and third level (θ2 = θ3).
    pub theta: usize,
    pub forgetting: ForgettingParams,
}

impl Default for MoomConfig {
    fn default() -> Self {
        Self {
            theta1: 6,
            theta: 5,
            forgetting: ForgettingParams::default(),
        }
    }
}

/// A plot memory: a unit of raw lines (level 1) or a summary (levels 2 and 3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlotMemory {
    pub id: String,
    pub level: u8,
    /// Storyline positions covered (first, last).
    pub span: (u64, u64),
    pub text: String,
    pub vector: Vec<f32>,
    pub trace: Trace,
}

/// The module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Moom {
    character: String,
    config: MoomConfig,
    pub plot: Vec<PlotMemory>,
    pub personas: BTreeMap<String, Persona>,
    /// Units made so far at levels 1, 2 and 3 (forgotten ones included).
    made: [u64; 3],
    /// Ids of the latest units of each level not yet summarised (level 1 and 2).
    pending: [Vec<String>; 2],
    /// Model calls made (summaries, snapshots, complex merges).
    pub calls: u64,
}

impl Moom {
    #[must_use]
    pub fn new(character: &str, config: MoomConfig) -> Self {
        Self {
            character: character.to_owned(),
            config,
            plot: Vec::new(),
            personas: BTreeMap::new(),
            made: [0; 3],
            pending: [Vec::new(), Vec::new()],
            calls: 0,
        }
    }

    /// Plot memories of `level`, in story order.
    #[must_use]
    pub fn level(&self, level: u8) -> Vec<&PlotMemory> {
        self.plot.iter().filter(|m| m.level == level).collect()
    }

    /// Units made at each level (1, 2, 3), forgotten ones included.
    #[must_use]
    pub fn made(&self) -> [u64; 3] {
        self.made
    }

    async fn add_plot(&mut self, mind: &dyn Mind, level: u8, span: (u64, u64), text: String) {
        let vector = mind
            .embed(std::slice::from_ref(&text))
            .await
            .pop()
            .unwrap_or_default();
        self.made[usize::from(level - 1)] += 1;
        let id = format!("moom:plot:{level}:{}", self.made[usize::from(level - 1)]);
        if level < 3 {
            self.pending[usize::from(level - 1)].push(id.clone());
        }
        self.plot.push(PlotMemory {
            id,
            level,
            span,
            text,
            vector,
            trace: Trace {
                born: span.1,
                retrieved: Vec::new(),
            },
        });
    }

    /// Packs the finished first-level unit ending at the storyline's last line, and the
    /// summaries its arrival completes.
    async fn pack(&mut self, mind: &dyn Mind, storyline: &[Line]) {
        let n = self.config.theta1;
        let unit = &storyline[storyline.len() - n..];
        let text = unit.iter().map(Line::render).collect::<Vec<_>>().join("\n");
        let span = (unit[0].position, unit[n - 1].position);
        self.add_plot(mind, 1, span, text).await;
        for level in 1..=2u8 {
            let waiting = &self.pending[usize::from(level - 1)];
            if waiting.len() < self.config.theta {
                break;
            }
            let children: Vec<PlotMemory> = waiting
                .iter()
                .filter_map(|id| self.plot.iter().find(|m| &m.id == id).cloned())
                .collect();
            self.pending[usize::from(level - 1)].clear();
            let span = (
                children.first().map_or(span.0, |c| c.span.0),
                children.last().map_or(span.1, |c| c.span.1),
            );
            let summary = self.summarise(mind, level + 1, &children).await;
            self.add_plot(mind, level + 1, span, summary).await;
        }
    }

    async fn summarise(&mut self, mind: &dyn Mind, level: u8, children: &[PlotMemory]) -> String {
        let parts: Vec<String> = children
            .iter()
            .enumerate()
            .map(|(i, c)| format!("[{}] {}", i + 1, c.text))
            .collect();
        let prompt = format!(
            "You keep {}'s memory of the story so far. Summarise these consecutive parts \
             of what they witnessed into one paragraph of at most 80 words: the conflicts, \
             who did what, and what changed. Only what is written here.\n\n{}",
            self.character,
            parts.join("\n\n")
        );
        self.calls += 1;
        if let Some(summary) =
            ask_text(mind, &format!("moom-summary-{level}"), &prompt, "summary").await
        {
            return summary;
        }
        // Fallback: the longest sentence of each part, clipped.
        children
            .iter()
            .map(|c| {
                let best = c.text.lines().max_by_key(|l| l.len()).unwrap_or_default();
                clip(best, 24)
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn trim(&mut self, relevance: Option<&[f32]>, now: u64) -> Vec<usize> {
        let mut traces: Vec<Trace> = self.plot.iter().map(|m| m.trace.clone()).collect();
        let round = forgetting::compete(&self.config.forgetting, &mut traces, relevance, now);
        for (memory, trace) in self.plot.iter_mut().zip(traces) {
            memory.trace = trace;
        }
        let mut i = 0;
        self.plot.retain(|_| {
            let keep = round.forgotten.binary_search(&i).is_err();
            i += 1;
            keep
        });
        // Indices into the pool after forgetting.
        round
            .reinforced
            .iter()
            .map(|&r| r - round.forgotten.iter().filter(|&&f| f < r).count())
            .collect()
    }
}

#[async_trait::async_trait]
impl MemoryModule for Moom {
    fn create(character: &str, _persona: &str) -> Self {
        Self::new(character, MoomConfig::default())
    }

    fn kind(&self) -> ModuleKind {
        ModuleKind::Moom
    }

    async fn observe(&mut self, mind: &dyn Mind, storyline: &[Line]) {
        let n = self.config.theta1;
        if storyline.is_empty() || !storyline.len().is_multiple_of(n) {
            return;
        }
        self.pack(mind, storyline).await;
        let now = storyline.len() as u64;
        let lines = storyline[storyline.len() - n..].to_vec();
        let names: BTreeMap<String, String> = lines
            .iter()
            .map(|l| (l.speaker.clone(), l.speaker_name.clone()))
            .collect();
        for value in self.snapshot(mind, &lines).await {
            let name = names
                .get(&value.person)
                .cloned()
                .unwrap_or_else(|| value.person.clone());
            self.merge(mind, value, &name, now).await;
        }
        self.trim(None, now);
    }

    async fn scene_end(&mut self, _mind: &dyn Mind, _storyline: &[Line], _scene_id: &str) {}

    async fn ground(
        &mut self,
        _mind: &dyn Mind,
        storyline: &[Line],
        query: &ReadQuery<'_>,
    ) -> Vec<Grounding> {
        let now = storyline.len() as u64;
        let relevance: Vec<f32> = self
            .plot
            .iter()
            .map(|m| cosine(&m.vector, query.vector))
            .collect();
        let retrieved = self.trim(Some(&relevance), now);
        let mut out: Vec<Grounding> = retrieved
            .into_iter()
            .filter_map(|i| self.plot.get(i))
            .map(|m| Grounding {
                module: "moom".into(),
                kind: format!("plot-{}", m.level),
                id: m.id.clone(),
                text: m.text.clone(),
                relevance: cosine(&m.vector, query.vector),
            })
            .collect();
        // Personas of the people present (or named in the question).
        let lower = query.text.to_lowercase();
        for (id, persona) in &self.personas {
            let named = !persona.name.is_empty() && lower.contains(&persona.name.to_lowercase());
            if (query.present.contains(id) || named)
                && let Some(text) = self.describe(id, now)
            {
                out.push(Grounding {
                    module: "moom".into(),
                    kind: "persona".into(),
                    id: format!("moom:persona:{id}"),
                    text,
                    relevance: if named { 1.0 } else { 0.0 },
                });
            }
        }
        out
    }

    fn kept(&self) -> usize {
        self.plot.len()
            + self
                .personas
                .values()
                .map(|p| p.keys.values().map(Vec::len).sum::<usize>())
                .sum::<usize>()
    }

    fn items(&self, storyline: &[Line]) -> Vec<(String, String, String)> {
        let plot = self.plot.iter().map(|m| {
            (
                m.id.clone(),
                format!("moom.plot-{}", m.level),
                m.text.clone(),
            )
        });
        let now = storyline.len() as u64;
        let personas = self.personas.keys().filter_map(|person| {
            self.describe(person, now).map(|text| {
                (
                    format!("moom:persona:{person}"),
                    "moom.persona".to_owned(),
                    text,
                )
            })
        });
        plot.chain(personas).collect()
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        [
            ("plot_made", self.made().iter().sum::<u64>()),
            ("plot_kept", self.plot.len() as u64),
            ("personas", self.personas.len() as u64),
            ("calls", self.calls),
        ]
        .into_iter()
        .map(|(name, value)| (name, value as f64))
        .collect()
    }
}

#[cfg(test)]
mod tests;
