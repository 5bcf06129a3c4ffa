//! BOOKMARKS (active storyline memory) for one character. A bookmark is the answer to a
//! question at a point of the character's own storyline: (query, answer, search type,
//! synchronisation position, auxiliary evidence).
//!
//! Per turn: **propose** a few typed queries from the scene; **match** each against the
//! pool (same type, a stop-word-filtered token-overlap prefilter, the top 3, then a
//! reuse / derive / none decision); **sync** each active bookmark from its position to
//! now over only the unseen suffix — state: fixed chunks, each updating the answer;
//! behaviour: the target's actions filtered for evidence, then summarised; concept:
//! keyword occurrences, their context spans merged, then summarised. Derive starts from
//! the parent's answer and position; none starts at the storyline's beginning with
//! "Unknown". Grounding is the active bookmarks and those synced near the current
//! position. Model steps are batched (propose, decide, answer: at most three calls a
//! turn); each has a deterministic fallback.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::text::{clip, estimate_tokens, keywords};
use super::{
    Grounding, Line, LineKind, MemoryModule, Mind, ModuleKind, ReadQuery, cosine, object_schema,
};

mod sync;

/// Queries proposed per turn.
const PROPOSALS: usize = 3;
/// Candidates kept by the lexical prefilter.
const CANDIDATES: usize = 3;
/// Lines per chunk of a state synchronisation.
const STATE_CHUNK: usize = 6;
/// How close (in storyline positions) a bookmark's sync point must be to count as near.
const NEARBY: u64 = 24;
/// Evidence kept per behaviour bookmark.
const EVIDENCE: usize = 8;
/// Overlap (Jaccard of content words) at or above which the fallback reuses / derives.
const REUSE_OVERLAP: f32 = 0.75;
const DERIVE_OVERLAP: f32 = 0.34;

/// The search type of a bookmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BookmarkKind {
    Concept,
    State,
    Behaviour,
}

impl BookmarkKind {
    fn parse(text: &str) -> Option<Self> {
        match text {
            "concept" => Some(Self::Concept),
            "state" => Some(Self::State),
            "behaviour" | "behavior" => Some(Self::Behaviour),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Concept => "concept",
            Self::State => "state",
            Self::Behaviour => "behaviour",
        }
    }
}

/// A bookmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bookmark {
    pub id: String,
    pub query: String,
    pub answer: String,
    pub kind: BookmarkKind,
    /// The storyline position the answer holds at (0: the beginning, nothing read).
    pub sync: u64,
    /// Type-specific auxiliary memory: behaviour evidence, concept spans.
    pub evidence: Vec<String>,
    pub parent: Option<String>,
}

/// A proposed query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub query: String,
    pub kind: BookmarkKind,
}

/// How a proposal relates to a bookmark of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Reuse(usize),
    Derive(usize),
    None,
}

/// What the pool did, for the hit rate and the savings of syncing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookmarkStats {
    pub proposals: u64,
    pub reused: u64,
    pub derived: u64,
    pub created: u64,
    /// Storyline lines read by synchronisation.
    pub lines_read: u64,
    /// Storyline tokens synchronisation did not read because the bookmark (or its
    /// parent) was already synced that far: what searching from the beginning would
    /// have read on top.
    pub tokens_saved: u64,
}

impl BookmarkStats {
    /// Proposals matched to an existing bookmark (reuse or derive), as a fraction.
    #[must_use]
    pub fn hit_rate(&self) -> f64 {
        if self.proposals == 0 {
            0.0
        } else {
            (self.reused + self.derived) as f64 / self.proposals as f64
        }
    }
}

/// The module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bookmarks {
    character: String,
    pub pool: Vec<Bookmark>,
    pub stats: BookmarkStats,
    pub calls: u64,
}

/// The jaccard overlap of two queries' content words.
fn overlap(a: &str, b: &str) -> f32 {
    let (a, b) = (keywords(a), keywords(b));
    let union = a.union(&b).count();
    if union == 0 {
        0.0
    } else {
        a.intersection(&b).count() as f32 / union as f32
    }
}

