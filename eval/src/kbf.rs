//! Knowledge Boundary Fidelity (ReverieMem §4): probe items, deterministic matching of
//! answers to letters, the retrieval answerers, and the metric (Eq. 4).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use dramatis_embed::Embedder;
use dramatis_memory::vector::dot as cosine;
use dramatis_scenario::Scenario;
use serde::{Deserialize, Serialize};

/// The refusal option.
pub const REFUSAL: char = 'E';
/// The refusal option's text.
pub const REFUSAL_TEXT: &str = "I cannot answer this from my own knowledge";

/// One probe: a question to a character with options A–E and the gold letter, asked at
/// a story position.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Probe {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    pub character: String,
    pub question: String,
    pub options: BTreeMap<char, String>,
    pub gold: char,
    pub split: Split,
    /// Turns played before the item is asked; absent: at the end of the story.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<u32>,
    /// The scenario fact the item is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact: Option<String>,
    /// The logged line the item is about (its sequence number and text), from the run
    /// the item was generated from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_text: Option<String>,
    /// The option that is true in the story (the gold for a character that could know).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth: Option<char>,
    /// Words the true option rests on: a character that perceived one could know it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// The model the run the item came from was played with (`scripted:FIXTURE` or
    /// `model:NAME`); its turns must be replayed on the same model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub played_with: Option<String>,
    /// The generated cloze this item's question was rewritten from
    /// (`eval probes --paraphrase`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloze: Option<String>,
    /// A hand-written item's kind of question, reported apart (TimeChara's point-in-time
    /// kinds: `future`, `past-absence`, `past-presence`, `past-only`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

impl Probe {
    /// An item asked at the end of the story: four candidate answers (A–D) and the
    /// refusal (E); its split follows from `gold`.
    #[must_use]
    pub fn multiple_choice(
        character: &str,
        question: &str,
        options: [&str; 4],
        gold: char,
    ) -> Self {
        Self {
            id: String::new(),
            character: character.to_owned(),
            question: question.to_owned(),
            options: ['A', 'B', 'C', 'D', 'E']
                .into_iter()
                .zip(options.into_iter().chain([REFUSAL_TEXT]))
                .map(|(letter, text)| (letter, text.to_owned()))
                .collect(),
            gold,
            split: if gold == REFUSAL {
                Split::Kr
            } else {
                Split::Krf
            },
            at: None,
            fact: None,
            line: None,
            line_text: None,
            truth: None,
            evidence: Vec::new(),
            played_with: None,
            cloze: None,
            kind: None,
        }
    }

    /// The same item with another gold letter (and the split that goes with it).
    #[must_use]
    pub fn with_gold(&self, gold: char) -> Self {
        let mut probe = self.clone();
        probe.gold = gold;
        probe.split = if gold == REFUSAL {
            Split::Kr
        } else {
            Split::Krf
        };
        probe
    }
}

/// KRf: the fact is visible to the character (gold in A–D). KR: it is not (gold E).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum Split {
    #[serde(rename = "KRf")]
    Krf,
    #[serde(rename = "KR")]
    Kr,
}

/// Reads and checks a JSONL probe file; errors name the file and line.
pub fn load_probes(path: &Path, scenario: &Scenario) -> anyhow::Result<Vec<Probe>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut probes = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}:{}", path.display(), n + 1);
        let value: serde_json::Value = serde_json::from_str(line).with_context(|| at.clone())?;
        let probe =
            probe_from(value, &at, &|c| scenario.character(c).is_some()).map_err(|why| {
                match why.downcast_ref::<UnknownCharacter>() {
                    Some(UnknownCharacter(c)) => anyhow::anyhow!(
                        "{at}: character: {c:?} is not in scenario {:?}",
                        scenario.name
                    ),
                    None => why,
                }
            })?;
        probes.push(probe);
    }
    if probes.is_empty() {
        bail!("{}: no probes", path.display());
    }
    Ok(probes)
}

/// A character an item names that the cast does not hold.
#[derive(Debug)]
pub struct UnknownCharacter(pub String);

