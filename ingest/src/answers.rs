//! Answer files (`eval/answers/README.md`): what a reader knows of a book, and the
//! comparison of an ingested folder with it (`dramatis eval ingest`).
//!
//! Places in the book are given by anchors, short phrases that occur once. They are
//! found in the book with whitespace runs folded to one space, and mapped back to byte
//! offsets of the book as `read_book` returns it, the offsets the ingest's scene spans
//! use. So the comparison never depends on the ingest cutting scenes where the reader
//! did: a reader's scene is compared with the ingested scenes that cover it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context as _, bail};
use serde::Deserialize;

use crate::book::text::{FocusCharacter, cjk_break, join_wrapped, prefix, read_characters};

/// A book with its whitespace folded, for finding anchors.
#[derive(Debug)]
pub struct Anchors {
    folded: String,
    /// The book's byte offset of each byte of `folded`.
    offsets: Vec<usize>,
}

impl Anchors {
    #[must_use]
    pub fn new(book: &str) -> Self {
        let mut folded = String::with_capacity(book.len());
        let mut offsets = Vec::with_capacity(book.len());
        let mut space = false;
        for (at, c) in book.char_indices() {
            if c.is_whitespace() {
                space = true;
                continue;
            }
            // A line broken inside Chinese text folds to nothing, as the ingest joins it.
            if space && !folded.is_empty() && !cjk_break(&folded, &book[at..]) {
                folded.push(' ');
                offsets.push(at);
            }
            space = false;
            folded.push(c);
            offsets.extend(at..at + c.len_utf8());
        }
        Self { folded, offsets }
    }

    /// The book offset where `phrase` starts; an error unless it occurs exactly once.
    pub fn find(&self, phrase: &str) -> anyhow::Result<usize> {
        let (at, _) = self.locate(phrase)?;
        Ok(self.offsets[at])
    }

    /// The book offset just past the end of `phrase` (which occurs once).
    pub fn find_end(&self, phrase: &str) -> anyhow::Result<usize> {
        let (at, len) = self.locate(phrase)?;
        let last = at + len - 1;
        Ok(self.offsets[last] + 1)
    }

    /// Where the folded `phrase` is in the folded book, and its length in bytes.
    fn locate(&self, phrase: &str) -> anyhow::Result<(usize, usize)> {
        let phrase = fold(phrase);
        if phrase.is_empty() {
            bail!("an empty anchor");
        }
        let mut found = self.folded.match_indices(phrase.as_str()).map(|(at, _)| at);
        let Some(first) = found.next() else {
            bail!("anchor `{}` is not in the book", prefix(&phrase, 60));
        };
        if found.next().is_some() {
            bail!(
                "anchor `{}` occurs more than once in the book; use a longer phrase",
                prefix(&phrase, 60)
            );
        }
        Ok((first, phrase.len()))
    }
}

/// `text` with every whitespace run as one space (none where a line breaks inside
/// Chinese text), trimmed.
#[must_use]
pub fn fold(text: &str) -> String {
    join_wrapped(text)
}

