//! Who speaks a quoted line: speech tags before and after it, a name it addresses or
//! introduces, the conversation's turns (`Voices`), and the actors of a sentence.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::characters::is_title_word;
use super::lexicon::{FEMALE_HINTS, MALE_HINTS, SPEECH_VERBS, is_past_verb};
use super::scenes::{BookFacts, ELDER_WORDS, FADE_PARAGRAPHS, Gender, Speaker, Tag};
mod chinese;

use super::text::{
    FocusCharacter, Namer, Segment, is_chinese, is_han, paragraphs, sentences, starts_upper, words,
};

/// Words that open a description ("my companion", "the inspector").
pub(super) const DETERMINERS: &[&str] = &[
    "my", "our", "the", "his", "her", "a", "an", "this", "that", "their",
];

pub(super) fn clean_word(w: &str) -> String {
    w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_owned()
}

pub(super) fn is_speech_verb(word: &str) -> bool {
    SPEECH_VERBS.contains(&word)
}

/// Whom the words at the start of `head` name: a focus character, the narrator, a
/// pronoun, a description or a capitalised name. `words` are `head`'s words, lowercased.
pub(super) fn subject_at(head: &str, words: &[String], namer: &Namer) -> Option<Tag> {
    let first = words.first()?;
    // "Holmes", "Mr. Holmes", or a description before the name ("the wary Jones").
    let described = DETERMINERS.contains(&first.as_str());
    if let Some(m) = namer
        .mentions(head)
        .first()
        .filter(|m| m.start <= 4 || (described && head[..m.start].split_whitespace().count() <= 2))
    {
        // "said the captain", when two are: the tag alone names neither; who is on
        // stage may decide it.
        if m.shared {
            let owners = namer.owners(m, head);
            return Some(Tag::OneOf(owners.into_iter().map(str::to_owned).collect()));
        }
        return Some(Tag::Focus(m.character.to_owned()));
    }
    match first.as_str() {
        "i" => Some(Tag::Narrator),
        "he" => Some(Tag::Pronoun(Gender::He)),
        "she" => Some(Tag::Pronoun(Gender::She)),
        // A thing or a group speaks no quoted line we can give anyone.
        "it" | "they" | "we" | "you" | "there" | "this" | "these" | "those" => None,
        w if DETERMINERS.contains(&w) => Some(Tag::Unnamed {
            owner: match w {
                "his" => Some(Gender::He),
                "her" => Some(Gender::She),
                _ => None,
            },
            other: words.get(1).is_some_and(|n| n == "other"),
        }),
        _ => {
            let mut tokens = head.split_whitespace();
            let written = tokens.next()?;
            let raw = clean_word(written);
            if !starts_upper(&raw) {
                return None;
            }
            if !is_title_word(&raw) {
                return Some(Tag::Named(raw));
            }
            // A title names no one alone: "shouted Mr. Sherman" is Mr. Sherman, not a
            // person called "Mr"; a title with no name after it is no tag at all.
            let name = tokens.next().map(clean_word).filter(|w| starts_upper(w))?;
            let dot = if written.trim_end_matches([',', ';', ':']).ends_with('.') {
                "."
            } else {
                ""
            };
            Some(Tag::Named(format!("{raw}{dot} {name}")))
        }
    }
}

/// Whether a capitalised tag ("Silas", "Mr. Sherman") is a name: its last word is not
/// one the book writes in lower case ("Here", "Straightway", "As").
fn is_name(common: &HashSet<String>, tag: &str) -> bool {
    tag.split_whitespace()
        .last()
        .is_some_and(|w| !common.contains(&clean_word(w).to_lowercase()))
}

/// A speech tag in the narration after a quote: "said he", "cried Holmes", "remarked
/// my companion", "I answered", "he asked in wonder", "Holmes laughed", "the inspector
/// said".
pub(super) fn speech_tag(narration: &str, namer: &Namer) -> Option<Tag> {
    // Chinese tags its speech before the quote (`宝玉笑道：“…”`); a name after one
    // is the next to act, as often the listener as the speaker.
    if is_chinese(narration) {
        return None;
    }
    let first = sentences(narration).into_iter().next()?;
    let head: Vec<&str> = first.split_whitespace().take(6).collect();
    let lower: Vec<String> = head.iter().map(|w| clean_word(w).to_lowercase()).collect();
    // "said Silas", "asked the priest", "said I"
    if lower.first().is_some_and(|w| is_speech_verb(w)) {
        let rest = head[1..].join(" ");
        return subject_at(&rest, &lower[1..], namer);
    }
    let subject = subject_at(first, &lower, namer)?;
    match subject {
        // A name at the start is the speaker, a verb of speech or not ("Ben took off
        // his hat"); a pronoun too ("she nodded").
        Tag::Focus(_) | Tag::OneOf(_) | Tag::Pronoun(_) => Some(subject),
        // "I", a description or another name needs a verb of speech within a few words.
        _ => lower
            .iter()
            .skip(1)
            .take(3)
            .any(|w| is_speech_verb(w))
            .then_some(subject),
    }
}