impl std::fmt::Display for UnknownCharacter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown character {:?}", self.0)
    }
}

impl std::error::Error for UnknownCharacter {}

/// One item of a probe file, checked: its options A–E, its character (`is_cast`), its
/// truth and its gold against its split. `at` names the file and line in errors.
pub fn probe_from(
    mut value: serde_json::Value,
    at: &str,
    is_cast: &dyn Fn(&str) -> bool,
) -> anyhow::Result<Probe> {
    truth_by_text(&mut value).map_err(|why| anyhow::anyhow!("{at}: truth: {why}"))?;
    let probe: Probe = serde_json::from_value(value).with_context(|| at.to_owned())?;
    for letter in ['A', 'B', 'C', 'D', 'E'] {
        if !probe.options.contains_key(&letter) {
            bail!("{at}: options: option {letter} is missing");
        }
    }
    if !is_cast(&probe.character) {
        return Err(UnknownCharacter(probe.character).into());
    }
    if let Some(truth) = probe.truth
        && !('A'..='D').contains(&truth)
    {
        bail!("{at}: truth: {truth:?} is not one of A–D");
    }
    let gold_ok = match probe.split {
        Split::Krf => ('A'..='D').contains(&probe.gold),
        Split::Kr => probe.gold == REFUSAL,
    };
    if !gold_ok {
        bail!(
            "{at}: gold: {:?} does not fit split {:?}",
            probe.gold,
            probe.split
        );
    }
    Ok(probe)
}

/// An item's `truth` may name its true option by letter (`"C"`) or by text (`"the
/// brass key"`); a text becomes the letter of the option that holds it.
fn truth_by_text(item: &mut serde_json::Value) -> Result<(), String> {
    let Some(text) = item
        .get("truth")
        .and_then(|t| t.as_str())
        .map(str::to_owned)
    else {
        return Ok(());
    };
    if text.chars().count() == 1 {
        return Ok(());
    }
    let options: BTreeMap<char, String> = item
        .get("options")
        .and_then(|o| serde_json::from_value(o.clone()).ok())
        .unwrap_or_default();
    let letter = option_with_text(&options, &text).ok_or_else(|| {
        format!(
            "{:?} is the text of none of the options A–D",
            text.chars().take(60).collect::<String>()
        )
    })?;
    item["truth"] = letter.to_string().into();
    Ok(())
}

/// Matches a free-form answer to a letter: a leading letter ("B", "(B)", "B)"; "A "
/// followed by a word is the article), else a
/// refusal phrase (E), else the option whose words the answer shares most of.
#[must_use]
pub fn match_letter(answer: &str, options: &BTreeMap<char, String>) -> Option<char> {
    let trimmed = answer.trim_start_matches(|c: char| c.is_whitespace() || c == '(' || c == '*');
    let mut chars = trimmed.chars();
    if let (Some(first), next) = (chars.next(), chars.next()) {
        let letter = first.to_ascii_uppercase();
        // "A tall man…" opens with the article, not option A.
        let article = first == 'A' && next.is_some_and(char::is_whitespace);
        if ('A'..='E').contains(&letter) && !article && next.is_none_or(|c| !c.is_alphanumeric()) {
            return Some(letter);
        }
    }
    if dramatis_memory::reverie::is_refusal(answer) {
        return Some(REFUSAL);
    }
    let words = |s: &str| -> Vec<String> {
        s.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 3)
            .map(str::to_owned)
            .collect()
    };
    let said = words(answer);
    options
        .iter()
        .filter(|(letter, _)| **letter != REFUSAL)
        .map(|(letter, text)| {
            (
                *letter,
                words(text).iter().filter(|w| said.contains(w)).count(),
            )
        })
        .filter(|(_, shared)| *shared > 0)
        .max_by_key(|(letter, shared)| (*shared, std::cmp::Reverse(*letter)))
        .map(|(letter, _)| letter)
}

/// Accuracies and KBF over a set of outcomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Score {
    pub n_krf: usize,
    pub n_kr: usize,
    pub krf_acc: f64,
    pub kr_acc: f64,
    pub kbf: f64,
}

