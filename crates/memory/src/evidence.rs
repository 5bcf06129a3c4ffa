//! The evidence gate: whether what a character holds supports an answer, decided by
//! what the held texts say rather than by how similar they are to the question.
//!
//! **On the subject.** A held text bears on a question when it was found by the
//! question's own search above its relevance floor, when it shares a content word (by
//! stem) with the question, or when its cosine to the question reaches `close`.
//!
//! **Options.** With a multiple-choice question, each held text on the subject votes
//! for the option whose *distinctive* words (stems no other option and not the
//! question carries) it holds the largest share of, each word weighted by its rarity in
//! the character's own facts, so a word most of its memories hold counts for little. A
//! share under `share`, or two options held equally, is no vote. The option with the
//! best vote wins (between equal shares, the text sharing more words with the question);
//! two options tied is a refusal. A text off the subject still votes for an option when
//! it *singles that option out*: the question and option together are at least `fit`
//! close to it and `single_margin` closer than any other option.
//!
//! **Options in other words.** When no held text holds any option's words, the option
//! that the question and option together are closest to in a text firmly on the
//! subject (found by the question's search or sharing a word with it) wins, if it
//! reaches `fit`, is `fit_margin` closer than the next option, and is `lift` closer
//! than the question alone.
//!
//! **Words in other words.** A text holds a word it holds a synonym of
//! ([`Thesaurus`]) for `alike` of the word's weight, and a word it shares with the
//! question only as a synonym puts it on the subject, as closeness does: it must hold
//! `loose_share` of an option (firmly on the subject takes a word shared as written:
//! synonyms making texts firm cost 14 refusals in 190 on a novel's cloze items).
//!
//! **Merely close.** A text that only its closeness puts on the subject must hold
//! `loose_share` of an option's words: a place at the hospital is near a question about
//! a hospital man's trade without saying what it is.
//!
//! **Otherwise the character refuses.** Without options, the gate answers when anything
//! held bears on the question.

use std::collections::BTreeSet;

use crate::lexical::stems;
use crate::thesaurus::Thesaurus;

/// One text the character holds (a fact, a scene memory, a line it perceived, a module
/// item), with its cosine to the question (0 when unknown).
#[derive(Debug, Clone, Copy)]
pub struct Held<'a> {
    pub text: &'a str,
    pub closeness: f32,
    /// Found by the question's own search (above its relevance floor): on the subject.
    pub asked: bool,
    /// Per option, the cosine between the question and option together and this text
    /// (empty when the text has no vector).
    pub fits: &'a [f32],
}

/// The gate's thresholds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gate {
    /// A held text at least this close to the question is on its subject even without
    /// a shared word (a question in entirely other words). With all-MiniLM-L6-v2, lines
    /// of one story sit at 0.2–0.7 of any question about it, so this alone is weak: the
    /// options' own words decide.
    pub close: f32,
    /// When no option's words are held: an option is supported by a held text on the
    /// subject that the question and option together are at least this close to…
    pub fit: f32,
    /// …and closer by this margin than to any other option (an option in other words
    /// than the memory that supports it).
    pub fit_margin: f32,
    /// A held text off the subject still supports an option whose words it holds when
    /// the option, asked with the question, is at least `fit` close to it and closer by
    /// this margin than any other option: the text singles that option out.
    pub single_margin: f32,
    /// The share of an option's distinctive words (weighted by rarity) a text must
    /// hold to support it.
    pub share: f32,
    /// An option in other words is supported only when asking it with the question
    /// brings the text this much closer than the question alone: the option, not just
    /// the subject (a name they share), is what matches.
    pub lift: f32,
    /// The share a text needs when only its closeness puts it on the subject (it was
    /// not found by the question's search and shares no word with it).
    pub loose_share: f32,
    /// How much of a word a text holds when it holds the word only in other words (a
    /// synonym): less than the word itself, since a synonym of one sense may stand for
    /// another, and less than `share`, so a synonym alone never carries a one-word
    /// option (at 0.5, "Scripted line 1." carried "written", and a pawnbroker's "small
    /// book" the option "ledger").
    pub alike: f32,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            close: 0.3,
            fit: 0.5,
            fit_margin: 0.06,
            single_margin: 0.1,
            share: 0.5,
            lift: 0.03,
            loose_share: 0.75,
            alike: 0.4,
        }
    }
}

