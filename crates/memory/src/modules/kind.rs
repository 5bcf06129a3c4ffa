//! The module table: which memory modules exist and what they are called. Parsing a
//! list of names, printing a set, `all` and `none` all derive from [`KINDS`]; nothing
//! else in the workspace spells a module's name (the wire's `MemoryModule` enum maps to
//! [`ModuleKind`] with one exhaustive `match` in the character agent).

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One memory module. `Reverie` is ReverieMem's three layers, which the agent's read
/// and write paths run; every other kind is an [`AnyModule`](super::AnyModule) variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ModuleKind {
    Reverie,
    DualMem,
    Moom,
    Bookmarks,
}

/// Every module with its name, in the order modules contribute grounding. A row's
/// position is its kind's discriminant (a unit test holds this).
pub const KINDS: [(ModuleKind, &str); 4] = [
    (ModuleKind::Reverie, "reverie"),
    (ModuleKind::DualMem, "dualmem"),
    (ModuleKind::Moom, "moom"),
    (ModuleKind::Bookmarks, "bookmarks"),
];

impl ModuleKind {
    #[must_use]
    pub const fn name(self) -> &'static str {
        KINDS[self as usize].1
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        KINDS
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(kind, _)| *kind)
    }

    /// How relevant (cosine similarity of the query and the item, with the character's
    /// own embedder) a module's item must be to show that the character's memory bears
    /// on the query: below it, an item may still be shown in a prompt but never cancels
    /// abstention. Every module compares the same embedder's vectors, so every floor
    /// starts from ReverieMem's own (`relevant`, 0.35, for a fact to enter its pool):
    /// - DualMem: a fact's or insight's similarity to the query (a linked fact takes its
    ///   insight's when higher);
    /// - MOOM: a plot summary's similarity; a persona bears only when the query names
    ///   its person (1.0), never merely because the person is present (0.0);
    /// - BOOKMARKS: the similarity of the bookmark's question and answer to the query
    ///   (the pool is proposed from the query itself, so its floor is higher, 0.45).
    #[must_use]
    pub const fn relevance_floor(self) -> f32 {
        match self {
            Self::Reverie | Self::DualMem | Self::Moom => 0.35,
            Self::Bookmarks => 0.45,
        }
    }

    /// Every kind, in table order.
    pub fn all() -> impl Iterator<Item = Self> {
        KINDS.iter().map(|(kind, _)| *kind)
    }

    /// Every name, in table order.
    pub fn names() -> impl Iterator<Item = &'static str> {
        KINDS.iter().map(|(_, name)| *name)
    }
}

impl fmt::Display for ModuleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The memory modules a character runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleSet {
    on: [bool; KINDS.len()],
}

impl Default for ModuleSet {
    /// ReverieMem alone, as before the other modules existed.
    fn default() -> Self {
        Self::none().with(ModuleKind::Reverie)
    }
}

impl ModuleSet {
    /// Every module on.
    #[must_use]
    pub fn all() -> Self {
        Self {
            on: [true; KINDS.len()],
        }
    }

    /// No module: the character has only the scene in front of it.
    #[must_use]
    pub fn none() -> Self {
        Self {
            on: [false; KINDS.len()],
        }
    }

    /// This set with `kind` on.
    #[must_use]
    pub fn with(mut self, kind: ModuleKind) -> Self {
        self.on[kind as usize] = true;
        self
    }

    #[must_use]
    pub fn contains(&self, kind: ModuleKind) -> bool {
        self.on[kind as usize]
    }

    /// The kinds on, in table order.
    pub fn kinds(&self) -> impl Iterator<Item = ModuleKind> + '_ {
        ModuleKind::all().filter(|kind| self.contains(*kind))
    }

    /// Parses a comma-separated list of module names (`all` and `none` too).
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut set = Self::none();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match (name, ModuleKind::from_name(name)) {
                ("all", _) => set = Self::all(),
                ("none", _) => {}
                (_, Some(kind)) => set = set.with(kind),
                (other, None) => {
                    return Err(format!(
                        "unknown memory module {other:?} (known: {}, all, none)",
                        ModuleKind::names().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        Ok(set)
    }

    #[must_use]
    pub fn names(&self) -> Vec<&'static str> {
        self.kinds().map(ModuleKind::name).collect()
    }
}

impl fmt::Display for ModuleSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self.names();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join(","))
        }
    }
}

/// Saved as `{"reverie": true, "dualmem": false, …}` in table order, the shape shard
/// files have always had.
impl Serialize for ModuleSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(KINDS.len()))?;
        for kind in ModuleKind::all() {
            map.serialize_entry(kind.name(), &self.contains(kind))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ModuleSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SetVisitor;
        impl<'de> Visitor<'de> for SetVisitor {
            type Value = ModuleSet;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map from memory module name to whether it is on")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ModuleSet, A::Error> {
                let mut set = ModuleSet::none();
                while let Some(name) = map.next_key::<String>()? {
                    let kind = ModuleKind::from_name(&name).ok_or_else(|| {
                        serde::de::Error::custom(format!("unknown memory module {name:?}"))
                    })?;
                    if map.next_value::<bool>()? {
                        set = set.with(kind);
                    }
                }
                Ok(set)
            }
        }
        deserializer.deserialize_map(SetVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_row_sits_at_its_kinds_discriminant() {
        for (i, (kind, name)) in KINDS.iter().enumerate() {
            assert_eq!(*kind as usize, i, "{name}");
            assert_eq!(kind.name(), *name);
            assert_eq!(ModuleKind::from_name(name), Some(*kind));
        }
    }

    #[test]
    fn module_sets_parse_and_print() {
        assert_eq!(
            ModuleSet::parse("reverie").expect("parses"),
            ModuleSet::default()
        );
        assert_eq!(ModuleSet::parse("all").expect("parses"), ModuleSet::all());
        assert_eq!(ModuleSet::parse("").expect("parses"), ModuleSet::none());
        let set = ModuleSet::parse("moom, bookmarks").expect("parses");
        assert_eq!(set.to_string(), "moom,bookmarks");
        assert_eq!(ModuleSet::none().to_string(), "none");
        let error = ModuleSet::parse("reverie,memgpt").expect_err("unknown");
        assert!(error.contains("\"memgpt\""), "{error}");
        assert!(
            error.contains("reverie, dualmem, moom, bookmarks, all, none"),
            "{error}"
        );
    }

    #[test]
    fn a_set_keeps_the_saved_shape() {
        let set = ModuleSet::parse("reverie,moom").expect("parses");
        let text = serde_json::to_string(&set).expect("serialises");
        assert_eq!(
            text,
            r#"{"reverie":true,"dualmem":false,"moom":true,"bookmarks":false}"#
        );
        let back: ModuleSet = serde_json::from_str(&text).expect("parses back");
        assert_eq!(back, set);
        let unknown = serde_json::from_str::<ModuleSet>(r#"{"memgpt":true}"#)
            .expect_err("an unknown module is an error");
        assert!(unknown.to_string().contains("memgpt"), "{unknown}");
    }
}