/// Eq. 4: the sample-weighted harmonic mean of the two accuracies (0 if either is 0).
#[must_use]
pub fn score(outcomes: &[(Split, bool)]) -> Score {
    let count = |split| outcomes.iter().filter(|(s, _)| *s == split).count();
    let right = |split| outcomes.iter().filter(|(s, ok)| *s == split && *ok).count();
    let (n_krf, n_kr) = (count(Split::Krf), count(Split::Kr));
    let acc = |r: usize, n: usize| if n == 0 { 0.0 } else { r as f64 / n as f64 };
    let (krf_acc, kr_acc) = (acc(right(Split::Krf), n_krf), acc(right(Split::Kr), n_kr));
    let mut denominator = 0.0;
    for (n, a) in [(n_krf, krf_acc), (n_kr, kr_acc)] {
        if n > 0 {
            if a == 0.0 {
                return Score {
                    n_krf,
                    n_kr,
                    krf_acc,
                    kr_acc,
                    kbf: 0.0,
                };
            }
            denominator += n as f64 / a;
        }
    }
    let kbf = if denominator > 0.0 {
        (n_krf + n_kr) as f64 / denominator
    } else {
        0.0
    };
    Score {
        n_krf,
        n_kr,
        krf_acc,
        kr_acc,
        kbf,
    }
}

/// Where in the story an item is asked, by thirds of the story's turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Band {
    Early,
    Middle,
    End,
}

impl Band {
    pub const ALL: [Self; 3] = [Self::Early, Self::Middle, Self::End];

    /// The band of an item asked after `at` turns (`None`: at the end) of a story of
    /// `turns` turns: the first third is early, the second middle, the rest the end.
    #[must_use]
    pub fn of(at: Option<u32>, turns: u32) -> Self {
        match at {
            None => Self::End,
            Some(at) if u64::from(at) * 3 < u64::from(turns) => Self::Early,
            Some(at) if u64::from(at) * 3 < u64::from(turns) * 2 => Self::Middle,
            Some(_) => Self::End,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Early => "early",
            Self::Middle => "middle",
            Self::End => "end",
        }
    }
}

/// The score of the items asked in each band of a story of `turns` turns (a band with
/// no items is left out).
#[must_use]
pub fn band_scores(
    probes: &[Probe],
    answers: &[Option<char>],
    turns: u32,
) -> BTreeMap<Band, Score> {
    let mut by_band: BTreeMap<Band, Vec<(Split, bool)>> = BTreeMap::new();
    for (probe, answer) in probes.iter().zip(answers) {
        by_band
            .entry(Band::of(probe.at, turns))
            .or_default()
            .push((probe.split, *answer == Some(probe.gold)));
    }
    by_band.into_iter().map(|(b, o)| (b, score(&o))).collect()
}

