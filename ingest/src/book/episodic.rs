//! Stage 2, episodic summaries: for each focus character and each scene it is present
//! in, a first-person retrospective summary. The stage is handed only the scenes up to
//! the one it summarises (`Upto`), so no later text can reach a summary. People appear
//! by name only where the character knows the name by then, otherwise by description.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::scenes::{Scene, Speaker};
use super::text::{FocusCharacter, is_chinese, prefix, sentences, words};

/// A character's memory of one scene.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub character: String,
    pub scene: usize,
    pub text: String,
    /// `digest` (deterministic) or `model`.
    pub by: String,
}

/// What the stage may read for one scene: the scenes up to and including it, and the
/// names each character knows by its end. Nothing after it.
pub struct Upto<'a> {
    pub scenes: &'a [Scene],
    pub names: &'a BTreeMap<String, BTreeSet<String>>,
}

impl Upto<'_> {
    #[must_use]
    pub fn scene(&self) -> &Scene {
        self.scenes.last().expect("at least one scene")
    }
}

/// How `character` refers to `other` at this point: the name if known, else its
/// description, else "someone".
#[must_use]
pub fn refer<'a>(
    characters: &'a [FocusCharacter],
    names: &BTreeMap<String, BTreeSet<String>>,
    character: &str,
    other: &'a Speaker,
) -> &'a str {
    let knows = |key: &str| names.get(character).is_some_and(|k| k.contains(key));
    match other {
        Speaker::Focus(id) => {
            let c = characters.iter().find(|c| c.id == *id);
            match c {
                Some(c) if knows(id) || id == character => &c.name,
                Some(c) => c.description().unwrap_or("someone"),
                None => "someone",
            }
        }
        Speaker::Other(name) if knows(name) => name,
        Speaker::Other(_) => "someone",
    }
}

/// The deterministic digest: where and with whom, then the scene's most telling lines
/// as the character heard them, its own in the first person.
#[must_use]
pub fn digest(characters: &[FocusCharacter], upto: &Upto<'_>, character: &str) -> String {
    let scene = upto.scene();
    // Those who spoke: someone silent may have been hidden from the others.
    let mut with: Vec<Speaker> = scene
        .active
        .iter()
        .filter(|c| *c != character)
        .map(|c| Speaker::Focus(c.clone()))
        .collect();
    for u in &scene.utterances {
        if matches!(u.speaker, Speaker::Other(_)) && !with.contains(&u.speaker) {
            with.push(u.speaker.clone());
        }
    }
    let who: Vec<&str> = with
        .iter()
        .map(|o| refer(characters, upto.names, character, o))
        .collect();
    let zh = scene.utterances.iter().any(|u| is_chinese(&u.text));
    let mut out = if zh {
        format!("我在{}", scene.location)
    } else {
        format!("I was at {}", scene.location)
    };
    if !scene.time.is_empty() {
        out.push_str(&if zh {
            format!("（{}）", scene.time)
        } else {
            format!(" ({})", scene.time)
        });
    }
    if !who.is_empty() {
        let who: Vec<&str> = who.iter().map(|w| chinese_someone(w, zh)).collect();
        out.push_str(&if zh {
            format!("，和{}在一起", join_and_zh(&who))
        } else {
            format!(" with {}", join_and(&who))
        });
    }
    out.push_str(if zh { "。" } else { "." });
    if scene.silent.contains(character) {
        out.push_str(if zh {
            "我没有作声。"
        } else {
            " I kept silent."
        });
    }
    let heard: Vec<_> = scene
        .utterances
        .iter()
        .filter(|u| {
            u.speaker.focus() == Some(character)
                || scene.present_at(u.paragraph).contains(character)
        })
        .collect();
    // The four lines with the most rare words, kept in their order.
    let mut ranked: Vec<(usize, usize)> = heard
        .iter()
        .enumerate()
        .map(|(i, u)| (telling(&u.text), i))
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut chosen: Vec<usize> = ranked.iter().take(4).map(|(_, i)| *i).collect();
    chosen.sort_unstable();
    for i in chosen {
        let u = heard[i];
        let line = first_sentences(&u.text, 2);
        let mine = u.speaker.focus() == Some(character);
        let name = refer(characters, upto.names, character, &u.speaker);
        out.push_str(&match (zh, mine) {
            (true, true) => format!("我说：“{line}”"),
            (true, false) => format!("{}说：“{line}”", chinese_someone(name, true)),
            (false, true) => format!(" I said, \"{line}\""),
            (false, false) => format!(" {} said, \"{line}\"", capitalise(name)),
        });
    }
    if scene.exits.contains_key(character) {
        out.push_str(if zh {
            "然后我离开了。"
        } else {
            " Then I left."
        });
    }
    out
}

/// "someone" in a Chinese memory is 某人.
fn chinese_someone(who: &str, zh: bool) -> &str {
    if zh && who == "someone" {
        "某人"
    } else {
        who
    }
}

/// Names joined the Chinese way: `贾母、林黛玉和某人`.
fn join_and_zh(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{}和{last}", init.join("、")),
    }
}

fn telling(text: &str) -> usize {
    let capitals = text
        .split_whitespace()
        .skip(1)
        .filter(|w| w.chars().next().is_some_and(char::is_uppercase))
        .count();
    let digits = text.chars().filter(char::is_ascii_digit).count();
    let long = words(text).filter(|w| w.len() >= 7).count();
    capitals * 2 + digits + long
}

fn first_sentences(text: &str, n: usize) -> String {
    let s: Vec<&str> = sentences(text).into_iter().take(n).collect();
    let sep = if is_chinese(text) { "" } else { " " };
    prefix(&s.join(sep), 240)
}

fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn capitalise(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}
