//! The text layer and the deterministic stages on small, made-up passages.

use std::collections::BTreeSet;

use super::narration::place_phrase;
use super::partition::{Span, partition};
use super::prepare::prepare;
use super::scenes::{BookFacts, Speaker};
use super::text::{Namer, Segment, paragraphs, parse_characters, sentences};

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
        ["john-smith", "john-jones", "mary-ann"],
        "ids are whole names"
    );
    assert_eq!(list[0].description(), Some("the smith"));
    let titled = parse_characters(
        "Mr. Merryweather\nBrother Anselm\nMrs. Hudson\nMr. Hudson\nJohn H. Watson\nThe Count\n",
    )
    .expect("list");
    let ids: Vec<&str> = titled.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "merryweather",
            "anselm",
            "mrs-hudson",
            "mr-hudson",
            "john-h-watson",
            "the-count"
        ],
        "titles are not ids; two who would share one keep theirs"
    );
    let err = parse_characters("Mary | x\n | nobody\n").expect_err("no name");
    assert!(err.to_string().starts_with("line 2:"), "{err}");
    let err = parse_characters("Mary\nMary\n").expect_err("twice");
    assert!(err.to_string().contains("already on line 1"), "{err}");
    // One person under two lines: a name that is another line's alias.
    let err = parse_characters("Sherlock Holmes | Holmes\nHolmes | Mr. Holmes\n")
        .expect_err("named twice");
    assert!(
        err.to_string()
            .starts_with("line 2: `Holmes` is already on line 1 (`Sherlock Holmes`)"),
        "{err}"
    );
    // Two who would share an id keep theirs apart; so do two sharing an alias.
    assert!(
        parse_characters("Billy Bones | the captain\nCaptain Smollett | the captain\n").is_ok()
    );
    // A Chinese name's id is its pinyin; a name in a script with no transliteration
    // is an id of its line.
    let chinese = parse_characters("孙悟空 | 悟空\n唐僧 | 三藏\nΑθηνά\n").expect("three names");
    assert_eq!(
        chinese.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["sunwukong", "tangseng", "character-3"]
    );
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
        (&namer, &facts),
        None,
    );
    let speakers: Vec<&Speaker> = scene.utterances.iter().map(|u| &u.speaker).collect();
    let ann = Speaker::Focus("ann-lee".into());
    let ben = Speaker::Focus("ben-cole".into());
    let silas = Speaker::Other("Silas".into());
    assert_eq!(speakers, [&ann, &ben, &ann, &ben, &silas, &ann, &ann]);
    assert_eq!(scene.location, "the parlour");
    assert_eq!(
        scene.active,
        ["ann-lee".to_owned(), "ben-cole".to_owned()].into()
    );
    // "He went out" takes Silas (not a focus character) off; "Ben went out", Ben, from
    // the paragraph after it.
    assert_eq!(scene.exits.len(), 1, "{:?}", scene.exits);
    let gone = scene.exits["ben-cole"];
    assert!(
        !scene.present_at(gone).contains("ben-cole")
            && scene.present_at(gone - 1).contains("ben-cole")
    );
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

fn body(n: usize, word: &str) -> String {
    // Wrapped like a printed book: several lines per paragraph.
    let line = [word; 10].join(" ");
    vec![line; n / 10].join("\n")
}

#[test]
fn common_heading_forms_start_chapters_and_contents_or_part_headings_do_not() {
    let forms = [
        "CHAPTER I\nMr. Sherlock Holmes",
        "Chapter One",
        "Chapter the Second",
        "I. The Crossing",
        "12.",
        "IV",
        "ONE",
        "PART II\n\nThe Flower of Utah",
        // The heading at the end of an illustration's caption (Pride and Prejudice).
        "[Illustration: ·PRIDE AND PREJUDICE·\n\nChapter I.]",
    ];
    for heading in forms {
        let text = format!(
            "THE BOOK\n\nContents\n\n{heading}\n\n{}\n\nCHAPTER XX\n\n{}\n",
            body(100, "alpha"),
            body(100, "beta")
        );
        let p = partition(&text);
        assert_eq!(p.chapters, 2, "{heading:?}");
        assert_eq!(p.title.as_deref(), Some("THE BOOK"), "{heading:?}");
        let first = &text[p.scenes[0].start..p.scenes[0].end];
        assert!(
            first.trim_start().starts_with("alpha"),
            "{heading:?}: {first:?}"
        );
        assert!(!first.contains("beta") && !first.contains("Contents"));
    }
    // A contents list of headings, a part heading with a subtitle: front matter, not
    // chapters.
    let text = format!(
        "A TALE\n\n      Contents\n\nI. The Crossing\n\nII. The Storm\n\n\
         PART I\n\n(Being a reprint from the reminiscences of a doctor.)\n\n\
         I. The Crossing\n\n{}\n\nII. The Storm\n\n{}\n",
        body(100, "alpha"),
        body(100, "beta")
    );
    let p = partition(&text);
    assert_eq!(p.chapters, 2);
    assert_eq!(p.scenes.len(), 2);
    assert!(
        text[p.scenes[0].start..p.scenes[0].end]
            .trim_start()
            .starts_with("alpha")
    );
    // Prose that starts with a numeral or a capital word is no heading.
    let text = format!(
        "CHAPTER I\n\n{}\n\nI. said nothing at all to him\nthat night.\n\n{}\n",
        body(100, "alpha"),
        body(100, "beta")
    );
    assert_eq!(partition(&text).chapters, 1);
}