/// The option (A–D) whose "question + option" text is best supported by some vector of
/// `pool`; the refusal option when no option's support reaches `threshold`.
pub async fn best_supported(
    probe: &Probe,
    pool: &[Vec<f32>],
    embedder: &dyn Embedder,
    threshold: f32,
) -> anyhow::Result<char> {
    let candidates: Vec<(char, String)> = probe
        .options
        .iter()
        .filter(|(letter, _)| **letter != REFUSAL)
        .map(|(letter, text)| (*letter, format!("{} {}", probe.question, text)))
        .collect();
    let texts: Vec<String> = candidates.iter().map(|(_, t)| t.clone()).collect();
    let vectors = embedder.embed(&texts).await?;
    let best = candidates
        .iter()
        .zip(&vectors)
        .map(|((letter, _), v)| {
            let support = pool.iter().map(|p| cosine(v, p)).fold(f32::MIN, f32::max);
            (*letter, support)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
    Ok(match best {
        Some((letter, support)) if support >= threshold => letter,
        _ => REFUSAL,
    })
}

/// The score over all probes and per character, from each probe's answer.
#[must_use]
pub fn scores(probes: &[Probe], answers: &[Option<char>]) -> (Score, BTreeMap<String, Score>) {
    let mut by_character: BTreeMap<String, Vec<(Split, bool)>> = BTreeMap::new();
    let mut all = Vec::new();
    for (probe, answer) in probes.iter().zip(answers) {
        let outcome = (probe.split, *answer == Some(probe.gold));
        by_character
            .entry(probe.character.clone())
            .or_default()
            .push(outcome);
        all.push(outcome);
    }
    let per = by_character
        .into_iter()
        .map(|(c, o)| (c, score(&o)))
        .collect();
    (score(&all), per)
}

/// Accuracy by kind of question (items without a kind left out): for each kind, how many
/// items and the share answered with their gold letter.
#[must_use]
pub fn kind_accuracy(probes: &[Probe], answers: &[Option<char>]) -> BTreeMap<String, (usize, f64)> {
    let mut by_kind: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (probe, answer) in probes.iter().zip(answers) {
        if let Some(kind) = &probe.kind {
            let tally = by_kind.entry(kind.clone()).or_default();
            tally.0 += 1;
            tally.1 += usize::from(*answer == Some(probe.gold));
        }
    }
    by_kind
        .into_iter()
        .map(|(kind, (n, right))| (kind, (n, right as f64 / n as f64)))
        .collect()
}

/// The letter (A–D) of the option whose text is `text`, compared without case and with
/// runs of white space as one.
#[must_use]
pub fn option_with_text(options: &BTreeMap<char, String>, text: &str) -> Option<char> {
    let key = option_key(text);
    options
        .iter()
        .find(|(letter, option)| **letter != REFUSAL && option_key(option) == key)
        .map(|(letter, _)| *letter)
}

fn option_key(text: &str) -> String {
    text.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_is_counted_by_kind_and_items_without_one_are_left_out() {
        let item = |kind: Option<&str>, gold: char| Probe {
            kind: kind.map(str::to_owned),
            ..Probe::multiple_choice("watson", "Where?", ["a", "b", "c", "d"], gold)
        };
        let probes = [
            item(Some("future"), REFUSAL),
            item(Some("future"), REFUSAL),
            item(Some("past-only"), 'B'),
            item(None, 'A'),
        ];
        let answers = [Some(REFUSAL), Some('A'), Some('B'), Some('A')];
        let kinds = kind_accuracy(&probes, &answers);
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            [
                ("future".to_owned(), (2, 0.5)),
                ("past-only".to_owned(), (1, 1.0))
            ]
        );
    }

    #[test]
    fn an_item_falls_in_the_third_of_the_story_it_is_asked_in() {
        let bands: Vec<Band> = [
            Some(0),
            Some(7),
            Some(8),
            Some(15),
            Some(16),
            Some(24),
            None,
        ]
        .into_iter()
        .map(|at| Band::of(at, 24))
        .collect();
        assert_eq!(
            bands,
            [
                Band::Early,
                Band::Early,
                Band::Middle,
                Band::Middle,
                Band::End,
                Band::End,
                Band::End
            ]
        );
        // A story not yet measured (0 turns) puts everything at the end.
        assert_eq!(Band::of(Some(3), 0), Band::End);
    }

    fn options() -> BTreeMap<char, String> {
        [
            ('A', "At Maiwand"),
            ('B', "In the Crimea"),
            ('C', "At Kandahar"),
            ('D', "Nowhere"),
            ('E', "I cannot answer this from my own knowledge"),
        ]
        .into_iter()
        .map(|(l, t)| (l, t.to_owned()))
        .collect()
    }

    #[test]
    fn answers_match_letters_deterministically() {
        let o = options();
        assert_eq!(match_letter("B", &o), Some('B'));
        assert_eq!(match_letter("(c) because", &o), Some('C'));
        assert_eq!(match_letter("A) At Maiwand", &o), Some('A'));
        assert_eq!(match_letter("I'm afraid I don't know that.", &o), Some('E'));
        assert_eq!(match_letter("It was at Maiwand, I recall.", &o), Some('A'));
        assert_eq!(
            match_letter("Also the crimea", &o),
            Some('B'),
            "'Also' is a word, not the letter A"
        );
        assert_eq!(match_letter("Mm.", &o), None);
        assert_eq!(
            match_letter("A cannon splinter in the Crimea, I believe.", &o),
            Some('B'),
            "an answer opening with the article is matched by its words"
        );
        assert_eq!(match_letter("A", &o), Some('A'));
        assert_eq!(match_letter("A.", &o), Some('A'));
    }

    fn scarlet() -> Scenario {
        Scenario::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios/study-in-scarlet/scenario.toml"),
        )
        .expect("shipped scenario")
    }

    #[test]
    fn bad_probe_lines_are_named_by_file_and_line() {
        let scenario = scarlet();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("probes.jsonl");
        let good = r#"{"character":"watson","question":"Q?","options":{"A":"a","B":"b","C":"c","D":"d","E":"e"},"gold":"B","split":"KRf"}"#;
        let cases = [
            (
                r#"{"character":"mycroft","question":"Q?","options":{"A":"a","B":"b","C":"c","D":"d","E":"e"},"gold":"E","split":"KR"}"#,
                ":2: character",
            ),
            (
                r#"{"character":"watson","question":"Q?","options":{"A":"a","B":"b","C":"c","D":"d"},"gold":"E","split":"KR"}"#,
                ":2: options: option E is missing",
            ),
            (
                r#"{"character":"watson","question":"Q?","options":{"A":"a","B":"b","C":"c","D":"d","E":"e"},"gold":"A","split":"KR"}"#,
                ":2: gold",
            ),
            ("{not json", ":2"),
            (
                r#"{"character":"watson","question":"Q?","options":{"A":"a key","B":"b","C":"c","D":"d","E":"e"},"gold":"E","split":"KR","truth":"a lock"}"#,
                ":2: truth: \"a lock\" is the text of none of the options",
            ),
        ];
        for (bad, expected) in cases {
            std::fs::write(&path, format!("{good}\n{bad}\n")).expect("write");
            let error = format!("{:#}", load_probes(&path, &scenario).expect_err("rejected"));
            assert!(
                error.contains(&format!("probes.jsonl{expected}")),
                "{error}"
            );
        }
        std::fs::write(&path, format!("{good}\n")).expect("write");
        assert_eq!(load_probes(&path, &scenario).expect("valid").len(), 1);
    }

    /// A true option named by its text is the letter of the option that holds it (case
    /// and spacing aside); one named by letter stays that letter.
    #[test]
    fn a_truth_given_by_text_is_its_option_s_letter() {
        let scenario = scarlet();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("probes.jsonl");
        let item = |truth: &str| {
            format!(
                r#"{{"character":"watson","question":"Q?","options":{{"A":"a","B":"The  Brass key","C":"c","D":"d","E":"e"}},"gold":"E","split":"KR","truth":{truth}}}"#
            )
        };
        std::fs::write(
            &path,
            format!("{}\n{}\n", item(r#""the brass key""#), item(r#""D""#)),
        )
        .expect("write");
        let probes = load_probes(&path, &scenario).expect("valid");
        assert_eq!(
            probes.iter().map(|p| p.truth).collect::<Vec<_>>(),
            [Some('B'), Some('D')]
        );
    }

    #[test]
    fn kbf_is_the_sample_weighted_harmonic_mean() {
        // 3 KRf with 2 right, 1 KR right: (3 + 1) / (3 / (2/3) + 1 / 1) = 4 / 5.5
        let outcomes = [
            (Split::Krf, true),
            (Split::Krf, true),
            (Split::Krf, false),
            (Split::Kr, true),
        ];
        let s = score(&outcomes);
        assert_eq!((s.n_krf, s.n_kr), (3, 1));
        assert!((s.krf_acc - 2.0 / 3.0).abs() < 1e-12);
        assert!((s.kbf - 4.0 / 5.5).abs() < 1e-12);
        assert_eq!(
            score(&[(Split::Krf, true), (Split::Kr, false)]).kbf,
            0.0,
            "collapsing one split scores 0"
        );
        assert!((score(&[(Split::Kr, true)]).kbf - 1.0).abs() < 1e-12);
    }
}
