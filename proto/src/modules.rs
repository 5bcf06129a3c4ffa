//! The wire's memory modules by name. A module's name is its `MemoryModule` value's
//! name without the `MEMORY_MODULE_` prefix, lower-cased ("reverie", "dualmem", …), so
//! adding a value to the enum adds its name everywhere the wire is read.

use crate::v1::{MemoryModule, MemoryModules};

const PREFIX: &str = "MEMORY_MODULE_";

impl MemoryModule {
    /// Every module value (not `UNSPECIFIED`), in the enum's order. The values are
    /// numbered 1, 2, 3 … without gaps (the agent's test counts them against its kinds).
    pub fn known() -> impl Iterator<Item = Self> {
        (1..)
            .map_while(|n| Self::try_from(n).ok())
            .filter(|m| *m != Self::Unspecified)
    }

    /// The module's name; `None` for `UNSPECIFIED`.
    #[must_use]
    pub fn name(self) -> Option<String> {
        (self != Self::Unspecified).then(|| {
            self.as_str_name()
                .trim_start_matches(PREFIX)
                .to_ascii_lowercase()
        })
    }

    /// The module called `name`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::known().find(|m| m.name().as_deref() == Some(name))
    }

    /// Every name a list of modules may hold: the modules', then `all` and `none`.
    #[must_use]
    pub fn list_names() -> Vec<String> {
        Self::known()
            .filter_map(Self::name)
            .chain(["all".to_owned(), "none".to_owned()])
            .collect()
    }
}

impl MemoryModules {
    /// The modules `names` turn on (`all`: every one; `none`: adds nothing); an empty
    /// `names` is `None`, the agent's default. An unknown name is an error naming it
    /// and the known ones.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Option<Self>, String> {
        if names.is_empty() {
            return Ok(None);
        }
        let mut modules: Vec<MemoryModule> = Vec::new();
        for name in names.iter().map(|n| n.as_ref().trim()) {
            let found: Vec<MemoryModule> = match name {
                "all" => MemoryModule::known().collect(),
                "none" => Vec::new(),
                _ => vec![MemoryModule::from_name(name).ok_or_else(|| {
                    format!(
                        "unknown memory module {name:?} (known: {})",
                        MemoryModule::list_names().join(", ")
                    )
                })?],
            };
            for module in found {
                if !modules.contains(&module) {
                    modules.push(module);
                }
            }
        }
        Ok(Some(Self {
            modules: modules.into_iter().map(i32::from).collect(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_enum() {
        let names: Vec<String> = MemoryModule::known()
            .filter_map(MemoryModule::name)
            .collect();
        assert_eq!(names, ["reverie", "dualmem", "moom", "bookmarks"]);
        assert_eq!(MemoryModule::Unspecified.name(), None);
        assert_eq!(MemoryModule::from_name("moom"), Some(MemoryModule::Moom));
        assert_eq!(MemoryModule::from_name("MOOM"), None);
    }

    #[test]
    fn lists_parse_with_all_none_and_errors() {
        assert_eq!(MemoryModules::parse::<&str>(&[]), Ok(None));
        let none = MemoryModules::parse(&["none"])
            .expect("parses")
            .expect("a list");
        assert!(none.modules.is_empty());
        let all = MemoryModules::parse(&["moom", "all"])
            .expect("parses")
            .expect("a list");
        assert_eq!(
            all.modules().collect::<Vec<_>>(),
            [
                MemoryModule::Moom,
                MemoryModule::Reverie,
                MemoryModule::Dualmem,
                MemoryModule::Bookmarks
            ]
        );
        let error = MemoryModules::parse(&["reverie", "memgpt"]).expect_err("unknown");
        assert_eq!(
            error,
            "unknown memory module \"memgpt\" (known: reverie, dualmem, moom, bookmarks, all, none)"
        );
    }
}
