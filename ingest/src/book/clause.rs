//! One sentence read as a clause for a fact: its subject (a named character, the
//! teller, or a pronoun for the last one named), its verb and what follows.

/// Words that open or carry a verb phrase: "was found", "had departed", "would have".
const AUXILIARIES: &[&str] = &[
    "was", "were", "is", "are", "am", "be", "been", "being", "had", "has", "have", "did", "does",
    "do", "will", "would", "could", "should", "can", "may", "might", "must", "shall", "not",
    "never",
];

/// Irregular participles that go on a verb phrase after an auxiliary ("had told").
const PARTICIPLES: &[&str] = &[
    "done", "gone", "seen", "made", "told", "found", "left", "heard", "brought", "thought", "got",
    "kept", "held", "lost", "sent", "set", "put", "run", "come", "become", "met", "known", "shown",
    "taken", "given", "said", "paid", "laid", "led", "read", "sat", "stood", "struck", "hung",
    "caught", "bought", "fought", "taught", "felt", "meant",
];

/// Words that open a sentence before its clause: "And", "But then", "Well,".
const OPENERS: &[&str] = &[
    "and", "but", "then", "so", "yet", "now", "still", "well", "oh", "ah", "indeed", "however",
    "besides", "why", "no", "yes",
];

/// Words that open a clause before the main one: "When we reached the house, Holmes…".
const LEADING_CLAUSE: &[&str] = &[
    "when", "as", "if", "after", "before", "while", "since", "though", "although", "once", "until",
    "till",
];

/// Prepositions that open a phrase before the main clause ("In the morning, I…"); unlike
/// a clause, the phrase holds no verb ("On that the Secretary gave it up, and…" is
/// itself the main clause).
const LEADING_PHRASE: &[&str] = &[
    "in", "at", "on", "upon", "for", "with", "from", "by", "during", "after", "before",
];

/// Pronouns that stand as a subject.
const SUBJECT_PRONOUNS: &[&str] = &[
    "i", "we", "he", "she", "they", "it", "you", "there", "this", "that",
];

/// The main clause of a fact's sentence: who or what (a name, a resolved pronoun, or a
/// noun phrase), what it did or was (the verb phrase), and to whom or what.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Clause {
    pub subject: String,
    pub predicate: String,
    pub object: String,
}

fn bare(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
        .to_lowercase()
}

fn is_verb(word: &str) -> bool {
    AUXILIARIES.contains(&word) || super::lexicon::is_past_verb(word)
}

