//! BOOKMARKS' synchronisation: each active bookmark reads only the storyline it has not
//! seen, gathers evidence by its search type (state: fixed chunks; behaviour: the
//! target's actions; concept: keyword context spans), and gets a new answer.

use super::*;

impl Bookmarks {
    /// Brings the active bookmarks up to the end of `storyline`, reading only what each
    /// has not seen. Evidence is gathered per type; new answers come from one model call
    /// for all bookmarks with new evidence, else from the evidence itself.
    pub async fn sync(&mut self, mind: &dyn Mind, storyline: &[Line], active: &[usize]) {
        let now = storyline.len() as u64;
        let mut updates: Vec<(usize, Vec<String>)> = Vec::new();
        for &i in active {
            let from = usize::try_from(self.pool[i].sync)
                .unwrap_or(usize::MAX)
                .min(storyline.len());
            let (seen, unseen) = storyline.split_at(from);
            self.stats.lines_read += unseen.len() as u64;
            self.stats.tokens_saved += seen
                .iter()
                .map(|l| estimate_tokens(&l.render()) as u64)
                .sum::<u64>();
            let evidence = match self.pool[i].kind {
                BookmarkKind::State => state_evidence(&self.pool[i].query, unseen),
                BookmarkKind::Behaviour => {
                    behaviour_evidence(&self.character, &self.pool[i].query, unseen)
                }
                BookmarkKind::Concept => concept_evidence(&self.pool[i].query, unseen),
            };
            let bookmark = &mut self.pool[i];
            bookmark.sync = now;
            if evidence.is_empty() {
                continue;
            }
            if bookmark.kind == BookmarkKind::State {
                // Chunk by chunk, the answer is what the latest evidence says.
                bookmark.evidence = evidence.clone();
            } else {
                bookmark.evidence.extend(evidence.iter().cloned());
                let excess = bookmark.evidence.len().saturating_sub(EVIDENCE);
                bookmark.evidence.drain(..excess);
            }
            updates.push((i, evidence));
        }
        if updates.is_empty() {
            return;
        }
        let mut listing = Vec::new();
        for (i, evidence) in &updates {
            let b = &self.pool[*i];
            listing.push(format!(
                "Bookmark {} ({}): {}\nAnswer so far: {}\nNew evidence, in order:\n{}",
                b.id,
                b.kind.name(),
                b.query,
                b.answer,
                evidence.join("\n")
            ));
        }
        let ids: Vec<String> = updates
            .iter()
            .map(|(i, _)| self.pool[*i].id.clone())
            .collect();
        let prompt = format!(
            "Update each bookmark's answer from its new evidence (what {} witnessed since the \
             answer was last written). State answers say how things stand now; behaviour \
             answers describe the pattern; concept answers say what the thing is. At most \
             40 words each; only what the evidence and the old answer support.\n\n{}",
            self.character,
            listing.join("\n\n")
        );
        let answer = object_schema(json!({
            "bookmark": {"type": "string", "enum": ids},
            "answer": {"type": "string", "minLength": 1}
        }));
        let schema = object_schema(json!({"answers": {"type": "array", "items": answer}}));
        self.calls += 1;
        let answered = mind.json("bookmarks-answer", &prompt, &schema).await;
        for (i, evidence) in updates {
            let from_model = answered
                .as_ref()
                .and_then(|v| v["answers"].as_array())
                .and_then(|items| {
                    items
                        .iter()
                        .find(|a| a["bookmark"].as_str() == Some(self.pool[i].id.as_str()))
                })
                .and_then(|a| a["answer"].as_str())
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_owned);
            let bookmark = &mut self.pool[i];
            bookmark.answer = from_model.unwrap_or_else(|| match bookmark.kind {
                BookmarkKind::State => evidence.last().cloned().unwrap_or_default(),
                BookmarkKind::Behaviour | BookmarkKind::Concept => bookmark
                    .evidence
                    .iter()
                    .rev()
                    .take(3)
                    .rev()
                    .map(|e| clip(e, 20))
                    .collect::<Vec<_>>()
                    .join(" / "),
            });
        }
    }
}

/// The people a query is about: speakers whose name words it contains.
fn subjects<'a>(query: &str, lines: &'a [Line]) -> Vec<&'a str> {
    let words = keywords(query);
    let mut out: Vec<&str> = lines
        .iter()
        .filter(|l| {
            !l.speaker.is_empty() && keywords(&l.speaker_name).iter().any(|w| words.contains(w))
        })
        .map(|l| l.speaker.as_str())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// State: the unseen lines in fixed chunks; in each chunk, the last line by or about the
/// query's subject (or sharing its words) is what holds at that point. Returns the
/// chunk-by-chunk states in order (the last is the synchronised state).
fn state_evidence(query: &str, unseen: &[Line]) -> Vec<String> {
    let words = keywords(query);
    let who = subjects(query, unseen);
    unseen
        .chunks(STATE_CHUNK)
        .filter_map(|chunk| {
            chunk
                .iter()
                .rev()
                .find(|l| {
                    who.contains(&l.speaker.as_str())
                        || who.contains(&l.target.as_str())
                        || keywords(&l.text).iter().any(|w| words.contains(w))
                })
                .map(Line::render)
        })
        .collect()
}

/// Behaviour: the unseen actions of the query's subject (anyone but the character when
/// none is named) that bear on the query — addressed to the character when the query
/// says "toward me", else sharing its content words.
fn behaviour_evidence(me: &str, query: &str, unseen: &[Line]) -> Vec<String> {
    let who = subjects(query, unseen);
    let toward_me = query.to_lowercase().contains(" me");
    let words: Vec<String> = keywords(query)
        .into_iter()
        .filter(|w| {
            !matches!(
                w.as_str(),
                "usually" | "behave" | "behaves" | "toward" | "towards" | "act" | "acts"
            )
        })
        .collect();
    unseen
        .iter()
        .filter(|l| {
            matches!(
                l.kind,
                LineKind::Speech | LineKind::Action | LineKind::Movement
            )
        })
        .filter(|l| l.speaker != me && (who.is_empty() || who.contains(&l.speaker.as_str())))
        .filter(|l| {
            (toward_me && l.target == me)
                || keywords(&l.text)
                    .iter()
                    .any(|w| words.contains(w) && !who.iter().any(|s| s == w))
        })
        .map(Line::render)
        .collect()
}

/// Concept: occurrences of the query's content words in the unseen lines, each with the
/// line before and after, overlapping spans merged.
fn concept_evidence(query: &str, unseen: &[Line]) -> Vec<String> {
    let words = keywords(query);
    let words: Vec<&String> = words
        .iter()
        .filter(|w| !matches!(w.as_str(), "known" | "know"))
        .collect();
    let hits: Vec<usize> = unseen
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let text = l.text.to_lowercase();
            words.iter().any(|w| text.contains(w.as_str()))
        })
        .map(|(i, _)| i)
        .collect();
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for i in hits {
        let span = (i.saturating_sub(1), (i + 1).min(unseen.len() - 1));
        match spans.last_mut() {
            Some(last) if span.0 <= last.1 => last.1 = last.1.max(span.1),
            _ => spans.push(span),
        }
    }
    spans
        .into_iter()
        .map(|(a, b)| {
            unseen[a..=b]
                .iter()
                .map(Line::render)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}
