//! DualMem (RoleMemo, §4) for one character: a fact stream of objective events the
//! character perceived, and an insight stream of persona-conditioned interpretations,
//! each linked to the facts it rests on.
//!
//! - **Write**, at each scene end (the chunk): the scene's facts, then insights drawn from
//!   them and the most related earlier memory through the character's persona. An
//!   insight is `null` when the evidence does not support one. One model call a scene;
//!   without a model, facts are the lines themselves and an insight is drawn only where
//!   one person kept addressing the character.
//! - **Read**: a cheap classifier picks the stream (factual, insight or both) from the
//!   question's form; a retrieved insight brings its linked facts.
//! - **Versioning**: every insight carries the persona version it was made under. When
//!   the persona changes, old insights are stale and are regenerated from their linked
//!   facts when next retrieved (lazily).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

mod read;

use super::text::{clip, keywords};
use super::{
    Grounding, Line, LineKind, MemoryModule, Mind, ModuleKind, ReadQuery, ask_text, cosine,
    object_schema,
};

/// Facts and insights returned per read (before linked facts are added).
const FACTS_PER_READ: usize = 5;
const INSIGHTS_PER_READ: usize = 3;
/// Earlier memories shown to the model when it draws a scene's insights.
const PRIOR_FOR_INSIGHTS: usize = 4;

/// Which stream a query needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    Factual,
    Insight,
    Both,
}

/// The stream a question needs, from its form: what/who/where/when asks for facts;
/// why, what someone thinks or feels, or whether to trust asks for insight; a turn (no
/// question) uses both.
#[must_use]
pub fn choose_stream(query: &str, answering: bool) -> Stream {
    if !answering {
        return Stream::Both;
    }
    let q = query.to_lowercase();
    const INSIGHT: [&str; 12] = [
        "why",
        "think",
        "feel",
        "opinion",
        "trust",
        "believe",
        "make of",
        "impression",
        "suspect",
        "motive",
        "really like",
        "should",
    ];
    const FACTUAL: [&str; 9] = [
        "what did", "who ", "where", "when", "which", "how many", "what was", "did ", "what is",
    ];
    let insight = INSIGHT.iter().any(|w| q.contains(w));
    let factual = FACTUAL
        .iter()
        .any(|w| q.starts_with(w) || q.contains(&format!(" {w}")));
    match (factual, insight) {
        (true, false) => Stream::Factual,
        (false, true) => Stream::Insight,
        _ => Stream::Both,
    }
}

/// An objective event the character perceived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactMemory {
    pub id: String,
    pub text: String,
    /// Storyline position of the line it records.
    pub position: u64,
    pub vector: Vec<f32>,
}

/// A persona-conditioned interpretation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InsightMemory {
    pub id: String,
    pub text: String,
    /// Ids of the facts it rests on.
    pub facts: Vec<String>,
    /// The persona version it was made under.
    pub persona_version: u64,
    pub vector: Vec<f32>,
}

/// The module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DualMem {
    character: String,
    persona: String,
    persona_version: u64,
    pub facts: Vec<FactMemory>,
    pub insights: Vec<InsightMemory>,
    /// Storyline positions already turned into facts.
    written_to: u64,
    /// Scenes whose evidence supported no insight.
    pub null_insights: u64,
    /// Insights regenerated after a persona change.
    pub regenerated: u64,
    pub calls: u64,
}

impl DualMem {
    #[must_use]
    pub fn new(character: &str, persona: &str) -> Self {
        Self {
            character: character.to_owned(),
            persona: persona.to_owned(),
            persona_version: 1,
            facts: Vec::new(),
            insights: Vec::new(),
            written_to: 0,
            null_insights: 0,
            regenerated: 0,
            calls: 0,
        }
    }

    #[must_use]
    pub fn persona_version(&self) -> u64 {
        self.persona_version
    }

    /// Whether `insight` was made under an older persona.
    #[must_use]
    pub fn is_stale(&self, insight: &InsightMemory) -> bool {
        insight.persona_version != self.persona_version
    }

    fn fact(&self, id: &str) -> Option<&FactMemory> {
        self.facts.iter().find(|f| f.id == id)
    }

