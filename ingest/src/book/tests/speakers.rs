//! Who says a line, where a guess would give it the wrong name: a lead-in paragraph, a
//! name the line addresses, a form two characters share, a capital that is no name.

use super::{all_speakers, assert_on_stage, attributed};

#[test]
fn a_paragraph_that_leads_in_gives_the_next_paragraph_s_line_its_speaker() {
    let list = "Ann Lee | Ann\nBen Cole | Ben\nCora Hale | Cora\n";
    let text = "Ann, Ben and Cora sat in the parlour.\n\n\"It is late,\" said Ann.\n\n\
                Then Cora turned to Ben and said:--\n\n\"Say, Ben, will you walk me home?\"\n\n\
                \"Gladly,\" said Ben.";
    let scene = attributed(list, text);
    // Turn-taking alone would give the question to Ben, whom it addresses.
    assert_eq!(all_speakers(&scene), ["ann-lee", "cora-hale", "ben-cole"]);
}

#[test]
fn the_speaker_of_a_lead_in_is_read_from_a_whole_name() {
    let list = "Kitty Bennet | Kitty, Catherine\nLady Catherine de Bourgh | Lady Catherine\n\
                Elizabeth Bennet | Elizabeth\n";
    let text = "Elizabeth and Lady Catherine stood in the garden.\n\n\
                \"You are mistaken,\" said Elizabeth.\n\n\
                Lady Catherine hesitated for a moment, and then replied,--\n\n\
                \"The engagement between them is of a peculiar kind.\"";
    let scene = attributed(list, text);
    assert_eq!(
        all_speakers(&scene),
        ["elizabeth-bennet", "catherine-de-bourgh"]
    );
    // Kitty was never there: "Catherine" inside "Lady Catherine" is not her.
    assert_on_stage(&scene, 3, "kitty-bennet", false);
}

#[test]
fn a_name_or_title_addressed_is_not_the_speaker_nor_is_a_name_inside_a_retold_line() {
    let list = "Abe Helsing | Van Helsing, Professor\nJohn Seward | John, Jack, Seward\n\
                Quincey Morris | Quincey\n";
    // "Oh, Professor," and "My friend John," address their listener; an untagged
    // reply is never someone the line names.
    let text = "Van Helsing, Seward and Quincey sat by the fire.\n\n\
                \"We must watch tonight,\" said Van Helsing.\n\n\
                \"Oh, Professor, must we?\"\n\n\
                \"My friend John, we must.\"";
    let scene = attributed(list, text);
    let speakers = all_speakers(&scene);
    assert_eq!(speakers[0], "abe-helsing");
    assert_ne!(speakers.get(1).map(String::as_str), Some("abe-helsing"));
    assert_ne!(speakers.get(2).map(String::as_str), Some("john-seward"));
    // A teller quoting what another said to him: "'All right, cabby,' said he" does not
    // address the teller, who goes on telling.
    let list =
        "Jeff Hope | Hope, cabby\nEnoch Drebber | Drebber\nJohn Watson | Watson | narrator\n";
    let text = "I sat with Hope in the cell. Hope said:\n\n\
                \"I found Drebber asleep in the cab.\n\n\
                \"'All right, cabby,' said he.\"";
    let scene = attributed(list, text);
    assert_eq!(all_speakers(&scene), ["jeff-hope", "jeff-hope"]);
}

#[test]
fn his_secretary_mr_x_is_an_apposition_not_an_address() {
    let list = "Joe Stangerson | Stangerson, Mr. Stangerson\nMadame Charp | Madame Charp\n\
                Tobias Gregson | Gregson\n";
    let text = "Gregson sat with Madame Charp.\n\n\"Tell me,\" said Gregson.\n\n\
                \"His secretary, Mr. Stangerson, said there were two trains.\"\n\n\
                \"Go on.\"";
    let scene = attributed(list, text);
    // The line addresses no one, so the reply goes to the one she answered.
    assert_eq!(
        all_speakers(&scene),
        ["tobias-gregson", "charp", "tobias-gregson"]
    );
}

#[test]
fn a_form_two_characters_share_is_the_one_of_them_on_stage() {
    let list = "Billy Bones | the captain\nAlex Smollett | Captain Smollett, the captain\n\
                Jim Hawkins | Jim | narrator\n";
    let text = "Captain Smollett came aboard and looked at the rigging. I stood by.\n\n\
                \"I don't like this cruise,\" said the captain.";
    let scene = attributed(list, text);
    assert_eq!(all_speakers(&scene), ["alex-smollett"]);
    // With neither on stage, the tag names no one.
    let text = "I stood alone on the deck.\n\n\"Heave!\" said the captain.";
    let scene = attributed(list, text);
    assert_ne!(
        all_speakers(&scene).first().map(String::as_str),
        Some("billy-bones")
    );
}

#[test]
fn a_capital_the_book_writes_in_lower_case_is_no_speaker_s_name() {
    let list = "Ann Lee | Ann\nBen Cole | Ben\n";
    let text = "Ann and Ben walked here and there, and straightway sat.\n\n\
                \"Come,\" Straightway said, and rose.\n\n\"Who calls?\" called Silas.";
    let scene = attributed(list, text);
    let speakers = all_speakers(&scene);
    assert!(
        !speakers.contains(&"other:Straightway".to_owned()),
        "{speakers:?}"
    );
    assert_eq!(speakers.last().map(String::as_str), Some("other:Silas"));
}

#[test]
fn one_who_moves_off_into_another_room_is_gone_from_there() {
    let list =
        "Mrs Westen | Mrs Westen\nAbe Helsing | Van Helsing\nJohn Seward | Seward | narrator\n";
    let text = "Van Helsing and I met Mrs Westen in the hall.\n\n\
                \"Lucy is better,\" said Mrs Westen.\n\n\
                She moved off into her boudoir.\n\n\
                Van Helsing locked the door and set out the instruments.";
    let scene = attributed(list, text);
    assert_on_stage(&scene, 1, "westen", true);
    assert_on_stage(&scene, 3, "westen", false);
}
