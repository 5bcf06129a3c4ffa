//! An ingested folder compared with a reader's answer file (`dramatis eval ingest`):
//! who speaks, who is present, who narrates, and who may know each fact, as precision
//! and recall.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Context as _;
use serde::Serialize;

use crate::answers::{Answers, fold};
use crate::book::graph::Graph;
use crate::book::scenes::{Scene, Speaker};
use crate::book::text::contains_phrase;

/// Precision and recall over counted pairs.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct PrecisionRecall {
    pub right: usize,
    pub predicted: usize,
    pub gold: usize,
}

impl PrecisionRecall {
    fn add(&mut self, predicted: &BTreeSet<String>, gold: &BTreeSet<String>) {
        self.right += predicted.intersection(gold).count();
        self.predicted += predicted.len();
        self.gold += gold.len();
    }

    #[must_use]
    pub fn precision(&self) -> f64 {
        ratio(self.right, self.predicted)
    }

    #[must_use]
    pub fn recall(&self) -> f64 {
        ratio(self.right, self.gold)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 1.0 } else { a as f64 / b as f64 }
}

/// The comparison of an ingested folder with the answers.
#[derive(Debug, Clone, Serialize)]
pub struct Score {
    pub book: String,
    /// First-person chapters whose narrator the ingest bound, of all first-person ones.
    pub narrated_chapters: usize,
    pub narrators_bound: usize,
    pub lines: usize,
    pub speakers_right: usize,
    /// Lines given to someone other than their speaker (a wrong name, which is worse
    /// than none).
    pub speakers_wrong: usize,
    /// Lines the ingest found as quotes but could give no speaker.
    pub speakers_unknown: usize,
    /// Lines the ingest did not find as a quote at all.
    pub lines_missing: usize,
    /// The answer file's quotes (folded) that are not among the ingested lines.
    pub missing_quotes: Vec<String>,
    /// Each line given a wrong speaker: its quote (folded), whom the ingest gave it and
    /// whom the answers do (`None`: someone off the list).
    pub wrong_speakers: Vec<WrongSpeaker>,
    /// Documents of the answers (a journal entry, a letter) and how many the ingest
    /// tells by their writer.
    pub documents: usize,
    pub documents_bound: usize,
    pub scenes: usize,
    pub roster: PrecisionRecall,
    pub facts: usize,
    /// Key facts no ingested fact expresses.
    pub facts_missing: usize,
    pub known_by: PrecisionRecall,
    /// (fact id, character id) pairs: a key fact given to a character the answers say
    /// could not know it.
    pub leaks: Vec<(String, String)>,
    /// Ingested scenes and facts, for scale.
    pub ingested_scenes: usize,
    pub ingested_facts: usize,
}

impl Score {
    /// Right speakers of all the answer file's lines.
    #[must_use]
    pub fn speaker_accuracy(&self) -> f64 {
        ratio(self.speakers_right, self.lines)
    }

    /// Of the lines the ingest gave a speaker, the share it got right.
    #[must_use]
    pub fn speaker_precision(&self) -> f64 {
        ratio(
            self.speakers_right,
            self.speakers_right + self.speakers_wrong,
        )
    }

    /// Of all the answer file's lines, the share the ingest gave a speaker at all.
    #[must_use]
    pub fn speaker_coverage(&self) -> f64 {
        ratio(self.speakers_right + self.speakers_wrong, self.lines)
    }
}

/// What an ingested folder holds that the comparison reads (`layers/`).
#[derive(Debug, Clone)]
pub struct Ingested {
    pub scenes: Vec<Scene>,
    pub graph: Graph,
    /// Chapter (1-based) → the narrator's id, when the ingest bound one.
    pub narrators: BTreeMap<usize, String>,
}

impl Ingested {
    /// Reads the layers an ingest wrote under `folder`.
    pub fn load(folder: &Path) -> anyhow::Result<Self> {
        let layers = folder.join("layers");
        let read = |name: &str| -> anyhow::Result<String> {
            let path = layers.join(name);
            std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "cannot read {} (is {} a folder `dramatis ingest` wrote?)",
                    path.display(),
                    folder.display()
                )
            })
        };
        let scenes: Vec<Scene> = serde_json::from_str(&read("scenes.json")?)
            .context("layers/scenes.json does not parse")?;
        let graph: Graph = serde_json::from_str(&read("graph.json")?)
            .context("layers/graph.json does not parse")?;
        let narrators = match read("narration.json") {
            Ok(text) => {
                serde_json::from_str(&text).context("layers/narration.json does not parse")?
            }
            Err(_) => BTreeMap::new(),
        };
        Ok(Self {
            scenes,
            graph,
            narrators,
        })
    }
}