/// The answer file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerFile {
    /// The book's file name.
    pub book: String,
    /// The answers cover the book's first N chapters only; the book is ingested with
    /// `--chapters N` to be judged by them.
    #[serde(default)]
    pub through_chapter: Option<usize>,
    #[serde(default)]
    pub chapters: Vec<ChapterAnswer>,
    #[serde(default)]
    pub lines: Vec<LineAnswer>,
    #[serde(default)]
    pub scenes: Vec<SceneAnswer>,
    #[serde(default)]
    pub facts: Vec<FactAnswer>,
    /// A book of documents (journals, letters, cuttings): each one's start and writer.
    #[serde(default)]
    pub documents: Vec<DocumentAnswer>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocumentAnswer {
    pub starts: String,
    /// Canonical name of whoever wrote it; empty when not on the list (a newspaper).
    #[serde(default)]
    pub writer: String,
    /// journal, diary, letter, telegram, memorandum, cutting, log or other.
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChapterAnswer {
    pub starts: String,
    #[serde(default)]
    pub title: String,
    /// Canonical name of the first-person narrator; empty for third person.
    #[serde(default)]
    pub narrator: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineAnswer {
    pub quote: String,
    /// Canonical name; empty when the speaker is not on the list.
    pub speaker: String,
    #[serde(default)]
    pub addressee: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Movement {
    pub who: String,
    pub at: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneAnswer {
    pub starts: String,
    #[serde(default)]
    pub ends: Option<String>,
    #[serde(default)]
    pub place: String,
    pub present: Vec<String>,
    #[serde(default)]
    pub referenced: Vec<String>,
    #[serde(default)]
    pub enters: Vec<Movement>,
    #[serde(default)]
    pub leaves: Vec<Movement>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactAnswer {
    pub id: String,
    pub text: String,
    pub evidence: Vec<String>,
    pub at: String,
    pub known_by: Vec<String>,
    #[serde(default)]
    pub unsure: Vec<String>,
}

/// Answers resolved against the book and the character list: offsets and ids.
#[derive(Debug, Clone)]
pub struct Answers {
    pub book: String,
    pub characters: Vec<FocusCharacter>,
    /// (start offset, narrator id or None).
    pub chapters: Vec<(usize, Option<String>)>,
    /// (offset of the quote's first word, folded quote, speaker id or None).
    pub lines: Vec<(usize, String, Option<String>)>,
    pub scenes: Vec<ResolvedScene>,
    pub facts: Vec<ResolvedFact>,
    /// (start offset, writer id or None).
    pub documents: Vec<(usize, Option<String>)>,
}

#[derive(Debug, Clone)]
pub struct ResolvedScene {
    pub start: usize,
    pub end: usize,
    pub place: String,
    pub present: BTreeSet<String>,
}

#[derive(Debug, Clone)]
pub struct ResolvedFact {
    pub id: String,
    pub evidence: Vec<String>,
    pub at: usize,
    pub known_by: BTreeSet<String>,
    pub unsure: BTreeSet<String>,
}

impl Answers {
    /// Reads `folder/answers.toml` and `folder/characters.txt`, with the book found in
    /// `books` under the file's `book` name; every anchor and name is checked.
    pub fn load(folder: &Path, books: &Path) -> anyhow::Result<(Self, String)> {
        let path = folder.join("answers.toml");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let file: AnswerFile =
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let characters = read_characters(&folder.join("characters.txt"))?;
        let book_path = books.join(&file.book);
        let book = crate::book::text::read_book(&book_path)?;
        let answers = Self::resolve(&file, characters, &book)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok((answers, book))
    }

    /// Resolves `file` against `book` and `characters`.
    pub fn resolve(
        file: &AnswerFile,
        characters: Vec<FocusCharacter>,
        book: &str,
    ) -> anyhow::Result<Self> {
        let anchors = Anchors::new(book);
        let by_name: BTreeMap<&str, &str> = characters
            .iter()
            .map(|c| (c.name.as_str(), c.id.as_str()))
            .collect();
        let id = |name: &str, field: &str| -> anyhow::Result<Option<String>> {
            if name.is_empty() {
                return Ok(None);
            }
            by_name
                .get(name)
                .map(|id| Some((*id).to_owned()))
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "{field}: `{}` is not a canonical name of characters.txt",
                        prefix(name, 60)
                    )
                })
        };
        let ids = |names: &[String], field: &str| -> anyhow::Result<BTreeSet<String>> {
            names
                .iter()
                .map(|n| id(n, field)?.ok_or_else(|| anyhow::anyhow!("{field}: an empty name")))
                .collect()
        };
        let mut chapters = Vec::new();
        for (i, c) in file.chapters.iter().enumerate() {
            let at = anchors
                .find(&c.starts)
                .with_context(|| format!("chapters[{i}].starts"))?;
            chapters.push((at, id(&c.narrator, &format!("chapters[{i}].narrator"))?));
        }
        let mut lines = Vec::new();
        for (i, l) in file.lines.iter().enumerate() {
            let at = anchors
                .find(&l.quote)
                .with_context(|| format!("lines[{i}].quote"))?;
            lines.push((
                at,
                fold(&l.quote),
                id(&l.speaker, &format!("lines[{i}].speaker"))?,
            ));
        }
        let starts: Vec<usize> = file
            .scenes
            .iter()
            .enumerate()
            .map(|(i, s)| {
                anchors
                    .find(&s.starts)
                    .with_context(|| format!("scenes[{i}].starts"))
            })
            .collect::<anyhow::Result<_>>()?;
        let chapter_end = |at: usize| {
            chapters
                .iter()
                .map(|(start, _)| *start)
                .find(|start| *start > at)
                .unwrap_or(book.len())
        };
        let mut scenes = Vec::new();
        for (i, s) in file.scenes.iter().enumerate() {
            let start = starts[i];
            let end = match &s.ends {
                Some(ends) => anchors
                    .find_end(ends)
                    .with_context(|| format!("scenes[{i}].ends"))?,
                None => starts
                    .get(i + 1)
                    .copied()
                    .unwrap_or(book.len())
                    .min(chapter_end(start)),
            };
            if end <= start {
                bail!("scenes[{i}] ends before it starts");
            }
            scenes.push(ResolvedScene {
                start,
                end,
                place: s.place.clone(),
                present: ids(&s.present, &format!("scenes[{i}].present"))?,
            });
        }
        let facts = resolve_facts(file, &anchors, &ids)?;
        let mut documents = Vec::new();
        for (i, d) in file.documents.iter().enumerate() {
            let at = anchors
                .find(&d.starts)
                .with_context(|| format!("documents[{i}].starts"))?;
            documents.push((at, id(&d.writer, &format!("documents[{i}].writer"))?));
        }
        Ok(Self {
            book: file.book.clone(),
            characters,
            chapters,
            lines,
            scenes,
            facts,
            documents,
        })
    }
}

/// Names (of one field) made ids.
type NamesToIds<'a> = dyn Fn(&[String], &str) -> anyhow::Result<BTreeSet<String>> + 'a;

/// The answer file's facts, each placed in the book and its knowers named by id.
fn resolve_facts(
    file: &AnswerFile,
    anchors: &Anchors,
    ids: &NamesToIds<'_>,
) -> anyhow::Result<Vec<ResolvedFact>> {
    let mut facts = Vec::new();
    for (i, f) in file.facts.iter().enumerate() {
        facts.push(ResolvedFact {
            id: f.id.clone(),
            evidence: f.evidence.iter().map(|e| e.to_lowercase()).collect(),
            at: anchors
                .find(&f.at)
                .with_context(|| format!("facts[{i}].at"))?,
            known_by: ids(&f.known_by, &format!("facts[{i}].known_by"))?,
            unsure: ids(&f.unsure, &format!("facts[{i}].unsure"))?,
        });
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOK: &str = "CHAPTER I\n\nIt was a  dark\nnight. \"Come in,\" said Holmes.\n\n\
                        \"Thank you,\" said I.\n";

    #[test]
    fn anchors_fold_whitespace_and_map_back_to_book_offsets() {
        let anchors = Anchors::new(BOOK);
        let at = anchors.find("a dark night.").expect("found");
        assert_eq!(&BOOK[at..at + 1], "a");
        let end = anchors.find_end("a dark night.").expect("found");
        assert_eq!(&BOOK[at..end], "a  dark\nnight.");
        assert!(anchors.find("said").is_err(), "twice");
        assert!(anchors.find("said Watson").is_err(), "absent");
        let quote = anchors.find("Thank you,").expect("found");
        assert_eq!(&BOOK[quote..quote + 5], "Thank");
    }

    #[test]
    fn a_chinese_anchor_runs_across_a_line_break_as_the_ingest_joins_it() {
        let book = "    士隐笑道：“请\n坐。”雨村道：“好。”\n";
        let anchors = Anchors::new(book);
        let at = anchors.find("“请坐。”").expect("found across the break");
        let end = anchors.find_end("“请坐。”").expect("found");
        assert_eq!(&book[at..end], "“请\n坐。”");
        assert!(anchors.find("请坐。”雨村道：“好").is_ok());
    }
}
