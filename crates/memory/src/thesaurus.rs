//! Words that mean the same: WordNet's synonym sets, folded to the stems the lexical
//! index and the evidence gate compare, so "a little book" can match "a small book"
//! and a question about "the books" can reach a memory of "the ledgers".
//!
//! It is general knowledge of English, the same for every character and about no one
//! in any story: no world truth travels through it.
//!
//! **Which senses.** A word's synonyms are the other single-word lemmas of its most
//! frequent [`SENSES`] senses in each part of speech (WordNet's index lists a word's
//! senses by how often annotators met them), kept only when they are content words.
//! A rare sense ("pinch" for steal) would otherwise make common words match anything.

use std::collections::HashMap;
use std::path::Path;

use wordnet_db::WordNet;

use crate::lexical::stems;

/// The senses of a word, most frequent first, whose synonyms count.
pub const SENSES: usize = 3;

/// The directory name, under the models directory, that set-up fills with WordNet's
/// `data.*` and `index.*` files.
pub const WORDNET_DIR: &str = "wordnet-3.1";

/// The file, beside WordNet's, that holds it folded to stems (a cache: removing it
/// only makes the next process fold WordNet again).
pub const FOLDED: &str = "dramatis-synonyms.tsv";

/// The folded file's first line: its format, and what it was folded with, so a file
/// folded another way is folded again.
fn folded_header() -> String {
    format!("# dramatis synonyms v1: WordNet 3.1, {SENSES} senses, English Snowball stems")
}

/// Stems that mean the same as a stem.
///
/// Every agent process holds one, so it is kept compact: the stems sorted in one
/// string and found by binary search, each stem's synonyms as numbers in one list
/// (about 1 MB for WordNet's stems, where a map of strings to lists of numbers took 7).
#[derive(Debug, Default, Clone)]
pub struct Thesaurus {
    /// Every stem, sorted, one after another.
    text: String,
    /// Where each stem ends in `text`.
    ends: Vec<u32>,
    /// Where each stem's synonyms end in `related`.
    related_ends: Vec<u32>,
    /// The synonyms of every stem, by number, stem after stem.
    related: Vec<u32>,
}

/// A thesaurus being built: stems numbered as they come.
#[derive(Debug, Default)]
struct Builder {
    names: Vec<String>,
    numbers: HashMap<String, u32>,
    /// Per stem number, the numbers of its synonyms.
    related: Vec<Vec<u32>>,
}

/// Why a thesaurus could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read WordNet from {dir}: {reason}")]
pub struct ThesaurusError {
    dir: String,
    reason: String,
}

impl Thesaurus {
    /// A thesaurus from groups of words that mean the same (each group one sense).
    #[must_use]
    pub fn from_groups<'a>(groups: impl IntoIterator<Item = &'a [&'a str]>) -> Self {
        let mut builder = Builder::default();
        for group in groups {
            let group: Vec<String> = group.iter().filter_map(|w| stem_of(w)).collect();
            for a in &group {
                for b in &group {
                    builder.relate(a, b);
                }
            }
        }
        builder.freeze()
    }

    /// WordNet's dictionary files in `dir` (`data.noun`, `index.noun`, … as WordNet
    /// 3.1 ships them), folded to stems.
    ///
    /// Folding reads all of WordNet (a second or two, and a few hundred megabytes for
    /// a moment that the allocator keeps), so the first process to fold it saves the
    /// result beside the files ([`FOLDED`], about a megabyte) and every later one reads
    /// that. A directory it cannot write to only costs each process the fold.
    ///
    /// # Errors
    /// When a WordNet file is missing or cannot be parsed.
    pub fn load(dir: &Path) -> Result<Self, ThesaurusError> {
        let folded = dir.join(FOLDED);
        if let Ok(text) = std::fs::read_to_string(&folded)
            && let Some(thesaurus) = Self::parse_folded(&text)
        {
            return Ok(thesaurus);
        }
        let thesaurus = Self::fold(dir)?;
        // Another process may be writing the same file: each writes its own and
        // renames it into place, so a reader sees a whole file or none.
        let temporary = dir.join(format!("{FOLDED}.{}", std::process::id()));
        if std::fs::write(&temporary, thesaurus.folded()).is_ok() {
            // The folded table is a cache: when it cannot be kept, the next start folds
            // again.
            let _ = std::fs::rename(&temporary, &folded);
        }
        // Gone already when the rename moved it into place.
        let _ = std::fs::remove_file(&temporary);
        Ok(thesaurus)
    }

