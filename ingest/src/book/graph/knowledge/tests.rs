//! Each rule of who may know a sentence, on a made-up passage, and the same decision
//! whether the passage is read as one scene or cut at its breaks.

use std::collections::BTreeSet;

use super::super::super::knowledge_pairs;
use super::super::super::partition::{Span, partition};
use super::super::super::text::parse_characters;

/// Who may know the sentence of `text` that starts with `start`, the passage read as
/// the book's own partition cuts it.
fn knowers(list: &str, text: &str, start: &str) -> BTreeSet<String> {
    let characters = parse_characters(list).expect("list");
    let parts = partition(text);
    let pairs = knowledge_pairs(text, &characters, &parts, &parts.scenes);
    let found: Vec<_> = pairs
        .iter()
        .filter(|(_, sentence, _)| sentence.trim_start_matches(['"', '\'']).starts_with(start))
        .collect();
    assert!(
        !found.is_empty() || pairs.iter().all(|(_, s, _)| !s.starts_with(start)),
        "no sentence `{start}` in {pairs:?}"
    );
    found.into_iter().map(|(_, _, who)| who.clone()).collect()
}

fn set(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| (*s).to_owned()).collect()
}

const FIRST_PERSON: &str = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n";
const THIRD_PERSON: &str = "Ann Lee | Ann\nBen Cole | Ben\nKit Marsh | Kit\n";

#[test]
fn a_first_person_narrator_s_thought_is_his_alone() {
    let text = "CHAPTER I\n\nHolmes sat by the fire with me, and I handed him the letter. He \
                read it twice.\n\n\"A curious note,\" said Holmes.\n\nI felt that Holmes was \
                hiding the truth from Lestrade about the ring.\n\n\"Come, Watson,\" said he.\n";
    assert_eq!(
        knowers(FIRST_PERSON, text, "I felt that Holmes"),
        set(&["john-watson"])
    );
    // What the narrator does in front of him is seen by both.
    assert_eq!(
        knowers(FIRST_PERSON, text, "Holmes sat by the fire"),
        set(&["john-watson", "sherlock-holmes"])
    );
}

#[test]
fn an_omniscient_narrator_s_view_into_one_mind_is_that_mind_s_alone() {
    let text = "CHAPTER I\n\nAnn and Ben stood on the quay at Gullcove in the rain.\n\n\
                \"The boat is late,\" said Ben.\n\nAnn feared that the boat had gone down \
                off the Point with the ledger aboard.\n\n\"It will come,\" said Ann.\n";
    assert_eq!(knowers(THIRD_PERSON, text, "Ann feared"), set(&["ann-lee"]));
}

#[test]
fn the_setting_a_scene_opens_on_does_not_reach_one_who_comes_in_later() {
    let quiet = (0..10)
        .map(|i| format!("The rain fell on the roof of the house for the {i}th hour."))
        .collect::<Vec<_>>()
        .join("\n\n");
    let text = format!(
        "CHAPTER I\n\nAnn sat alone in the parlour at Gullcove with the ledger of 1820 open \
         on her knees.\n\n{quiet}\n\nBen came in from the yard and shook the water from his \
         coat.\n\n\"Still reading?\" said Ben.\n\n\"Still,\" said Ann.\n"
    );
    let opening = knowers(THIRD_PERSON, &text, "Ann sat alone");
    assert_eq!(opening, set(&["ann-lee"]), "only Ann was there");
}

#[test]
fn one_only_talked_about_or_buried_receives_nothing() {
    let text = "CHAPTER I\n\nAnn and Kit sat in the kitchen at Gullcove.\n\n\"Ben's boat was \
                lost off the Point in 1820,\" said Kit.\n\nBen was buried in the churchyard at \
                Gullcove in the spring of 1821.\n\n\"I know,\" said Ann.\n";
    let lost = knowers(THIRD_PERSON, text, "Ben's boat was lost");
    assert!(!lost.contains("ben-cole"), "{lost:?}");
    let buried = knowers(THIRD_PERSON, text, "Ben was buried");
    assert!(!buried.contains("ben-cole"), "{buried:?}");
}

#[test]
fn a_chapter_read_as_one_scene_grants_no_more_than_its_scenes() {
    // Three places in one chapter: a scene-break line and a move in time cut it.
    let text = "CHAPTER I\n\nAnn and Ben stood on the quay at Gullcove in the rain, and Ben \
                showed her the ledger of 1820.\n\n\"It is forged,\" said Ben.\n\n\"Then we \
                are ruined,\" said Ann.\n\n* * *\n\nKit sat alone in the inn at Wrayhaven with \
                the lamp lit.\n\n\"They will come for the ledger of 1820,\" said Kit.\n\nThe next morning Ann \
                walked up to the church and found the vicar's door shut.\n\n\"Nobody,\" said \
                Ann.\n";
    let characters = parse_characters(THIRD_PERSON).expect("list");
    let parts = partition(text);
    let fine = knowledge_pairs(text, &characters, &parts, &parts.scenes);
    let whole = [Span {
        chapter: 1,
        start: parts.scenes[0].start,
        end: parts.scenes.last().expect("scenes").end,
    }];
    let merged = knowledge_pairs(text, &characters, &parts, &whole);
    let added: Vec<_> = merged.difference(&fine).collect();
    assert!(added.is_empty(), "merging granted {added:?}");
    // What Kit says alone at the inn reaches neither of those left on the quay, though
    // the three places are short enough to make one scene.
    let heard: BTreeSet<&str> = merged
        .iter()
        .filter(|(_, s, _)| s.contains("come for the ledger"))
        .map(|(_, _, who)| who.as_str())
        .collect();
    assert_eq!(heard, BTreeSet::from(["kit-marsh"]), "{merged:?}");
}
