//! Every broken scenario under `tests/broken/` is rejected with exactly the problems its
//! `# expect:` lines name (line numbers count the expect lines themselves), each as
//! `file:line: field: message`.

use std::path::Path;

use dramatis_scenario::{Scenario, ScenarioError};

#[test]
fn broken_scenarios_are_rejected_with_file_line_and_field() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/broken");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("broken scenarios")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the broken set is there");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let expected: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# expect: "))
            .map(|l| format!("{}:{l}", file.display()))
            .collect();
        assert!(
            !expected.is_empty(),
            "{} names its expected problems",
            file.display()
        );
        let error = Scenario::load(&file).expect_err("broken scenario must be rejected");
        assert!(matches!(error, ScenarioError::Invalid { .. }));
        let message = error.to_string();
        let lines: Vec<&str> = message.lines().collect();
        assert_eq!(
            lines.len(),
            expected.len(),
            "{}: got {message}",
            file.display()
        );
        for (line, want) in lines.iter().zip(&expected) {
            assert!(
                line.starts_with(want.as_str()),
                "got {line:?}, want {want:?}"
            );
        }
    }
}

#[test]
fn the_shipped_scenario_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/study-in-scarlet/scenario.toml");
    let scenario = Scenario::load(&path).expect("valid");
    assert_eq!(scenario.characters.len(), 4);
    assert_eq!(scenario.scenes.len(), 4);
    assert!(scenario.locations.len() >= 4);
    let lab = &scenario.scenes[1];
    assert!(
        !lab.cast.contains(&"lestrade".to_owned()),
        "Lestrade is not in the lab"
    );
    let knowers: Vec<_> = scenario
        .knowledge_of("stamford")
        .map(|f| f.id.as_str())
        .collect();
    assert!(knowers.contains(&"stamford-odd-habits"));
    assert!(
        scenario
            .knowledge_of("holmes")
            .all(|f| f.id != "stamford-odd-habits")
    );
}
