//! DualMem's read path: the stream a query needs, each insight followed by the facts
//! it was drawn from.

use super::*;

impl DualMem {
    /// Retrieval for `query`: the stream chosen by [`choose_stream`]; each insight
    /// followed by its linked facts.
    pub async fn retrieve(&mut self, mind: &dyn Mind, query: &ReadQuery<'_>) -> Vec<Grounding> {
        let stream = choose_stream(query.text, query.answering);
        let mut out = Vec::new();
        let mut shown: Vec<String> = Vec::new();
        if matches!(stream, Stream::Insight | Stream::Both) {
            let mut ranked: Vec<(usize, f32)> = self
                .insights
                .iter()
                .enumerate()
                .map(|(i, m)| (i, cosine(&m.vector, query.vector)))
                .collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            for (i, score) in ranked.into_iter().take(INSIGHTS_PER_READ) {
                if self.is_stale(&self.insights[i]) {
                    self.regenerate(mind, i).await;
                }
                let insight = &self.insights[i];
                out.push(Grounding {
                    module: "dualmem".into(),
                    kind: "insight".into(),
                    id: insight.id.clone(),
                    text: insight.text.clone(),
                    relevance: score,
                });
                for id in &insight.facts {
                    if let Some(fact) = self.fact(id)
                        && !shown.contains(id)
                    {
                        shown.push(id.clone());
                        let own = cosine(&fact.vector, query.vector);
                        out.push(fact_item(fact, own.max(score)));
                    }
                }
            }
        }
        if matches!(stream, Stream::Factual | Stream::Both) {
            let mut ranked: Vec<(&FactMemory, f32)> = self
                .facts
                .iter()
                .map(|f| (f, cosine(&f.vector, query.vector)))
                .collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            for (fact, score) in ranked.into_iter().take(FACTS_PER_READ) {
                if !shown.contains(&fact.id) {
                    shown.push(fact.id.clone());
                    out.push(fact_item(fact, score));
                }
            }
        }
        out
    }
}

fn fact_item(fact: &FactMemory, relevance: f32) -> Grounding {
    Grounding {
        module: "dualmem".into(),
        kind: "fact".into(),
        id: fact.id.clone(),
        text: fact.text.clone(),
        relevance,
    }
}
