//! Who is on stage: a narration that shows a character present (not recalled, not
//! dead, not only talked of), one who comes back, a newcomer, and who leaves.

use super::lexicon::{EXIT_PHRASES, is_past_verb};
use super::scenes::Gender;
use super::speech::Voices;
use super::text::{Mention, Namer, words};

/// Words after a name that make the sentence an aside about someone (pluperfect,
/// modal, present tense): "Kit had lent him the token", "Holmes would have known".
pub(super) const ASIDE_WORDS: &[&str] = &[
    "had", "would", "could", "might", "must", "should", "will", "is", "has", "may", "shall", "used",
];

/// Words by which a text names the dead.
pub(super) const DEAD_WORDS: &[&str] = &[
    "dead", "late", "body", "corpse", "deceased", "murdered", "death", "grave", "funeral",
];

/// Words right before a name that make it the topic, not a person in the room: "told
/// him about the priest", "a letter from Holmes".
pub(super) const TOPIC_WORDS: &[&str] = &[
    "about",
    "of",
    "for",
    "from",
    "concerning",
    "like",
    "than",
    "unlike",
    "whom",
];

/// Words a little before a name that put it in someone's thoughts or letters: "I had
/// heard of Holmes", "I thought that Lestrade", "wrote to Gregson".
pub(super) const THOUGHT_WORDS: &[&str] = &[
    "heard",
    "thought",
    "remembered",
    "knew",
    "wrote",
    "write",
    "writes",
    "writing",
    "written",
    "telegraphed",
    "letter",
    "telegram",
    "note",
    "wondered",
    "imagined",
    "dreamed",
];

/// Phrases that put a sentence at a grave or a death, or leave someone behind ("Miss
/// Morstan had remained behind with the frightened housekeeper"): the people it names
/// are not shown where the story goes on.
pub(super) const DEATH_CUES: &[&str] = &[
    " died",
    "was dead",
    "is dead",
    "was gone",
    "were gone",
    "grave",
    "buried",
    "epitaph",
    "corpse",
    "funeral",
    "remained behind",
    "stayed behind",
    "left behind",
];

/// Whether mention `m` of narration sentence `s` shows the character on stage. A name
/// does when [`present_mention`] says so. A description is a reference unless the
/// sentence places the person there: it is the sentence's subject ("The little man
/// sprang up", "when young Stamford found me"), or, in a first-person telling, the narrator's own name for someone
/// ("I turned to my companion"). A description by a relation ("his sister", "their
/// aunt") names whoever that relation is in the sentence, which a list cannot say:
/// it shows no one; nor does a form the list gives two characters ("the captain").
pub(super) fn shows(s: &str, m: &Mention<'_>, first_person: bool) -> bool {
    if m.shared || !present_mention(s, m.start, m.end) {
        return false;
    }
    if m.by_name {
        return true;
    }
    let form = &s[m.start..m.end];
    let first = form.split_whitespace().next().unwrap_or("").to_lowercase();
    match first.as_str() {
        "my" | "our" => first_person,
        "his" | "her" | "their" | "your" | "its" => false,
        _ => {
            // The subject: first in the sentence, or right before its verb ("when young
            // Stamford found me", "old Smith stood").
            let next = words(&s[m.end..]).find(|w| !w.ends_with("ly"));
            words(&s[..m.start]).count() <= 1 || next.is_some_and(|w| is_past_verb(&w))
        }
    }
}

/// Whether a sentence tells a death, a burial or a corpse ("he died", "the dead man",
/// "at his grave"): those it names did not live past what it tells.
pub(super) fn tells_death(sentence: &str) -> bool {
    let lower = sentence.to_lowercase();
    DEATH_CUES.iter().any(|c| lower.contains(c))
        || words(sentence).any(|w| DEAD_WORDS.contains(&w.as_str()))
}