    /// Facts from the lines not yet written (model-extracted or the lines themselves),
    /// and insights from them.
    async fn write_chunk(&mut self, mind: &dyn Mind, chunk: &[Line]) {
        if chunk.is_empty() {
            return;
        }
        let first_new = self.facts.len();
        let texts: Vec<String> = chunk.iter().map(Line::render).collect();
        let vectors = mind.embed(&texts).await;
        for ((line, text), vector) in chunk.iter().zip(texts).zip(vectors) {
            self.facts.push(FactMemory {
                id: format!("dualmem:fact:{}", line.position),
                text,
                position: line.position,
                vector,
            });
        }
        self.written_to = chunk.last().map_or(self.written_to, |l| l.position);
        let fresh: Vec<FactMemory> = self.facts[first_new..].to_vec();
        // Related earlier memory (M_<i): the prior facts nearest the chunk's centre.
        let centre = mean(fresh.iter().map(|f| f.vector.as_slice()));
        let mut prior: Vec<(&FactMemory, f32)> = self.facts[..first_new]
            .iter()
            .map(|f| (f, cosine(&f.vector, &centre)))
            .collect();
        prior.sort_by(|a, b| b.1.total_cmp(&a.1));
        let prior: Vec<FactMemory> = prior
            .into_iter()
            .take(PRIOR_FOR_INSIGHTS)
            .map(|(f, _)| f.clone())
            .collect();
        let drawn = match self.draw_insights(mind, &fresh, &prior).await {
            Some(drawn) => drawn,
            None => rule_insights(&self.character, &self.persona, chunk, &fresh),
        };
        if drawn.is_empty() {
            self.null_insights += 1;
            return;
        }
        let texts: Vec<String> = drawn.iter().map(|(t, _)| t.clone()).collect();
        let vectors = mind.embed(&texts).await;
        for ((text, facts), vector) in drawn.into_iter().zip(vectors) {
            let id = format!("dualmem:insight:{}", self.insights.len() + 1);
            self.insights.push(InsightMemory {
                id,
                text,
                facts,
                persona_version: self.persona_version,
                vector,
            });
        }
    }

    /// The model's insights for a chunk: `None` when it gave no usable answer (the
    /// fallback applies), `Some(empty)` when it judged the evidence insufficient.
    async fn draw_insights(
        &mut self,
        mind: &dyn Mind,
        fresh: &[FactMemory],
        prior: &[FactMemory],
    ) -> Option<Vec<(String, Vec<String>)>> {
        let listed = |facts: &[FactMemory]| {
            facts
                .iter()
                .map(|f| format!("[{}] {}", f.id, f.text))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let prompt = format!(
            "You are the memory of {me}. Persona: {persona}\n\nWhat {me} just witnessed \
             (facts):\n{now}\n\nRelated earlier facts:\n{before}\n\nWrite up to 3 insights: \
             how {me}, being who they are, interprets these facts (motives, patterns, \
             contradictions, what it means for them). Each insight cites the fact ids it \
             rests on. If the facts do not support an interpretation, return \
             {{\"insights\": null}}.",
            me = self.character,
            persona = self.persona,
            now = listed(fresh),
            before = if prior.is_empty() {
                "(none)".to_owned()
            } else {
                listed(prior)
            },
        );
        let ids: Vec<String> = fresh.iter().chain(prior).map(|f| f.id.clone()).collect();
        let insight = object_schema(json!({
            "text": {"type": "string", "minLength": 1},
            "facts": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": ids}}
        }));
        let schema = object_schema(json!({"insights": {"anyOf": [
            {"type": "null"},
            {"type": "array", "maxItems": 3, "items": insight}
        ]}}));
        self.calls += 1;
        let answer = mind.json("dualmem-insights", &prompt, &schema).await?;
        let insights = answer.get("insights")?;
        if insights.is_null() {
            return Some(Vec::new());
        }
        let drawn: Vec<(String, Vec<String>)> = insights
            .as_array()?
            .iter()
            .filter_map(|i| {
                let text = i["text"].as_str()?.trim().to_owned();
                let facts: Vec<String> = i["facts"]
                    .as_array()?
                    .iter()
                    .filter_map(|f| f.as_str())
                    .filter(|f| ids.iter().any(|id| id == f))
                    .map(str::to_owned)
                    .collect();
                (!text.is_empty() && !facts.is_empty()).then_some((text, facts))
            })
            .collect();
        Some(drawn)
    }

    /// Regenerates a stale insight from its linked facts under the current persona.
    async fn regenerate(&mut self, mind: &dyn Mind, index: usize) {
        let insight = self.insights[index].clone();
        let facts: Vec<FactMemory> = insight
            .facts
            .iter()
            .filter_map(|id| self.fact(id).cloned())
            .collect();
        let prompt = format!(
            "You are the memory of {me}. Persona now: {persona}\n\nAn earlier \
             interpretation, made before the persona changed: \"{old}\"\nThe facts it rests \
             on:\n{facts}\n\nRewrite the interpretation as {me} would see it now, in at most \
             40 words.",
            me = self.character,
            persona = self.persona,
            old = insight.text,
            facts = facts
                .iter()
                .map(|f| f.text.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        );
        self.calls += 1;
        let text = ask_text(mind, "dualmem-regenerate", &prompt, "text")
            .await
            .unwrap_or_else(|| {
                let evidence: Vec<String> = facts.iter().map(|f| clip(&f.text, 12)).collect();
                format!(
                    "As I am now ({}): {}",
                    clip(&self.persona, 12),
                    evidence.join("; ")
                )
            });
        let vector = mind
            .embed(std::slice::from_ref(&text))
            .await
            .pop()
            .unwrap_or_default();
        let current = self.persona_version;
        let target = &mut self.insights[index];
        target.text = text;
        target.vector = vector;
        target.persona_version = current;
        self.regenerated += 1;
    }
}

fn mean<'a>(vectors: impl Iterator<Item = &'a [f32]>) -> Vec<f32> {
    let mut sum: Vec<f32> = Vec::new();
    let mut n = 0.0f32;
    for v in vectors {
        if sum.is_empty() {
            sum = vec![0.0; v.len()];
        }
        for (s, x) in sum.iter_mut().zip(v) {
            *s += x;
        }
        n += 1.0;
    }
    if n > 0.0 {
        for s in &mut sum {
            *s /= n;
        }
    }
    sum
}

/// Without a model: an insight only where one person addressed the character at least
/// twice in the chunk — what kept coming up between them, read through the persona —
/// linked to those lines' facts. Otherwise none (the evidence is insufficient).
fn rule_insights(
    me: &str,
    persona: &str,
    chunk: &[Line],
    fresh: &[FactMemory],
) -> Vec<(String, Vec<String>)> {
    let mut by_person: BTreeMap<&str, Vec<&Line>> = BTreeMap::new();
    for line in chunk {
        if line.kind == LineKind::Speech && line.speaker != me && line.target == me {
            by_person
                .entry(line.speaker_name.as_str())
                .or_default()
                .push(line);
        }
    }
    by_person
        .into_iter()
        .filter(|(_, lines)| lines.len() >= 2)
        .map(|(name, lines)| {
            let mut topics: BTreeMap<String, usize> = BTreeMap::new();
            for line in &lines {
                for word in keywords(&line.text) {
                    *topics.entry(word).or_default() += 1;
                }
            }
            let mut topics: Vec<(String, usize)> = topics.into_iter().collect();
            topics.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let topics: Vec<String> = topics.into_iter().take(3).map(|(w, _)| w).collect();
            let facts: Vec<String> = lines
                .iter()
                .filter_map(|l| fresh.iter().find(|f| f.position == l.position))
                .map(|f| f.id.clone())
                .collect();
            (
                format!(
                    "{name} kept turning to me ({} times), about {}: to someone like me ({}), \
                     that insistence means something.",
                    lines.len(),
                    topics.join(", "),
                    clip(persona, 10)
                ),
                facts,
            )
        })
        .collect()
}

#[async_trait::async_trait]
impl MemoryModule for DualMem {
    fn create(character: &str, persona: &str) -> Self {
        Self::new(character, persona)
    }