/// A line the ingest gives the wrong speaker.
#[derive(Debug, Clone, Serialize)]
pub struct WrongSpeaker {
    pub quote: String,
    /// The ingest's speaker: a focus character's id, or the name it gave someone else.
    pub ours: String,
    /// The answers' speaker: a focus character's id, or `None` for someone off the list.
    pub theirs: Option<String>,
}

/// The tally of [`speakers`].
struct Speakers {
    right: usize,
    unknown: usize,
    wrong: Vec<WrongSpeaker>,
    missing: Vec<String>,
}

/// Each of the answers' lines against the ingested utterance that holds its first
/// words (a line retold inside another's quote is the retold one): right, wrong, found
/// without a speaker, or not found (its quote).
fn speakers<'a>(answers: &Answers, containing: &dyn Fn(usize) -> Option<&'a Scene>) -> Speakers {
    let mut tally = Speakers {
        right: 0,
        unknown: 0,
        wrong: Vec::new(),
        missing: Vec::new(),
    };
    for (at, quote, speaker) in &answers.lines {
        let holds = |text: &str| fold(text).contains(quote.as_str());
        let scene = containing(*at);
        let found = scene.and_then(|s| {
            s.retold
                .iter()
                .chain(&s.utterances)
                .find(|u| holds(&u.text))
        });
        match found {
            Some(u) => {
                let right = match (&u.speaker, speaker) {
                    (Speaker::Focus(id), Some(gold)) => id == gold,
                    (Speaker::Other(_), None) => true,
                    _ => false,
                };
                if right {
                    tally.right += 1;
                } else {
                    tally.wrong.push(WrongSpeaker {
                        quote: quote.clone(),
                        ours: match &u.speaker {
                            Speaker::Focus(id) | Speaker::Other(id) => id.clone(),
                        },
                        theirs: speaker.clone(),
                    });
                }
            }
            None if scene.is_some_and(|s| s.unattributed.iter().any(|(_, t)| holds(t))) => {
                tally.unknown += 1;
            }
            None => tally.missing.push(quote.clone()),
        }
    }
    tally
}