    fn fold(dir: &Path) -> Result<Self, ThesaurusError> {
        let wordnet = WordNet::load(dir).map_err(|e| ThesaurusError {
            dir: dir.display().to_string(),
            reason: e.to_string(),
        })?;
        let mut builder = Builder::default();
        let mut seen = std::collections::HashSet::new();
        for synset in wordnet.iter_synsets() {
            for lemma in &synset.words {
                let word = lemma_word(lemma.text);
                if !seen.insert((synset.id.pos, word.clone())) {
                    continue;
                }
                let Some(stem) = stem_of(&word) else {
                    continue;
                };
                for id in wordnet
                    .synsets_for_lemma(synset.id.pos, &word)
                    .iter()
                    .take(SENSES)
                {
                    let Some(sense) = wordnet.get_synset(*id) else {
                        continue;
                    };
                    for other in &sense.words {
                        if let Some(other) = stem_of(&lemma_word(other.text)) {
                            builder.relate(&stem, &other);
                        }
                    }
                }
            }
        }
        Ok(builder.freeze())
    }

    /// One line per stem with synonyms: the stem, a tab, its synonyms separated by
    /// spaces; the first line names the format.
    fn folded(&self) -> String {
        let mut out = folded_header();
        out.push('\n');
        for n in 0..self.ends.len() {
            let related = self.related_of(n);
            if related.is_empty() {
                continue;
            }
            out.push_str(self.name(n));
            out.push('\t');
            let words: Vec<&str> = related.iter().map(|r| self.name(*r as usize)).collect();
            out.push_str(&words.join(" "));
            out.push('\n');
        }
        out
    }

    /// Reads [`Self::folded`]'s text; `None` when it is not that format.
    fn parse_folded(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        if lines.next() != Some(folded_header().as_str()) {
            return None;
        }
        let mut builder = Builder::default();
        for line in lines {
            let (stem, related) = line.split_once('\t')?;
            for other in related.split(' ') {
                builder.relate(stem, other);
            }
        }
        Some(builder.freeze())
    }

    /// Stem number `n`.
    fn name(&self, n: usize) -> &str {
        let start = n.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
        &self.text[start..self.ends[n] as usize]
    }

    /// The synonyms of stem number `n`, by number.
    fn related_of(&self, n: usize) -> &[u32] {
        let start = n
            .checked_sub(1)
            .map_or(0, |p| self.related_ends[p] as usize);
        &self.related[start..self.related_ends[n] as usize]
    }

    /// The number of `stem`, by binary search of the sorted stems.
    fn find(&self, stem: &str) -> Option<usize> {
        let (mut low, mut high) = (0, self.ends.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.name(middle).cmp(stem) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Some(middle),
            }
        }
        None
    }

    /// The stems that mean what `stem` means in one of its frequent senses.
    pub fn synonyms<'a>(&'a self, stem: &str) -> impl Iterator<Item = &'a str> + 'a {
        self.find(stem)
            .map(|n| self.related_of(n))
            .unwrap_or_default()
            .iter()
            .map(|n| self.name(*n as usize))
    }

    /// Whether `a` and `b` mean the same in a frequent sense of either.
    #[must_use]
    pub fn alike(&self, a: &str, b: &str) -> bool {
        a == b || self.synonyms(a).any(|s| s == b) || self.synonyms(b).any(|s| s == a)
    }

    /// How many stems have synonyms.
    #[must_use]
    pub fn len(&self) -> usize {
        (0..self.ends.len())
            .filter(|n| !self.related_of(*n).is_empty())
            .count()
    }

    /// Bytes it holds on the heap.
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + 4 * (self.ends.capacity() + self.related_ends.capacity() + self.related.capacity())
    }

    /// Whether it knows no synonyms at all (no WordNet files were found).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Builder {
    fn number(&mut self, stem: &str) -> u32 {
        if let Some(n) = self.numbers.get(stem) {
            return *n;
        }
        let n = dramatis_base::saturating_u32(self.names.len());
        self.names.push(stem.to_owned());
        self.numbers.insert(stem.to_owned(), n);
        self.related.push(Vec::new());
        n
    }

    /// Records that `b` means what `a` means (one way: `a`'s frequent senses hold `b`).
    fn relate(&mut self, a: &str, b: &str) {
        if a == b {
            return;
        }
        let (a, b) = (self.number(a), self.number(b));
        let list = &mut self.related[a as usize];
        if !list.contains(&b) {
            list.push(b);
        }
    }

    /// The compact thesaurus: stems sorted, each one's synonyms in their order.
    fn freeze(self) -> Thesaurus {
        let mut order: Vec<usize> = (0..self.names.len()).collect();
        order.sort_unstable_by(|a, b| self.names[*a].cmp(&self.names[*b]));
        let mut place = vec![0u32; order.len()];
        for (at, old) in order.iter().enumerate() {
            place[*old] = dramatis_base::saturating_u32(at);
        }
        let offset = dramatis_base::saturating_u32::<usize>;
        let mut thesaurus = Thesaurus::default();
        for old in order {
            thesaurus.text.push_str(&self.names[old]);
            thesaurus.ends.push(offset(thesaurus.text.len()));
            thesaurus
                .related
                .extend(self.related[old].iter().map(|r| place[*r as usize]));
            thesaurus.related_ends.push(offset(thesaurus.related.len()));
        }
        thesaurus
    }
}

