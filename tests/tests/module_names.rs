//! The memory modules' names are written in three places until the one `ModuleKind`
//! table exists: the memory crate (what agents parse), the world's scenario validation
//! (the world does not link the memory crate) and the scenario JSON Schema. They must
//! agree, in order, and each must parse.

use dramatis_memory::modules::{MODULE_NAMES, ModuleSet};
use dramatis_tests::repo_root;
use dramatis_world::scenario::MEMORY_MODULES;

#[test]
fn the_three_lists_of_memory_module_names_agree() {
    let agents: Vec<&str> = MODULE_NAMES
        .iter()
        .copied()
        .chain(["all", "none"])
        .collect();
    assert_eq!(
        MEMORY_MODULES.as_slice(),
        agents.as_slice(),
        "world vs memory crate"
    );

    let schema_text = std::fs::read_to_string(repo_root().join("scenarios/scenario.schema.json"))
        .expect("schema readable");
    let schema: serde_json::Value = serde_json::from_str(&schema_text).expect("schema is JSON");
    let in_schema: Vec<&str> = schema["$defs"]["memory_modules"]["items"]["enum"]
        .as_array()
        .expect("the schema lists the module names")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    assert_eq!(in_schema, agents, "JSON Schema vs memory crate");

    for name in MODULE_NAMES {
        let set = ModuleSet::parse(name).expect("each name parses");
        assert_eq!(set.names(), [name], "{name} turns on exactly itself");
    }
    assert_eq!(ModuleSet::parse("all").expect("all").names(), MODULE_NAMES);
    assert!(ModuleSet::parse("none").expect("none").names().is_empty());
}