/// A tag leading into a quote, in the narration before it in the same paragraph:
/// "Holmes said:", "Then I asked him,", "said Silas,".
pub(super) fn lead_in(narration: &str, namer: &Namer) -> Option<Tag> {
    if is_chinese(narration) {
        return chinese::lead_in(narration, namer);
    }
    // "and said:--", "he said:—"
    let narration = narration
        .trim_end()
        .trim_end_matches(['-', '\u{2014}', '\u{2013}'])
        .trim_end();
    if !narration.ends_with([':', ',']) {
        return None;
    }
    let last = sentences(narration).into_iter().last()?;
    let lower: Vec<String> = words(last).collect();
    let verb = lower.iter().position(|w| is_speech_verb(w))?;
    if verb == 0 {
        let rest: Vec<&str> = last.split_whitespace().skip(1).collect();
        return subject_at(&rest.join(" "), &lower[1..], namer);
    }
    // The subject is the nearest name or pronoun before the verb, read from a word
    // that begins one: "Lady Catherine … replied" is not read from "Catherine".
    let tokens: Vec<&str> = last.split_whitespace().collect();
    let inside_a_name: Vec<bool> = {
        let mentions = namer.mentions(last);
        tokens
            .iter()
            .scan(0, |from, t| {
                let at = *from + last[*from..].find(t).unwrap_or(0);
                *from = at + t.len();
                Some(mentions.iter().any(|m| m.start < at && at < m.end))
            })
            .collect()
    };
    // "Cora turned to Ben and said": a name after a preposition is not the subject.
    let preposition =
        |at: usize| PREPOSITIONS.contains(&clean_word(tokens[at]).to_lowercase().as_str());
    let object = |start: usize| preposition(start) || start.checked_sub(1).is_some_and(preposition);
    for start in (0..verb.min(tokens.len())).rev() {
        if inside_a_name[start] || object(start) {
            continue;
        }
        let head = tokens[start..].join(" ");
        if let Some(t @ (Tag::Focus(_) | Tag::OneOf(_) | Tag::Narrator | Tag::Pronoun(_))) =
            subject_at(&head, &lower[start..], namer)
        {
            return Some(t);
        }
    }
    None
}

