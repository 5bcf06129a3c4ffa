//! Inline sandbox specs (`CreateWorld` with a `SandboxSpec`). A spec is written out as
//! scenario TOML and read back through the one validator, so an inline spec is held to
//! exactly the rules of a file and its problems name the same fields
//! (`characters[1].location: ...`). The TOML is also what the world service keeps, so
//! a sandbox is restored after a restart like any scenario file.

use dramatis_proto::v1::{
    LoreKeys, SandboxCharacter, SandboxFact, SandboxLocation, SandboxPath, SandboxSpec,
};
use toml::{Table, Value};

use super::{Scenario, ScenarioError};

fn text(value: &str) -> Value {
    Value::String(value.to_owned())
}

fn texts(values: &[String]) -> Value {
    Value::Array(values.iter().map(|v| text(v)).collect())
}

fn table(entries: Vec<(&str, Value)>) -> Value {
    Value::Table(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

/// The spec as scenario TOML (format version 1, an `[open]` section, no script).
#[must_use]
pub fn spec_to_toml(spec: &SandboxSpec) -> String {
    let name = if spec.name.trim().is_empty() {
        "sandbox"
    } else {
        spec.name.trim()
    };
    let title = if spec.title.trim().is_empty() {
        name
    } else {
        spec.title.trim()
    };
    let mut root = Table::new();
    root.insert("version".into(), Value::Integer(1));
    root.insert("name".into(), text(name));
    root.insert("title".into(), text(title));
    root.insert(
        "world".into(),
        table(vec![("description", text(&spec.world))]),
    );
    let mut open = vec![
        ("premise", text(&spec.premise)),
        ("opening", text(&spec.opening)),
        ("rounds", Value::Integer(i64::from(spec.rounds))),
    ];
    if !spec.opening_location.is_empty() {
        open.push(("opening_location", text(&spec.opening_location)));
    }
    if spec.scene_turns > 0 {
        open.push(("scene_turns", Value::Integer(i64::from(spec.scene_turns))));
    }
    if !spec.openings.is_empty() {
        open.push(("openings", texts(&spec.openings)));
    }
    root.insert("open".into(), table(open));
    let list = |items: Vec<Value>| Value::Array(items);
    root.insert(
        "locations".into(),
        list(
            spec.locations
                .iter()
                .map(|l: &SandboxLocation| {
                    table(vec![
                        ("id", text(&l.id)),
                        ("name", text(&l.name)),
                        ("description", text(&l.description)),
                    ])
                })
                .collect(),
        ),
    );
    root.insert(
        "paths".into(),
        list(
            spec.paths
                .iter()
                .map(|p: &SandboxPath| {
                    table(vec![
                        ("from", text(&p.from)),
                        ("to", text(&p.to)),
                        ("distance", Value::Integer(i64::from(p.distance))),
                    ])
                })
                .collect(),
        ),
    );
    root.insert(
        "characters".into(),
        list(spec.characters.iter().map(character_table).collect()),
    );
    root.insert(
        "facts".into(),
        list(spec.facts.iter().map(fact_table).collect()),
    );
    if !spec.memory_modules.is_empty() {
        root.insert(
            "memory".into(),
            table(vec![("modules", texts(&spec.memory_modules))]),
        );
    }
    if spec.attention > 0 {
        root.insert(
            "attention".into(),
            Value::Integer(i64::from(spec.attention)),
        );
    }
    toml::to_string(&root).unwrap_or_default()
}

/// One `[[characters]]` entry of a spec.
fn character_table(c: &SandboxCharacter) -> Value {
    let mut character = vec![
        ("id", text(&c.id)),
        ("name", text(&c.name)),
        ("aliases", texts(&c.aliases)),
        ("profile", text(&c.profile)),
        ("style", text(&c.style)),
        ("location", text(&c.location)),
        ("goal", text(&c.goal)),
    ];
    if !c.memory_modules.is_empty() {
        character.push(("memory_modules", texts(&c.memory_modules)));
    }
    if c.offstage {
        character.push(("offstage", Value::Boolean(true)));
    }
    if c.interview_only {
        character.push(("interview_only", Value::Boolean(true)));
    }
    if !c.known_as.is_empty() {
        character.push(("known_as", text(&c.known_as)));
    }
    if !c.knows.is_empty() {
        character.push(("knows", texts(&c.knows)));
    }
    if !c.tags.is_empty() {
        character.push(("tags", texts(&c.tags)));
    }
    if !c.card.is_empty() {
        character.push(("card", text(&c.card)));
    }
    table(character)
}

/// One `[[facts]]` entry of a spec.
fn fact_table(f: &SandboxFact) -> Value {
    let mut fact = vec![
        ("id", text(&f.id)),
        ("text", text(&f.text)),
        ("known_by", texts(&f.known_by)),
    ];
    if !f.route.is_empty() {
        fact.push(("route", text(&f.route)));
    }
    if let Some(k) = &f.keys {
        fact.push(("keys", texts(&k.keys)));
        fact.push(("secondary_keys", texts(&k.secondary_keys)));
        for (name, on) in [
            ("selective", k.selective),
            ("constant", k.constant),
            ("case_sensitive", k.case_sensitive),
        ] {
            if on {
                fact.push((name, Value::Boolean(true)));
            }
        }
    }
    if f.secret {
        fact.push(("secret", Value::Boolean(true)));
    }
    if !f.entry.is_empty() {
        fact.push(("entry", text(&f.entry)));
    }
    table(fact)
}

/// Validates a spec; errors name the spec's fields.
pub fn parse_spec(spec: &SandboxSpec) -> Result<Scenario, ScenarioError> {
    Scenario::parse(&spec_to_toml(spec), std::path::Path::new("sandbox spec"))
}

/// An open scenario as an inline spec (what `dramatis sandbox FILE` sends). Starting
/// memories and personality patterns are not part of a spec and are left out.
#[must_use]
pub fn scenario_to_spec(scenario: &Scenario) -> Option<SandboxSpec> {
    let open = scenario.open.as_ref()?;
    Some(SandboxSpec {
        name: scenario.name.clone(),
        title: scenario.title.clone(),
        premise: open.premise.clone(),
        opening: open.opening.clone(),
        opening_location: open.opening_location.clone(),
        rounds: open.rounds,
        scene_turns: open.scene_turns,
        world: scenario.world.clone(),
        locations: scenario
            .locations
            .iter()
            .map(|l| SandboxLocation {
                id: l.id.clone(),
                name: l.name.clone(),
                description: l.description.clone(),
            })
            .collect(),
        paths: scenario.wire_paths(),
        characters: scenario
            .characters
            .iter()
            .map(|c| SandboxCharacter {
                id: c.id.clone(),
                name: c.name.clone(),
                aliases: c.aliases.clone(),
                profile: c.profile.clone(),
                style: c.style.clone(),
                location: c.location.clone(),
                goal: c.goal.clone(),
                memory_modules: c.memory_modules.clone().unwrap_or_default(),
                offstage: c.offstage,
                interview_only: c.interview_only,
                known_as: c.known_as.clone(),
                knows: c.knows.iter().cloned().collect(),
                tags: c.tags.clone(),
                card: c.card.clone(),
            })
            .collect(),
        facts: scenario
            .facts
            .iter()
            .map(|f| SandboxFact {
                id: f.id.clone(),
                text: f.text.clone(),
                known_by: f.known_by.iter().cloned().collect(),
                route: f.route.as_str().to_owned(),
                keys: f.keys.to_wire(),
                secret: f.secret,
                entry: f.entry.clone(),
            })
            .collect(),
        memory_modules: scenario.memory_modules.clone(),
        attention: scenario.attention.map_or(0, dramatis_base::saturating_u32),
        openings: open.openings.clone(),
    })
}

impl super::Keys {
    /// The keys as the wire carries them (`None` when the fact has none).
    #[must_use]
    pub fn to_wire(&self) -> Option<LoreKeys> {
        (*self != Self::default()).then(|| LoreKeys {
            keys: self.keys.clone(),
            secondary_keys: self.secondary_keys.clone(),
            selective: self.selective,
            constant: self.constant,
            case_sensitive: self.case_sensitive,
        })
    }
}

impl Scenario {
    /// The map's paths as the wire carries them (in a spec and in `WorldInfo`).
    #[must_use]
    pub fn wire_paths(&self) -> Vec<SandboxPath> {
        self.paths
            .iter()
            .map(|p| SandboxPath {
                from: p.from.clone(),
                to: p.to.clone(),
                distance: p.distance,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shipped_sandbox_survives_the_round_trip_and_a_bad_spec_names_its_fields() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/lamplighters-ledger/scenario.toml");
        let scenario = Scenario::load(&path).expect("valid");
        let spec = scenario_to_spec(&scenario).expect("an open story");
        let back = parse_spec(&spec).expect("the spec validates");
        assert_eq!(back.open, scenario.open);
        assert_eq!(back.characters.len(), 4);
        assert_eq!(back.characters[2].goal, scenario.characters[2].goal);
        assert_eq!(back.facts, scenario.facts);
        assert_eq!(back.paths, scenario.paths);

        let mut bad = spec;
        bad.characters[1].location = "attic".into();
        bad.premise = String::new();
        let message = parse_spec(&bad).expect_err("refused").to_string();
        assert!(
            message.contains("characters[1].location") && message.contains("attic"),
            "{message}"
        );
        assert!(message.contains("open.premise"), "{message}");
        assert!(message.starts_with("sandbox spec:"), "{message}");
    }

    /// 32,000 locations with badly shaped ids (about a megabyte of spec), and one
    /// 5,000-character id: every problem is found, in time linear in the spec (before,
    /// each problem counted newlines from the start: 25 s for 32k), and the answer is
    /// bounded: 20 problems, each quoting at most 40 characters, then how many more.
    #[test]
    fn a_spec_with_thousands_of_problems_gets_a_bounded_answer() {
        let long = "X".repeat(5_000);
        let spec = SandboxSpec {
            premise: "p".into(),
            opening: "o".into(),
            rounds: 1,
            locations: (0..32_000)
                .map(|i| SandboxLocation {
                    id: if i == 0 {
                        long.clone()
                    } else {
                        format!("Room-{i}")
                    },
                    name: format!("room {i}"),
                    description: String::new(),
                })
                .collect(),
            ..SandboxSpec::default()
        };
        let started = std::time::Instant::now();
        let error = parse_spec(&spec).expect_err("refused");
        eprintln!("32,000 bad locations checked in {:?}", started.elapsed());
        let ScenarioError::Invalid { problems, .. } = &error else {
            panic!("{error}");
        };
        let bad_ids = problems
            .iter()
            .filter(|p| p.field.starts_with("locations[") && p.field.ends_with("].id"))
            .count();
        assert_eq!(bad_ids, 32_000, "every bad id is found");
        let text = error.to_string();
        assert!(text.len() < 8 * 1024, "{} bytes of error", text.len());
        assert_eq!(text.lines().count(), super::super::SHOWN_PROBLEMS + 1);
        assert!(
            text.ends_with(&format!("… and {} more problems", problems.len() - 20)),
            "{}",
            &text[text.len().saturating_sub(200)..]
        );
        assert!(!text.contains(&"X".repeat(41)), "a value quoted whole");
        assert!(text.contains("(5000 characters)"), "{text}");
        // Lines still point where each problem is.
        let toml = spec_to_toml(&spec);
        let line = problems
            .iter()
            .find(|p| p.field == "locations[7].id")
            .expect("a problem at locations[7]")
            .line;
        assert!(
            toml.lines()
                .nth(line - 1)
                .expect("a line")
                .contains("Room-7\""),
            "line {line}"
        );
    }
}
