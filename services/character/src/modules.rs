//! The wire's memory modules as the memory crate's kinds. Both directions are one
//! exhaustive `match`, so a module added on one side only is a compile error here.

use dramatis_memory::modules::{ModuleKind, ModuleSet};
use dramatis_proto::v1::{MemoryModule, MemoryModules};

/// The kind a wire value names; `None` for `UNSPECIFIED`.
#[must_use]
pub fn kind_of(module: MemoryModule) -> Option<ModuleKind> {
    match module {
        MemoryModule::Unspecified => None,
        MemoryModule::Reverie => Some(ModuleKind::Reverie),
        MemoryModule::Dualmem => Some(ModuleKind::DualMem),
        MemoryModule::Moom => Some(ModuleKind::Moom),
        MemoryModule::Bookmarks => Some(ModuleKind::Bookmarks),
    }
}

/// The wire value of a kind.
#[must_use]
pub fn wire_of(kind: ModuleKind) -> MemoryModule {
    match kind {
        ModuleKind::Reverie => MemoryModule::Reverie,
        ModuleKind::DualMem => MemoryModule::Dualmem,
        ModuleKind::Moom => MemoryModule::Moom,
        ModuleKind::Bookmarks => MemoryModule::Bookmarks,
    }
}

/// The set a profile's module list turns on. A value this agent does not know (a newer
/// world) or `UNSPECIFIED` is an error naming it.
pub fn set_of(modules: &MemoryModules) -> Result<ModuleSet, String> {
    let mut set = ModuleSet::none();
    for &value in &modules.modules {
        let kind = MemoryModule::try_from(value)
            .ok()
            .and_then(kind_of)
            .ok_or_else(|| format!("unknown memory module value {value}"))?;
        set = set.with(kind);
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_and_wire_value_map_both_ways_under_one_name() {
        for kind in ModuleKind::all() {
            let wire = wire_of(kind);
            assert_eq!(kind_of(wire), Some(kind));
            assert_eq!(wire.name().as_deref(), Some(kind.name()));
        }
        assert_eq!(
            MemoryModule::known().count(),
            ModuleKind::all().count(),
            "as many wire values as kinds"
        );
    }

    #[test]
    fn lists_become_sets() {
        let list = MemoryModules::parse(&["moom", "reverie"])
            .expect("parses")
            .expect("a list");
        assert_eq!(
            set_of(&list).expect("known"),
            ModuleSet::parse("reverie,moom").expect("parses")
        );
        let error = set_of(&MemoryModules { modules: vec![0] }).expect_err("unspecified");
        assert_eq!(error, "unknown memory module value 0");
        let error = set_of(&MemoryModules { modules: vec![99] }).expect_err("unknown");
        assert_eq!(error, "unknown memory module value 99");
    }
}