impl Clause {
    /// Reads `text`. `named` are the names in it (start, end, name) in order; `teller`
    /// is who says "I" (the speaker, or the narrator); `he_or_she` is whom the narration
    /// last named in the paragraph.
    pub(super) fn read(
        text: &str,
        named: &[(usize, usize, String)],
        teller: Option<&str>,
        he_or_she: Option<&str>,
    ) -> Self {
        // "I" is the teller, "he" or "she" the one the paragraph named.
        let pronoun = |word: String| match word.as_str() {
            "i" => teller.map_or_else(|| "I".to_owned(), str::to_owned),
            "he" | "she" => he_or_she.map_or(word.clone(), str::to_owned),
            _ => word,
        };
        let tokens: Vec<(usize, &str)> = text
            .split_whitespace()
            .map(|w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
            .collect();
        let at = clause_start(&tokens);
        let Some(&(offset, first)) = tokens.get(at) else {
            return Self::default();
        };
        // The subject: a name starting here, a pronoun, or a noun phrase up to its verb.
        let (subject, mut next) =
            if let Some((_, end, name)) = named.iter().find(|(start, _, _)| *start == offset) {
                let next = tokens
                    .iter()
                    .position(|(o, _)| *o >= *end)
                    .unwrap_or(tokens.len());
                (name.clone(), next)
            } else if SUBJECT_PRONOUNS.contains(&bare(first).as_str()) {
                (pronoun(bare(first)), at + 1)
            } else {
                let verb = tokens[at..]
                    .iter()
                    .take(7)
                    .position(|(_, w)| is_verb(&bare(w)) || w.ends_with(','));
                match verb {
                    Some(v) if v > 0 && !tokens[at + v - 1].1.ends_with(',') => {
                        // "According to my notion he dropped it": the pronoun is the subject.
                        let start = (at..at + v)
                            .rev()
                            .find(|i| SUBJECT_PRONOUNS.contains(&bare(tokens[*i].1).as_str()));
                        if let Some(p) = start {
                            (pronoun(bare(tokens[p].1)), at + v)
                        } else {
                            let phrase: Vec<&str> =
                                tokens[at..at + v].iter().map(|(_, w)| *w).collect();
                            let phrase = phrase.join(" ");
                            (
                                phrase
                                    .trim_matches(|c: char| !c.is_alphanumeric())
                                    .to_owned(),
                                at + v,
                            )
                        }
                    }
                    _ => return Self::default(),
                }
            };
        // Adverbs between subject and verb ("Holmes quietly took").
        while tokens
            .get(next)
            .is_some_and(|(_, w)| bare(w).ends_with("ly") && !is_verb(&bare(w)))
        {
            next += 1;
        }
        let (verb, next) = verb_from(&tokens, next);
        if verb.is_empty() || subject.is_empty() {
            return Self::default();
        }
        let rest_at = tokens.get(next).map_or(text.len(), |(o, _)| *o);
        let object = named
            .iter()
            .find(|(start, _, name)| *start >= rest_at && *name != subject)
            .map(|(_, _, name)| name.clone())
            .unwrap_or_else(|| {
                let phrase: Vec<&str> = text[rest_at..]
                    .split([',', ';', '.', '!', '?', ':', '"'])
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .take(8)
                    .collect();
                phrase.join(" ")
            });
        Self {
            subject,
            predicate: verb.join(" "),
            object,
        }
    }
}

/// Where a sentence's clause starts: after its openers ("And", "Then") and after a
/// leading clause or phrase that ends in a comma ("When we reached the house, …").
fn clause_start(tokens: &[(usize, &str)]) -> usize {
    let mut at = 0;
    while tokens
        .get(at)
        .is_some_and(|(_, w)| OPENERS.contains(&bare(w).as_str()))
    {
        at += 1;
    }
    // "When we reached the house, Holmes…", "In the morning, I…": the clause after
    // the comma.
    if let Some(comma) = tokens[at.min(tokens.len())..]
        .iter()
        .take(14)
        .position(|(_, w)| w.ends_with(','))
    {
        let opener = tokens.get(at).map(|(_, w)| bare(w)).unwrap_or_default();
        let verbless = || {
            tokens[at..at + comma]
                .iter()
                .all(|(_, w)| !super::lexicon::is_past_verb(&bare(w)))
        };
        if LEADING_CLAUSE.contains(&opener.as_str())
            || (LEADING_PHRASE.contains(&opener.as_str()) && verbless())
        {
            at += comma + 1;
        }
    }
    at
}

/// The verb group starting at token `next` (an auxiliary, a past or present form, and
/// the participles after it), and the token after it.
fn verb_from(tokens: &[(usize, &str)], mut next: usize) -> (Vec<String>, usize) {
    let mut verb = Vec::new();
    while let Some((_, w)) = tokens.get(next) {
        let word = bare(w);
        let fits = if verb.is_empty() {
            is_verb(&word) || (word.ends_with('s') && word.len() > 3 && !word.ends_with("ss"))
        } else {
            is_verb(&word)
                || PARTICIPLES.contains(&word.as_str())
                || word.ends_with("ing")
                || word.ends_with("wn")
                || (word.ends_with("en") && word.len() >= 5 && word != "often")
        };
        if !fits || word.is_empty() {
            break;
        }
        verb.push(word);
        next += 1;
        if w.ends_with([',', '.', ';', '!', '?']) {
            break;
        }
    }
    (verb, next)
}
