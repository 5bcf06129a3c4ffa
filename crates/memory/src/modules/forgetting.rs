//! MOOM's competition–inhibition forgetting (§3.3): every memory has an importance
//!
//! S = α / (exp(γ (r_c − b)) + (1 − ε)) + β Σ_{r ∈ R_c} 1 / (r_c − r + ε)
//!
//! with r_c the current round, b the round it was made and R_c the rounds it was
//! retrieved in (α = 0.1, β = 0.9, γ = 1, k = 9). A retrieval takes the 2k memories most
//! relevant to the query: the first k are reinforced (r_c joins their R_c), the next k are
//! inhibited (their score is halved for this competition); then, over capacity, the
//! lowest scores are forgotten.

use serde::{Deserialize, Serialize};

/// The forgetting parameters (MOOM's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ForgettingParams {
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
    pub epsilon: f64,
    /// Memories reinforced per retrieval (and as many inhibited).
    pub k: usize,
    /// Memories kept at most.
    pub capacity: usize,
}

impl Default for ForgettingParams {
    fn default() -> Self {
        Self {
            alpha: 0.1,
            beta: 0.9,
            gamma: 1.0,
            epsilon: 1e-6,
            k: 9,
            capacity: 60,
        }
    }
}

/// When a memory was made and retrieved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    /// The round the memory was made (b).
    pub born: u64,
    /// The rounds it was retrieved in (R_c).
    pub retrieved: Vec<u64>,
}

impl ForgettingParams {
    /// The importance S of a memory with `trace` at round `now` (r_c).
    #[must_use]
    pub fn score(&self, trace: &Trace, now: u64) -> f64 {
        let age = now.saturating_sub(trace.born) as f64;
        let decay = self.alpha / ((self.gamma * age).exp() + (1.0 - self.epsilon));
        let reinforcement: f64 = trace
            .retrieved
            .iter()
            .map(|&r| 1.0 / (now.saturating_sub(r) as f64 + self.epsilon))
            .sum();
        decay + self.beta * reinforcement
    }
}

/// What one competition did, by index into the pool it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Competition {
    /// The k most relevant, reinforced, best first: the memories retrieved.
    pub reinforced: Vec<usize>,
    /// The next k, inhibited.
    pub inhibited: Vec<usize>,
    /// Forgotten to keep within capacity, in ascending index order.
    pub forgotten: Vec<usize>,
}