    fn kind(&self) -> ModuleKind {
        ModuleKind::DualMem
    }

    /// A new persona description: a new version when it differs; insights made under
    /// older versions become stale.
    fn set_persona(&mut self, persona: &str) {
        if persona != self.persona {
            persona.clone_into(&mut self.persona);
            self.persona_version += 1;
        }
    }

    async fn observe(&mut self, _mind: &dyn Mind, _storyline: &[Line]) {}

    async fn scene_end(&mut self, mind: &dyn Mind, storyline: &[Line], _scene_id: &str) {
        let start = usize::try_from(self.written_to)
            .unwrap_or(usize::MAX)
            .min(storyline.len());
        let chunk = storyline[start..].to_vec();
        self.write_chunk(mind, &chunk).await;
    }

    async fn ground(
        &mut self,
        mind: &dyn Mind,
        _storyline: &[Line],
        query: &ReadQuery<'_>,
    ) -> Vec<Grounding> {
        self.retrieve(mind, query).await
    }

    fn kept(&self) -> usize {
        self.facts.len() + self.insights.len()
    }

    fn items(&self, _storyline: &[Line]) -> Vec<(String, String, String)> {
        let facts = self
            .facts
            .iter()
            .map(|f| (f.id.clone(), "dualmem.fact".to_owned(), f.text.clone()));
        let insights = self
            .insights
            .iter()
            .map(|i| (i.id.clone(), "dualmem.insight".to_owned(), i.text.clone()));
        facts.chain(insights).collect()
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        [
            ("facts", self.facts.len() as u64),
            ("insights", self.insights.len() as u64),
            ("null_insights", self.null_insights),
            ("regenerated", self.regenerated),
            ("calls", self.calls),
        ]
        .into_iter()
        .map(|(name, value)| (name, value as f64))
        .collect()
    }
}

#[cfg(test)]
mod tests;