fn stem_set(text: &str) -> BTreeSet<String> {
    stems(text).into_iter().collect()
}

/// A held text's stems, and the stems they mean in a frequent sense.
struct Words {
    own: BTreeSet<String>,
    alike: BTreeSet<String>,
}

impl Words {
    fn of(text: &str, thesaurus: &Thesaurus) -> Self {
        let own = stem_set(text);
        let alike = own
            .iter()
            .flat_map(|s| thesaurus.synonyms(s))
            .map(str::to_owned)
            .collect();
        Self { own, alike }
    }

    /// Whether the text holds a word that means `word` (not `word` itself).
    fn holds_alike(&self, word: &str, thesaurus: &Thesaurus) -> bool {
        self.alike.contains(word) || thesaurus.synonyms(word).any(|s| self.own.contains(s))
    }

    /// How much of `word` the text holds: all of it as written, `alike` of it in
    /// other words, else nothing.
    fn holds(&self, word: &str, thesaurus: &Thesaurus, alike: f32) -> f32 {
        if self.own.contains(word) {
            1.0
        } else if self.holds_alike(word, thesaurus) {
            alike
        } else {
            0.0
        }
    }

    /// How many of `words` the text holds as written, and how many more in other
    /// words.
    fn shares(&self, words: &BTreeSet<String>, thesaurus: &Thesaurus) -> (usize, usize) {
        let written = words.iter().filter(|w| self.own.contains(*w)).count();
        let alike = words
            .iter()
            .filter(|w| !self.own.contains(*w) && self.holds_alike(w, thesaurus))
            .count();
        (written, alike)
    }
}

impl Gate {
    /// Whether a held text with these stems and this closeness names the subject.
    fn on_subject(&self, (written, alike): (usize, usize), h: &Held<'_>) -> bool {
        h.asked || h.closeness >= self.close || written + alike > 0
    }

