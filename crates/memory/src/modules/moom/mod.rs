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
use serde_json::json;

use super::forgetting::{self, ForgettingParams, Trace};
use super::text::clip;
use super::{
    Grounding, Line, LineKind, MemoryModule, Mind, ReadQuery, ask_text, cosine, object_schema,
};

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

/// How a persona key merges a new value (MOOM Appendix B).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeStrategy {
    Replace,
    Append,
    Trajectory,
    Contradictory,
    Complex,
}

/// The persona keys and their strategies. `likes` and `dislikes` contradict each other.
pub const PERSONA_KEYS: [(&str, MergeStrategy); 8] = [
    ("name", MergeStrategy::Replace),
    ("occupation", MergeStrategy::Replace),
    ("residence", MergeStrategy::Replace),
    ("skills", MergeStrategy::Append),
    ("whereabouts", MergeStrategy::Trajectory),
    ("likes", MergeStrategy::Contradictory),
    ("dislikes", MergeStrategy::Contradictory),
    ("relationship_to_me", MergeStrategy::Complex),
];

/// Cosine at or above which a new value cancels the opposite key's old value.
const CONTRADICTION_SIMILARITY: f32 = 0.8;

fn strategy(key: &str) -> Option<MergeStrategy> {
    PERSONA_KEYS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, s)| *s)
}

fn opposite(key: &str) -> Option<&'static str> {
    match key {
        "likes" => Some("dislikes"),
        "dislikes" => Some("likes"),
        _ => None,
    }
}

/// A value under a key, with the round it was learned and its embedding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PersonaValue {
    pub text: String,
    pub round: u64,
    #[serde(default)]
    pub vector: Vec<f32>,
}

/// What the character knows of one person.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Persona {
    pub name: String,
    pub keys: BTreeMap<String, Vec<PersonaValue>>,
}

