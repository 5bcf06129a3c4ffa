//! The cast by id: a scenario's index of its characters, and the bounds of its
//! attention.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::Scenario;

/// The smallest attention a scenario or a service may set: the one who last addressed
/// a character, the last speaker, and one more.
pub const MIN_ATTENTION: usize = 3;

/// Others a character's turn frame and each line it perceives name when neither the
/// scenario nor the service says.
pub const DEFAULT_ATTENTION: usize = 12;

/// Character id -> its position in [`Scenario::characters`], so a thousand-character
/// cast is looked up by id without a scan. Built on first use; a clone starts empty
/// (a clone's cast is changed before it is used: a newcomer joins, a fork drops later
/// ones), every hit is checked against the cast, and an index built for a cast of
/// another length is not trusted, so a stale index costs a scan, not a wrong answer.
#[derive(Debug, Default)]
pub struct CastIndex(OnceLock<(usize, HashMap<String, usize>)>);

impl Clone for CastIndex {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for CastIndex {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Scenario {
    /// Most others a character's turn frame and each line it perceives name.
    #[must_use]
    pub fn attention_limit(&self) -> usize {
        self.attention
            .unwrap_or(DEFAULT_ATTENTION)
            .max(MIN_ATTENTION)
    }

    /// Where the character `id` stands in the cast list.
    #[must_use]
    pub fn position(&self, id: &str) -> Option<usize> {
        let (len, index) = self.index.0.get_or_init(|| {
            let index = self
                .characters
                .iter()
                .enumerate()
                .map(|(at, c)| (c.id.clone(), at))
                .collect();
            (self.characters.len(), index)
        });
        if *len == self.characters.len() {
            match index.get(id) {
                None => return None,
                Some(&at) if self.characters.get(at).is_some_and(|c| c.id == id) => {
                    return Some(at);
                }
                Some(_) => {}
            }
        }
        self.characters.iter().position(|c| c.id == id)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn a_changed_clone_finds_its_own_cast_by_id() {
        let mut text = "version = 1\nname = \"c\"\ntitle = \"C\"\n[open]\npremise = \"p\"\n\
                        rounds = 1\n[[locations]]\nid = \"here\"\nname = \"here\"\n"
            .to_owned();
        for id in ["a", "b", "c"] {
            text.push_str(&format!(
                "[[characters]]\nid = \"{id}\"\nname = \"{id}\"\nprofile = \"p\"\nlocation = \"here\"\n"
            ));
        }
        let scenario = Scenario::parse(&text, Path::new("c.toml")).expect("parses");
        assert_eq!(scenario.position("c"), Some(2));
        assert_eq!(scenario.position("nobody"), None);
        let mut fewer = scenario.clone();
        fewer.characters.retain(|c| c.id != "a");
        assert_eq!((fewer.position("c"), fewer.position("a")), (Some(1), None));
        let mut more = scenario.clone();
        assert_eq!(more.position("b"), Some(1));
        let mut joined = more.characters[0].clone();
        joined.id = "d".into();
        more.characters.push(joined);
        // Built before the push: not trusted for a cast of another length.
        assert_eq!(more.position("d"), Some(3));
        assert_eq!(more.character("d").map(|c| c.id.as_str()), Some("d"));
    }
}