/// The focus character a quote addresses ("Whatever have you been doing with yourself,
/// Watson?", "Watson, come here"): not the one who says it. A name or a title ("Professor", "Keeper") counts, when no one else owns it; a
/// description with a determiner ("the captain") does not, as it names someone spoken of,
/// and neither does an apposition ("His secretary, Mr. Stangerson, said") or a name in
/// a line the quote retells ("'All right, cabby,' said he": the teller is not addressed).
pub(super) fn vocative(quote: &str, namer: &Namer) -> Option<String> {
    match addressees(quote, namer).as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// Whom the name a quote addresses may mean: one character, or each owner of a shared
/// form ("Mr. Sholto,": Thaddeus or Bartholomew), for who is on stage to decide.
pub(super) fn addressees(quote: &str, namer: &Namer) -> Vec<String> {
    let own = outside_retold(quote);
    let m = namer.mentions(&own).into_iter().find(|m| {
        let after = own[m.end..].chars().next();
        let before = own[..m.start].trim_end();
        let bounded_after = after.is_none_or(|c| matches!(c, ',' | '!' | '?' | '.' | ';'));
        let word_before = before
            .rsplit(char::is_whitespace)
            .next()
            .map(|w| clean_word(w).to_lowercase())
            .unwrap_or_default();
        // "Watson, come here", "Look! Madam Mina, look!", "My friend John, when…"
        let bounded_before = before.is_empty()
            || before.ends_with([',', '!', '?', ';', ':']) && !apposition(before)
            || ADDRESS_WORDS.contains(&word_before.as_str());
        let first = words(&own[m.start..m.end]).next().unwrap_or_default();
        let form = m.by_name || !DETERMINERS.contains(&first.as_str());
        form && bounded_after && bounded_before
    });
    m.map(|m| {
        namer
            .owners(&m, &own)
            .into_iter()
            .map(str::to_owned)
            .collect()
    })
    .unwrap_or_default()
}

/// Text before a comma that ends in a short noun phrase a name may stand beside: "His
/// secretary,", "My colleague,", "the Secretary,".
fn apposition(before: &str) -> bool {
    let clause = before
        .trim_end_matches(',')
        .rsplit([',', '.', '!', '?', ';', ':', '-'])
        .next()
        .unwrap_or_default();
    let lower: Vec<String> = words(clause).collect();
    lower.len() <= 3
        && lower
            .first()
            .is_some_and(|w| DETERMINERS.contains(&w.as_str()))
}

/// `quote` with the lines it retells in single quotes blanked out, so offsets stay:
/// "'All right, cabby,' said he." keeps only " said he.".
pub(super) fn outside_retold(quote: &str) -> String {
    let mut out = String::with_capacity(quote.len());
    let mut inside = false;
    let mut prev: Option<char> = None;
    let mut chars = quote.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        let opens = matches!(c, '\'' | '\u{2018}')
            && prev.is_none_or(|p| p.is_whitespace() || p == '"' || p == '\u{201c}')
            && next.is_some_and(char::is_alphanumeric);
        let closes = matches!(c, '\'' | '\u{2019}')
            && prev.is_some_and(|p| matches!(p, ',' | '.' | '!' | '?' | '-'))
            && next.is_none_or(|n| n.is_whitespace() || n == '"' || n == '\u{201d}');
        if !inside && opens {
            inside = true;
        } else if inside && closes {
            inside = false;
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
            prev = Some(c);
            continue;
        }
        if inside {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        } else {
            out.push(c);
        }
        prev = Some(c);
    }
    out
}

/// Words after which a name is an object, not the one who speaks.
const PREPOSITIONS: &[&str] = &[
    "to", "at", "with", "upon", "on", "from", "for", "towards", "toward", "of", "by",
];

/// Words that come between an opening and the name addressed: "my dear Watson", "O
/// Adam", "my good friend Jack".
const ADDRESS_WORDS: &[&str] = &[
    "my", "dear", "dearest", "o", "oh", "friend", "good", "poor", "sweet", "little", "old",
    "young", "madam",
];

/// The focus character a speech tag says the line was said to: "I said to Mrs. Hudson",
/// "he remarked to Sherlock Holmes".
pub(super) fn said_to(tag: &str, namer: &Namer) -> Option<String> {
    let first = sentences(tag).into_iter().next()?;
    let head: String = first
        .split_whitespace()
        .take(8)
        .collect::<Vec<_>>()
        .join(" ");
    namer.mentions(&head).into_iter().find_map(|m| {
        let before = head[..m.start].trim_end();
        (before.ends_with(" to") && words(before).take(4).any(|w| is_speech_verb(&w)))
            .then(|| m.character.to_owned())
    })
}

/// The focus character a quote introduces as its speaker: "I'm Joseph Stangerson", "I
/// am Holmes", "my name is Mary Morstan", "you may address me as the Count".
pub(super) fn introduces(quote: &str, namer: &Namer) -> Option<String> {
    pub(super) const OPENERS: [&str; 6] = [
        "i'm ",
        "i am ",
        "my name is ",
        "address me as ",
        "call me ",
        "name's ",
    ];
    let lower = quote.to_lowercase();
    namer.mentions(quote).into_iter().find_map(|m| {
        let before = &lower[..m.start];
        (m.by_name && OPENERS.iter().any(|o| before.ends_with(o))).then(|| m.character.to_owned())
    })
}

