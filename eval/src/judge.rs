//! BookWorld's pairwise narrative judge, as ReverieMem reports its second headline: a
//! language model reads two stories told from the same premise and cast and says, for
//! each of five dimensions, which one is better.
//!
//! Each pair is judged twice, once in each order, to cancel the judge's position bias.
//! Per dimension the two verdicts are added (+1 for a story preferred, 0 for a tie):
//! the story ahead wins, and a split verdict (each order preferring the story it showed
//! first, say) is a tie. A judge that always prefers the first story it reads therefore
//! yields only ties.
//!
//! The tally per dimension counts A's wins, ties and losses over the pairs judged, and
//! A's win rate with ties counted half, with a 95% Wilson score interval over those
//! pairs. A pair whose judge answer stays malformed after one more ask is reported as
//! unjudged and left out of the tally.

use std::fmt::Write as _;

use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, ResponseSchema, parse_json};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Script mode's fifth dimension is storyline quality; free mode's is creativity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Script,
    Free,
}

/// One dimension: its key in the judge's answer, its name, and what it asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimension {
    pub key: &'static str,
    pub name: &'static str,
    pub question: &'static str,
}

const SHARED: [Dimension; 4] = [
    Dimension {
        key: "anthropomorphism",
        name: "Anthropomorphism",
        question: "Do the characters behave like people, with motives, feelings and reactions \
                   a person would have, rather than like a machine reciting?",
    },
    Dimension {
        key: "character_fidelity",
        name: "Character fidelity",
        question: "Does each character stay true to who it is: its personality, its way of \
                   speaking, and what it could know?",
    },
    Dimension {
        key: "immersion",
        name: "Immersion & setting",
        question: "Does the story draw the reader into a consistent world, with its places, \
                   period and atmosphere?",
    },
    Dimension {
        key: "writing_quality",
        name: "Writing quality",
        question: "Is the writing fluent and varied, free of repetition, padding and \
                   incoherence?",
    },
];

const STORYLINE: Dimension = Dimension {
    key: "storyline",
    name: "Storyline quality",
    question: "Does the plot move forward coherently, each scene following from the last?",
};

const CREATIVITY: Dimension = Dimension {
    key: "creativity",
    name: "Creativity",
    question: "Does the story invent fresh, surprising and fitting events and turns?",
};

/// The five dimensions judged in `mode`, in the order they are reported.
#[must_use]
pub fn dimensions(mode: Mode) -> [Dimension; 5] {
    let [a, b, c, d] = SHARED;
    [
        a,
        b,
        c,
        d,
        match mode {
            Mode::Script => STORYLINE,
            Mode::Free => CREATIVITY,
        },
    ]
}

/// The story a verdict prefers, by the position it was shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum Preference {
    #[serde(rename = "1")]
    First,
    #[serde(rename = "2")]
    Second,
    #[serde(rename = "tie")]
    Tie,
}

