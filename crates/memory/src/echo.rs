//! Echoes: a line that repeats most of a line said or heard a little earlier. The
//! agent's echo guard asks for such a line again, and `run`'s summary and `bench
//! turns` count the ones that get through, all with this one measure.
//!
//! A line is an echo of an earlier one when at least [`ECHO_OVERLAP`] of its distinct
//! words (lower-cased letters and digits, every word counted, stop words too) are in
//! the earlier line. Containment, not similarity: a line that copies half of a long
//! speech is an echo of it, while a long new line that happens to hold a short earlier
//! one ("Yes, sir.") is not. A line of fewer than [`MIN_WORDS`] distinct words is never
//! an echo: "I see." may be said twice.

use std::collections::BTreeSet;

/// The share of a line's distinct words that must be in an earlier line.
pub const ECHO_OVERLAP: f64 = 0.8;

/// Distinct words a line needs before it can be an echo.
pub const MIN_WORDS: usize = 4;

/// Earlier lines a line is compared with: about a scene's worth.
pub const RECENT_LINES: usize = 12;

/// The distinct words of `text`, lower-cased.
#[must_use]
pub fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The share of `line`'s words that are in `earlier` (0 for a line too short to count).
#[must_use]
pub fn overlap(line: &BTreeSet<String>, earlier: &BTreeSet<String>) -> f64 {
    if line.len() < MIN_WORDS {
        return 0.0;
    }
    let shared = line.intersection(earlier).count();
    #[allow(clippy::cast_precision_loss)] // word counts are far below 2^52
    let share = shared as f64 / line.len() as f64;
    share
}

/// The earlier line `line` echoes most, with the share of its words found there, when
/// that share reaches [`ECHO_OVERLAP`].
#[must_use]
pub fn echoed<'a>(
    line: &str,
    earlier: impl IntoIterator<Item = &'a str>,
) -> Option<(&'a str, f64)> {
    let own = words(line);
    if own.len() < MIN_WORDS {
        return None;
    }
    earlier
        .into_iter()
        .map(|before| (before, overlap(&own, &words(before))))
        .filter(|(_, share)| *share >= ECHO_OVERLAP)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// How many of `lines` (a transcript's lines, in order) echo one of the
/// [`RECENT_LINES`] lines before them.
#[must_use]
pub fn count_echoes(lines: &[&str]) -> usize {
    (0..lines.len())
        .filter(|&i| {
            let from = i.saturating_sub(RECENT_LINES);
            echoed(lines[i], lines[from..i].iter().copied()).is_some()
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copied_line_or_most_of_one_is_an_echo_and_a_short_or_new_one_is_not() {
        let earlier = "This is a story of the old clockwork, with gold. I have heard it before.";
        // Tom's line in a built-in model run: the tail of Ada's, word for word.
        let (found, share) = echoed(
            "the old clockwork, with gold. I have heard it before.",
            [earlier],
        )
        .expect("an echo");
        assert_eq!(found, earlier);
        assert!((share - 1.0).abs() < f64::EPSILON);
        assert!(
            echoed(
                "THIS is a story of the OLD clockwork — with gold!",
                [earlier]
            )
            .is_some()
        );
        // Four of the five words: exactly the threshold.
        let four_of_five = echoed("the clockwork with gold shines", [earlier]).expect("0.8");
        assert!((four_of_five.1 - 0.8).abs() < 1e-9);
        assert!(echoed("the clockwork shines and sings", [earlier]).is_none());
        assert!(
            echoed("I have heard.", [earlier]).is_none(),
            "too short to count"
        );
        assert!(
            echoed(
                "Yes, I have heard it, and now I will tell you something new about the lamps.",
                [earlier, "Yes."]
            )
            .is_none()
        );
    }

    #[test]
    fn echoes_are_counted_against_the_lines_just_before() {
        let lines = [
            "The loyal and devoted Sherlock Holmes is at the end of a long corridor.",
            "I found the body at two in the morning.",
            "The loyal and devoted Sherlock Holmes is at the end of a long corridor.",
            "Nobody saw the cab leave the lane.",
        ];
        assert_eq!(count_echoes(&lines), 1);
        // Past the window, a repeat is not counted.
        let mut long: Vec<String> = vec![lines[0].to_owned()];
        long.extend((0..RECENT_LINES).map(|i| format!("w{i}a w{i}b w{i}c w{i}d w{i}e")));
        long.push(lines[0].to_owned());
        let refs: Vec<&str> = long.iter().map(String::as_str).collect();
        assert_eq!(count_echoes(&refs), 0);
        long.insert(5, lines[0].to_owned());
        let refs: Vec<&str> = long.iter().map(String::as_str).collect();
        assert_eq!(
            count_echoes(&refs),
            2,
            "within the window, both repeats count"
        );
    }
}