/// Words before "to" that tie a name to a thing, not to an action in the room:
/// "belonged to Miss Morstan", "a letter addressed to Holmes".
pub(super) const NOT_PRESENCE_BEFORE_TO: &[&str] = &[
    "belonged",
    "belongs",
    "belonging",
    "owed",
    "due",
    "according",
    "known",
    "unknown",
    "married",
    "engaged",
    "related",
    "left",
    "bequeathed",
    "sent",
    "addressed",
    "devoted",
    "loyal",
    "faithful",
    "attached",
    "similar",
    "letter",
    "message",
    "note",
];

/// Words before a name that bring the person into the action: "turned to Holmes", "sat
/// with Lucy", "glanced at Lestrade".
pub(super) const PRESENCE_WORDS: &[&str] = &[
    "with", "beside", "towards", "toward", "at", "to", "behind", "followed", "joined", "met",
    "found", "saw", "greeted", "upon", "by",
];

/// A narration mention that puts the character on stage: the subject near the start
/// of a sentence that is not an aside, or the person an action is directed at. A name
/// that is the topic ("told him about the priest"), in an aside ("Kit had lent him the
/// token") or anywhere else is not evidence of presence: a character only talked about
/// must not be handed the scene.
pub(super) fn present_mention(sentence: &str, start: usize, end: usize) -> bool {
    let before: Vec<String> = words(&sentence[..start]).collect();
    let after: Vec<String> = words(&sentence[end..])
        .skip_while(|w| w.ends_with("ly"))
        .take(1)
        .collect();
    let aside = after
        .first()
        .is_some_and(|w| ASIDE_WORDS.contains(&w.as_str()));
    let topic = before
        .last()
        .is_some_and(|w| TOPIC_WORDS.contains(&w.as_str()))
        || before
            .iter()
            .rev()
            .take(4)
            .any(|w| THOUGHT_WORDS.contains(&w.as_str()));
    // "the dead man", "the body": a corpse in the room knows nothing.
    let dead = words(&sentence[start..end])
        .chain(before.last().cloned())
        .any(|w| DEAD_WORDS.contains(&w.as_str()));
    // An inscription ("JOHN FERRIER, … Died August 4th"), a grave, a death: no one is
    // shown by a sentence that buries them.
    let inscription = sentence[start..end]
        .chars()
        .filter(|c| c.is_alphabetic())
        .count()
        > 1
        && !sentence[start..end].chars().any(char::is_lowercase);
    let lower = sentence.to_lowercase();
    let burial = DEATH_CUES.iter().any(|c| lower.contains(c));
    // "Mrs. Cecil Forrester was out for the evening".
    let next_two: Vec<String> = words(&sentence[end..]).take(2).collect();
    let away = matches!(
        next_two.first().map(String::as_str),
        Some("was" | "is" | "were")
    ) && matches!(
        next_two.get(1).map(String::as_str),
        Some("out" | "away" | "absent")
    );
    // "against the glare of the furnace I could see old Smith": seen from afar, not
    // among those who see and hear what happens here.
    let tail = before
        .iter()
        .rev()
        .take(4)
        .rev()
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    let distant = [
        "could see",
        "could make out",
        "could discern",
        "sight of",
        "could just see",
    ]
    .iter()
    .any(|c| tail.contains(c));
    if aside || topic || dead || inscription || burial || away || distant {
        return false;
    }
    // "Sholto's death", "Morstan's baggage": a name that only qualifies a thing shows
    // no one, unless it opens the sentence ("Holmes's face lit up").
    let possessive = sentence[end..].starts_with("'s") || sentence[end..].starts_with("’s");
    // "It was Mr. Hawkins's interest": what is someone's, not someone there.
    let after_copula = before
        .last()
        .is_some_and(|w| matches!(w.as_str(), "was" | "is" | "were" | "be"));
    if possessive && (before.len() > 2 || after_copula) {
        return false;
    }
    // "Holmes and I", "…, when Lestrade entered"; not the last of a list ("Stangerson,
    // Kemball, Johnston, and Drebber").
    let subject = before.len() <= 2
        || before.last().is_some_and(|w| match w.as_str() {
            "and" => before.len() <= 4,
            "then" | "when" | "while" | "as" => true,
            _ => false,
        });
    // "turned to Holmes", "I recognized young Stamford": the person an action in the
    // past tense is directed at (a description's own first word skipped).
    let verb = before.iter().rposition(|w| {
        !matches!(
            w.as_str(),
            "young" | "old" | "little" | "the" | "my" | "our" | "miss" | "mr" | "mrs" | "dr"
        )
    });
    let directed = verb.is_some_and(|at| {
        let w = before[at].as_str();
        // The word before the verb, adverbs skipped: "belonged rightfully to Miss
        // Morstan", "had possessed Major Sholto".
        let prior = before[..at].iter().rev().find(|w| !w.ends_with("ly"));
        let pluperfect = prior.is_some_and(|p| ASIDE_WORDS.contains(&p.as_str()) || p == "have");
        let owed = w == "to" && prior.is_some_and(|p| NOT_PRESENCE_BEFORE_TO.contains(&p.as_str()));
        !pluperfect && !owed && (PRESENCE_WORDS.contains(&w) || (w.len() > 3 && w.ends_with("ed")))
    });
    // "our landlady entered", "before Holmes returned": the subject of a verb in the
    // past tense, wherever the clause starts.
    let acts = after.first().is_some_and(|w| is_past_verb(w));
    subject || directed || acts
}