/// The JSON schema the judge answers under: one preference per dimension and a short
/// reason.
#[must_use]
pub fn schema(mode: Mode) -> serde_json::Value {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for dimension in dimensions(mode) {
        properties.insert(
            dimension.key.into(),
            json!({"type": "string", "enum": ["1", "2", "tie"]}),
        );
        required.push(dimension.key);
    }
    properties.insert("reason".into(), json!({"type": "string"}));
    required.push("reason");
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// How much of each story the judge reads at most, in characters: a longer one is cut
/// at a line's end and says so.
pub const DEFAULT_MAX_CHARS: usize = 12_000;

/// `story` cut to at most `max` characters, at a line's end.
fn cut(story: &str, max: usize) -> String {
    if story.chars().count() <= max {
        return story.trim().to_owned();
    }
    let mut kept = String::new();
    for line in story.lines() {
        if kept.chars().count() + line.chars().count() + 1 > max {
            break;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    kept.push_str("[… the rest of this story is cut]");
    kept
}

/// The judge's prompt for `first` shown before `second`.
#[must_use]
pub fn prompt(mode: Mode, first: &str, second: &str, max_chars: usize) -> Vec<ChatMessage> {
    let mut criteria = String::new();
    for dimension in dimensions(mode) {
        // Writing to a String cannot fail.
        let _ = writeln!(
            criteria,
            "- {} (\"{}\"): {}",
            dimension.name, dimension.key, dimension.question
        );
    }
    let system = format!(
        "You judge stories. Two stories were told from the same premise and the same cast. \
         Compare them on each dimension below and say which story is better there: \"1\", \
         \"2\", or \"tie\" when neither is. Judge each dimension on its own; the order the \
         stories are shown in means nothing.\n\n{criteria}\nAnswer with JSON only: one key \
         per dimension, and \"reason\", one or two sentences."
    );
    let user = format!(
        "Story 1:\n{}\n\nStory 2:\n{}",
        cut(first, max_chars),
        cut(second, max_chars)
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// One judge answer, per dimension key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub preferences: Vec<Preference>,
    pub reason: String,
}

/// `text` read as a judge answer in `mode`, repairing what JSON repair can.
#[must_use]
pub fn read_verdict(mode: Mode, text: &str) -> Option<Verdict> {
    let (value, _) = parse_json::<serde_json::Value>(text, serde_json::Value::is_object)?;
    let preferences = dimensions(mode)
        .iter()
        .map(|d| serde_json::from_value::<Preference>(value.get(d.key)?.clone()).ok())
        .collect::<Option<Vec<_>>>()?;
    let reason = value
        .get("reason")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Some(Verdict {
        preferences,
        reason,
    })
}

/// Which story of a pair came out ahead on one dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    A,
    Tie,
    B,
}

/// A's side of one pair on each dimension, from the verdict with A shown first and the
/// one with B shown first.
#[must_use]
pub fn combine(a_first: &Verdict, b_first: &Verdict) -> Vec<Outcome> {
    let score = |p: Preference, a_is_first: bool| match (p, a_is_first) {
        (Preference::First, true) | (Preference::Second, false) => 1_i32,
        (Preference::Second, true) | (Preference::First, false) => -1,
        (Preference::Tie, _) => 0,
    };
    a_first
        .preferences
        .iter()
        .zip(&b_first.preferences)
        .map(
            |(&ab, &ba)| match (score(ab, true) + score(ba, false)).signum() {
                1 => Outcome::A,
                -1 => Outcome::B,
                _ => Outcome::Tie,
            },
        )
        .collect()
}

/// One dimension's tally over the pairs judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tally {
    pub dimension: &'static str,
    pub a_wins: usize,
    pub ties: usize,
    pub b_wins: usize,
    /// A's win rate, ties counted half.
    pub a_win_rate: f64,
    /// The 95% Wilson score interval of `a_win_rate` over the pairs judged.
    pub interval: (f64, f64),
}

/// The 95% Wilson score interval of a rate `p` observed over `n` trials.
#[must_use]
pub fn wilson(p: f64, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_964;
    #[allow(clippy::cast_precision_loss)] // pair counts are far below 2^52
    let n = n as f64;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The tally of `pairs` (each pair's outcome per dimension) in `mode`.
#[must_use]
pub fn tally(mode: Mode, pairs: &[Vec<Outcome>]) -> Vec<Tally> {
    dimensions(mode)
        .iter()
        .enumerate()
        .map(|(i, dimension)| {
            let count = |o: Outcome| pairs.iter().filter(|p| p[i] == o).count();
            let (a_wins, ties, b_wins) =
                (count(Outcome::A), count(Outcome::Tie), count(Outcome::B));
            #[allow(clippy::cast_precision_loss)] // pair counts are far below 2^52
            let a_win_rate = if pairs.is_empty() {
                0.0
            } else {
                (a_wins as f64 + ties as f64 / 2.0) / pairs.len() as f64
            };
            Tally {
                dimension: dimension.key,
                a_wins,
                ties,
                b_wins,
                a_win_rate,
                interval: wilson(a_win_rate, pairs.len()),
            }
        })
        .collect()
}

/// One call to the judge, kept in the audit.
#[derive(Debug, Clone, Serialize)]
pub struct Asked {
    /// The pair's index (from 0).
    pub pair: usize,
    /// Which story was shown first: "a" or "b".
    pub first: &'static str,
    /// 1 for the first ask, 2 for the ask after a malformed answer.
    pub attempt: u32,
    pub prompt: Vec<ChatMessage>,
    /// The judge's answer, or the error the call ended with.
    pub answer: String,
    pub verdict: Option<Verdict>,
}

/// What judging some pairs found.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    pub mode: Mode,
    /// Pairs given.
    pub pairs: usize,
    /// Each judged pair's outcome per dimension; `None` for a pair left unjudged.
    pub outcomes: Vec<Option<Vec<Outcome>>>,
    pub tally: Vec<Tally>,
    pub calls: u64,
    /// Every ask, in order.
    #[serde(skip)]
    pub audit: Vec<Asked>,
}

impl Judged {
    /// Pairs whose judge answer stayed malformed in at least one order.
    #[must_use]
    pub fn unjudged(&self) -> usize {
        self.outcomes.iter().filter(|o| o.is_none()).count()
    }
}

/// How the judge is asked.
#[derive(Debug, Clone, Copy)]
pub struct JudgeOptions {
    pub mode: Mode,
    pub max_chars: usize,
    pub temperature: f32,
}

impl JudgeOptions {
    #[must_use]
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            max_chars: DEFAULT_MAX_CHARS,
            temperature: 0.0,
        }
    }
}

/// Judges each pair (A, B) of `pairs` with `judge`, in both orders. `done` hears each
/// pair as it is judged.
pub async fn judge(
    judge: &dyn LanguageModel,
    pairs: &[(String, String)],
    options: JudgeOptions,
    mut done: impl FnMut(usize),
) -> Judged {
    let mut audit = Vec::new();
    let mut calls = 0;
    let mut outcomes = Vec::with_capacity(pairs.len());
    for (index, (a, b)) in pairs.iter().enumerate() {
        let mut verdicts = [None, None];
        for (slot, (first, one, two)) in verdicts.iter_mut().zip([("a", a, b), ("b", b, a)]) {
            let messages = prompt(options.mode, one, two, options.max_chars);
            *slot = ask_judge(
                judge, options, index, first, messages, &mut audit, &mut calls,
            )
            .await;
        }
        let [a_first, b_first] = verdicts;
        outcomes.push(match (a_first, b_first) {
            (Some(ab), Some(ba)) => Some(combine(&ab, &ba)),
            _ => None,
        });
        done(index + 1);
    }
    let judged: Vec<Vec<Outcome>> = outcomes.iter().flatten().cloned().collect();
    Judged {
        mode: options.mode,
        pairs: pairs.len(),
        tally: tally(options.mode, &judged),
        outcomes,
        calls,
        audit,
    }
}

/// One order of one pair: asked, and asked once more if the answer is no verdict.
async fn ask_judge(
    judge: &dyn LanguageModel,
    options: JudgeOptions,
    pair: usize,
    first: &'static str,
    messages: Vec<ChatMessage>,
    audit: &mut Vec<Asked>,
    calls: &mut u64,
) -> Option<Verdict> {
    let request = CompletionRequest::new(messages)
        .with_max_tokens(400)
        .with_temperature(options.temperature)
        .with_schema(ResponseSchema {
            name: "pairwise_verdict".into(),
            schema: schema(options.mode),
        });
    for attempt in 1..=2 {
        *calls += 1;
        let (answer, verdict) = match judge.complete(&request, None).await {
            Ok(done) => {
                let verdict = read_verdict(options.mode, &done.text);
                (done.text, verdict)
            }
            Err(error) => (format!("(the call failed: {error})"), None),
        };
        audit.push(Asked {
            pair,
            first,
            attempt,
            prompt: request.messages.clone(),
            answer,
            verdict: verdict.clone(),
        });
        if verdict.is_some() {
            return verdict;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use dramatis_llm::{ScriptRule, ScriptedModel};

    /// A judge answer preferring, per dimension, "1", "2" or "tie".
    fn answer(preferences: [&str; 5]) -> String {
        let mut value = serde_json::Map::new();
        for (d, p) in dimensions(Mode::Script).iter().zip(preferences) {
            value.insert(d.key.into(), p.into());
        }
        value.insert("reason".into(), "scripted".into());
        serde_json::Value::Object(value).to_string()
    }

    /// A rule: when story `shown` is shown first, answer `reply`.
    fn when_first(shown: &str, reply: String) -> ScriptRule {
        ScriptRule {
            when: vec![format!("Story 1:\n{shown}")],
            reply,
        }
    }

    fn stories(n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|i| {
                (
                    format!("A{i}: the cab waits."),
                    format!("B{i}: the cab leaves."),
                )
            })
            .collect()
    }

    #[tokio::test]
    async fn every_pair_is_asked_in_both_orders_and_a_first_position_judge_yields_only_ties() {
        let model = ScriptedModel::new(vec![ScriptRule {
            when: vec!["Story 1:".into()],
            reply: answer(["1"; 5]),
        }]);
        let pairs = stories(3);
        let judged = judge(&model, &pairs, JudgeOptions::new(Mode::Script), |_| {}).await;
        let prompts = model.prompts();
        assert_eq!(prompts.len(), 6);
        for (i, (a, b)) in pairs.iter().enumerate() {
            let shown = |k: usize| prompts[2 * i + k].messages[1].content.clone();
            assert!(
                shown(0).starts_with(&format!("Story 1:\n{a}")),
                "{}",
                shown(0)
            );
            assert!(shown(0).contains(&format!("Story 2:\n{b}")));
            assert!(
                shown(1).starts_with(&format!("Story 1:\n{b}")),
                "{}",
                shown(1)
            );
            assert!(shown(1).contains(&format!("Story 2:\n{a}")));
        }
        assert_eq!(judged.calls, 6);
        assert_eq!(judged.unjudged(), 0);
        for t in &judged.tally {
            assert_eq!((t.a_wins, t.ties, t.b_wins), (0, 3, 0), "{t:?}");
            assert!((t.a_win_rate - 0.5).abs() < 1e-12);
        }
    }

    #[tokio::test]
    async fn the_tally_and_its_interval_match_a_hand_count() {
        // Four pairs. Anthropomorphism: A wins pairs 0-2 (both orders), pair 3 is split
        // (each order prefers the story it shows first): 3 wins, 1 tie. Storyline: B
        // wins pair 0 in both orders; A wins pair 1 in one order and ties in the other;
        // pairs 2 and 3 tie both ways: 1 win, 2 ties, 1 loss.
        let mut rules = Vec::new();
        let a_first = [
            ["1", "tie", "tie", "tie", "2"],
            ["1", "tie", "tie", "tie", "1"],
            ["1", "tie", "tie", "tie", "tie"],
            ["1", "tie", "tie", "tie", "tie"],
        ];
        let b_first = [
            ["2", "tie", "tie", "tie", "1"],
            ["2", "tie", "tie", "tie", "tie"],
            ["2", "tie", "tie", "tie", "tie"],
            ["1", "tie", "tie", "tie", "tie"],
        ];
        for i in 0..4 {
            rules.push(when_first(&format!("A{i}:"), answer(a_first[i])));
            rules.push(when_first(&format!("B{i}:"), answer(b_first[i])));
        }
        let model = ScriptedModel::new(rules);
        let judged = judge(&model, &stories(4), JudgeOptions::new(Mode::Script), |_| {}).await;
        let anthropomorphism = &judged.tally[0];
        assert_eq!(
            (
                anthropomorphism.a_wins,
                anthropomorphism.ties,
                anthropomorphism.b_wins
            ),
            (3, 1, 0)
        );
        assert!((anthropomorphism.a_win_rate - 0.875).abs() < 1e-12);
        // Wilson, z = 1.96, p = 0.875, n = 4: centre 0.6913, half-width 0.2955.
        let (low, high) = anthropomorphism.interval;
        assert!(
            (low - 0.3958).abs() < 1e-3 && (high - 0.9868).abs() < 1e-3,
            "{low} {high}"
        );
        let storyline = &judged.tally[4];
        assert_eq!(storyline.dimension, "storyline");
        assert_eq!(
            (storyline.a_wins, storyline.ties, storyline.b_wins),
            (1, 2, 1)
        );
        assert!((storyline.a_win_rate - 0.5).abs() < 1e-12);
        for t in &judged.tally[1..4] {
            assert_eq!((t.a_wins, t.ties, t.b_wins), (0, 4, 0), "{t:?}");
        }
    }

    #[tokio::test]
    async fn a_malformed_answer_is_asked_again_then_its_pair_is_reported_unjudged() {
        let model = ScriptedModel::new(vec![
            when_first("B1:", "I prefer the second one, clearly.".into()),
            ScriptRule {
                when: vec!["Story 1:".into()],
                reply: answer(["1", "1", "1", "1", "1"]),
            },
        ]);
        let judged = judge(&model, &stories(2), JudgeOptions::new(Mode::Script), |_| {}).await;
        // Pair 0: two calls. Pair 1: A first answers; B first is asked twice.
        assert_eq!(judged.calls, 5);
        assert_eq!(judged.unjudged(), 1);
        assert!(judged.outcomes[0].is_some() && judged.outcomes[1].is_none());
        let retried: Vec<_> = judged
            .audit
            .iter()
            .filter(|a| a.pair == 1 && a.first == "b")
            .collect();
        assert_eq!(
            retried.iter().map(|a| a.attempt).collect::<Vec<_>>(),
            [1, 2]
        );
        assert!(
            retried
                .iter()
                .all(|a| a.verdict.is_none() && a.answer.contains("prefer"))
        );
        // The tally is over the one pair judged: a first-position judge's split, a tie.
        assert_eq!((judged.tally[0].a_wins, judged.tally[0].ties), (0, 1));
    }

    #[test]
    fn the_wilson_interval_matches_its_textbook_values() {
        // 8 successes in 10: the 95% Wilson interval is about [0.490, 0.943].
        let (low, high) = wilson(0.8, 10);
        assert!(
            (low - 0.4902).abs() < 1e-3 && (high - 0.9433).abs() < 1e-3,
            "{low} {high}"
        );
        assert_eq!(wilson(0.5, 0), (0.0, 1.0));
    }

    #[test]
    fn a_verdict_is_read_through_chatter_and_refused_when_a_dimension_is_missing() {
        let text = "Sure! {\"anthropomorphism\":\"1\",\"character_fidelity\":\"tie\",\
                    \"immersion\":\"2\",\"writing_quality\":\"1\",\"storyline\":\"2\",\
                    \"reason\":\"r\"} done";
        let verdict = read_verdict(Mode::Script, text).expect("a verdict");
        assert_eq!(verdict.preferences[1], Preference::Tie);
        assert_eq!(verdict.preferences[4], Preference::Second);
        assert!(
            read_verdict(Mode::Free, text).is_none(),
            "creativity is missing"
        );
    }
}
