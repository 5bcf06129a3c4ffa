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

const CREW: &str = "Jim Hawkins | Jim | narrator\nLong John Silver | Silver\nTom Redruth | Tom\n\
                    Tom Morgan | Morgan\nAbraham Gray | Gray\n";

#[test]
fn a_narrator_s_sentence_of_himself_alone_reaches_no_one_it_does_not_name() {
    let text = "CHAPTER I\n\nGray and I pulled the gig up the beach at the cove.\n\n\"Easy \
                now,\" said Gray.\n\nI thought of my mother's inn, gone clean out of my life \
                since the spring of 1760.\n\nWe drew near the bay where I had once tossed in \
                the little boat of 1760.\n\n\"There,\" said Gray.\n";
    assert_eq!(
        knowers(CREW, text, "I thought of my mother"),
        set(&["jim-hawkins"])
    );
    // A memory of his own, told while the company walks with him.
    assert_eq!(
        knowers(CREW, text, "We drew near the bay"),
        set(&["jim-hawkins"])
    );
    // What he does in front of the one it names is seen by both.
    assert_eq!(
        knowers(CREW, text, "Gray and I pulled"),
        set(&["jim-hawkins", "abraham-gray"])
    );
}

#[test]
fn one_who_disappears_after_a_fronted_phrase_or_in_a_subordinate_clause_is_gone() {
    let text = "CHAPTER I\n\nSilver and Gray sat with me by the spring at the stockade.\n\n\
                \"Well,\" said Silver.\n\nOnce out upon the sand, Silver, in spite of his leg, \
                disappeared among the trees in half a minute.\n\nAs soon as Gray disappeared, I \
                hid the chart of 1760 under the logs.\n\nThe chart of 1760 lay under the logs \
                till night.\n";
    let hidden = knowers(CREW, text, "As soon as Gray");
    assert!(!hidden.contains("long-john-silver"), "{hidden:?}");
    let lay = knowers(CREW, text, "The chart of 1760 lay");
    assert_eq!(lay, set(&["jim-hawkins"]), "both had gone");
}

#[test]
fn a_given_name_two_characters_share_puts_neither_on_stage() {
    // "Tom" is Tom Redruth's in the list and Tom Morgan's first name: here it is a
    // third Tom, and neither of them is there.
    let text = "CHAPTER I\n\nSilver and I walked inland among the trees of the island.\n\n\
                Tom stood up from the marsh grass at the sound of the cry.\n\n\"Mate,\" said \
                Silver.\n\nTom fell, and Silver buried his knife in him in the year 1760.\n";
    let killed = knowers(CREW, text, "Tom fell");
    assert!(!killed.contains("tom-redruth"), "{killed:?}");
    assert!(!killed.contains("tom-morgan"), "{killed:?}");
}

#[test]
fn a_talk_they_have_alone_reaches_no_one_else_on_stage() {
    let text = "CHAPTER I\n\nAnn, Ben and Kit sat at breakfast at Gullcove in the spring.\n\n\
                \"More tea,\" said Ben.\n\n\"Come up,\" said Kit to Ann.\n\nWhen they had gained their own room, Ann, taking out \
                the letter, said, \"Kit, the ledger of 1820 is forged.\"\n\n\"So it is,\" said \
                Kit.\n";
    let told = knowers(THIRD_PERSON, text, "Kit, the ledger");
    assert!(!told.contains("ben-cole"), "{told:?}");
    assert!(told.contains("ann-lee"), "{told:?}");
}

#[test]
fn a_letter_copied_into_a_third_person_telling_puts_no_one_it_names_in_the_room() {
    let text = "CHAPTER I\n\nAnn sat in the parlour at Gullcove and read the letter aloud.\n\n\
                Ben stood by me when your news of 1820 came, and we grieve with you.\n\n\
                \"He writes kindly of the ledger of 1820 and the boat,\" said Ann.\n\nAnn put the letter away at the last line of \
                1821.\n";
    let read = knowers(THIRD_PERSON, text, "He writes kindly");
    assert_eq!(read, set(&["ann-lee"]), "Ben is only in the letter");
}

#[test]
fn a_name_one_writes_to_or_owns_a_thing_is_not_there() {
    let text = "CHAPTER I\n\nSilver sat with me in the cabin of the ship in 1760.\n\n\"Sign,\" \
                said Silver.\n\nIt was Gray's chart, not mine, and I would write fully to Tom \
                Redruth in secret.\n\nSilver took the pen and signed the chart of 1760.\n";
    let signed = knowers(CREW, text, "Silver took the pen");
    assert!(!signed.contains("abraham-gray"), "{signed:?}");
    assert!(!signed.contains("tom-redruth"), "{signed:?}");
}