/// Does the sentence bring the character named before `end` back ("Lestrade, who had
/// been in the front room…, reappeared", "Holmes returned")?
pub(super) fn comes_back(sentence: &str, end: usize) -> bool {
    let lower = sentence.to_lowercase();
    ["reappeared", "came back", "re-entered", "reentered"]
        .iter()
        .any(|w| lower.contains(w))
        || words(&sentence[end..]).next().as_deref() == Some("returned")
}

/// Nouns for a person the narration brings in without a name, and the pronoun each
/// takes.
pub(super) const PERSON_NOUNS: &[(&str, Gender)] = &[
    ("man", Gender::He),
    ("fellow", Gender::He),
    ("gentleman", Gender::He),
    ("boy", Gender::He),
    ("lad", Gender::He),
    ("coachman", Gender::He),
    ("cabman", Gender::He),
    ("policeman", Gender::He),
    ("constable", Gender::He),
    ("commissionaire", Gender::He),
    ("footman", Gender::He),
    ("butler", Gender::He),
    ("woman", Gender::She),
    ("lady", Gender::She),
    ("girl", Gender::She),
    ("maid", Gender::She),
    ("servant", Gender::Unknown),
    ("voice", Gender::Unknown),
    ("stranger", Gender::Unknown),
    ("visitor", Gender::Unknown),
    ("messenger", Gender::Unknown),
    ("figure", Gender::Unknown),
];

/// Words before "a …" that make the person one who comes or acts.
pub(super) const AGENT_BEFORE: &[&str] = &[
    "by", "before", "when", "came", "entered", "appeared", "then", "suddenly", "heard",
];

/// An unnamed person brought in by an indefinite description among a sentence's words:
/// "a small, dark, brisk man", "a Hindoo servant", "a deep voice below".
pub(super) fn newcomer_in(lower: &[String]) -> Option<(&'static str, Gender)> {
    lower.iter().enumerate().find_map(|(at, w)| {
        // One who comes or acts: at the start, or after "by", "before", "came"… ("thrown
        // open by a Hindoo servant"); not a likeness or a predicate ("like a man
        // possessed", "to a lonely man").
        let agent = at
            .checked_sub(1)
            .is_none_or(|b| AGENT_BEFORE.contains(&lower[b].as_str()));
        if (w != "a" && w != "an") || !agent {
            return None;
        }
        lower.iter().skip(at + 1).take(4).find_map(|n| {
            PERSON_NOUNS
                .iter()
                .find(|(noun, _)| noun == n)
                .map(|(noun, gender)| (*noun, *gender))
        })
    })
}

