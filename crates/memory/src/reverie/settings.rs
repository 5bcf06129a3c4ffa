//! What the read path may use and how far: its thresholds and sizes, and which of
//! ReverieMem's layers are on (the ablation's `--without-layers`).

use crate::evidence::Gate;

/// Thresholds and sizes of the read path. Similarities are cosines of the agent's
/// embedder (all-MiniLM-L6-v2 by default).
#[derive(Debug, Clone)]
pub struct RecallSettings {
    /// A scene memory must be at least this similar to frame the query.
    pub anchor_min: f32,
    /// A fact must be at least this similar to some probe to enter the pool.
    pub relevant: f32,
    /// A fact this similar to a probe covers the query: no Self-Probe needed.
    pub covered: f32,
    /// Facts per probe per round.
    pub per_probe: usize,
    /// Facts handed to Memory-Fusion at most.
    pub pool_max: usize,
    /// Self-Probe rounds at most (model calls), for interview answers and for turns.
    pub answer_rounds: u32,
    pub act_rounds: u32,
    /// Search the visible facts by vector, and by their words (BM25); with both, the
    /// two rankings are fused.
    pub dense: bool,
    pub lexical: bool,
    /// The BM25 score a fact found by words must reach: about one shared word that
    /// few facts hold, so a common word alone brings nothing.
    pub lexical_min: f32,
    /// ReverieMem's layers the read path uses (all by default; the evaluation switches
    /// one off at a time, the paper's Table 2).
    pub layers: Layers,
    /// The evidence gate that decides refusal ([`crate::evidence::weigh`]); `None`
    /// for the older rule, where anything recalled at all cancels a refusal.
    pub gate: Option<Gate>,
    /// Search the facts for each option of a multiple-choice question too.
    pub option_search: bool,
    /// The gate counts a word in other words (WordNet's synonyms,
    /// [`crate::evidence::thesaurus`]).
    pub synonyms: bool,
}

/// Which of ReverieMem's three layers the read path consults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layers {
    /// Scene memories: the anchor that frames a query.
    pub episodic: bool,
    /// Visible facts and perceived lines: `Vis-Retrieve`.
    pub semantic: bool,
    /// The emotion track and behaviour patterns.
    pub personality: bool,
}

impl Default for Layers {
    fn default() -> Self {
        Self::ALL
    }
}

impl Layers {
    pub const ALL: Self = Self {
        episodic: true,
        semantic: true,
        personality: true,
    };
    /// The layer names, as `--layers` takes them.
    pub const NAMES: [&'static str; 3] = ["episodic", "semantic", "personality"];

    /// A comma list of layer names (`all` for every layer).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut layers = Self {
            episodic: false,
            semantic: false,
            personality: false,
        };
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "all" => layers = Self::ALL,
                "episodic" => layers.episodic = true,
                "semantic" => layers.semantic = true,
                "personality" => layers.personality = true,
                other => {
                    return Err(format!(
                        "unknown layer {other:?}; expected a comma list of {}",
                        Self::NAMES.join(", ")
                    ));
                }
            }
        }
        Ok(layers)
    }

    /// Every layer but `name`.
    #[must_use]
    pub fn without(name: &str) -> Option<Self> {
        let mut layers = Self::ALL;
        match name {
            "episodic" => layers.episodic = false,
            "semantic" => layers.semantic = false,
            "personality" => layers.personality = false,
            _ => return None,
        }
        Some(layers)
    }
}

impl std::fmt::Display for Layers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on: Vec<&str> = Self::NAMES
            .into_iter()
            .zip([self.episodic, self.semantic, self.personality])
            .filter(|(_, on)| *on)
            .map(|(name, _)| name)
            .collect();
        f.write_str(&on.join(","))
    }
}

impl Default for RecallSettings {
    fn default() -> Self {
        Self {
            anchor_min: 0.25,
            relevant: 0.35,
            covered: 0.55,
            per_probe: 3,
            pool_max: 5,
            answer_rounds: 2,
            act_rounds: 1,
            dense: true,
            lexical: false,
            lexical_min: 2.0,
            layers: Layers::ALL,
            gate: Some(Gate::default()),
            option_search: true,
            synonyms: true,
        }
    }
}
