//! Two tellings of one story, compared: what a crash may not change. With the scripted
//! model a story is a function of its scenario, so a telling interrupted by kills must
//! hold the same events, in the same order, as one that was not (`dramatis bench soak`,
//! and the supervision tests that kill `serve`).

use std::collections::HashMap;

use dramatis_proto::v1::Event;
use serde::Serialize;

/// What must be the same in two tellings of a story: an event's kind, scene, turn,
/// speaker, place and text.
pub type Told = (i32, String, u32, String, String, String);

pub fn told(events: &[Event]) -> Vec<Told> {
    events
        .iter()
        .map(|e| {
            (
                e.kind,
                e.scene_id.clone(),
                e.turn,
                e.speaker.clone(),
                e.location.clone(),
                e.text.clone(),
            )
        })
        .collect()
}

/// How a killed telling differs from the calm one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// Calm events the killed telling does not have (counted as a multiset).
    pub lost: usize,
    /// Killed events beyond the calm telling's count of the same event.
    pub duplicated: usize,
    /// Positions, within the shorter telling, where the two hold different events.
    pub diverged: usize,
    /// The first such position (1-based), if any.
    pub first_divergence: Option<usize>,
}

pub fn compare(calm: &[Told], killed: &[Told]) -> Difference {
    let mut counts: HashMap<&Told, (usize, usize)> = HashMap::new();
    for e in calm {
        counts.entry(e).or_default().0 += 1;
    }
    for e in killed {
        counts.entry(e).or_default().1 += 1;
    }
    let (lost, duplicated) = counts.values().fold((0, 0), |(lost, dup), (c, k)| {
        (lost + c.saturating_sub(*k), dup + k.saturating_sub(*c))
    });
    let mismatched: Vec<usize> = calm
        .iter()
        .zip(killed)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, _)| i + 1)
        .collect();
    Difference {
        lost,
        duplicated,
        diverged: mismatched.len(),
        first_divergence: mismatched.first().copied(),
    }
}

/// Seqs missing from `events`' run 1..=last.
pub fn seq_gaps(events: &[Event]) -> usize {
    let mut seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    let last = seqs.last().copied().unwrap_or(0);
    usize::try_from(last).unwrap_or(usize::MAX) - seqs.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(turn: u32, text: &str) -> Told {
        (1, "s1".into(), turn, "a".into(), "here".into(), text.into())
    }

    #[test]
    fn a_telling_compared_with_itself_differs_nowhere() {
        let calm = vec![e(1, "x"), e(2, "y")];
        assert_eq!(compare(&calm, &calm), Difference::default());
    }

    #[test]
    fn a_lost_a_doubled_and_a_swapped_step_are_each_counted() {
        let calm = vec![e(1, "x"), e(2, "y"), e(3, "z")];
        let lost = compare(&calm, &[e(1, "x"), e(3, "z")]);
        assert_eq!((lost.lost, lost.duplicated), (1, 0));
        assert_eq!(lost.first_divergence, Some(2));
        let doubled = compare(&calm, &[e(1, "x"), e(2, "y"), e(2, "y"), e(3, "z")]);
        assert_eq!((doubled.lost, doubled.duplicated), (0, 1));
        assert_eq!(doubled.first_divergence, Some(3));
        let swapped = compare(&calm, &[e(1, "x"), e(3, "z"), e(2, "y")]);
        assert_eq!(
            (swapped.lost, swapped.duplicated, swapped.diverged),
            (0, 0, 2)
        );
        let rewritten = compare(&calm, &[e(1, "x"), e(2, "w"), e(3, "z")]);
        assert_eq!(
            (rewritten.lost, rewritten.duplicated, rewritten.diverged),
            (1, 1, 1)
        );
    }

    #[test]
    fn seq_gaps_count_the_seqs_missing_below_the_last() {
        let at = |seq: u64| Event {
            seq,
            ..Default::default()
        };
        assert_eq!(seq_gaps(&[at(1), at(2), at(3)]), 0);
        assert_eq!(seq_gaps(&[at(1), at(4)]), 2);
        assert_eq!(seq_gaps(&[]), 0);
    }
}
