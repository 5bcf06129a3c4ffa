//! The long generated run of the ablation: a two-character story of any length in
//! which five facts are told early (in scene openings) and asked at the end, among
//! near-miss distractors about the same kinds of things. Scored ZH-4O-style (probe QA,
//! four options) and RoleMemo-style (Recall@10: is the planted fact among the first ten
//! items recalled).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::kbf::Probe;

/// Items recalled that count for Recall@10.
pub const RECALL_AT: usize = 10;

/// A planted fact of the long run: told in the opening of an early scene, asked at the
/// end with four options (the first is right).
pub const PLANTED: [(&str, &str, [&str; 4]); 5] = [
    (
        "Ada slips the brass key into the flour tin beside the stove.",
        "Where did Ada hide the brass key?",
        [
            "In the flour tin beside the stove",
            "Under the loose floorboard",
            "Inside the clock case",
            "In the coal scuttle",
        ],
    ),
    (
        "A letter arrives for Tom, sealed with green wax and signed by his sister Maud.",
        "Who wrote the letter sealed with green wax?",
        [
            "Tom's sister Maud",
            "The landlord",
            "A solicitor from Leeds",
            "Ada's cousin",
        ],
    ),
    (
        "The baker's debt to the miller is settled: twelve shillings, paid in copper coins.",
        "How much was the debt to the miller?",
        [
            "Twelve shillings",
            "Two guineas",
            "Five pounds",
            "Nine pence",
        ],
    ),
    (
        "A grey cat with one white ear takes up residence on the bakery windowsill.",
        "What does the cat on the windowsill look like?",
        [
            "Grey with one white ear",
            "Black with a torn tail",
            "Ginger and very fat",
            "White with blue eyes",
        ],
    ),
    (
        "The night watchman reports that the bakery's back gate was found unlocked at midnight.",
        "What did the night watchman report?",
        [
            "The back gate was found unlocked at midnight",
            "A fire in the chimney",
            "A stranger asleep in the yard",
            "Nothing at all",
        ],
    ),
];

/// Openings of the other scenes: everyday events about the same kinds of things as the
/// planted facts (keys, letters, debts, cats, gates), so a memory must find the one
/// planted fact among many near misses.
const DISTRACTORS: [&str; 10] = [
    "Tom oils the iron key of the cellar door and hangs it on its nail.",
    "A letter from the flour merchant asks when the next order will be paid.",
    "The grocer still owes the bakery three shillings for last week's loaves.",
    "A black cat prowls along the yard wall and is gone by morning.",
    "The front gate creaks in the wind until Ada props it with a brick.",
    "Ada counts the copper coins in the till twice and frowns.",
    "A parcel tied with red string is left on the step for the landlord.",
    "The miller's boy brings two sacks of flour and a complaint about the road.",
    "Tom finds a silver button in the flour bin and pockets it.",
    "The chimney sweep leaves soot on the windowsill and a bill on the counter.",
];

/// Writes the long-run scenario (`lines` turns in scenes of six) and its probes.
pub fn write_long_run(dir: &Path, lines: u32) -> anyhow::Result<(PathBuf, Vec<Probe>)> {
    let scenes = lines.div_ceil(6).max(PLANTED.len() as u32 + 2);
    let mut toml = String::from(
        "version = 1\nname = \"long-run\"\ntitle = \"A long evening at the bakery\"\n\n\
         [[locations]]\nid = \"bakery\"\nname = \"the bakery\"\n\n\
         [[characters]]\nid = \"ada\"\nname = \"Ada\"\nprofile = \"A baker who keeps her own counsel.\"\nlocation = \"bakery\"\n\n\
         [[characters]]\nid = \"tom\"\nname = \"Tom\"\nprofile = \"Her apprentice, curious about everything.\"\nlocation = \"bakery\"\n",
    );
    for scene in 0..scenes {
        // Facts are told in scenes 2-6; every other scene opens on a near miss.
        let opening = match scene.checked_sub(1).and_then(|i| PLANTED.get(i as usize)) {
            Some((fact, _, _)) => (*fact).to_owned(),
            None => format!(
                "Evening {}. {}",
                scene + 1,
                DISTRACTORS[scene as usize % DISTRACTORS.len()]
            ),
        };
        dramatis_runtime::push!(
            toml,
            "\n[[scenes]]\nid = \"evening-{n}\"\nlocation = \"bakery\"\ncast = [\"ada\", \"tom\"]\n\
             beat = \"An evening's work.\"\nmin_turns = 6\nmax_turns = 6\nopening = {opening:?}\n",
            n = scene + 1,
        );
    }
    let path = dir.join("long-run.toml");
    std::fs::write(&path, toml).with_context(|| format!("cannot write {}", path.display()))?;
    let probes = PLANTED
        .iter()
        .map(|(_, question, options)| Probe::multiple_choice("tom", question, *options, 'A'))
        .collect();
    Ok((path, probes))
}

/// Whether recalled text `t` carries the planted fact (its distinctive words).
pub fn planted_in(fact: &str, text: &str) -> bool {
    let words = dramatis_memory::modules::keywords(fact);
    let found = dramatis_memory::modules::keywords(text);
    let shared = words.iter().filter(|w| found.contains(*w)).count();
    shared * 3 >= words.len() * 2
}

/// Probe QA (the right option, always `A`, chosen) and Recall@10 over the long run's
/// probes, from each probe's answer letter and the texts recalled, in order.
#[must_use]
pub fn long_run_scores(answers: &[(char, Vec<String>)]) -> (f64, f64) {
    let n = PLANTED.len() as f64;
    let correct = answers.iter().filter(|(l, _)| *l == 'A').count();
    let hits = PLANTED
        .iter()
        .zip(answers)
        .filter(|((fact, _, _), (_, texts))| {
            texts.iter().take(RECALL_AT).any(|t| planted_in(fact, t))
        })
        .count();
    (correct as f64 / n, hits as f64 / n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_has_the_scenes_and_probes_asked_for() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (path, probes) = write_long_run(dir.path(), 60).expect("written");
        let text = std::fs::read_to_string(path).expect("readable");
        assert_eq!(text.matches("[[scenes]]").count(), 10);
        assert!(text.contains(PLANTED[0].0), "the first fact is told");
        assert_eq!(probes.len(), PLANTED.len());
        assert!(probes.iter().all(|p| p.gold == 'A' && p.options.len() == 5));
    }

    #[test]
    fn scores_count_right_letters_and_facts_in_the_first_ten() {
        let found = vec!["noise".to_owned(); 3]
            .into_iter()
            .chain([PLANTED[0].0.to_owned()])
            .collect::<Vec<_>>();
        let late = vec!["noise".to_owned(); RECALL_AT]
            .into_iter()
            .chain([PLANTED[1].0.to_owned()])
            .collect::<Vec<_>>();
        let answers = vec![
            ('A', found),
            ('B', late),
            ('A', vec![]),
            ('E', vec![]),
            ('C', vec![]),
        ];
        let (qa, recall) = long_run_scores(&answers);
        assert!((qa - 0.4).abs() < 1e-9, "{qa}");
        assert!((recall - 0.2).abs() < 1e-9, "{recall}");
    }
}