#[test]
fn a_paragraph_opening_at_another_time_starts_a_scene_inside_a_chapter() {
    let text = format!(
        "CHAPTER I\n\n{}\n\nAt three o'clock precisely I was at Baker Street, but he\n\
         had not yet returned.\n\n{}\n\n\"Not a word of this,\" said he, \"o'clock or no.\"\n\n{}\n",
        body(200, "alpha"),
        body(200, "beta"),
        body(200, "gamma")
    );
    let p = partition(&text);
    assert_eq!(p.chapters, 1);
    assert_eq!(p.scenes.len(), 2, "a quote naming the hour starts nothing");
    assert!(
        text[p.scenes[1].start..p.scenes[1].end].starts_with("At three o'clock precisely"),
        "{:?}",
        &text[p.scenes[1].start..]
    );
}

/// Attributes `text` (one scene of chapter 1) with the list, first-person when the
/// narration says so.
fn attributed(list: &str, text: &str) -> super::scenes::Scene {
    let characters = parse_characters(list).expect("list");
    let namer = Namer::new(&characters);
    let facts = BookFacts::read(text, &characters, &namer);
    let span = Span {
        chapter: 1,
        start: 0,
        end: text.len(),
    };
    let narrators = super::narration::narrators(text, &[span], &characters, &namer);
    prepare(
        1,
        span,
        text,
        (&namer, &facts),
        narrators.get(&1).map(String::as_str),
    )
}

/// Who speaks each of the scene's lines: a focus character's id, or `?`.
fn focus_speakers(scene: &super::scenes::Scene) -> Vec<&str> {
    scene
        .utterances
        .iter()
        .map(|u| u.speaker.focus().unwrap_or("?"))
        .collect()
}

/// Who speaks each of the scene's lines: a focus character's id, or `other:` and the
/// name the text gives.
fn all_speakers(scene: &super::scenes::Scene) -> Vec<String> {
    scene
        .utterances
        .iter()
        .map(|u| match &u.speaker {
            Speaker::Focus(id) => id.clone(),
            Speaker::Other(n) => format!("other:{n}"),
        })
        .collect()
}

/// Whether `id` is on stage at `paragraph`, with the scene's stays and exits on failure.
fn assert_on_stage(scene: &super::scenes::Scene, paragraph: usize, id: &str, on_stage: bool) {
    assert_eq!(
        scene.present_at(paragraph).contains(id),
        on_stage,
        "{id} at paragraph {paragraph}: stays {:?}, exits {:?}",
        scene.stays,
        scene.exits
    );
}