/// A WordNet lemma as a word: lower-cased, an adjective's position marker ("(p)")
/// dropped; `None` for a phrase.
fn lemma_word(lemma: &str) -> String {
    let word = lemma.split('(').next().unwrap_or(lemma);
    word.to_lowercase()
}

/// The stem of a single content word; `None` for a phrase, a number or a stop word.
fn stem_of(word: &str) -> Option<String> {
    // Numbers stay out: "20" and "twenty" would make any line that counts something
    // hold any option that names a number.
    if !word.chars().all(char::is_alphabetic) {
        return None;
    }
    let mut all = stems(word);
    (all.len() == 1).then(|| all.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_of_one_group_are_alike_by_stem_and_others_are_not() {
        let t = Thesaurus::from_groups([&["little", "small"][..], &["sum", "amount"][..]]);
        assert!(t.alike("littl", "small"));
        assert!(t.alike("small", "littl"));
        assert!(t.alike("sum", "amount"));
        assert!(!t.alike("sum", "small"));
        assert_eq!(t.synonyms("amount").collect::<Vec<_>>(), ["sum"]);
        // Stop words, phrases and numbers never join a group.
        let t = Thesaurus::from_groups([
            &["the", "a"][..],
            &["look away", "ignore"][..],
            &["20", "twenty"][..],
        ]);
        assert!(t.is_empty());
    }

    /// WordNet as set-up fetches it: the words of a frequent sense are alike, a rare
    /// sense ("pinch" for steal) and numbers are not. Skipped before set-up has run.
    #[test]
    fn wordnet_relates_frequent_senses_only() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../models")
            .join(WORDNET_DIR);
        if !dir.join("data.noun").is_file() {
            eprintln!(
                "SKIPPED: {} is absent; run `bash scripts/setup.sh`",
                dir.display()
            );
            return;
        }
        let t = Thesaurus::fold(&dir).expect("WordNet");
        // What a later process reads back is what was folded.
        let lines = |t: &Thesaurus| {
            let mut all: Vec<String> = t
                .folded()
                .lines()
                .map(|l| {
                    let (stem, related) = l.split_once('\t').unwrap_or((l, ""));
                    let mut related: Vec<&str> = related.split(' ').collect();
                    related.sort_unstable();
                    format!("{stem}\t{}", related.join(" "))
                })
                .collect();
            all.sort();
            all
        };
        let read = Thesaurus::parse_folded(&t.folded()).expect("folded format");
        assert_eq!(lines(&read), lines(&t));
        assert!(Thesaurus::parse_folded("# another format\nbook\tledger").is_none());
        let loaded = Thesaurus::load(&dir).expect("WordNet");
        assert_eq!(lines(&loaded), lines(&t));
        assert!(dir.join(FOLDED).is_file());
        assert!(t.len() > 20_000, "{} stems", t.len());
        // Every agent process holds it: compact, not a map of strings.
        assert!(t.heap_bytes() < 2 << 20, "{} bytes", t.heap_bytes());
        assert!(
            loaded.heap_bytes() < 2 << 20,
            "{} bytes",
            loaded.heap_bytes()
        );
        for (a, b) in [
            ("ledger", "book"),
            ("littl", "small"),
            ("bundl", "packet"),
            ("sum", "amount"),
        ] {
            assert!(t.alike(a, b), "{a} ~ {b}");
        }
        for (a, b) in [("pinch", "steal"), ("woman", "ledger"), ("20", "twenti")] {
            assert!(!t.alike(a, b), "{a} !~ {b}");
        }
        let missing = Thesaurus::load(&dir.join("absent")).expect_err("no files");
        assert!(missing.to_string().contains("absent"), "{missing}");
    }
}
