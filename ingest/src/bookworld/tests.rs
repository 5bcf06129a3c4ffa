use super::*;
use dramatis_scenario::{Route, Scenario};

fn fixtures() -> Option<PathBuf> {
    dramatis_base::shared(env!("CARGO_MANIFEST_DIR"), "fixtures/bookworld")
}

fn imported(preset: &str) -> Option<(Imported, Scenario, tempfile::TempDir)> {
    let root = fixtures()?;
    let out = tempfile::tempdir().expect("tempdir");
    let preset = root.join("experiment_presets").join(preset);
    let done = import(&preset, out.path()).expect("imported");
    let scenario = Scenario::load(&done.scenario).expect("loads");
    Some((done, scenario, out))
}

#[test]
fn every_preset_imports_and_loads() {
    let root = fixtures();
    for (preset, roles, scripted) in [
        ("example_script.json", 2, true),
        ("example_free.json", 2, false),
        ("experiment_alice.json", 3, false),
        ("experiment_red_mansions.json", 12, false),
    ] {
        let places = root.as_ref().map(|r| {
            let preset: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(r.join("experiment_presets").join(preset))
                    .expect("preset"),
            )
            .expect("json");
            let locations: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(r.join(preset["loc_file_path"].as_str().expect("path")))
                    .expect("locations"),
            )
            .expect("json");
            locations.as_object().map_or(0, serde_json::Map::len)
        });
        let Some((done, scenario, _dir)) = imported(preset) else {
            return;
        };
        assert_eq!(scenario.characters.len(), roles, "{preset}");
        assert_eq!(done.scripted, scripted, "{preset}");
        assert_eq!(scenario.open.is_none(), scripted, "{preset}");
        assert_eq!(Some(scenario.locations.len()), places, "{preset}");
        // Every pair of places the map lists has a path (one place: none).
        let n = scenario.locations.len();
        assert_eq!(scenario.paths.len(), n * (n - 1) / 2, "{preset}");
        // A relation is known to its two characters and nobody else.
        for fact in &scenario.facts {
            assert_eq!(fact.known_by.len(), 2, "{preset}: {}", fact.id);
            assert_eq!(fact.route, Route::DirectExperience);
        }
    }
}

#[test]
fn the_script_becomes_a_scene_and_the_intervention_a_premise() {
    let Some((_, script, _a)) = imported("example_script.json") else {
        return;
    };
    let scene = &script.scenes[0];
    assert_eq!(scene.cast, ["lacia-en", "trek-en"]);
    assert!(scene.opening.starts_with("One day, an enigmatic signal"));
    let lacia = script.character("lacia-en").expect("lacia");
    assert_eq!(lacia.name, "Lacia·Eldridge");
    assert_eq!(lacia.aliases, ["Lacia"]);
    assert!(lacia.knows.contains("trek-en"));
    let friends = script
        .facts
        .iter()
        .find(|f| f.id == "relation-lacia-en-trek-en")
        .expect("Lacia's relation to Trek");
    assert!(
        friends.text.starts_with("Lacia·Eldridge and "),
        "{}",
        friends.text
    );
    assert!(friends.text.contains("intimate friend, alumni"));
    let Some((_, free, _b)) = imported("example_free.json") else {
        return;
    };
    let open = free.open.as_ref().expect("open story");
    assert!(open.premise.starts_with("One day, an enigmatic signal"));
}

#[test]
fn chinese_text_survives_and_lines_become_excerpts() {
    let Some((_, red, _a)) = imported("experiment_red_mansions.json") else {
        return;
    };
    let root = fixtures().expect("fixtures");
    let info: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            root.join("data/roles/A_Dream_in_Red_Mansions/LinDaiyu-zh/role_info.json"),
        )
        .expect("role file"),
    )
    .expect("json");
    let daiyu = red.character("lindaiyu-zh").expect("Lin Daiyu");
    assert_eq!(daiyu.name, info["role_name"].as_str().expect("name"));
    assert_eq!(daiyu.profile, info["profile"].as_str().expect("profile"));
    assert!(
        red.title
            .chars()
            .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    );
    let Some((done, alice, _b)) = imported("experiment_alice.json") else {
        return;
    };
    assert!(done.excerpts > 0);
    for pattern in alice.characters.iter().flat_map(|c| &c.patterns) {
        for excerpt in &pattern.excerpts {
            assert!(
                !excerpt.contains('[') && !excerpt.contains('('),
                "{excerpt}"
            );
        }
    }
}

#[test]
fn bad_presets_are_named_with_their_file() {
    let Some(root) = fixtures() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let original: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("experiment_presets/example_script.json"))
            .expect("preset"),
    )
    .expect("json");
    // Writes the preset as NAME and imports it; the error it is refused with.
    let refused = |name: &str, value: &serde_json::Value| {
        let presets = dir.path().join("experiment_presets");
        std::fs::create_dir_all(&presets).expect("dir");
        let path = presets.join(name);
        std::fs::write(&path, value.to_string()).expect("write");
        format!(
            "{:#}",
            import(&path, &dir.path().join("out")).expect_err("refused")
        )
    };
    // An unknown field.
    let mut unknown = original.clone();
    unknown["mystery_field"] = serde_json::json!(1);
    let error = refused("unknown.json", &unknown);
    assert!(
        error.contains("unknown.json") && error.contains("mystery_field"),
        "{error}"
    );
    // A missing field.
    let mut missing = original.clone();
    missing
        .as_object_mut()
        .expect("object")
        .remove("map_file_path");
    let error = refused("missing.json", &missing);
    assert!(
        error.contains("missing.json") && error.contains("map_file_path"),
        "{error}"
    );
    // Files it points to that are not there (this copy has no data folder).
    let error = refused("elsewhere.json", &original);
    assert!(error.contains("general.json"), "{error}");
    assert!(
        !dir.path().join("out/scenario.toml").exists(),
        "nothing half-written"
    );
}

#[test]
fn spoken_text_drops_thoughts_and_actions() {
    assert_eq!(
        spoken("[I'm too tired for all this.] (yawning) What's this!"),
        "What's this!"
    );
    assert_eq!(spoken("【心想】（笑）你来了。"), "你来了。");
}