/// The conversation so far in a scene: who spoke, who the narration named, who was
/// addressed last.
pub(super) struct Voices<'a> {
    pub(super) facts: &'a BookFacts,
    /// The scene's first-person narrator, never a "he", "she" or description.
    pub(super) narrator: Option<&'a str>,
    pub(super) spoken: Vec<Speaker>,
    pub(super) mentioned: Vec<Speaker>,
    pub(super) addressed: Option<Speaker>,
    /// The paragraphs at which the text showed each focus character so far.
    pub(super) shown: BTreeMap<String, Vec<usize>>,
    /// The paragraph being read.
    pub(super) now: usize,
    /// Paragraphs of narration only, up to and including each paragraph.
    pub(super) clock: Vec<usize>,
    /// Paragraphs in which the narrator moves on ("We followed him into the
    /// housekeeper's room"): who the text does not show there is left behind.
    pub(super) moved: Vec<usize>,
    /// Someone off the list the narration just brought in ("the door was thrown open by
    /// a Hindoo servant"), its pronoun, and the paragraph: the "he" of a line in the next
    /// two paragraphs, unless a focus character it could be is shown first.
    pub(super) newcomer: Option<(Speaker, Gender, usize)>,
    /// Who left, and the paragraph from which they are gone.
    pub(super) exits: BTreeMap<String, usize>,
}

impl Voices<'_> {
    pub(super) fn is_narrator(&self, s: &Speaker) -> bool {
        self.narrator.is_some_and(|n| s.focus() == Some(n))
    }

    /// Turn-taking: the speaker before the last one, different from it; when only one
    /// has spoken yet, the one other person on stage, if there is exactly one.
    pub(super) fn alternate(&self) -> Option<Speaker> {
        let last = self.spoken.last()?;
        if let Some(before) = self
            .spoken
            .iter()
            .rev()
            .find(|s| *s != last && self.on_stage(s))
        {
            return Some(before.clone());
        }
        let mut others = self
            .narrator
            .map(str::to_owned)
            .into_iter()
            .chain(self.shown.keys().cloned())
            .map(Speaker::Focus)
            .filter(|s| s != last && self.on_stage(s));
        let other = others.next()?;
        others.next().is_none().then_some(other)
    }

    /// A third person on stage: the nearest candidate known to take the pronoun, else
    /// the nearest it fits (the narration
    /// of this paragraph, the one addressed last, the turn-taking partner, the last
    /// speakers, the last named on stage). Never the narrator, never someone who has not
    /// come on stage: a guess must not put anyone in the room.
    pub(super) fn resolve(&self, in_paragraph: &[Speaker], pronoun: Gender) -> Option<Speaker> {
        self.resolve_except(in_paragraph, pronoun, None)
    }

    /// [`Self::resolve`], passing over `except`.
    pub(super) fn resolve_except(
        &self,
        in_paragraph: &[Speaker],
        pronoun: Gender,
        except: Option<&Speaker>,
    ) -> Option<Speaker> {
        let candidates = || {
            in_paragraph
                .iter()
                .rev()
                .cloned()
                .chain(self.addressed.clone())
                .chain(self.alternate())
                .chain(self.spoken.iter().rev().cloned())
                .chain(self.mentioned.iter().rev().cloned())
                .filter(|s| !self.is_narrator(s) && self.on_stage(s) && Some(s) != except)
        };
        if let Some((who, gender, at)) = &self.newcomer {
            let fits =
                pronoun == Gender::Unknown || *gender == Gender::Unknown || *gender == pronoun;
            if fits && self.now <= at + 2 {
                return Some(who.clone());
            }
        }
        // Someone known to take the pronoun first; someone not known not to, after.
        candidates()
            .find(|s| self.facts.is(s, pronoun))
            .or_else(|| candidates().find(|s| self.facts.fits(s, pronoun)))
            .or_else(|| self.went_along(pronoun))
    }

    /// The one character the narrator's last move may have taken along: shown before
    /// the move, within [`FADE_PARAGRAPHS`], not gone, and the only one known to take
    /// the pronoun ("Yet upon that afternoon … 'It is cocaine,' he said"). Who is shown
    /// again soon after a move went along.
    pub(super) fn went_along(&self, pronoun: Gender) -> Option<Speaker> {
        if pronoun == Gender::Unknown {
            return None;
        }
        let mut fitting = self.shown.iter().filter(|(id, seen)| {
            self.narrator != Some(id.as_str())
                && self.exits.get(*id).is_none_or(|gone| self.now < *gone)
                && seen
                    .last()
                    .is_some_and(|last| self.clock[self.now] - self.clock[*last] <= FADE_PARAGRAPHS)
                && self.facts.is(&Speaker::Focus((*id).clone()), pronoun)
        });
        let (id, _) = fitting.next()?;
        fitting.next().is_none().then(|| Speaker::Focus(id.clone()))
    }

    /// Of `ids` (the owners of a shared form), the one on stage, if only one is.
    pub(super) fn the_one_on_stage(&self, ids: &[String]) -> Option<Speaker> {
        let mut here = ids
            .iter()
            .filter(|id| self.shown.contains_key(*id))
            .map(|id| Speaker::Focus(id.clone()))
            .filter(|s| self.on_stage(s));
        let one = here.next()?;
        here.next().is_none().then_some(one)
    }

    pub(super) fn on_stage(&self, s: &Speaker) -> bool {
        s.focus().is_none_or(|id| {
            self.narrator == Some(id)
                || self.exits.get(id).is_none_or(|gone| self.now < *gone)
                    && self
                        .shown
                        .get(id)
                        .and_then(|seen| seen.last())
                        .is_some_and(|last| {
                            self.clock[self.now] - self.clock[*last] <= FADE_PARAGRAPHS
                                && !self.moved.iter().any(|m| *last < *m && *m <= self.now)
                        })
        })
    }

    /// The text shows `id` at paragraph `p`.
    pub(super) fn show(&mut self, id: &str, p: usize) {
        let could_be = self.newcomer.as_ref().is_some_and(|(_, gender, _)| {
            self.narrator != Some(id) && self.facts.fits(&Speaker::Focus(id.to_owned()), *gender)
        });
        if could_be {
            self.newcomer = None;
        }
        let seen = self.shown.entry(id.to_owned()).or_default();
        if seen.last() != Some(&p) {
            seen.push(p);
        }
    }

    pub(super) fn speaker_of(&self, tag: Tag, in_paragraph: &[Speaker]) -> Option<Speaker> {
        match tag {
            Tag::Focus(id) => Some(Speaker::Focus(id)),
            Tag::OneOf(ids) => self.the_one_on_stage(&ids),
            Tag::Named(name) => is_name(&self.facts.common, &name).then_some(Speaker::Other(name)),
            Tag::Pronoun(g) => self.resolve(in_paragraph, g),
            Tag::Narrator => Some(match self.narrator {
                Some(id) => Speaker::Focus(id.to_owned()),
                None => Speaker::Other("I".to_owned()),
            }),
            Tag::Unnamed { other: true, .. } => self.alternate(),
            Tag::Unnamed { owner: None, .. } => self.resolve(in_paragraph, Gender::Unknown),
            // "said her preserver": someone there other than the one "her" means.
            Tag::Unnamed { owner: Some(g), .. } => {
                let owner = self.resolve(in_paragraph, g);
                self.resolve_except(in_paragraph, Gender::Unknown, owner.as_ref())
                    .filter(|s| Some(s) != owner.as_ref())
            }
        }
    }
}

