//! The modules of one shard as one list: [`AnyModule`] has a variant per module (all
//! but ReverieMem's layers) and hands out each as a [`MemoryModule`]; [`Modules`] holds
//! the ones a character runs with the storyline they share, and saves them in the
//! shape shard files have always had: `{"storyline": […], "dualmem": {…} | null, …}`.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::text::estimate_tokens;
use super::{
    Bookmarks, DualMem, Grounding, Line, MemoryModule, Mind, ModuleKind, ModuleSet, Moom, ReadQuery,
};

/// Declares [`AnyModule`]: one `Kind(Type)` per module, where `Kind` is the module's
/// [`ModuleKind`] variant and `Type` implements [`MemoryModule`]. Every dispatch below is
/// generated from this one list.
macro_rules! any_module {
    ($($kind:ident($module:ty)),+ $(,)?) => {
        /// One memory module of a shard, whichever it is.
        #[derive(Debug, Clone, PartialEq)]
        pub enum AnyModule {
            $($kind($module)),+
        }

        impl AnyModule {
            /// A new, empty module of `kind`; `None` for ReverieMem's layers, which are
            /// not a module of this list.
            #[must_use]
            pub fn create(kind: ModuleKind, character: &str, persona: &str) -> Option<Self> {
                $(
                    if kind == ModuleKind::$kind {
                        return Some(Self::$kind(<$module>::create(character, persona)));
                    }
                )+
                None
            }

            #[must_use]
            pub fn get(&self) -> &dyn MemoryModule {
                match self {
                    $(Self::$kind(m) => m),+
                }
            }

            pub fn get_mut(&mut self) -> &mut dyn MemoryModule {
                match self {
                    $(Self::$kind(m) => m),+
                }
            }

            /// Reads the saved module of `kind` (`null`: off).
            fn read<'de, A: MapAccess<'de>>(
                kind: ModuleKind,
                map: &mut A,
            ) -> Result<Option<Self>, A::Error> {
                $(
                    if kind == ModuleKind::$kind {
                        return Ok(map.next_value::<Option<$module>>()?.map(Self::$kind));
                    }
                )+
                map.next_value::<IgnoredAny>()?;
                Ok(None)
            }
        }

        impl Serialize for AnyModule {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$kind(m) => m.serialize(serializer)),+
                }
            }
        }
    };
}

any_module! {
    DualMem(DualMem),
    Moom(Moom),
    Bookmarks(Bookmarks),
}

impl AnyModule {
    #[must_use]
    pub fn kind(&self) -> ModuleKind {
        self.get().kind()
    }
}

/// The modules of one shard other than ReverieMem's layers (which the agent's read path
/// handles), in table order, with the character's storyline they share.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Modules {
    pub storyline: Vec<Line>,
    modules: Vec<AnyModule>,
}

impl Modules {
    /// The modules `set` turns on (ReverieMem is not among them), for `character`.
    #[must_use]
    pub fn new(set: ModuleSet, character: &str, persona: &str) -> Self {
        let mut modules = Self::default();
        modules.use_set(set, character, persona);
        modules
    }

    /// Turns the modules of `set` on (new ones start empty) and the others off; every
    /// module hears `persona`.
    pub fn use_set(&mut self, set: ModuleSet, character: &str, persona: &str) {
        let mut kept = std::mem::take(&mut self.modules);
        for kind in set.kinds() {
            let module = match kept.iter().position(|m| m.kind() == kind) {
                Some(i) => Some(kept.swap_remove(i)),
                None => AnyModule::create(kind, character, persona),
            };
            self.modules.extend(module);
        }
        for module in &mut self.modules {
            module.get_mut().set_persona(persona);
        }
    }

    /// The module of `kind`, when it is on.
    #[must_use]
    pub fn get(&self, kind: ModuleKind) -> Option<&AnyModule> {
        self.modules.iter().find(|m| m.kind() == kind)
    }

    /// Whether any module is on.
    #[must_use]
    pub fn any(&self) -> bool {
        !self.modules.is_empty()
    }

    /// Appends a perceived line (its position is set here) and lets every module see it.
    pub async fn observe(&mut self, mind: &dyn Mind, mut line: Line) {
        line.position = self.storyline.len() as u64 + 1;
        self.storyline.push(line);
        for module in &mut self.modules {
            module.get_mut().observe(mind, &self.storyline).await;
        }
    }

    /// A scene the character was in has ended.
    pub async fn scene_end(&mut self, mind: &dyn Mind, scene_id: &str) {
        for module in &mut self.modules {
            module
                .get_mut()
                .scene_end(mind, &self.storyline, scene_id)
                .await;
        }
    }

    /// Grounding from every module within `budget_tokens`: each module gets an equal
    /// share, and what one leaves unused passes to the next. Items keep each module's
    /// order.
    pub async fn ground(
        &mut self,
        mind: &dyn Mind,
        query: &ReadQuery<'_>,
        budget_tokens: usize,
    ) -> Vec<Grounding> {
        let mut out = Vec::new();
        let mut left = budget_tokens;
        let count = self.modules.len();
        for (i, module) in self.modules.iter_mut().enumerate() {
            let share = left / (count - i);
            let mut used = 0;
            for item in module.get_mut().ground(mind, &self.storyline, query).await {
                let cost = estimate_tokens(&item.text);
                if used + cost > share {
                    break;
                }
                used += cost;
                out.push(item);
            }
            left -= used;
        }
        out
    }

    /// Everything the modules hold, as (id, source, text): the source is
    /// `<module>.<kind>`. The shared storyline is listed as `modules.storyline`.
    #[must_use]
    pub fn items(&self) -> Vec<(String, String, String)> {
        let mut out: Vec<(String, String, String)> = self
            .storyline
            .iter()
            .map(|l| {
                (
                    format!("line:{}", l.position),
                    "modules.storyline".to_owned(),
                    l.render(),
                )
            })
            .collect();
        for module in &self.modules {
            out.extend(module.get().items(&self.storyline));
        }
        out
    }

    /// The modules' counters by name (`<module>.<counter>`).
    #[must_use]
    pub fn stats(&self) -> HashMap<String, f64> {
        let mut out = HashMap::new();
        for module in &self.modules {
            let name = module.kind().name();
            for (counter, value) in module.get().stats() {
                out.insert(format!("{name}.{counter}"), value);
            }
        }
        out
    }

    /// Items each module keeps (the storyline itself not counted).
    #[must_use]
    pub fn kept(&self) -> BTreeMap<&'static str, usize> {
        self.modules
            .iter()
            .map(|m| (m.kind().name(), m.get().kept()))
            .collect()
    }
}

impl Serialize for Modules {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("storyline", &self.storyline)?;
        for kind in ModuleKind::all().filter(|k| *k != ModuleKind::Reverie) {
            map.serialize_entry(kind.name(), &self.get(kind))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Modules {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ModulesVisitor;
        impl<'de> Visitor<'de> for ModulesVisitor {
            type Value = Modules;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a storyline and the memory modules by name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Modules, A::Error> {
                let mut out = Modules::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "storyline" {
                        out.storyline = map.next_value()?;
                    } else if let Some(kind) = ModuleKind::from_name(&key) {
                        out.modules.extend(AnyModule::read(kind, &mut map)?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                out.modules.sort_by_key(AnyModule::kind);
                Ok(out)
            }
        }
        deserializer.deserialize_map(ModulesVisitor)
    }
}
