//! A memory module's name is spelled by the wire's `MemoryModule` enum (what the world
//! validates scenarios with) and by the memory crate's `KINDS` table (what agents and
//! the command line parse); the character agent maps the two with exhaustive matches.
//! The scenario JSON Schema is a data file for editors: it must list the same names.

use dramatis_memory::modules::{ModuleKind, ModuleSet};
use dramatis_proto::v1::MemoryModule;
use dramatis_tests::repo_root;

#[test]
fn the_schema_the_wire_and_the_module_table_name_the_same_modules() {
    let wire = MemoryModule::list_names();
    let table: Vec<String> = ModuleKind::names()
        .chain(["all", "none"])
        .map(str::to_owned)
        .collect();
    assert_eq!(wire, table, "wire enum vs module table");

    let schema_text = std::fs::read_to_string(repo_root().join("scenarios/scenario.schema.json"))
        .expect("schema readable");
    let schema: serde_json::Value = serde_json::from_str(&schema_text).expect("schema is JSON");
    let in_schema: Vec<&str> = schema["$defs"]["memory_modules"]["items"]["enum"]
        .as_array()
        .expect("the schema lists the module names")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    assert_eq!(in_schema, table, "JSON Schema vs module table");

    for name in ModuleKind::names() {
        let set = ModuleSet::parse(name).expect("each name parses");
        assert_eq!(set.names(), [name], "{name} turns on exactly itself");
    }
    assert_eq!(
        ModuleSet::parse("all").expect("all").names(),
        ModuleKind::names().collect::<Vec<_>>()
    );
    assert!(ModuleSet::parse("none").expect("none").names().is_empty());
}