/// Who lived what `sentence` tells, as [`Sentence::actors`]: those it names who act
/// next, the family of `teller` it names so ("My father received a letter"), and who
/// first said the retold line it is part of.
pub(super) fn actors(
    sentence: &str,
    teller: Option<&str>,
    retold_by: Option<&Speaker>,
    namer: &Namer,
    facts: &BookFacts,
) -> BTreeSet<String> {
    let named = namer
        .mentions(sentence)
        .into_iter()
        .filter(|m| acts_after(&sentence[m.end..]) && opens_clause(&sentence[..m.start]))
        .map(|m| m.character.to_owned());
    let kin = teller
        .map(|t| kin_refs(sentence, t, facts))
        .unwrap_or_default()
        .into_iter()
        .filter(|(start, end, _)| *start == 0 || acts_after(&sentence[*end..]))
        .map(|(_, _, id)| id);
    named
        .chain(kin)
        .chain(retold_by.and_then(Speaker::focus).map(str::to_owned))
        .collect()
}

/// Whether a name after `before` opens its clause (always, unless the text before it
/// ends in Chinese: see [`chinese::opens_clause`]).
pub(super) fn opens_clause(before: &str) -> bool {
    !before.chars().next_back().is_some_and(is_han) || chinese::opens_clause(before)
}

