//! The text layer and the deterministic stages on small, made-up passages.

use super::scenes::{BookFacts, Speaker, place_phrase, prepare};
use super::text::{Namer, Segment, Span, paragraphs, parse_characters, partition, sentences};

fn words(n: usize, word: &str) -> String {
    vec![word; n].join(" ")
}

#[test]
fn chapters_and_breaks_cut_scenes_and_short_spans_join_their_neighbour() {
    let text = format!(
        "A Title\n\nCHAPTER ONE\n\n{}\n\n* * *\n\n{}\n\nChapter 2\n\n{}\n",
        words(200, "alpha"),
        words(20, "beta"),
        words(300, "gamma")
    );
    let p = partition(&text);
    assert_eq!(p.title.as_deref(), Some("A Title"));
    assert_eq!(p.chapters, 2);
    assert_eq!(
        p.scenes.len(),
        2,
        "the 20-word span joins the scene before it"
    );
    let first = &text[p.scenes[0].start..p.scenes[0].end];
    assert!(first.contains("alpha") && first.contains("beta") && !first.contains("gamma"));
    assert_eq!(p.scenes[1].chapter, 2);

    // No marks at all: cut at paragraph ends about every 1,500 words.
    let unmarked = (0..8)
        .map(|_| words(400, "delta"))
        .collect::<Vec<_>>()
        .join("\n\n");
    let p = partition(&unmarked);
    assert_eq!(p.scenes.len(), 2);
    assert!(
        p.scenes
            .iter()
            .all(|s| unmarked[s.start..s.end].split_whitespace().count() >= 1200)
    );
}

#[test]
fn quotes_straight_or_curly_and_sentences_past_abbreviations() {
    let paras = paragraphs("“Come in,” said Mr. Hale. \"Sit\nhere.\"\n\nShe sat.");
    assert_eq!(paras.len(), 2);
    assert_eq!(
        paras[0],
        [
            Segment::Quote("Come in,".into()),
            Segment::Narration("said Mr. Hale.".into()),
            Segment::Quote("Sit here.".into()),
        ]
    );
    assert_eq!(
        sentences("Mr. Hale rowed. Mrs. Crane watched! Did St. Brendan's bell ring? Yes"),
        [
            "Mr. Hale rowed.",
            "Mrs. Crane watched!",
            "Did St. Brendan's bell ring?",
            "Yes"
        ]
    );
}

#[test]
fn character_lists_give_ids_and_refuse_bad_lines() {
    let list =
        parse_characters("# cast\nJohn Smith | Smith, the smith\nJohn Jones\n\nMary Ann | Mary\n")
            .expect("list");
    let ids: Vec<&str> = list.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        ["john-smith", "john-jones", "mary"],
        "a shared first word takes the whole name"
    );
    assert_eq!(list[0].description(), Some("the smith"));
    let err = parse_characters("Mary | x\n | nobody\n").expect_err("no name");
    assert!(err.to_string().starts_with("line 2:"), "{err}");
    let err = parse_characters("Mary\nMary\n").expect_err("twice");
    assert!(err.to_string().contains("listed twice"), "{err}");
    assert!(parse_characters("\n# only comments\n").is_err());
    // Marks: the narrator; an unknown mark is refused with its line.
    let marked =
        parse_characters("John H. Watson | Watson, Doctor | narrator\nHolmes\n").expect("marks");
    assert!(marked[0].narrator && !marked[1].narrator);
    assert_eq!(marked[0].aliases, ["Watson", "Doctor"]);
    let err = parse_characters("Ann\nBen | Benny | villain\n").expect_err("unknown mark");
    assert!(
        err.to_string()
            .starts_with("line 2: unknown mark `villain`"),
        "{err}"
    );
}

#[test]
fn speakers_come_from_tags_narration_and_turn_taking() {
    let characters =
        parse_characters("Ann Lee | Ann, the widow\nBen Cole | Ben, Mr Cole\n").expect("list");
    let namer = Namer::new(&characters);
    let text = "Ann stood at the window of the parlour.\n\n\"You came,\" she said.\n\n\
                \"I did.\" Ben took off his hat.\n\n\"Sit down.\"\n\n\"Thank you.\"\n\n\
                \"Who is there?\" called Silas from the hall.\n\n\
                He went out. The clock struck.\n\n\"Stay,\" said the widow.\n\n\
                Ben went out into the rain.\n\n\"Alone at last,\" she said.";
    let facts = BookFacts::read(text, &characters, &namer);
    let scene = prepare(
        1,
        Span {
            chapter: 1,
            start: 0,
            end: text.len(),
        },
        text,
        &namer,
        &facts,
    );
    let speakers: Vec<&Speaker> = scene.utterances.iter().map(|u| &u.speaker).collect();
    let ann = Speaker::Focus("ann".into());
    let ben = Speaker::Focus("ben".into());
    let silas = Speaker::Other("Silas".into());
    assert_eq!(speakers, [&ann, &ben, &ann, &ben, &silas, &ann, &ann]);
    assert_eq!(scene.location, "the parlour");
    assert_eq!(scene.active, ["ann".to_owned(), "ben".to_owned()].into());
    // "He went out" takes Silas (not a focus character) off; "Ben went out", Ben, from
    // the paragraph after it.
    assert_eq!(scene.exits.len(), 1, "{:?}", scene.exits);
    let gone = scene.exits["ben"];
    assert!(!scene.present_at(gone).contains("ben") && scene.present_at(gone - 1).contains("ben"));
}

#[test]
fn place_phrases_grow_over_names_and_linked_places() {
    assert_eq!(
        place_phrase("St Brendan's chapel was cold.").as_deref(),
        Some("St Brendan's chapel")
    );
    assert_eq!(
        place_phrase("They were in the lamp room of the lighthouse on Gull Point, waiting.")
            .as_deref(),
        Some("the lamp room of the lighthouse on Gull Point")
    );
    assert_eq!(place_phrase("Nobody spoke."), None);
}