/// Runs one retrieval competition over `traces` at round `now`. `relevance[i]` is how
/// well memory i matches the query (`None` for a write-time trim with no query: nothing
/// is reinforced or inhibited). Reinforcement is applied to `traces`; the caller removes
/// the forgotten indices.
#[must_use]
pub fn compete(
    params: &ForgettingParams,
    traces: &mut [Trace],
    relevance: Option<&[f32]>,
    now: u64,
) -> Competition {
    let mut out = Competition::default();
    if let Some(relevance) = relevance {
        let mut order: Vec<usize> = (0..traces.len()).collect();
        // Most relevant first; ties by the higher importance, then the newer memory.
        order.sort_by(|&a, &b| {
            relevance[b]
                .total_cmp(&relevance[a])
                .then(
                    params
                        .score(&traces[b], now)
                        .total_cmp(&params.score(&traces[a], now)),
                )
                .then(b.cmp(&a))
        });
        out.reinforced = order.iter().copied().take(params.k).collect();
        out.inhibited = order
            .iter()
            .copied()
            .skip(params.k)
            .take(params.k)
            .collect();
        for &i in &out.reinforced {
            if !traces[i].retrieved.contains(&now) {
                traces[i].retrieved.push(now);
            }
        }
    }
    if traces.len() > params.capacity {
        let mut scored: Vec<(usize, f64)> = traces
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let s = params.score(t, now);
                (
                    i,
                    if out.inhibited.contains(&i) {
                        s / 2.0
                    } else {
                        s
                    },
                )
            })
            .collect();
        // Lowest first; among equals the older memory goes first.
        scored.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        out.forgotten = scored
            .iter()
            .take(traces.len() - params.capacity)
            .map(|(i, _)| *i)
            .collect();
        out.forgotten.sort_unstable();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(born: u64, retrieved: &[u64]) -> Trace {
        Trace {
            born,
            retrieved: retrieved.to_vec(),
        }
    }

    #[test]
    fn scores_match_the_formula_worked_by_hand() {
        let p = ForgettingParams::default();
        // Made at round 1, retrieved at 3, scored at 6:
        // 0.1 / (e^5 + 0.999999) + 0.9 / (3 + 1e-6)
        //   = 0.1 / 149.413158... + 0.299999900...
        //   = 0.000669285... + 0.299999900... = 0.300669185...
        let s = p.score(&trace(1, &[3]), 6);
        assert!((s - 0.300_669_185).abs() < 1e-8, "{s}");
        // Made at round 4, never retrieved, scored at 6: 0.1 / (e^2 + 0.999999)
        //   = 0.1 / 8.389055... = 0.011920294...
        let s = p.score(&trace(4, &[]), 6);
        assert!((s - 0.011_920_294).abs() < 1e-8, "{s}");
        // Made now: 0.1 / (1 + 0.999999) = 0.050000025...
        let s = p.score(&trace(6, &[]), 6);
        assert!((s - 0.050_000_025).abs() < 1e-8, "{s}");
        // Retrieved at 4 and 5, made at 2, scored at 6:
        // 0.1 / (e^4 + 0.999999) + 0.9 (1/2.000001 + 1/1.000001)
        //   = 0.001798621... + 0.9 × 1.499998500... = 1.351797496...
        let s = p.score(&trace(2, &[4, 5]), 6);
        assert!((s - 1.351_797_496).abs() < 1e-8, "{s}");
    }

    #[test]
    fn the_k_most_relevant_are_reinforced_and_the_next_k_inhibited() {
        let p = ForgettingParams {
            k: 2,
            capacity: 10,
            ..ForgettingParams::default()
        };
        let mut traces: Vec<Trace> = (0..6).map(|i| trace(i, &[])).collect();
        let relevance = [0.1, 0.9, 0.5, 0.8, 0.2, 0.7];
        let round = compete(&p, &mut traces, Some(&relevance), 10);
        assert_eq!(round.reinforced, [1, 3]);
        assert_eq!(round.inhibited, [5, 2]);
        assert!(round.forgotten.is_empty(), "under capacity");
        assert_eq!(traces[1].retrieved, [10]);
        assert_eq!(traces[3].retrieved, [10]);
        assert!(
            traces
                .iter()
                .enumerate()
                .all(|(i, t)| (i == 1 || i == 3) != t.retrieved.is_empty())
        );
    }

    #[test]
    fn over_capacity_the_inhibited_and_the_stale_are_forgotten() {
        let p = ForgettingParams {
            k: 1,
            capacity: 3,
            ..ForgettingParams::default()
        };
        // Round 20. Memory 0 was retrieved at 19 (strong); 1 and 2 are old and never
        // retrieved; 3 is brand new; 4 is a little older.
        let mut traces = vec![
            trace(1, &[19]),
            trace(2, &[]),
            trace(3, &[]),
            trace(20, &[]),
            trace(18, &[]),
        ];
        // The query prefers 4, then 3: 4 is reinforced, 3 inhibited (halved).
        let relevance = [0.0, 0.1, 0.2, 0.8, 0.9];
        let round = compete(&p, &mut traces, Some(&relevance), 20);
        assert_eq!(round.reinforced, [4]);
        assert_eq!(round.inhibited, [3]);
        // Scores: 0 ≈ 0.9, 4 ≈ 0.9e6 (retrieved now), 3 = 0.05 / 2 = 0.025,
        // 2 = 0.1 / (e^17 + 1) ≈ 4e-9, 1 ≈ 1.5e-9: two must go — 1 and 2.
        assert_eq!(round.forgotten, [1, 2]);
    }

    #[test]
    fn a_write_time_trim_keeps_the_newest_when_nothing_was_retrieved() {
        let p = ForgettingParams {
            capacity: 4,
            ..ForgettingParams::default()
        };
        let mut traces: Vec<Trace> = (1..=7).map(|b| trace(b, &[])).collect();
        let round = compete(&p, &mut traces, None, 7);
        assert!(round.reinforced.is_empty() && round.inhibited.is_empty());
        assert_eq!(round.forgotten, [0, 1, 2]);
    }
}
