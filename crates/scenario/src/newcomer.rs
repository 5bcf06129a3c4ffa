//! A character new to an open story, brought in by the director with a profile of its
//! own (`World.Intervene` bring_in with a newcomer). It is checked by the loader's own
//! rules, as one more `[[characters]]` entry of the story it joins, and joins the cast
//! offstage: its entrance is the director's event that follows.

use dramatis_base::quote;
use dramatis_proto::v1::SandboxCharacter;

use crate::{Scenario, ScenarioError, sandbox};

/// The request field a newcomer's problems are named under.
pub const NEWCOMER_FIELD: &str = "bring_in.newcomer";

impl Scenario {
    /// This open story with `newcomer` in its cast, offstage. An error names each wrong
    /// field of the newcomer as `bring_in.newcomer.FIELD`: an id in use or badly shaped,
    /// a missing name or profile, an unknown place, memory module or acquaintance, an
    /// appearance that gives its name away, a name another character already has.
    pub fn admit(&self, newcomer: &SandboxCharacter) -> Result<Self, String> {
        let Some(mut spec) = sandbox::scenario_to_spec(self) else {
            return Err(format!(
                "{} plays a script, whose scenes bring its characters in; only an open \
                 story takes a new character",
                quote(&self.name)
            ));
        };
        let prefix = format!("characters[{}]", spec.characters.len());
        spec.characters.push(SandboxCharacter {
            offstage: true,
            interview_only: false,
            ..newcomer.clone()
        });
        let mut problems = Vec::new();
        let checked = match sandbox::parse_spec(&spec) {
            Ok(checked) => Some(checked),
            Err(ScenarioError::Invalid {
                problems: found, ..
            }) => {
                problems.extend(found.iter().map(
                    |p| match p.field.strip_prefix(prefix.as_str()) {
                        Some(rest) => format!("{NEWCOMER_FIELD}{rest}: {}", p.message),
                        None => format!("{}: {}", p.field, p.message),
                    },
                ));
                None
            }
            Err(error @ ScenarioError::Io { .. }) => return Err(error.to_string()),
        };
        problems.extend(self.name_clashes(newcomer));
        match checked.and_then(|mut s| s.characters.pop()) {
            Some(joined) if problems.is_empty() => {
                let mut scenario = self.clone();
                scenario.characters.push(joined);
                Ok(scenario)
            }
            _ => Err(problems.join("\n")),
        }
    }

    /// A problem for each name or alias of `newcomer` that a character of the story
    /// already answers to: the director, and every look-up by name, could no longer
    /// tell the two apart.
    fn name_clashes(&self, newcomer: &SandboxCharacter) -> Vec<String> {
        let forms = std::iter::once(("name", &newcomer.name))
            .chain(newcomer.aliases.iter().map(|a| ("aliases", a)))
            .filter(|(_, form)| !form.trim().is_empty());
        forms
            .filter_map(|(field, form)| {
                let other = self.find_character(form)?;
                Some(format!(
                    "{NEWCOMER_FIELD}.{field}: {} already names {}",
                    quote(form),
                    quote(&other.id)
                ))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger() -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/lamplighters-ledger/scenario.toml");
        Scenario::load(&path).expect("the shipped open story loads")
    }

    fn newcomer() -> SandboxCharacter {
        SandboxCharacter {
            id: "agnes".into(),
            name: "Agnes Pell".into(),
            profile: "A night-soil carter who hears everything said on the lanes.".into(),
            location: "gasworks-lane".into(),
            known_as: "a carter with a lantern on her cart".into(),
            ..SandboxCharacter::default()
        }
    }

    #[test]
    fn a_newcomer_joins_the_cast_offstage_with_only_its_own_profile() {
        let story = ledger();
        let joined = story.admit(&newcomer()).expect("a valid newcomer joins");
        assert_eq!(joined.characters.len(), story.characters.len() + 1);
        let agnes = joined.character("agnes").expect("in the cast");
        assert!(agnes.offstage, "it enters through the director's event");
        assert_eq!(agnes.appearance(), "a carter with a lantern on her cart");
        assert!(agnes.memories.is_empty() && agnes.patterns.is_empty());
        assert_eq!(joined.knowledge_of("agnes").count(), 0);
        // Everything else is the story as it was, memories and patterns included.
        assert_eq!(
            &joined.characters[..story.characters.len()],
            &story.characters[..]
        );
        assert_eq!(joined.facts, story.facts);
    }

    #[test]
    fn a_wrong_newcomer_is_refused_naming_its_fields() {
        let story = ledger();
        let taken = &story.characters[0];
        let wrong = SandboxCharacter {
            id: taken.id.clone(),
            profile: String::new(),
            location: "the-moon".into(),
            known_as: "Agnes Pell with her cart".into(),
            knows: vec!["nobody".into()],
            memory_modules: vec!["telepathy".into()],
            ..newcomer()
        };
        let why = story.admit(&wrong).expect_err("refused");
        for field in [
            "bring_in.newcomer.id: duplicate character id",
            "bring_in.newcomer.profile: must not be empty",
            "bring_in.newcomer.location:",
            "bring_in.newcomer.known_as: names the character",
            "bring_in.newcomer.knows[0]: unknown character",
            "bring_in.newcomer.memory_modules[0]:",
        ] {
            assert!(why.contains(field), "{field:?} missing from:\n{why}");
        }
        let twin = SandboxCharacter {
            aliases: vec![taken.name.to_uppercase()],
            ..newcomer()
        };
        let why = story.admit(&twin).expect_err("a name in use is refused");
        assert!(
            why.starts_with("bring_in.newcomer.aliases: ") && why.contains(&taken.id),
            "{why}"
        );
    }

    #[test]
    fn a_script_takes_no_newcomer() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/study-in-scarlet/scenario.toml");
        let script = Scenario::load(&path).expect("the shipped script loads");
        let why = script.admit(&newcomer()).expect_err("refused");
        assert!(why.contains("only an open story"), "{why}");
    }
}