/// One value a snapshot found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotValue {
    pub person: String,
    pub key: String,
    pub value: String,
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

    /// A persona snapshot of the people speaking in `lines`: from the model, else from
    /// plain first-person statements ("I am a …", "I like …", a movement).
    async fn snapshot(&mut self, mind: &dyn Mind, lines: &[Line]) -> Vec<SnapshotValue> {
        let people: Vec<&str> = {
            let mut p: Vec<&str> = lines
                .iter()
                .filter(|l| !l.speaker.is_empty() && l.speaker != self.character)
                .map(|l| l.speaker.as_str())
                .collect();
            p.sort_unstable();
            p.dedup();
            p
        };
        if people.is_empty() {
            return Vec::new();
        }
        let keys: Vec<&str> = PERSONA_KEYS.iter().map(|(k, _)| *k).collect();
        let prompt = format!(
            "From these lines {} witnessed, note what they reveal about each other person \
             ({}). Keys: {}. Only values the lines state or clearly show; none is fine.\n\n{}",
            self.character,
            people.join(", "),
            keys.join(", "),
            lines
                .iter()
                .map(Line::render)
                .collect::<Vec<_>>()
                .join("\n")
        );
        let value = object_schema(json!({
            "person": {"type": "string", "enum": people},
            "key": {"type": "string", "enum": keys},
            "value": {"type": "string", "minLength": 1}
        }));
        let schema = object_schema(json!({
            "values": {"type": "array", "maxItems": 12, "items": value}
        }));
        self.calls += 1;
        if let Some(values) = mind
            .json("moom-persona-snapshot", &prompt, &schema)
            .await
            .and_then(|v| serde_json::from_value::<Vec<SnapshotValue>>(v["values"].clone()).ok())
        {
            return values
                .into_iter()
                .filter(|v| people.contains(&v.person.as_str()) && strategy(&v.key).is_some())
                .collect();
        }
        rule_snapshot(&self.character, lines)
    }

    /// Merges one snapshot value at `round` by its key's strategy.
    pub async fn merge(&mut self, mind: &dyn Mind, value: SnapshotValue, name: &str, round: u64) {
        let Some(strategy) = strategy(&value.key) else {
            return;
        };
        let text = value.value.trim().to_owned();
        if text.is_empty() {
            return;
        }
        let vector = if strategy == MergeStrategy::Contradictory {
            mind.embed(std::slice::from_ref(&text))
                .await
                .pop()
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let new = PersonaValue {
            text: text.clone(),
            round,
            vector,
        };
        let merged_complex = if strategy == MergeStrategy::Complex {
            let old = self
                .personas
                .get(&value.person)
                .and_then(|p| p.keys.get(&value.key))
                .and_then(|v| v.first())
                .map(|v| v.text.clone());
            match old {
                Some(old) if old != text => Some(self.merge_complex(mind, name, &old, &text).await),
                _ => None,
            }
        } else {
            None
        };
        let persona = self.personas.entry(value.person.clone()).or_default();
        if persona.name.is_empty() {
            name.clone_into(&mut persona.name);
        }
        let values = persona.keys.entry(value.key.clone()).or_default();
        match strategy {
            MergeStrategy::Replace => *values = vec![new],
            MergeStrategy::Append => {
                if !values.iter().any(|v| v.text.eq_ignore_ascii_case(&text)) {
                    values.push(new);
                }
            }
            MergeStrategy::Trajectory => {
                if values
                    .last()
                    .is_none_or(|v| !v.text.eq_ignore_ascii_case(&text))
                {
                    values.push(new);
                }
            }
            MergeStrategy::Contradictory => {
                let fresh = new.vector.clone();
                if !values.iter().any(|v| v.text.eq_ignore_ascii_case(&text)) {
                    values.push(new);
                }
                if let Some(other) = opposite(&value.key)
                    && let Some(old) = persona.keys.get_mut(other)
                {
                    // The older value under the opposite key is outdated.
                    old.retain(|v| {
                        !v.text.eq_ignore_ascii_case(&text)
                            && cosine(&v.vector, &fresh) < CONTRADICTION_SIMILARITY
                    });
                }
            }
            MergeStrategy::Complex => {
                *values = vec![PersonaValue {
                    text: merged_complex.unwrap_or(text),
                    round,
                    vector: Vec::new(),
                }];
            }
        }
    }

    async fn merge_complex(&mut self, mind: &dyn Mind, name: &str, old: &str, new: &str) -> String {
        let prompt = format!(
            "{}'s view of {name} was: \"{old}\". New evidence: \"{new}\". Write the view \
             now, in at most 25 words, keeping what still holds.",
            self.character
        );
        self.calls += 1;
        ask_text(mind, "moom-persona-merge", &prompt, "merged")
            .await
            .unwrap_or_else(|| format!("{new} (before: {old})"))
    }

    /// The persona of `person` as a line, trajectory values with their age at `now`.
    #[must_use]
    pub fn describe(&self, person: &str, now: u64) -> Option<String> {
        let persona = self.personas.get(person)?;
        let parts: Vec<String> = PERSONA_KEYS
            .iter()
            .filter_map(|(key, strategy)| {
                let values = persona.keys.get(*key).filter(|v| !v.is_empty())?;
                let shown: Vec<String> = if *strategy == MergeStrategy::Trajectory {
                    values
                        .iter()
                        .rev()
                        .take(3)
                        .map(|v| format!("{} ({} rounds ago)", v.text, now.saturating_sub(v.round)))
                        .collect()
                } else {
                    values.iter().map(|v| v.text.clone()).collect()
                };
                Some(format!("{}: {}", key.replace('_', " "), shown.join("; ")))
            })
            .collect();
        (!parts.is_empty()).then(|| format!("{} — {}", persona.name, parts.join(" | ")))
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

/// First-person statements a person makes about themselves, and movements.
fn rule_snapshot(me: &str, lines: &[Line]) -> Vec<SnapshotValue> {
    const PATTERNS: [(&str, &str); 11] = [
        ("my name is ", "name"),
        ("i am a ", "occupation"),
        ("i am an ", "occupation"),
        ("i'm a ", "occupation"),
        ("i live ", "residence"),
        ("i can ", "skills"),
        ("i like ", "likes"),
        ("i love ", "likes"),
        ("i hate ", "dislikes"),
        ("i dislike ", "dislikes"),
        ("i can't stand ", "dislikes"),
    ];
    let mut out = Vec::new();
    for line in lines
        .iter()
        .filter(|l| !l.speaker.is_empty() && l.speaker != me)
    {
        if line.kind == LineKind::Movement {
            out.push(SnapshotValue {
                person: line.speaker.clone(),
                key: "whereabouts".into(),
                value: line.text.clone(),
            });
            continue;
        }
        if line.kind != LineKind::Speech {
            continue;
        }
        let lower = line.text.to_lowercase();
        for sentence in lower.split(['.', '!', '?', ';']) {
            let sentence = sentence.trim();
            for (pattern, key) in PATTERNS {
                if let Some(rest) = sentence
                    .find(pattern)
                    .map(|i| &sentence[i + pattern.len()..])
                {
                    let value = clip(rest.split(',').next().unwrap_or(rest).trim(), 8);
                    if !value.is_empty() {
                        out.push(SnapshotValue {
                            person: line.speaker.clone(),
                            key: key.to_owned(),
                            value,
                        });
                    }
                }
            }
        }
    }
    out
}

#[async_trait::async_trait]
impl MemoryModule for Moom {
    fn name(&self) -> &'static str {
        "moom"
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::test_mind::TestMind;

    fn line(position: u64, speaker: &str, text: &str) -> Line {
        Line {
            position,
            scene_id: "s1".into(),
            kind: LineKind::Speech,
            speaker: speaker.into(),
            speaker_name: speaker.to_uppercase(),
            target: String::new(),
            target_name: String::new(),
            text: text.into(),
            location: "lab".into(),
        }
    }

    async fn feed(moom: &mut Moom, mind: &TestMind, storyline: &mut Vec<Line>, count: usize) {
        for _ in 0..count {
            let position = storyline.len() as u64 + 1;
            storyline.push(line(
                position,
                "holmes",
                &format!("Line number {position} about the case."),
            ));
            moom.observe(mind, storyline).await;
        }
    }

    #[tokio::test]
    async fn levels_appear_exactly_at_the_thresholds() {
        let mind = TestMind::default();
        let config = MoomConfig {
            forgetting: ForgettingParams {
                capacity: 1000,
                ..ForgettingParams::default()
            },
            ..MoomConfig::default()
        };
        let mut moom = Moom::new("watson", config);
        let mut storyline = Vec::new();
        feed(&mut moom, &mind, &mut storyline, 5).await;
        assert_eq!(moom.made(), [0, 0, 0], "5 lines: no unit yet");
        feed(&mut moom, &mind, &mut storyline, 1).await;
        assert_eq!(moom.made(), [1, 0, 0], "the 6th line closes unit 1");
        assert_eq!(moom.level(1)[0].span, (1, 6));
        feed(&mut moom, &mind, &mut storyline, 23).await;
        assert_eq!(moom.made(), [4, 0, 0], "29 lines");
        feed(&mut moom, &mind, &mut storyline, 1).await;
        assert_eq!(moom.made(), [5, 1, 0], "30 lines: the first summary");
        assert_eq!(moom.level(2)[0].span, (1, 30));
        feed(&mut moom, &mind, &mut storyline, 119).await;
        assert_eq!(moom.made(), [24, 4, 0], "149 lines");
        feed(&mut moom, &mind, &mut storyline, 1).await;
        assert_eq!(
            moom.made(),
            [25, 5, 1],
            "150 lines: the first third-level summary"
        );
        assert_eq!(moom.level(3)[0].span, (1, 150));
        // No model: every summary is the extractive fallback, one attempt each.
        let asked = mind.asked();
        assert_eq!(
            asked
                .iter()
                .filter(|p| p.starts_with("moom-summary-2"))
                .count(),
            5
        );
        assert_eq!(
            asked
                .iter()
                .filter(|p| p.starts_with("moom-summary-3"))
                .count(),
            1
        );
        assert!(moom.level(2)[0].text.contains("Line number"));
    }

    #[tokio::test]
    async fn capacity_holds_over_a_long_run_and_reads_reinforce() {
        let mind = TestMind::default();
        let config = MoomConfig {
            forgetting: ForgettingParams {
                capacity: 12,
                k: 3,
                ..ForgettingParams::default()
            },
            ..MoomConfig::default()
        };
        let mut moom = Moom::new("watson", config);
        let mut storyline = Vec::new();
        for round in 0..100 {
            feed(&mut moom, &mind, &mut storyline, 6).await;
            assert!(moom.plot.len() <= 12, "round {round}: {}", moom.plot.len());
            if round % 10 == 9 {
                let q = crate::modules::test_mind::bag("line number case");
                let read = moom
                    .ground(
                        &mind,
                        &storyline,
                        &ReadQuery {
                            text: "the case",
                            vector: &q,
                            answering: true,
                            present: &[],
                        },
                    )
                    .await;
                assert_eq!(
                    read.iter().filter(|g| g.kind.starts_with("plot")).count(),
                    3
                );
                let now = storyline.len() as u64;
                for g in &read {
                    let kept = moom.plot.iter().find(|m| m.id == g.id).expect("kept");
                    assert_eq!(kept.trace.retrieved.last(), Some(&now), "reinforced");
                }
            }
        }
        assert_eq!(moom.made()[0], 100);
        assert_eq!(moom.plot.len(), 12);
    }

    #[tokio::test]
    async fn each_persona_strategy_merges_as_specified() {
        let mind = TestMind::default();
        let mut moom = Moom::new("watson", MoomConfig::default());
        let v = |key: &str, value: &str| SnapshotValue {
            person: "holmes".into(),
            key: key.into(),
            value: value.into(),
        };
        // replace
        moom.merge(&mind, v("occupation", "chemist"), "Holmes", 1)
            .await;
        moom.merge(&mind, v("occupation", "consulting detective"), "Holmes", 2)
            .await;
        // append (duplicates ignored)
        moom.merge(&mind, v("skills", "violin"), "Holmes", 1).await;
        moom.merge(&mind, v("skills", "boxing"), "Holmes", 2).await;
        moom.merge(&mind, v("skills", "Violin"), "Holmes", 3).await;
        // trajectory
        moom.merge(&mind, v("whereabouts", "the laboratory"), "Holmes", 2)
            .await;
        moom.merge(&mind, v("whereabouts", "Baker Street"), "Holmes", 8)
            .await;
        // contradictory: liking tobacco cancels an old dislike of tobacco
        moom.merge(&mind, v("dislikes", "strong tobacco"), "Holmes", 1)
            .await;
        moom.merge(&mind, v("dislikes", "idleness"), "Holmes", 1)
            .await;
        moom.merge(&mind, v("likes", "strong tobacco"), "Holmes", 4)
            .await;
        // complex: no model, the newer value leads and keeps the old
        moom.merge(&mind, v("relationship_to_me", "a stranger"), "Holmes", 1)
            .await;
        moom.merge(&mind, v("relationship_to_me", "my flatmate"), "Holmes", 5)
            .await;

        let keys = &moom.personas["holmes"].keys;
        let texts = |k: &str| keys[k].iter().map(|v| v.text.as_str()).collect::<Vec<_>>();
        assert_eq!(texts("occupation"), ["consulting detective"]);
        assert_eq!(texts("skills"), ["violin", "boxing"]);
        assert_eq!(texts("whereabouts"), ["the laboratory", "Baker Street"]);
        assert_eq!(texts("likes"), ["strong tobacco"]);
        assert_eq!(texts("dislikes"), ["idleness"]);
        assert_eq!(
            texts("relationship_to_me"),
            ["my flatmate (before: a stranger)"]
        );
        assert_eq!(mind.asked(), ["moom-persona-merge"]);
        let line = moom.describe("holmes", 10).expect("described");
        assert!(
            line.starts_with("Holmes — occupation: consulting detective"),
            "{line}"
        );
        assert!(
            line.contains(
                "whereabouts: Baker Street (2 rounds ago); the laboratory (8 rounds ago)"
            ),
            "{line}"
        );

        // With a model, the complex merge is the model's.
        let mind = TestMind::answering(vec![json!({"merged": "a flatmate he is warming to"})]);
        moom.merge(&mind, v("relationship_to_me", "a friend"), "Holmes", 9)
            .await;
        assert_eq!(
            moom.personas["holmes"].keys["relationship_to_me"][0].text,
            "a flatmate he is warming to"
        );
    }

    #[tokio::test]
    async fn the_fallback_snapshot_reads_plain_statements() {
        let lines = vec![
            line(
                1,
                "stamford",
                "I am a dresser at Bart's. I like a quiet pint, I hate the fog.",
            ),
            line(2, "watson", "I am an army doctor."),
        ];
        let found = rule_snapshot("watson", &lines);
        let pairs: Vec<(&str, &str)> = found
            .iter()
            .map(|v| (v.key.as_str(), v.value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("occupation", "dresser at bart's"),
                ("likes", "a quiet pint"),
                ("dislikes", "the fog")
            ]
        );
        assert!(
            found.iter().all(|v| v.person == "stamford"),
            "not the character itself"
        );
    }
}
