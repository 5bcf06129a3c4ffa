//! The list of focus characters a book is ingested for (`characters.txt`): one per
//! line, a canonical name, its aliases, and how the text refers to it.

use std::path::Path;

use anyhow::{Context as _, bail};
use dramatis_runtime::prefix;
use serde::{Deserialize, Serialize};

use super::cjk::is_chinese;
use crate::file::id_from;

/// One focus character of the list: `Canonical Name | alias, alias | marks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FocusCharacter {
    pub id: String,
    pub name: String,
    pub aliases: Vec<String>,
    /// Marked `narrator`: the character tells some of the book in the first person.
    #[serde(default)]
    pub narrator: bool,
}

impl FocusCharacter {
    /// Every form the text may use: the name, then the aliases.
    pub fn forms(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.name.as_str()).chain(self.aliases.iter().map(String::as_str))
    }

    /// The first alias that describes rather than names ("the ferrywoman"): what
    /// strangers see.
    #[must_use]
    pub fn description(&self) -> Option<&str> {
        self.aliases
            .iter()
            .map(String::as_str)
            .find(|a| is_description(a) && !is_narrators_own(a))
    }
}

/// A form that describes (starts with a lowercase word: "the widow") rather than names.
#[must_use]
pub fn is_description(form: &str) -> bool {
    if is_chinese(form) {
        return CHINESE_DETERMINERS.iter().any(|d| form.starts_with(d));
    }
    form.chars().next().is_some_and(char::is_lowercase)
}

/// Chinese has no lowercase: a description starts with a demonstrative or a count
/// (`那僧`, "that monk"; `一个道人`, "a Taoist"), as an English one starts with "the".
const CHINESE_DETERMINERS: &[&str] = &["那", "这", "這", "一个", "一個", "一位"];

/// A description only the narrator can use ("my companion", "our landlady"): to anyone
/// else it names the wrong person, or no one.
#[must_use]
pub fn is_narrators_own(form: &str) -> bool {
    let first = form.split_whitespace().next().unwrap_or("");
    matches!(first.to_lowercase().as_str(), "my" | "our")
}