/// Compares `ingested` with `answers`.
#[must_use]
pub fn score(answers: &Answers, ingested: &Ingested) -> Score {
    let containing = |at: usize| {
        ingested
            .scenes
            .iter()
            .find(|s| s.span.start <= at && at < s.span.end)
    };
    // Narration: the ingest's chapter holding each first-person chapter's start.
    let mut narrated_chapters = 0;
    let mut narrators_bound = 0;
    for (at, narrator) in &answers.chapters {
        let Some(narrator) = narrator else { continue };
        narrated_chapters += 1;
        let chapter = containing(*at).map(|s| s.span.chapter);
        if chapter.and_then(|c| ingested.narrators.get(&c)) == Some(narrator) {
            narrators_bound += 1;
        }
    }
    let speakers = speakers(answers, &containing);
    let documents_bound = answers
        .documents
        .iter()
        .filter(|(at, writer)| containing(*at).and_then(|s| s.narrator.as_ref()) == writer.as_ref())
        .count();
    // Rosters: a reader's scene against the ingested scenes that are mostly inside it
    // or hold most of it.
    let mut roster = PrecisionRecall::default();
    for scene in &answers.scenes {
        let mut predicted = BTreeSet::new();
        for s in &ingested.scenes {
            let overlap = s
                .span
                .end
                .min(scene.end)
                .saturating_sub(s.span.start.max(scene.start));
            let own = s.span.end - s.span.start;
            let theirs = scene.end - scene.start;
            if overlap > 0 && (2 * overlap >= own || 2 * overlap >= theirs) {
                // Who the ingest has on stage in the stretch both scenes share.
                predicted.extend(
                    s.present_between(s.span.start.max(scene.start), s.span.end.min(scene.end)),
                );
            }
        }
        roster.add(&predicted, &scene.present);
    }
    // Facts: the ingested facts that express each key fact, and who was given them.
    let mut known_by = PrecisionRecall::default();
    let mut facts_missing = 0;
    let mut leaks = Vec::new();
    for fact in &answers.facts {
        let mut given = BTreeSet::new();
        let mut expressed = false;
        for f in &ingested.graph.facts {
            if fact.evidence.iter().any(|e| contains_phrase(&f.text, e)) {
                expressed = true;
                given.extend(f.known_by.iter().cloned());
            }
        }
        if !expressed {
            facts_missing += 1;
        }
        let given: BTreeSet<String> = given.difference(&fact.unsure).cloned().collect();
        known_by.add(&given, &fact.known_by);
        for character in given.difference(&fact.known_by) {
            leaks.push((fact.id.clone(), character.clone()));
        }
    }
    Score {
        book: answers.book.clone(),
        narrated_chapters,
        narrators_bound,
        lines: answers.lines.len(),
        speakers_right: speakers.right,
        speakers_wrong: speakers.wrong.len(),
        speakers_unknown: speakers.unknown,
        lines_missing: speakers.missing.len(),
        missing_quotes: speakers.missing,
        wrong_speakers: speakers.wrong,
        documents: answers.documents.len(),
        documents_bound,
        scenes: answers.scenes.len(),
        roster,
        facts: answers.facts.len(),
        facts_missing,
        known_by,
        leaks,
        ingested_scenes: ingested.scenes.len(),
        ingested_facts: ingested.graph.facts.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::AnswerFile;

    /// A two-scene ingest of `BOOK`-like text scored by hand: one speaker right, one
    /// wrong, a roster with one extra, a fact given to one who may not know it.
    #[test]
    fn a_score_counts_speakers_rosters_knowers_and_leaks() {
        let book = "CHAPTER I\n\nHolmes and I sat in Baker Street. \"You have been in \
                    Afghanistan,\" said Holmes.\n\n\"How did you know?\" I asked.\n\n\
                    CHAPTER II\n\nLestrade came alone to the Yard. He found the ring.\n";
        let characters = crate::book::text::parse_characters(
            "Watson | Dr. Watson | narrator\nHolmes | Mr. Holmes\nLestrade\n",
        )
        .expect("list");
        let file: AnswerFile = toml::from_str(
            r#"
            book = "b.txt"
            [[chapters]]
            starts = "Holmes and I sat"
            narrator = "Watson"
            [[chapters]]
            starts = "Lestrade came alone"
            [[lines]]
            quote = "You have been in"
            speaker = "Holmes"
            [[lines]]
            quote = "How did you know?"
            speaker = "Watson"
            [[scenes]]
            starts = "Holmes and I sat"
            present = ["Watson", "Holmes"]
            [[scenes]]
            starts = "Lestrade came alone"
            present = ["Lestrade"]
            [[facts]]
            id = "ring"
            text = "Lestrade found the ring."
            evidence = ["the ring"]
            at = "He found the ring."
            known_by = ["Lestrade"]
            "#,
        )
        .expect("answers");
        let answers = Answers::resolve(&file, characters, book).expect("resolved");
        let second = book.find("CHAPTER II").expect("chapter two");
        let scenes = serde_json::json!([
            {"number": 1, "span": {"chapter": 1, "start": 11, "end": second},
             "location": "", "time": "", "atmosphere": "",
             "active": ["holmes", "watson"], "silent": ["lestrade"], "referenced": [],
             "utterances": [
                {"speaker": {"Focus": "holmes"}, "text": "You have been in Afghanistan,", "paragraph": 0},
                {"speaker": {"Other": "I"}, "text": "How did you know?", "paragraph": 1}],
             "sentences": [], "exits": {}},
            {"number": 2, "span": {"chapter": 2, "start": second + 12, "end": book.len()},
             "location": "", "time": "", "atmosphere": "",
             "active": ["lestrade"], "silent": [], "referenced": [],
             "utterances": [], "sentences": [], "exits": {}}
        ]);
        let graph = serde_json::json!({"entities": [], "organisations": [], "facts": [
            {"scene": 2, "text": "He found the ring.", "subject": "Lestrade", "predicate": "found",
             "object": "the ring", "cause": "", "route": "witnessed",
             "known_by": ["lestrade", "holmes"], "source": "text"}]});
        let ingested = Ingested {
            scenes: serde_json::from_value(scenes).expect("scenes"),
            graph: serde_json::from_value(graph).expect("graph"),
            narrators: BTreeMap::from([(1, "watson".to_owned())]),
        };
        let score = score(&answers, &ingested);
        assert_eq!((score.narrators_bound, score.narrated_chapters), (1, 1));
        assert_eq!(
            (score.speakers_right, score.lines, score.lines_missing),
            (1, 2, 0)
        );
        // "How did you know?" went to someone off the list: a wrong name, not an
        // unknown one.
        assert_eq!((score.speakers_wrong, score.speakers_unknown), (1, 0));
        assert_eq!(score.wrong_speakers.len(), 1);
        let wrong = &score.wrong_speakers[0];
        assert_eq!(wrong.ours, "I");
        assert_eq!(
            (wrong.quote.as_str(), wrong.theirs.as_deref()),
            ("How did you know?", Some("watson"))
        );
        assert!((score.speaker_precision() - 0.5).abs() < 1e-9);
        assert!((score.speaker_coverage() - 1.0).abs() < 1e-9);
        // Scene one predicted {holmes, watson, lestrade} against {watson, holmes}; scene
        // two {lestrade} against {lestrade}.
        assert_eq!(
            score.roster,
            PrecisionRecall {
                right: 3,
                predicted: 4,
                gold: 3
            }
        );
        assert_eq!(score.known_by.recall(), 1.0);
        assert_eq!(score.leaks, [("ring".to_owned(), "holmes".to_owned())]);
        assert_eq!(score.facts_missing, 0);
    }
}