/// Verbs by which people go somewhere.
pub(super) const MOTION_VERBS: &[&str] = &[
    "went",
    "walked",
    "drove",
    "ascended",
    "descended",
    "climbed",
    "passed",
    "hurried",
    "ran",
    "entered",
    "left",
    "stepped",
    "mounted",
    "crossed",
    "rattled",
    "proceeded",
    "dashed",
    "rushed",
    "emerged",
    "returned",
    "reached",
    "arrived",
    "made",
    "set",
    "started",
    "sped",
    "turned",
    "came",
    "clambered",
    "filed",
];

/// Does a narration sentence (its lowercased words) move the narrator on: "we" or "I"
/// opening a clause, a verb of motion within the next few words ("Twice as we ascended",
/// "Then I went upstairs"; not "we followed him" or "we all descended together", where
/// the company goes along)?
pub(super) fn moves_on(lower: &[String]) -> bool {
    // "They landed me at Vauxhall": the narrator alone is taken on ("brought us" takes
    // the company along).
    let carried = lower.windows(2).any(|pair| {
        matches!(
            pair[0].as_str(),
            "brought" | "landed" | "took" | "carried" | "drove" | "led" | "conveyed"
        ) && pair[1] == "me"
    });
    if carried {
        return true;
    }
    // "we" or "I" opening the sentence or a clause ("Holmes nodded, and we ascended"),
    // not "the room which we entered".
    lower.iter().enumerate().any(|(at, w)| {
        (w == "we" || w == "i")
            && (at == 0
                || matches!(
                    lower[at - 1].as_str(),
                    "and" | "then" | "so" | "as" | "when" | "while" | "till" | "until" | "now"
                ))
            && (at + 1..lower.len().min(at + 4)).any(|v| goes(lower, v))
    }) && !lower.iter().any(|w| w == "together" || w == "all")
}

/// Is `lower[at]` a verb of going: one that only means going ("ascended"), or one that
/// may ("passed", "left", "made") followed by where to ("passed into", "made our way")?
pub(super) fn goes(lower: &[String], at: usize) -> bool {
    let verb = lower[at].as_str();
    if !MOTION_VERBS.contains(&verb) {
        return false;
    }
    if !matches!(
        verb,
        "passed" | "left" | "turned" | "made" | "set" | "came" | "started" | "returned"
    ) {
        return true;
    }
    lower.get(at + 1).is_some_and(|next| match next.as_str() {
        "our" | "my" => verb == "made",
        w => matches!(
            w,
            "out"
                | "off"
                | "into"
                | "through"
                | "up"
                | "down"
                | "along"
                | "over"
                | "across"
                | "to"
                | "away"
                | "back"
                | "in"
                | "from"
                | "round"
                | "towards"
                | "toward"
                | "on"
                | "the"
        ),
    })
}

/// Does a sentence send a group off ("away they buzzed down the stairs", "the clatter
/// of horses' hoofs told him that they were beyond his reach")? "they" then, within
/// three words, a verb of going followed by away, out, off or down, or "were gone",
/// "were beyond".
pub(super) fn they_go(lower: &[String]) -> bool {
    lower.iter().enumerate().any(|(at, w)| {
        let near = |v: usize| lower.get(v).map_or("", String::as_str);
        w == "they"
            && (at + 1..lower.len().min(at + 4)).any(|v| {
                let going = MOTION_VERBS.contains(&near(v))
                    || matches!(
                        near(v),
                        "buzzed" | "scampered" | "trooped" | "scurried" | "rode" | "galloped"
                    );
                (going
                    && (v + 1..v + 3).any(|d| matches!(near(d), "away" | "out" | "off" | "down")))
                    || (near(v) == "were" && matches!(near(v + 1), "gone" | "beyond"))
            })
    })
}

/// Is `before` (lowercase, the clause up to a name) a phrase set before its subject
/// ("once out upon the road, "), with no subject of its own?
fn fronted(before: &str) -> bool {
    before.trim_end().ends_with(',')
        && !words(before).any(|w| matches!(w.as_str(), "he" | "she" | "they" | "i" | "we" | "it"))
}