/// Reads the character list: one `Canonical Name | alias, alias | marks` per line (the
/// aliases and marks may be left out; the only mark is `narrator`); blank lines and `#`
/// comments are skipped. Ids are the name without its titles, lowercased, words joined
/// by `-` (the whole name when two characters would share one).
pub fn read_characters(path: &Path) -> anyhow::Result<Vec<FocusCharacter>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_characters(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Words that give a rank, an office or a form of address before a name.
const TITLE_WORDS: &[&str] = &[
    "mr",
    "mrs",
    "ms",
    "miss",
    "dr",
    "doctor",
    "sir",
    "lady",
    "lord",
    "dame",
    "captain",
    "capt",
    "major",
    "colonel",
    "col",
    "general",
    "lieutenant",
    "lt",
    "sergeant",
    "sgt",
    "inspector",
    "constable",
    "brother",
    "sister",
    "father",
    "elder",
    "professor",
    "prof",
    "rev",
    "reverend",
    "madame",
    "madam",
    "monsieur",
    "mademoiselle",
    "herr",
    "frau",
    "king",
    "queen",
    "prince",
    "princess",
    "count",
    "countess",
    "baron",
    "baroness",
    "duke",
    "duchess",
    "saint",
    "st",
    "uncle",
    "aunt",
    "master",
    "mistress",
    "the",
];

/// Whether `word` ("Mr.", "inspector") gives a rank, an office or a form of address.
pub(super) fn is_title_word(word: &str) -> bool {
    let bare = word.trim_end_matches('.').to_lowercase();
    TITLE_WORDS.contains(&bare.as_str())
}

/// Reads a character list: one `Canonical Name | alias, alias | narrator` per line. A
/// character's id is its name without titles, in lowercase words joined by `-`.
pub fn parse_characters(text: &str) -> anyhow::Result<Vec<FocusCharacter>> {
    let mut list: Vec<(usize, String, Vec<String>, bool)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.splitn(3, '|');
        let name = fields.next().unwrap_or(line).trim();
        let aliases = fields.next().unwrap_or("");
        let mut narrator = false;
        for mark in fields.next().unwrap_or("").split(',').map(str::trim) {
            match mark {
                "" => {}
                "narrator" => narrator = true,
                other => bail!(
                    "line {}: unknown mark `{}` (the only mark is `narrator`)",
                    n + 1,
                    prefix(other, 40)
                ),
            }
        }
        if name.is_empty() || name.chars().count() > 80 {
            bail!(
                "line {}: expected `Canonical Name | alias, alias` with a name of 1 to 80 \
                 characters, found `{}`",
                n + 1,
                prefix(line, 40)
            );
        }
        let aliases: Vec<String> = aliases
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty() && *a != name)
            .map(str::to_owned)
            .collect();
        list.push((n + 1, name.to_owned(), aliases, narrator));
    }
    if list.is_empty() {
        bail!("no characters: write one `Canonical Name | alias, alias` per line");
    }
    // One person listed twice: a canonical name that is another line's name or alias.
    // (Two people may share an alias, "the captain"; not a name.)
    for (line, name, _, _) in &list {
        if let Some((other, other_name, _, _)) = list.iter().find(|(l, n, a, _)| {
            l != line
                && (n.eq_ignore_ascii_case(name) && l < line
                    || a.iter().any(|a| a.eq_ignore_ascii_case(name)))
        }) {
            bail!(
                "line {line}: `{}` is already on line {other} (`{}`); one person is listed \
                 once, with every other name as an alias",
                prefix(name, 60),
                prefix(other_name, 60)
            );
        }
    }
    // The name without its titles ("Mr. Merryweather" is `merryweather`, "Sherlock
    // Holmes" `sherlock-holmes`); the whole name when two would share one. A Chinese
    // name is its pinyin ("孙悟空" is `sunwukong`, as in simplified or traditional
    // characters); a name with nothing left is `character-N`, N its line.
    let untitled = |name: &str, line: usize| {
        let name = &romanised(name);
        let words: Vec<&str> = name.split_whitespace().collect();
        let first = words
            .iter()
            .position(|w| !is_title_word(w))
            .unwrap_or(words.len());
        let fallback = format!("character-{line}");
        if first == words.len() {
            id_from(name, &fallback)
        } else {
            id_from(&words[first..].join(" "), &fallback)
        }
    };
    let mut out: Vec<FocusCharacter> = Vec::new();
    for (line, name, aliases, narrator) in &list {
        let short = untitled(name, *line);
        let shared = list
            .iter()
            .filter(|(l, n, _, _)| untitled(n, *l) == short)
            .count()
            > 1;
        let mut id = if shared {
            id_from(&romanised(name), &format!("character-{line}"))
        } else {
            short
        };
        if out.iter().any(|c| c.id == id) {
            if !is_chinese(name) {
                bail!("line {line}: `{name}` is listed twice");
            }
            // Two Chinese names that sound alike ("王仁", "王人"): the second keeps
            // its line in the id.
            id = format!("{id}-{line}");
        }
        out.push(FocusCharacter {
            id,
            name: name.clone(),
            aliases: aliases.clone(),
            narrator: *narrator,
        });
    }
    Ok(out)
}

/// `name` with each Han ideograph replaced by its pinyin without tones (one reading:
/// the first the dictionary gives), syllables written together as pinyin words are
/// ("林黛玉" is "lindaiyu"); other characters kept.
#[must_use]
pub fn romanised(name: &str) -> String {
    use pinyin::ToPinyin as _;
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c.to_pinyin() {
            Some(p) => out.push_str(p.plain()),
            None => out.push(c),
        }
    }
    out
}