impl Bookmarks {
    #[must_use]
    pub fn new(character: &str) -> Self {
        Self {
            character: character.to_owned(),
            pool: Vec::new(),
            stats: BookmarkStats::default(),
            calls: 0,
        }
    }

    /// Proposes up to three typed queries for the scene: the model's, else one of each
    /// type from the scene (where the people present are, how the last speaker acts,
    /// what the most-mentioned unfamiliar thing is).
    pub async fn propose(
        &mut self,
        mind: &dyn Mind,
        storyline: &[Line],
        query: &ReadQuery<'_>,
    ) -> Vec<Proposal> {
        let recent: Vec<String> = storyline
            .iter()
            .rev()
            .take(6)
            .rev()
            .map(Line::render)
            .collect();
        let prompt = format!(
            "{me} is about to act. The scene so far:\n{scene}\nSituation: {now}\n\nPropose up \
             to {PROPOSALS} questions whose answers, looked up in everything {me} has \
             witnessed, would help {me} act in character: `state` questions about how \
             things stand now (where someone is, what they want), `behaviour` questions in \
             general form (how someone acts in such situations), `concept` questions about \
             a named thing or idea.",
            me = self.character,
            scene = recent.join("\n"),
            now = query.text,
        );
        let item = object_schema(json!({
            "query": {"type": "string", "minLength": 3},
            "kind": {"type": "string", "enum": ["concept", "state", "behaviour"]}
        }));
        let schema = object_schema(json!({
            "queries": {"type": "array", "maxItems": PROPOSALS, "items": item}
        }));
        self.calls += 1;
        let proposed: Option<Vec<Proposal>> = mind
            .json("bookmarks-propose", &prompt, &schema)
            .await
            .and_then(|v| v["queries"].as_array().cloned())
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| {
                        Some(Proposal {
                            query: i["query"].as_str()?.trim().to_owned(),
                            kind: BookmarkKind::parse(i["kind"].as_str()?)?,
                        })
                    })
                    .filter(|p| !p.query.is_empty())
                    .take(PROPOSALS)
                    .collect()
            })
            .filter(|p: &Vec<Proposal>| !p.is_empty());
        proposed.unwrap_or_else(|| self.template_proposals(storyline, query))
    }

    fn template_proposals(&self, storyline: &[Line], query: &ReadQuery<'_>) -> Vec<Proposal> {
        let name_of = |id: &str| {
            storyline
                .iter()
                .rev()
                .find(|l| l.speaker == id)
                .map_or_else(|| id.to_owned(), |l| l.speaker_name.clone())
        };
        let mut out = Vec::new();
        if let Some(other) = query.present.iter().find(|p| **p != self.character) {
            out.push(Proposal {
                query: format!("Where is {} now and what are they after?", name_of(other)),
                kind: BookmarkKind::State,
            });
        }
        if let Some(last) = storyline
            .iter()
            .rev()
            .find(|l| !l.speaker.is_empty() && l.speaker != self.character)
        {
            out.push(Proposal {
                query: format!("How does {} usually behave toward me?", last.speaker_name),
                kind: BookmarkKind::Behaviour,
            });
        }
        // The content word of the situation that the storyline mentions most, that is
        // not a person's name.
        let names: Vec<String> = storyline
            .iter()
            .flat_map(|l| keywords(&l.speaker_name))
            .collect();
        let mut best: Option<(usize, String)> = None;
        for word in keywords(query.text) {
            if names.contains(&word) || word.len() < 4 {
                continue;
            }
            let count = storyline
                .iter()
                .filter(|l| l.text.to_lowercase().contains(&word))
                .count();
            if count > 0 && best.as_ref().is_none_or(|(c, _)| count > *c) {
                best = Some((count, word));
            }
        }
        if let Some((_, word)) = best {
            out.push(Proposal {
                query: format!("What is known about {word}?"),
                kind: BookmarkKind::Concept,
            });
        }
        out.truncate(PROPOSALS);
        out
    }

    /// The prefilter: bookmarks of the proposal's type sharing content words with it,
    /// best overlap first, at most three.
    #[must_use]
    pub fn candidates(&self, proposal: &Proposal) -> Vec<(usize, f32)> {
        let mut scored: Vec<(usize, f32)> = self
            .pool
            .iter()
            .enumerate()
            .filter(|(_, b)| b.kind == proposal.kind)
            .map(|(i, b)| (i, overlap(&proposal.query, &b.query)))
            .filter(|(_, o)| *o > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(CANDIDATES);
        scored
    }

    /// Reuse / derive / none for each proposal: the model's decision over the
    /// candidates (one call for all), else by overlap.
    pub async fn decide(&mut self, mind: &dyn Mind, proposals: &[Proposal]) -> Vec<Decision> {
        let candidates: Vec<Vec<(usize, f32)>> =
            proposals.iter().map(|p| self.candidates(p)).collect();
        let fallback = |cands: &[(usize, f32)]| match cands.first() {
            Some(&(i, o)) if o >= REUSE_OVERLAP => Decision::Reuse(i),
            Some(&(i, o)) if o >= DERIVE_OVERLAP => Decision::Derive(i),
            _ => Decision::None,
        };
        if candidates.iter().all(Vec::is_empty) {
            return vec![Decision::None; proposals.len()];
        }
        let mut listing = Vec::new();
        for (p, (proposal, cands)) in proposals.iter().zip(&candidates).enumerate() {
            listing.push(format!("Query {p}: {}", proposal.query));
            for (i, _) in cands {
                let b = &self.pool[*i];
                listing.push(format!(
                    "  bookmark {}: {} (answer so far: {})",
                    b.id,
                    b.query,
                    clip(&b.answer, 20)
                ));
            }
        }
        let ids: Vec<String> = candidates
            .iter()
            .flatten()
            .map(|(i, _)| self.pool[*i].id.clone())
            .collect();
        let prompt = format!(
            "For each query, decide how it relates to its candidate bookmarks: `reuse` if a \
             bookmark tracks essentially the same thing, `derive` if a bookmark's answer is \
             a useful starting point for a new, more specific one, `none` otherwise.\n\n{}",
            listing.join("\n")
        );
        let mut decision = object_schema(json!({
            "query": {"type": "integer", "minimum": 0},
            "relation": {"type": "string", "enum": ["reuse", "derive", "none"]},
            "bookmark": {"type": "string", "enum": ids}
        }));
        // `none` names no bookmark.
        decision["required"] = json!(["query", "relation"]);
        let schema = object_schema(json!({"decisions": {"type": "array", "items": decision}}));
        self.calls += 1;
        let answer = mind.json("bookmarks-match", &prompt, &schema).await;
        let mut out: Vec<Decision> = candidates.iter().map(|c| fallback(c)).collect();
        if let Some(items) = answer.as_ref().and_then(|v| v["decisions"].as_array()) {
            for item in items {
                let Some(p) = item["query"].as_u64().and_then(|p| usize::try_from(p).ok()) else {
                    continue;
                };
                let Some(cands) = candidates.get(p) else {
                    continue;
                };
                let picked = item["bookmark"]
                    .as_str()
                    .and_then(|id| cands.iter().find(|(i, _)| self.pool[*i].id == id))
                    .map(|(i, _)| *i);
                out[p] = match (item["relation"].as_str(), picked) {
                    (Some("reuse"), Some(i)) => Decision::Reuse(i),
                    (Some("derive"), Some(i)) => Decision::Derive(i),
                    (Some("none"), _) => Decision::None,
                    _ => out[p],
                };
            }
        }
        out
    }

    /// Activates a bookmark for each proposal (reusing, deriving or creating); returns
    /// the pool indices, in proposal order, without duplicates.
    pub fn activate(&mut self, proposals: &[Proposal], decisions: &[Decision]) -> Vec<usize> {
        let mut active: Vec<usize> = Vec::new();
        for (proposal, decision) in proposals.iter().zip(decisions) {
            self.stats.proposals += 1;
            let index = match *decision {
                Decision::Reuse(i) => {
                    self.stats.reused += 1;
                    i
                }
                Decision::Derive(i) => {
                    self.stats.derived += 1;
                    let parent = self.pool[i].clone();
                    self.push(proposal, parent.answer, parent.sync, Some(parent.id))
                }
                Decision::None => {
                    self.stats.created += 1;
                    self.push(proposal, "Unknown".into(), 0, None)
                }
            };
            if !active.contains(&index) {
                active.push(index);
            }
        }
        active
    }

    fn push(
        &mut self,
        proposal: &Proposal,
        answer: String,
        sync: u64,
        parent: Option<String>,
    ) -> usize {
        self.pool.push(Bookmark {
            id: format!("bookmarks:{}", self.pool.len() + 1),
            query: proposal.query.clone(),
            answer,
            kind: proposal.kind,
            sync,
            evidence: Vec::new(),
            parent,
        });
        self.pool.len() - 1
    }
}