/// Chinese phrases that take a sentence's subject off the stage.
const CHINESE_EXITS: &[&str] = &[
    "退去",
    "退出",
    "出去了",
    "告辞",
    "告辭",
    "辞去",
    "辭去",
    "辞别",
    "辭別",
    "走了",
    "家去了",
    "回去了",
    "去了",
];

/// Openings of a Chinese sentence that goes on with the last speaker as its subject,
/// unnamed ("说着便起身出去了": having said it, he got up and went out).
const SAID_AND: &[&str] = &[
    "说着", "說著", "说毕", "說畢", "言毕", "言畢", "说罢", "說罷",
];

/// The subject a Chinese sentence takes off the stage: the name that opens it (after
/// clause openers), when an exit phrase follows that no other person is the subject of
/// (随他去了 lets someone else go); in a sentence that names no one and opens "说着",
/// the one who just spoke.
fn chinese_exit_of(sentence: &str, namer: &Namer, voices: &Voices<'_>) -> Option<String> {
    let at = CHINESE_EXITS
        .iter()
        .filter_map(|p| {
            sentence
                .match_indices(p)
                .map(|(at, _)| at)
                .find(|at| !sentence[..*at].ends_with(['他', '她', '你', '我']))
        })
        .min()?;
    let mentions = namer.mentions(sentence);
    let Some(subject) = mentions.first() else {
        let opening = sentence.trim_start_matches(|c: char| c.is_whitespace() || c == '　');
        if !SAID_AND.iter().any(|s| opening.starts_with(s)) {
            return None;
        }
        return voices
            .spoken
            .iter()
            .rev()
            .find(|s| !voices.is_narrator(s))
            .and_then(|s| s.focus().map(str::to_owned));
    };
    (subject.start < at
        && !subject.shared
        && super::speech::opens_clause(&sentence[..subject.start])
        && !sentence[subject.end..at].contains(['“', '「', '：']))
    .then(|| subject.character.to_owned())
}

/// The focus character a sentence takes off the stage, if any.
pub(super) fn exit_of(sentence: &str, namer: &Namer, voices: &Voices<'_>) -> Option<String> {
    if super::text::is_chinese(sentence) {
        return chinese_exit_of(sentence, namer, voices);
    }
    let lower = sentence.to_lowercase();
    let at = EXIT_PHRASES.iter().filter_map(|p| lower.find(p)).min()?;
    // The subject of the clause that holds the exit ("We pulled round to the cove; and
    // then Gray, single-handed, went away with the gig"): a name that opens it, after
    // its joining words.
    let clause = lower
        .get(..at)
        .and_then(|before| before.rfind([';', ':']))
        .map_or(0, |c| c + 1);
    let opening = lower.get(clause..at).map_or(clause, |rest| {
        let trimmed = rest.trim_start_matches(|c: char| !c.is_alphanumeric());
        let mut start = clause + (rest.len() - trimmed.len());
        for joint in [
            "and then ",
            "and ",
            "then ",
            "but ",
            "so ",
            "as soon as ",
            "when ",
            "after ",
            "once ",
        ] {
            if lower.get(start..).is_some_and(|r| r.starts_with(joint)) {
                start += joint.len();
            }
        }
        start
    });
    if let Some(m) = namer.mentions(sentence).into_iter().find(|m| {
        m.start >= opening
            && m.start < at
            && (m.start <= opening + 5 || fronted(&lower[opening..m.start]))
    }) {
        return Some(m.character.to_owned());
    }
    if clause > 0 {
        return None;
    }
    let first_words: Vec<String> = words(sentence).take(3).collect();
    let gender = if first_words.iter().any(|w| w == "he") {
        Gender::He
    } else if first_words.iter().any(|w| w == "she") {
        Gender::She
    } else {
        return None;
    };
    voices
        .spoken
        .iter()
        .rev()
        .find(|s| voices.facts.fits(s, gender) && !voices.is_narrator(s))
        .and_then(|s| s.focus().map(str::to_owned))
}