    /// Whether anything held bears on `question` (a word it shares may be in other
    /// words, by `thesaurus`).
    #[must_use]
    pub fn bears_on(&self, question: &str, held: &[Held<'_>], thesaurus: &Thesaurus) -> bool {
        let subject = stem_set(question);
        held.iter().any(|h| {
            let shared = Words::of(h.text, thesaurus).shares(&subject, thesaurus);
            self.on_subject(shared, h)
        })
    }

    /// The option (index into `options`) that a held text bearing on `question`
    /// supports best, with the held text's index; `None` when no option is supported,
    /// or the best two are supported equally.
    ///
    /// An option's support from one text is the share of its distinctive words the
    /// text holds, each word weighted by `rarity` (so a word most memories hold, such
    /// as "house" in a story set in one, counts for little); it must reach `share`.
    /// Between equal shares, the text that shares more words with the question wins.
    #[must_use]
    pub fn choose(
        &self,
        question: &str,
        options: &[&str],
        held: &[Held<'_>],
        (rarity, thesaurus): (&dyn Fn(&str) -> f32, &Thesaurus),
    ) -> Option<(usize, usize)> {
        let subject = stem_set(question);
        let words: Vec<BTreeSet<String>> = options.iter().map(|o| stem_set(o)).collect();
        let distinctive: Vec<Vec<(&String, f32)>> = words
            .iter()
            .enumerate()
            .map(|(i, own)| {
                own.iter()
                    .filter(|w| !subject.contains(*w))
                    .filter(|w| {
                        words
                            .iter()
                            .enumerate()
                            .all(|(j, other)| j == i || !other.contains(*w))
                    })
                    .map(|w| (w, rarity(w).max(f32::EPSILON)))
                    .collect()
            })
            .collect();
        // Each held text: its stems, how many it shares with the question, and whether
        // it is on the subject.
        let all: Vec<(usize, Words, usize, bool)> = held
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let words = Words::of(h.text, thesaurus);
                let shared = words.shares(&subject, thesaurus);
                let on = self.on_subject(shared, h);
                (i, words, shared.0, on)
            })
            .collect();
        let needed = |i: usize, shared: usize| {
            if held[i].asked || shared > 0 {
                self.share
            } else {
                self.loose_share.max(self.share)
            }
        };
        // Each text that supports one option more than any other votes for it, with
        // (share, words shared with the question); a text that supports two options
        // equally supports neither.
        let mut support: Vec<(usize, f32, usize, usize)> = Vec::new();
        for (i, words, shared, on) in &all {
            let mut shares: Vec<(usize, f32)> = distinctive
                .iter()
                .enumerate()
                .filter(|(option, wanted)| {
                    !wanted.is_empty() && (*on || self.singles_out(held[*i].fits, *option))
                })
                .map(|(option, wanted)| {
                    let total: f32 = wanted.iter().map(|(_, w)| w).sum();
                    let found: f32 = wanted
                        .iter()
                        .map(|(w, weight)| weight * words.holds(w, thesaurus, self.alike))
                        .sum();
                    (option, found / total)
                })
                .filter(|(_, share)| *share >= needed(*i, *shared))
                .collect();
            shares.sort_by(|a, b| b.1.total_cmp(&a.1));
            match shares.as_slice() {
                [(option, share)] => support.push((*option, *share, *shared, *i)),
                [(option, a), (_, b), ..] if a > b => support.push((*option, *a, *shared, *i)),
                _ => {}
            }
        }
        support.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.cmp(&a.2)).then(a.3.cmp(&b.3)));
        // The best vote per option.
        let mut seen = BTreeSet::new();
        support.retain(|v| seen.insert(v.0));
        // An option in other words needs a text firmly on the subject: found by the
        // question's search or sharing a word with it, not merely close.
        let relevant: Vec<usize> = all
            .iter()
            .filter(|(i, _, shared, on)| *on && (held[*i].asked || *shared > 0))
            .map(|(i, ..)| *i)
            .collect();
        match support.as_slice() {
            [] => self.fitted(options.len(), held, &relevant),
            [(option, _, _, text)] => Some((*option, *text)),
            [(option, a, x, text), (_, b, y, _), ..] if a > b || (a == b && x > y) => {
                Some((*option, *text))
            }
            _ => None,
        }
    }

    /// Whether a held text's fits single `option` out: close enough, and clearly
    /// closer than any other option.
    fn singles_out(&self, fits: &[f32], option: usize) -> bool {
        let Some(&own) = fits.get(option) else {
            return false;
        };
        let others = fits
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != option)
            .map(|(_, f)| *f)
            .fold(f32::MIN, f32::max);
        own >= self.fit && own - others >= self.single_margin
    }

    /// No option's own words are held: the option the question and option together are
    /// closest to in a held text on the subject, when that is close enough and clearly
    /// closer than any other option.
    fn fitted(
        &self,
        options: usize,
        held: &[Held<'_>],
        relevant: &[usize],
    ) -> Option<(usize, usize)> {
        let mut best: Vec<(usize, usize, f32)> = (0..options)
            .filter_map(|option| {
                relevant
                    .iter()
                    .filter_map(|i| Some((*i, *held[*i].fits.get(option)?)))
                    .filter(|(i, fit)| fit - held[*i].closeness >= self.lift)
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(text, fit)| (option, text, fit))
            })
            .collect();
        best.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
        let (option, text, fit) = *best.first()?;
        let runner_up = best.get(1).map_or(f32::MIN, |b| b.2);
        (fit >= self.fit && fit - runner_up >= self.fit_margin).then_some((option, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn even(_: &str) -> f32 {
        1.0
    }

    static NO_SYNONYMS: std::sync::LazyLock<Thesaurus> =
        std::sync::LazyLock::new(Thesaurus::default);

    /// Every word equally rare, no synonyms.
    fn plain() -> (&'static dyn Fn(&str) -> f32, &'static Thesaurus) {
        (&even, &NO_SYNONYMS)
    }

    fn held(text: &str) -> Held<'_> {
        Held {
            text,
            closeness: 0.2,
            asked: false,
            fits: &[],
        }
    }

    const BATTLES: [&str; 4] = [
        "The battle of Maiwand",
        "The battle of Kandahar",
        "The battle of Isandlwana",
        "The battle of Tel-el-Kebir",
    ];

    #[test]
    fn an_option_is_picked_by_its_own_words_in_a_memory_on_the_subject() {
        let memory = "I was wounded in the shoulder at the battle of Maiwand.";
        let gate = Gate::default();
        assert_eq!(
            gate.choose(
                "Where was the surgeon wounded?",
                &BATTLES,
                &[held(memory)],
                plain()
            ),
            Some((0, 0))
        );
        // The word the options share ("battle") picks nothing.
        assert_eq!(
            gate.choose(
                "Where was the surgeon wounded?",
                &BATTLES,
                &[held("He spoke of the battle at length.")],
                plain()
            ),
            None
        );
    }

    #[test]
    fn a_memory_off_the_subject_supports_nothing_unless_it_is_very_close() {
        let options = ["Consulting detective", "Hospital dresser", "Police surgeon"];
        let question = "What is the peculiar chemist's real trade?";
        let memory = "Years ago I was a hospital dresser under Dr Watson at Barts.";
        let gate = Gate::default();
        assert_eq!(
            gate.choose(question, &options, &[held(memory)], plain()),
            None
        );
        let close = Held {
            text: memory,
            closeness: 0.7,
            asked: false,
            fits: &[],
        };
        assert_eq!(
            gate.choose(question, &options, &[close], plain()),
            Some((1, 0))
        );
    }

    #[test]
    fn two_options_supported_equally_are_a_refusal_and_a_larger_share_wins() {
        let options = [
            "Two bedrooms and a sitting-room",
            "Three bedrooms and a parlour",
        ];
        let question = "How are the rooms laid out?";
        let gate = Gate::default();
        let both = "The rooms: two bedrooms, or three, and a parlour or a sitting-room.";
        assert_eq!(
            gate.choose(question, &options, &[held(both)], plain()),
            None
        );
        let one = "The rooms are two bedrooms and a large sitting-room.";
        assert_eq!(
            gate.choose(question, &options, &[held(both), held(one)], plain()),
            Some((0, 1))
        );
    }

    #[test]
    fn a_question_bears_on_a_held_text_through_a_shared_stem_or_closeness() {
        let gate = Gate::default();
        assert!(gate.bears_on(
            "Who wounded him?",
            &[held("He was wounded at Maiwand.")],
            &NO_SYNONYMS
        ));
        assert!(!gate.bears_on(
            "Who wounded him?",
            &[held("The rent is due on Friday.")],
            &NO_SYNONYMS
        ));
        let close = Held {
            text: "The rent is due on Friday.",
            closeness: 0.6,
            asked: false,
            fits: &[],
        };
        assert!(gate.bears_on("Who wounded him?", &[close], &NO_SYNONYMS));
        assert!(!gate.bears_on("Who wounded him?", &[], &NO_SYNONYMS));
    }

    /// A text only its closeness puts on the subject (not found by the question's
    /// search, no word shared) is weak evidence: it supports an option only when it
    /// holds nearly all the option's own words, and never one in other words.
    #[test]
    fn a_text_merely_close_to_the_question_needs_nearly_all_of_an_option() {
        let options = ["Hospital dresser", "Consulting detective", "Police surgeon"];
        let question = "What is the peculiar chemist's real trade?";
        let gate = Gate::default();
        let close = |text| Held {
            text,
            closeness: 0.34,
            asked: false,
            fits: &[],
        };
        // Half of "Hospital dresser": a place at the hospital says nothing of a trade.
        let place = "The chemical laboratory at St Bartholomew's Hospital.";
        assert_eq!(
            gate.choose(question, &options, &[close(place)], plain()),
            None
        );
        // The same half, from a text found by the question's own search, is enough.
        let found = Held {
            asked: true,
            ..close(place)
        };
        assert_eq!(
            gate.choose(question, &options, &[found], plain()),
            Some((0, 0))
        );
        // All of it, even from a merely close text.
        let whole = "I was a hospital dresser under Watson.";
        assert_eq!(
            gate.choose(question, &options, &[close(whole)], plain()),
            Some((0, 0))
        );
        // In other words: the fits of a merely close text pick nothing; of a text
        // that names the subject, the clearly closest option.
        let fits = [0.62, 0.4, 0.41];
        let loose = Held {
            fits: &fits,
            ..close("He works among the wards and bandages.")
        };
        assert_eq!(gate.choose(question, &options, &[loose], plain()), None);
        let firm = Held {
            fits: &fits,
            ..close("The chemist works among the wards and bandages.")
        };
        assert_eq!(
            gate.choose(question, &options, &[firm], plain()),
            Some((0, 0))
        );
    }

    /// An option in other words is picked only when asking it with the question brings
    /// the text closer than the question alone: a text close to the question for a name
    /// they share does not pick the option that happens to sit nearest.
    #[test]
    fn an_option_in_other_words_must_lift_the_match() {
        let options = ["At Maiwand", "At Kandahar", "In the Crimea"];
        let question = "Where was John Watson wounded?";
        let gate = Gate::default();
        let fits = [0.6, 0.5, 0.5];
        let text = "John Watson goes to the laboratory.";
        let named = |closeness| Held {
            text,
            closeness,
            asked: true,
            fits: &fits,
        };
        assert_eq!(
            gate.choose(question, &options, &[named(0.59)], plain()),
            None
        );
        assert_eq!(
            gate.choose(question, &options, &[named(0.4)], plain()),
            Some((0, 0))
        );
    }

    /// A word held in other words (a synonym) counts for 0.4 of it: "a small black book
    /// full of names and sums", found by the question's search, answers for "a little
    /// book of names with amounts of money". A word the question and a text share only
    /// as synonyms puts the text on the subject as closeness does ("the books" and "the
    /// ledgers"), so it must hold three quarters of an option. A synonym alone never
    /// carries a one-word option.
    #[test]
    fn words_in_other_words_count_for_less_and_put_a_text_on_the_subject() {
        let thesaurus = Thesaurus::from_groups([
            &["little", "small"][..],
            &["sum", "amount"][..],
            &["ledger", "book"][..],
        ]);
        let words = (&even as &dyn Fn(&str) -> f32, &thesaurus);
        let gate = Gate::default();
        let options = [
            "A roll of banknotes",
            "A pawn ticket and a ring",
            "A little book of names with amounts of money",
        ];
        let question = "What was inside the bundle you pinched?";
        let packet = Held {
            asked: true,
            ..held("The packet I lifted holds a small black book full of names and sums.")
        };
        assert_eq!(
            gate.choose(question, &options, &[packet], words),
            Some((2, 0))
        );
        // As written only, it holds two of the option's five words: not enough.
        assert_eq!(gate.choose(question, &options, &[packet], plain()), None);
        let days = ["Monday", "Thursday"];
        let question = "On which weekday is the revenue man due to go through the books?";
        let ledgers = held("The inspector arrives on Thursday to audit the ledgers.");
        assert_eq!(
            gate.choose(question, &days, &[ledgers], words),
            Some((1, 0))
        );
        assert_eq!(gate.choose(question, &days, &[ledgers], plain()), None);
        let sizes = ["Little", "Huge"];
        let small = Held {
            asked: true,
            ..held("Some small change.")
        };
        assert_eq!(
            gate.choose("What size was it?", &sizes, &[small], words),
            None
        );
        let little = Held {
            text: "Little change.",
            ..small
        };
        assert_eq!(
            gate.choose("What size was it?", &sizes, &[little], words),
            Some((0, 0))
        );
    }
}