#[async_trait::async_trait]
impl MemoryModule for Bookmarks {
    fn create(character: &str, _persona: &str) -> Self {
        Self::new(character)
    }

    fn kind(&self) -> ModuleKind {
        ModuleKind::Bookmarks
    }

    async fn observe(&mut self, _mind: &dyn Mind, _storyline: &[Line]) {}

    async fn scene_end(&mut self, _mind: &dyn Mind, _storyline: &[Line], _scene_id: &str) {}

    async fn ground(
        &mut self,
        mind: &dyn Mind,
        storyline: &[Line],
        query: &ReadQuery<'_>,
    ) -> Vec<Grounding> {
        let proposals = self.propose(mind, storyline, query).await;
        let decisions = self.decide(mind, &proposals).await;
        let active = self.activate(&proposals, &decisions);
        self.sync(mind, storyline, &active).await;
        let now = storyline.len() as u64;
        let item = |b: &Bookmark, kind: &str| Grounding {
            module: "bookmarks".into(),
            kind: kind.into(),
            id: b.id.clone(),
            text: format!("{} — {}", b.query, b.answer),
            relevance: 0.0,
        };
        let mut out: Vec<Grounding> = active
            .iter()
            .map(|&i| &self.pool[i])
            .filter(|b| b.answer != "Unknown")
            .map(|b| item(b, "active"))
            .collect();
        out.extend(
            self.pool
                .iter()
                .enumerate()
                .filter(|(i, b)| {
                    !active.contains(i)
                        && b.answer != "Unknown"
                        && now.saturating_sub(b.sync) <= NEARBY
                })
                .map(|(_, b)| item(b, "nearby")),
        );
        let texts: Vec<String> = out.iter().map(|g| g.text.clone()).collect();
        if !texts.is_empty() {
            for (grounding, vector) in out.iter_mut().zip(mind.embed(&texts).await) {
                grounding.relevance = cosine(&vector, query.vector);
            }
        }
        out
    }

    fn kept(&self) -> usize {
        self.pool.len()
    }

    fn items(&self, _storyline: &[Line]) -> Vec<(String, String, String)> {
        self.pool
            .iter()
            .map(|b| {
                let mut text = format!("{} — {}", b.query, b.answer);
                if !b.evidence.is_empty() {
                    text.push_str(" [evidence: ");
                    text.push_str(&b.evidence.join(" | "));
                    text.push(']');
                }
                (b.id.clone(), "bookmarks.bookmark".to_owned(), text)
            })
            .collect()
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let s = self.stats;
        let mut out: Vec<(&'static str, f64)> = [
            ("proposals", s.proposals),
            ("reused", s.reused),
            ("derived", s.derived),
            ("created", s.created),
            ("hits", s.reused + s.derived),
            ("lines_read", s.lines_read),
            ("tokens_saved", s.tokens_saved),
            ("calls", self.calls),
        ]
        .into_iter()
        .map(|(name, value)| (name, value as f64))
        .collect();
        out.push(("hit_rate", s.hit_rate()));
        out
    }
}

#[cfg(test)]
mod tests;