#[test]
fn the_first_person_narrator_speaks_as_i_and_is_on_stage_throughout() {
    let text = "I was standing at the bar when young Stamford found me, and I \
                was glad of it, for I had been lonely.\n\n\
                \"Whatever have you been doing with yourself, Watson?\" he asked.\n\n\
                \"Looking for lodgings,\" I answered.\n\n\
                \"That's a strange thing,\" remarked my companion; \"you are the \
                second man to-day.\"\n\n\
                \"And who was the first?\" I asked.\n\n\
                \"A fellow at the hospital. He works there from morning to night. He\n\
                is a little queer in his ideas.\n\n\
                \"But he is a decent fellow enough, and Holmes is his name.\"\n\n\
                \"Why, what is there against him?\"\n\n\
                Young Stamford shrugged. \"Nothing, Watson.\"";
    let list =
        "John Watson | Watson | narrator\nStamford | young Stamford\nSherlock Holmes | Holmes\n";
    let scene = attributed(list, text);
    assert_eq!(scene.narrator.as_deref(), Some("john-watson"));
    let said: Vec<(String, String)> = scene
        .utterances
        .iter()
        .map(|u| {
            let who = match &u.speaker {
                Speaker::Focus(id) => id.clone(),
                Speaker::Other(n) => format!("other:{n}"),
            };
            (
                who,
                u.text
                    .split_whitespace()
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        })
        .collect();
    let expected = [
        ("stamford", "Whatever have"),
        ("john-watson", "Looking for"),
        ("stamford", "That's a"),
        ("stamford", "you are"),
        ("john-watson", "And who"),
        ("stamford", "A fellow"),
        ("stamford", "But he"),
        ("john-watson", "Why, what"),
        ("stamford", "Nothing, Watson."),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    assert_eq!(said, expected);
    // The narrator is there from the first paragraph; Holmes is only talked about.
    assert_eq!(scene.entries.get("john-watson"), Some(&0));
    assert!(scene.present().any(|c| c == "stamford"));
    assert!(
        !scene.present().any(|c| c == "sherlock-holmes"),
        "{:?}",
        scene.entries
    );
    assert!(scene.referenced.contains("sherlock-holmes"));
}

#[test]
fn without_a_mark_the_narrator_is_the_one_addressed_by_name_and_third_person_has_none() {
    let first = "I sat by the fire, and my friend stood at the window. I said \
                 nothing for a while, and I waited.\n\n\
                 \"You look tired, Watson,\" said Holmes.\n\n\
                 \"I am, Holmes,\" I said. \"Very.\"\n\n\
                 \"Then sleep, Watson.\"";
    let scene = attributed("John Watson | Watson\nSherlock Holmes | Holmes\n", first);
    assert_eq!(scene.narrator.as_deref(), Some("john-watson"));
    let third = "Holmes sat by the fire, and Watson stood at the window. He said \
                 nothing for a while, and the clock ticked.\n\n\
                 \"You look tired, Watson,\" said Holmes.";
    let scene = attributed(
        "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n",
        third,
    );
    assert_eq!(scene.narrator, None);
}

#[test]
fn a_line_nobody_can_be_given_stays_unattributed_and_entrances_bound_what_is_heard() {
    let text = "The room was empty and cold, and the fire had gone out long before.\n\n\
                \"Is anyone there?\"\n\n\
                Ann came in and sat by the hearth.\n\n\
                \"The key is under the stone,\" said Ben from the doorway.\n\n\
                Ben went in to Ann.";
    let scene = attributed("Ann Lee | Ann\nBen Cole | Ben\n", text);
    // The first line: no tag, no one on stage, no conversation: nobody's.
    assert_eq!(scene.utterances.len(), 1, "{:?}", scene.utterances);
    assert_eq!(
        scene.utterances[0].speaker,
        Speaker::Focus("ben-cole".into())
    );
    assert_eq!(scene.entries.get("ann-lee"), Some(&2));
    assert_eq!(scene.entries.get("ben-cole"), Some(&3));
    assert!(!scene.present_at(1).contains("ann-lee"));
    assert!(scene.present_at(3).contains("ann-lee") && scene.present_at(3).contains("ben-cole"));
}

#[test]
fn a_speaker_who_says_who_he_is_is_that_character() {
    let text = "Two men sat in the room when Ferrier came in, and they nodded to him.\n\n\
                \"Maybe you don't know us,\" he said. \"This here is the son of Elder Drebber, \
                and I'm Joseph Stangerson.\"\n\n\
                \"You may call me Ferrier,\" said Ferrier.";
    let scene = attributed(
        "John Ferrier | Ferrier\nJoseph Stangerson | Stangerson\nEnoch Drebber | Drebber\n",
        text,
    );
    let speakers: Vec<&Speaker> = scene.utterances.iter().map(|u| &u.speaker).collect();
    let joseph = Speaker::Focus("joseph-stangerson".into());
    let john = Speaker::Focus("john-ferrier".into());
    assert_eq!(speakers, [&joseph, &joseph, &john]);
}

#[test]
fn names_in_the_narrator_s_reflections_and_possessives_put_no_one_on_stage() {
    let text = "I reviewed the whole sequence as I rattled on through the streets, and I \
                thought it over.\n\n\
                The death of Captain Morstan, the sending of the pearls,--we had had light \
                upon all those events. The Indian treasure, the curious plan found among \
                Morstan's baggage, the strange scene at Major Sholto's death, the rediscovery \
                of the treasure.\n\nHolmes's face lit up as he met me at the gate.";
    let scene = attributed(
        "John Watson | Watson | narrator\nCaptain Arthur Morstan | Captain Morstan, Morstan\n\
         Major John Sholto | Major Sholto, Sholto\nSherlock Holmes | Holmes\n",
        text,
    );
    let on_stage: Vec<&String> = scene.entries.keys().collect();
    assert_eq!(on_stage, ["john-watson", "sherlock-holmes"]);
}

#[test]
fn an_untagged_reply_goes_to_the_one_other_person_there_or_to_whom_the_last_line_was_said() {
    let ids = |scene: &super::scenes::Scene| -> Vec<String> {
        scene
            .utterances
            .iter()
            .map(|u| u.speaker.focus().unwrap_or("?").to_owned())
            .collect()
    };
    let list = "John Watson | Watson | narrator\nMrs. Hudson | our landlady\n\
                Sherlock Holmes | Holmes, Mr. Holmes\n";
    let text = "I sat alone in my room that night, and I listened to the rain until I \
                was weary of it.\n\n\
                \"I suppose that Mr. Holmes has gone out,\" I said to Mrs. Hudson as she \
                came up.\n\n\
                \"No, sir. He has gone to his room.\"\n\n\
                \"Why so?\"";
    assert_eq!(
        ids(&attributed(list, text)),
        ["john-watson", "hudson", "john-watson"]
    );
    let text = "It was half-past five before Holmes returned, and I was glad to see him, \
                for I had waited long and my tea was cold.\n\n\
                \"There is no great mystery in this,\" he said.\n\n\
                \"What! you have solved it already?\"";
    assert_eq!(
        ids(&attributed(list, text)),
        ["sherlock-holmes", "john-watson"]
    );
}

#[test]
fn a_middle_initial_ends_no_sentence_and_one_person_named_twice_is_one_mention() {
    assert_eq!(
        sentences("They were those of Enoch J. Drebber, of Cleveland. \"No,\" said I. Then"),
        [
            "They were those of Enoch J. Drebber, of Cleveland.",
            "\"No,\" said I.",
            "Then"
        ]
    );
    let characters = parse_characters("McMurdo | the ex-prize-fighter\nSherlock Holmes | Holmes\n")
        .expect("list");
    let namer = Namer::new(&characters);
    let text = "The ex-prize-fighter McMurdo had, I found, been arrested.";
    let mentions = namer.mentions(text);
    assert_eq!(mentions.len(), 1, "{mentions:?}");
    assert_eq!(
        &text[mentions[0].start..mentions[0].end],
        "The ex-prize-fighter McMurdo"
    );
    assert!(mentions[0].by_name);
}

#[test]
fn a_span_of_days_opens_a_scene_and_a_plain_for_does_not() {
    let text = format!(
        "CHAPTER I\n\n{}\n\nFor five days he toiled footsore through the defiles.\n\n{}\n\n\
         For he was weary, and the night was long.\n\n{}\n",
        body(200, "alpha"),
        body(200, "beta"),
        body(200, "gamma")
    );
    let p = partition(&text);
    assert_eq!(p.scenes.len(), 2, "{:?}", p.scenes);
    assert!(text[p.scenes[1].start..].starts_with("For five days"));
}

#[test]
fn graves_absences_lists_and_things_owed_put_no_one_on_stage() {
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n\
                John Ferrier | Ferrier\nMary Morstan | Miss Morstan\nMajor Sholto | Sholto\n\
                Enoch Drebber | Drebber\nMrs. Forrester | Mrs. Forrester\n";
    let text = "I sat with Holmes by the window, and I watched the street below us, as I \
                often did.\n\n\
                JOHN FERRIER, Formerly of Salt Lake City, Died August 4th, 1860.\n\n\
                That, or part of it, belonged rightfully to Miss Morstan.\n\n\
                It was no groundless terror which had possessed Major Sholto.\n\n\
                The four principal Elders were Stangerson, Kemball, Johnston, and Drebber.\n\n\
                Mrs. Forrester was out for the evening.";
    let scene = attributed(list, text);
    let on_stage: Vec<&String> = scene.entries.keys().collect();
    assert_eq!(on_stage, ["john-watson", "sherlock-holmes"]);
    // The one an action is directed at still comes on stage.
    let scene = attributed(
        list,
        "I was alone, and I waited for an hour, as I had promised.\n\nI turned to Miss Morstan.",
    );
    assert!(
        scene.entries.contains_key("mary-morstan"),
        "{:?}",
        scene.entries
    );
}

#[test]
fn when_the_narrator_moves_on_those_not_shown_again_are_left_behind() {
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n\
                Mrs. Bernstone | the housekeeper\n";
    let text = "I stood in the passage, and I waited for my friend, as I had promised.\n\n\
                The housekeeper wrung her hands by the lamp.\n\n\
                \"He has locked himself in,\" said the housekeeper.\n\n\
                Holmes nodded, and we ascended the stair.\n\n\
                \"Look at this,\" said Holmes.\n\n\
                The dead man sat in his chair, grinning.";
    let scene = attributed(list, text);
    assert_on_stage(&scene, 2, "bernstone", true);
    assert_on_stage(&scene, 4, "bernstone", false);
    assert_on_stage(&scene, 5, "bernstone", false);
    assert_on_stage(&scene, 5, "sherlock-holmes", true);
    // All together, the company goes along.
    let text = text.replace(
        "we ascended the stair",
        "we all ascended the stair together",
    );
    let scene = attributed(list, &text);
    assert_on_stage(&scene, 5, "bernstone", true);
}

#[test]
fn remarked_and_observed_tag_the_narrator_and_others() {
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n\
                Jonathan Small | Small\n";
    let text = "I sat with Holmes after Small was taken away, and I smoked.\n\n\
                \"Well, and there is the end of our little drama,\" I remarked. \"I fear it is \
                the last.\"\n\n\
                \"I feared as much,\" observed Holmes.";
    let scene = attributed(list, text);
    let speakers = focus_speakers(&scene);
    assert_eq!(speakers, ["john-watson", "john-watson", "sherlock-holmes"]);
}

#[test]
fn those_who_leave_together_are_gone_and_one_who_reappears_was_away_since_last_shown() {
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n\
                Athelney Jones | Jones\nJonathan Small | Small\nLestrade\n";
    let text = "I sat with Holmes and the prisoner, and I said nothing, as I was tired.\n\n\
                \"You first, Small,\" remarked the wary Jones as they left the room.\n\n\
                \"Well, and there is the end of our little drama,\" I remarked.";
    let scene = attributed(list, text);
    assert_on_stage(&scene, 1, "athelney-jones", true);
    assert_on_stage(&scene, 2, "athelney-jones", false);
    assert_on_stage(&scene, 2, "jonathan-small", false);

    let text = "I stood in the hall with Holmes, and I listened, as I always did.\n\n\
                Lestrade came in and nodded to us.\n\n\
                \"We telegraphed this morning,\" said Holmes.\n\n\
                \"I asked about Stangerson,\" said Holmes.\n\n\
                Holmes chuckled, when Lestrade, who had been in the front room, reappeared \
                upon the scene.";
    let scene = attributed(list, text);
    assert_on_stage(&scene, 1, "lestrade", true);
    assert_on_stage(&scene, 3, "lestrade", false);
    assert_on_stage(&scene, 4, "lestrade", true);
}

#[test]
fn a_stranger_the_narration_brings_in_is_the_next_he_not_a_listed_character() {
    let list =
        "John Watson | Watson | narrator\nSherlock Holmes | Holmes\nMary Morstan | Miss Morstan\n";
    let text = "I stood with Holmes and Miss Morstan by the pillar, and I waited, as I had \
                been told.\n\n\
                The clock struck before a small, dark, brisk man in the dress of a coachman \
                accosted us.\n\n\
                \"Are you the parties who come with Miss Morstan?\" he asked.\n\n\
                \"I am Miss Morstan,\" said she.\n\n\
                Holmes looked at the man like a man who knows. \"Quite so,\" he said.";
    let scene = attributed(list, text);
    let speakers = all_speakers(&scene);
    assert_eq!(
        speakers,
        ["other:the man", "mary-morstan", "sherlock-holmes"],
        "a listed man shown since takes the pronoun"
    );
}

#[test]
fn lines_retold_inside_a_quote_are_given_to_those_who_first_said_them() {
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n\
                Tobias Gregson | Gregson\nMadame Charpentier | the mother\n\
                Alice Charpentier | Alice, the daughter\nEnoch Drebber | Drebber\n";
    let text = "I sat with Holmes when Gregson came in, and I listened, as he talked.\n\n\
                \"I called at the house,\" said Gregson. \"The mother was there, and Alice \
                too.\n\n\
                \"'No good can ever come of falsehood, mother,' the daughter said. 'We did \
                see Mr. Drebber again.'\n\n\
                \"'God forgive you!' cried Madame Charpentier. 'You have ruined us.'\n\n\
                \"'You had best tell me all,' I said.\"\n\n\
                \"Capital!\" said Holmes.";
    let scene = attributed(list, text);
    let retold: Vec<(&str, &str)> = scene
        .retold
        .iter()
        .map(|u| (u.speaker.focus().unwrap_or("?"), &u.text[..12]))
        .collect();
    assert_eq!(
        retold,
        [
            ("alice-charpentier", "No good can "),
            ("alice-charpentier", "We did see M"),
            ("charpentier", "God forgive "),
            ("charpentier", "You have rui"),
            ("tobias-gregson", "You had best"),
        ]
    );
    // The teller says all of it here; those it retells are not in the room.
    let tellers: BTreeSet<&str> = scene
        .utterances
        .iter()
        .filter_map(|u| u.speaker.focus())
        .collect();
    assert_eq!(
        tellers,
        BTreeSet::from(["tobias-gregson", "sherlock-holmes"])
    );
    assert!(!scene.present().any(|c| c.contains("charpentier")));
}

#[test]
fn a_group_sent_off_leaves_and_a_figure_seen_from_afar_is_not_in_the_room() {
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n\
                Wiggins | young Wiggins\nMordecai Smith | old Smith\n";
    let text = "I sat with Holmes in our rooms, and I waited, as the boys came up.\n\n\
                Wiggins stood in front of the others.\n\n\
                \"Got your message, sir,\" said Wiggins.\n\n\
                \"Now off you go!\" said Holmes. He handed them a shilling each, and away \
                they buzzed down the stairs.\n\n\
                \"Toby could eat these scraps,\" I said.\n\n\
                \"Then we shall go,\" said Holmes.";
    let scene = attributed(list, text);
    assert_on_stage(&scene, 2, "wiggins", true);
    assert_on_stage(&scene, 4, "wiggins", false);
    assert_on_stage(&scene, 5, "sherlock-holmes", true);

    let text = "I stood with Holmes on the deck, and I watched, as the launch closed in.\n\n\
                Against the glare of the furnace I could see old Smith, stripped to the \
                waist, shovelling coals.\n\n\
                \"We shall have them,\" said Holmes.";
    let scene = attributed(list, text);
    assert_on_stage(&scene, 2, "mordecai-smith", false);
    // Seen up close, he is there.
    let text = text.replace("I could see old Smith", "old Smith stood");
    let scene = attributed(list, &text);
    assert_on_stage(&scene, 2, "mordecai-smith", true);
}

#[test]
fn after_a_move_in_time_the_one_man_just_shown_is_the_he_of_the_next_line() {
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n";
    let text = "Sherlock Holmes took his bottle from the mantelpiece. I watched, and I said \
                nothing.\n\n\
                Yet upon that afternoon I could hold out no longer.\n\n\
                \"Which is it to-day?\" I asked.\n\n\
                \"It is cocaine,\" he said.";
    let scene = attributed(list, text);
    let speakers = focus_speakers(&scene);
    assert_eq!(speakers, ["john-watson", "sherlock-holmes"]);
}

#[test]
fn those_a_teller_says_acted_or_lived_it_alongside_know_what_is_told() {
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n\
                Thaddeus Sholto | Thaddeus\nBartholomew Sholto | Bartholomew\n\
                Major John Sholto | Major Sholto, the major\nArthur Morstan | Morstan\n";
    let text = "I sat with Holmes and Thaddeus in the little room, and I listened.\n\n\
                \"My brother and I were called to him,\" said Thaddeus. \"Early in that year \
                my father received a letter from India. He kept it from us.\n\n\
                \"When we entered his room he was propped up with pillows.\n\n\
                \"'I will tell you how Morstan died,' he said. 'He had a weak heart.' Morstan \
                was a brave man, they say. Then the major wrote a note.\"\n\n\
                \"A singular story,\" said Holmes.";
    let scene = attributed(list, text);
    let actors_of = |start: &str| -> Vec<&str> {
        let s = scene
            .sentences
            .iter()
            .find(|s| s.text.trim_start_matches(['\'', '"']).starts_with(start))
            .unwrap_or_else(|| panic!("no sentence {start}: {:#?}", scene.sentences));
        s.actors.iter().map(String::as_str).collect()
    };
    // "my father", said by a Sholto: the family's elder.
    assert_eq!(actors_of("Early in that year"), ["john-sholto"]);
    // "we", after "my brother and I": the brother lived it too.
    assert_eq!(actors_of("When we entered"), ["bartholomew-sholto"]);
    // A retold line: who first said it, and who heard it with the teller.
    assert_eq!(
        actors_of("I will tell you how Morstan died"),
        ["bartholomew-sholto", "john-sholto"]
    );
    // Talked about is not acting; a name then a past act is.
    assert!(actors_of("Morstan was a brave man").is_empty());
    assert_eq!(actors_of("Then the major wrote"), ["john-sholto"]);
    // The teller's own words are not the retold father's.
    assert!(!actors_of("He kept it from us").contains(&"john-sholto"));
}

#[test]
fn her_companion_is_not_she_and_the_other_is_the_partner_in_the_exchange() {
    let list = "Lucy Ferrier | Lucy\nJefferson Hope | Hope, the young hunter\n";
    let text = "Hope came up on his roan, and he caught the bridle. Lucy looked up at him, \
                and she laughed.\n\n\
                \"Thank God you kept your seat,\" said her companion.\n\n\
                \"I'm awful frightened,\" she said.\n\n\
                \"Neither would I be anything else,\" the other said.";
    let scene = attributed(list, text);
    let speakers = focus_speakers(&scene);
    assert_eq!(
        speakers,
        ["jefferson-hope", "lucy-ferrier", "jefferson-hope"]
    );
}

#[test]
fn a_fact_reads_its_main_clause_not_its_first_words() {
    use super::clause::Clause;
    let read = |text: &str, names: &[&str], teller: Option<&str>, he: Option<&str>| {
        let named: Vec<(usize, usize, String)> = names
            .iter()
            .map(|n| {
                let at = text.find(n).expect("name in text");
                (at, at + n.len(), (*n).to_owned())
            })
            .collect();
        let c = Clause::read(text, &named, teller, he);
        (c.subject, c.predicate, c.object)
    };
    let own = |s: &str, p: &str, o: &str| (s.to_owned(), p.to_owned(), o.to_owned());
    // A name, adverbs skipped, an auxiliary and its verb, a name as object.
    assert_eq!(
        read(
            "Then Holmes quietly had shown Drebber the ring.",
            &["Holmes", "Drebber"],
            None,
            None
        ),
        own("Holmes", "had shown", "Drebber")
    );
    // "I" is the teller; a leading clause is passed over.
    assert_eq!(
        read(
            "When we reached the house, I knocked at the door.",
            &[],
            Some("John Watson"),
            None
        ),
        own("John Watson", "knocked", "at the door")
    );
    // "he" is the one the paragraph named; a pronoun inside a phrase is the subject.
    assert_eq!(
        read(
            "According to my notion he dropped it there.",
            &[],
            None,
            Some("Jefferson Hope")
        ),
        own("Jefferson Hope", "dropped", "it there")
    );
    // A noun phrase; a prepositional phrase holding a verb is the main clause.
    assert_eq!(
        read("The window of the room was found open.", &[], None, None),
        own("The window of the room", "was found", "open")
    );
    assert_eq!(
        read(
            "On that the Secretary gave it up, and left.",
            &[],
            None,
            None
        )
        .1,
        "gave"
    );
    // No clause, no subject or predicate.
    assert_eq!(read("Capital!", &[], None, None), own("", "", ""));
}

/// A scene whose one untagged line no rule can give: Holmes and Lestrade are both on
/// stage and neither is its turn-taking partner.
fn scene_with_an_unknown_line() -> (
    String,
    super::scenes::Scene,
    Vec<super::text::FocusCharacter>,
) {
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\nLestrade\n\
                Enoch Drebber | Drebber\n";
    let text = "I stood in the room with Holmes and Lestrade, and I watched, as I had \
                been told.\n\n\
                Holmes knelt by the body. Lestrade stood at the door.\n\n\
                \"There has been foul play here.\"\n\n\
                \"Capital,\" said Holmes."
        .to_owned();
    let scene = attributed(list, &text);
    (text, scene, parse_characters(list).expect("list"))
}

#[tokio::test]
async fn the_model_gives_an_unknown_line_to_one_on_stage_and_no_one_else() {
    use std::sync::Arc;

    use dramatis_llm::{ScriptRule, ScriptedModel};

    use super::refine::Refiner;

    let (text, scene, characters) = scene_with_an_unknown_line();
    let namer = Namer::new(&characters);
    assert_eq!(
        scene.unattributed,
        [(2, "There has been foul play here.".to_owned())],
        "{:?}",
        scene.utterances
    );
    let run = |reply: &str| {
        let model = ScriptedModel::new(vec![ScriptRule {
            when: vec!["Who speaks each numbered line".into()],
            reply: reply.into(),
        }]);
        let refiner = Refiner::new(Some(Arc::new(model.clone())), None).expect("refiner");
        let mut scene = scene.clone();
        let text = text.clone();
        let (characters, namer) = (characters.clone(), namer.clone());
        async move {
            super::refine_speakers(&refiner, &mut scene, &text, &characters, &namer).await;
            (scene, refiner.rejections(), model.prompts())
        }
    };
    // One of those on stage: the line is theirs.
    let (done, rejected, prompts) =
        run(r#"{"speakers": [{"line": 1, "speaker": "Lestrade"}]}"#).await;
    assert!(rejected.is_empty(), "{rejected:?}");
    assert!(done.unattributed.is_empty());
    let line = done
        .utterances
        .iter()
        .find(|u| u.text.starts_with("There has been"))
        .expect("given");
    assert_eq!(line.speaker, Speaker::Focus("lestrade".into()));
    assert!(done.active.contains("lestrade"));
    // The prompt offers only those on stage, the narrator as "I".
    let prompt = prompts[0].text();
    assert!(
        prompt.contains("Sherlock Holmes") && prompt.contains("(the narrator"),
        "{prompt}"
    );
    assert!(!prompt.contains("Enoch Drebber"), "{prompt}");
    // Someone not on stage is refused (asked twice), and the line stays unknown.
    let (done, rejected, prompts) =
        run(r#"{"speakers": [{"line": 1, "speaker": "Drebber"}]}"#).await;
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert!(
        rejected[0].reason.contains("not one who may say"),
        "{rejected:?}"
    );
    assert_eq!(prompts.len(), 2);
    assert_eq!(done.unattributed.len(), 1);
    assert!(!done.present().any(|c| c == "enoch-drebber"));
}

#[test]
fn a_speaker_named_by_title_and_surname_keeps_both() {
    // The Sign of the Four, chapter 7: the bird-stuffer is in no character list.
    let list = "John Watson | Watson | narrator\nSherlock Holmes | Holmes\n";
    let text = "I knocked at the door with Holmes beside me, and I waited, as I had \
                been told.\n\n\
                \"I won't be argued with!\" shouted Mr. Sherman. \"Now stand clear.\"\n\n\
                \"Mr. Holmes sent me,\" I said.\n\n\
                \"Then come in,\" said Inspector Gregson, \"and be quick.\"\n\n\
                \"Who is there?\" asked Mrs, and no more.";
    let scene = attributed(list, text);
    let speakers = all_speakers(&scene);
    assert_eq!(
        &speakers[..4],
        [
            "other:Mr. Sherman",
            "other:Mr. Sherman",
            "john-watson",
            "other:Inspector Gregson"
        ],
        "{speakers:?}"
    );
    // A title with no name after it is no one's name.
    assert!(
        speakers.iter().all(|s| s != "other:Mrs" && s != "other:Mr"),
        "{speakers:?}"
    );
}

#[test]
fn a_book_of_documents_cuts_a_scene_at_each_heading_and_entry_told_by_its_writer() {
    let entry = |date: &str, words: &str| {
        format!(
            "_{date}._--I {} and my {} me.",
            body(20, words),
            body(20, words)
        )
    };
    let text = format!(
        "CHAPTER I\n\nJONATHAN HARKER'S JOURNAL\n\n{}\n\n{}\n\n\
         _Letter from Miss Mina Murray to Miss Lucy Westenra._\n\nI write to you of me and my \
         {} is mine.\n\n_Dr. Seward's Diary._\n\n{}\n\n\
         _The Pall Mall Gazette, 18 September._\n\nThe keeper said the wolf {} that night.\n",
        entry("3 May. Bistritz", "alpha"),
        entry("4 May", "beta"),
        body(40, "gamma"),
        entry("25 May", "delta"),
        body(40, "epsilon")
    );
    let p = partition(&text);
    let headings: Vec<&str> = p.documents.iter().map(|(_, h)| h.as_str()).collect();
    assert_eq!(
        headings,
        [
            "JONATHAN HARKER'S JOURNAL",
            "Letter from Miss Mina Murray to Miss Lucy Westenra",
            "Dr. Seward's Diary",
            "The Pall Mall Gazette, 18 September"
        ]
    );
    // Each dated entry is a unit of its own; each document opens a scene, however
    // short, with its heading (the journal's is the chapter's title, above the body).
    let starts: Vec<&str> = p
        .scenes
        .iter()
        .map(|s| text[s.start..s.end].split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(starts, ["_3", "_Letter", "_Dr.", "_The"], "{:?}", p.scenes);
    assert!(p.units.len() >= 6, "{:?}", p.units);
    let list = "Jonathan Harker | Harker | narrator\nMina Murray | Mina | narrator\n\
                Lucy Westenra | Lucy\nJohn Seward | Dr. Seward, Seward | narrator\n";
    let characters = parse_characters(list).expect("list");
    let namer = Namer::new(&characters);
    let scenes = super::read_scenes(&text, &characters, &namer, &p, &p.scenes);
    let tellers: Vec<Option<&str>> = scenes.iter().map(|s| s.narrator.as_deref()).collect();
    assert_eq!(
        tellers,
        [
            Some("jonathan-harker"),
            Some("mina-murray"),
            Some("john-seward"),
            None
        ],
        "the cutting has no writer on the list"
    );
}

#[test]
fn verse_whose_paragraphs_are_indents_gets_its_blank_lines_and_a_book_without_any_mark_is_refused()
{
    let dir = tempfile::tempdir().expect("dir");
    // Blank verse as Paradise Lost is printed: a verse paragraph opens indented.
    let stanza = format!(
        "    Of Man's first disobedience, and the fruit\n{}",
        "Of that forbidden tree whose mortal taste\n".repeat(60)
    );
    let path = dir.path().join("verse.txt");
    std::fs::write(&path, format!("BOOK I\n\n{}", stanza.repeat(8))).expect("write");
    let text = super::text::read_book(&path).expect("verse is read");
    assert_eq!(
        text.matches("\n\n    Of Man's").count(),
        8,
        "{}",
        &text[..300]
    );
    // Wrapped prose with no blank line, indent or long line: nothing marks a paragraph.
    std::fs::write(&path, "The tide came in over the shingle.\n".repeat(500)).expect("write");
    let err = super::text::read_book(&path).expect_err("no paragraphs");
    assert!(err.to_string().contains("no paragraphs"), "{err:#}");
}

#[test]
fn a_form_two_characters_share_puts_neither_on_stage_nor_speaks_for_either() {
    let list = "Jim Hawkins | Jim | narrator\nBilly Bones | Bones, the captain\n\
                Captain Smollett | Smollett, the captain\n";
    let text = "I was in the parlour at noon, and I watched the road.\n\n\
                The captain came in and sat down by the fire.\n\n\
                \"Rum,\" said the captain.\n\n\
                Bones drank it off.\n";
    let scene = attributed(list, text);
    // "The captain" is either man: neither is shown by it, nor given the line.
    assert_on_stage(&scene, 1, "smollett", false);
    assert_on_stage(&scene, 1, "billy-bones", false);
    assert!(
        scene
            .utterances
            .iter()
            .all(|u| !matches!(u.speaker.focus(), Some("smollett" | "billy-bones"))),
        "{:?}",
        scene.utterances
    );
    // The full name shows him.
    assert_on_stage(&scene, 3, "billy-bones", true);
}
mod chinese;
mod speakers;

/// A chapter of first-person narration in which the other narrator is called by name.
fn told_chapter(heading: &str, word: &str) -> String {
    format!(
        "{heading}\n\n{}\n\nI went down to the beach, and my hands shook. I took my pistol and I \
         looked about me.\n\n\"Come, Jim,\" said the squire, \"we must go.\"\n\n\"Aye, Jim, \
         come,\" said the squire again.\n\n{}\n\n",
        body(200, word),
        body(200, word)
    )
}

#[test]
fn a_chapter_titled_with_its_teller_is_told_by_that_teller() {
    let list = "Jim Hawkins | Jim, Hawkins | narrator\n\
                Dr. Livesey | Livesey, Doctor, the doctor | narrator\n\
                Squire Trelawney | the squire\n";
    let characters = parse_characters(list).expect("list");
    let namer = Namer::new(&characters);
    let text = format!(
        "{}{}{}",
        told_chapter("CHAPTER I", "alpha"),
        told_chapter(
            "CHAPTER II\nNarrative Continued by the Doctor: How the Ship Was Abandoned",
            "beta"
        ),
        told_chapter(
            "CHAPTER III\nNARRATIVE RESUMED BY JIM HAWKINS: THE STOCKADE",
            "gamma"
        ),
    );
    let p = partition(&text);
    assert_eq!(p.chapters, 3);
    let narrators = super::narration::narrators(&text, &p.scenes, &characters, &namer);
    // Chapter I has no title: the one called by name in its quotes tells it. Chapter
    // II's title names the doctor, whom no quote calls; chapter III's, in capitals, Jim.
    let ids: Vec<(usize, &str)> = narrators.iter().map(|(c, id)| (*c, id.as_str())).collect();
    assert_eq!(
        ids,
        [(1, "jim-hawkins"), (2, "livesey"), (3, "jim-hawkins")],
        "{narrators:?}"
    );
}