/// Does the text after a name say that person acted: a verb of acting in the past
/// next, adverbs skipped ("quietly took"), not a state ("was", "had") nor speech?
pub(super) fn acts_after(rest: &str) -> bool {
    if rest.chars().next().is_some_and(is_han) {
        return chinese::acts_after(rest);
    }
    if rest.starts_with("'s") || rest.starts_with("’s") || rest.starts_with(',') {
        return false;
    }
    words(rest).find(|w| !w.ends_with("ly")).is_some_and(|w| {
        is_past_verb(&w)
            && !matches!(
                w.as_str(),
                "said" | "cried" | "asked" | "answered" | "shouted" | "whispered"
            )
    })
}

/// "my father", "our brother" in `text` said by `teller`: where, and whom it means.
pub(super) fn kin_refs(text: &str, teller: &str, facts: &BookFacts) -> Vec<(usize, usize, String)> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    for owner in ["my ", "our "] {
        for (at, _) in lower.match_indices(owner) {
            if at > 0
                && lower[..at]
                    .chars()
                    .last()
                    .is_some_and(char::is_alphanumeric)
            {
                continue;
            }
            let rest = &lower[at + owner.len()..];
            let word: String = rest.chars().take_while(|c| c.is_alphabetic()).collect();
            if let Some(id) = facts.kin(teller, &word) {
                out.push((at, at + owner.len() + word.len(), id));
            }
        }
    }
    out.sort();
    out
}

/// Does a retold line hold a sentence of the quote that retells it: the sentence's
/// first words, up to a quote mark, are in the line?
pub(super) fn holds(line: &str, sentence: &str) -> bool {
    let core: String = sentence
        .trim_start_matches(|c: char| c == '\'' || c == '‘' || c.is_whitespace())
        .chars()
        .take_while(|c| *c != '\'' && *c != '’')
        .take(24)
        .collect();
    core.len() >= 8 && line.contains(core.trim_end())
}

impl BookFacts {
    /// Reads the whole book once: each focus character's pronoun, from the he or she of
    /// the sentences that name it alone, and the other speakers the speech tags name.
    #[must_use]
    pub fn read(text: &str, characters: &[FocusCharacter], namer: &Namer) -> Self {
        let mut genders = BTreeMap::new();
        let mut votes: BTreeMap<&str, (i32, i32)> = BTreeMap::new();
        let mut other_speakers = BTreeSet::new();
        let common: HashSet<String> = text
            .split(|c: char| !c.is_alphabetic() && c != '\'')
            .filter(|w| w.chars().next().is_some_and(char::is_lowercase))
            .map(str::to_owned)
            .collect();
        for para in paragraphs(text) {
            for seg in &para {
                let Segment::Narration(n) = seg else { continue };
                if let Some(Tag::Named(name)) = speech_tag(n, namer)
                    && namer.mentions(&name).is_empty()
                    && is_name(&common, &name)
                {
                    other_speakers.insert(name);
                }
                for s in sentences(n) {
                    let mentions = namer.mentions(s);
                    let ids: BTreeSet<&str> = mentions.iter().map(|m| m.character).collect();
                    let [id] = ids.into_iter().collect::<Vec<_>>()[..] else {
                        continue;
                    };
                    let w: Vec<String> = words(s).collect();
                    let he = w.iter().any(|w| matches!(w.as_str(), "he" | "his" | "him"));
                    let she = w
                        .iter()
                        .any(|w| matches!(w.as_str(), "she" | "her" | "hers"));
                    let v = votes.entry(id).or_default();
                    v.0 += i32::from(he && !she);
                    v.1 += i32::from(she && !he);
                }
            }
        }
        for c in characters {
            let hint = |list: &[&str]| {
                c.forms()
                    .flat_map(|f| words(f).collect::<Vec<_>>())
                    .any(|w| list.contains(&w.as_str()))
            };
            let gender = match (hint(MALE_HINTS), hint(FEMALE_HINTS)) {
                (true, false) => Gender::He,
                (false, true) => Gender::She,
                _ => match votes.get(c.id.as_str()) {
                    Some((he, she)) if he > she => Gender::He,
                    Some((he, she)) if she > he => Gender::She,
                    _ => Gender::Unknown,
                },
            };
            genders.insert(c.id.clone(), gender);
        }
        let families = characters
            .iter()
            .filter_map(|c| {
                let family = c.name.split_whitespace().last()?.to_lowercase();
                let elder = c
                    .forms()
                    .any(|f| words(f).any(|w| ELDER_WORDS.contains(&w.as_str())));
                Some((c.id.clone(), (family, elder)))
            })
            .collect();
        Self {
            genders,
            other_speakers,
            common,
            families,
        }
    }
}
