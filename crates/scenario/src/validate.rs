//! Turns a parsed file into a [`Scenario`], collecting every problem with its line.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;

use dramatis_proto::v1::MemoryModules;

use dramatis_runtime::quote;

use super::raw::{RawScenario, S};
use super::{
    Character, FORMAT_VERSION, Fact, Lines, Location, Memory, OpenStory, Path_, Pattern, Problem,
    Scenario, ScenarioError, Scene,
};

struct Checker {
    lines: Lines,
    problems: Vec<Problem>,
}

impl Checker {
    fn report<T>(&mut self, at: &S<T>, field: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            line: self.lines.line(at.span().start),
            field: field.into(),
            message: message.into(),
        });
    }

    fn memory_module(&mut self, module: &S<String>, field: String) {
        if let Err(error) = MemoryModules::parse(std::slice::from_ref(module.get_ref())) {
            self.report(module, field, error);
        }
    }

    fn non_empty(&mut self, value: &S<String>, field: impl Into<String>) {
        if value.get_ref().trim().is_empty() {
            self.report(value, field, "must not be empty");
        }
    }

    /// Checks that `whom`, an entry of `who`'s acquaintances, is another character.
    fn acquaintance(
        &mut self,
        who: &str,
        whom: &S<String>,
        field: String,
        characters: &HashSet<String>,
    ) {
        if !characters.contains(whom.get_ref()) {
            self.report(
                whom,
                field,
                format!("unknown character {}", quote(whom.get_ref())),
            );
        } else if whom.get_ref() == who {
            self.report(whom, field, "a character always knows its own name");
        }
    }

    /// Checks an id's shape and uniqueness among `seen`. A badly shaped id still counts
    /// as defined, so the references to it are not reported as unknown as well: one
    /// mistake, one problem.
    fn id(&mut self, id: &S<String>, field: &str, kind: &str, seen: &mut HashSet<String>) {
        let value = id.get_ref();
        let fresh = seen.insert(value.clone());
        if value.is_empty()
            || !value
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        {
            self.report(
                id,
                field,
                format!(
                    "{kind} id {} must be lowercase letters, digits, '-' or '_'",
                    quote(value)
                ),
            );
        } else if !fresh {
            self.report(id, field, format!("duplicate {kind} id {}", quote(value)));
        }
    }
}

#[allow(clippy::too_many_lines)]
pub(super) fn validate(
    raw: RawScenario,
    text: &str,
    path: &Path,
) -> Result<Scenario, ScenarioError> {
    let mut c = Checker {
        lines: Lines::of(text),
        problems: Vec::new(),
    };
    if *raw.version.get_ref() != FORMAT_VERSION {
        c.report(
            &raw.version,
            "version",
            format!(
                "unsupported version {}; this build reads version {FORMAT_VERSION}",
                raw.version.get_ref()
            ),
        );
    }
    c.non_empty(&raw.name, "name");
    c.non_empty(&raw.title, "title");

    let mut location_ids = HashSet::new();
    for (i, l) in raw.locations.iter().enumerate() {
        c.id(
            &l.id,
            &format!("locations[{i}].id"),
            "location",
            &mut location_ids,
        );
        c.non_empty(&l.name, format!("locations[{i}].name"));
    }
    if raw.locations.is_empty() {
        c.report(
            &raw.name,
            "locations",
            "a scenario needs at least one location",
        );
    }

    for (i, p) in raw.paths.iter().enumerate() {
        for (end, field) in [(&p.from, "from"), (&p.to, "to")] {
            if !location_ids.contains(end.get_ref()) {
                c.report(
                    end,
                    format!("paths[{i}].{field}"),
                    format!("unknown location {}", quote(end.get_ref())),
                );
            }
        }
        if p.from.get_ref() == p.to.get_ref() {
            c.report(
                &p.to,
                format!("paths[{i}].to"),
                "a path must join two different locations",
            );
        }
        if *p.distance.get_ref() == 0 {
            c.report(
                &p.distance,
                format!("paths[{i}].distance"),
                "distance must be at least 1",
            );
        }
    }

    if let Some(memory) = &raw.memory {
        for (i, module) in memory.modules.iter().enumerate() {
            c.memory_module(module, format!("memory.modules[{i}]"));
        }
    }
    for (i, ch) in raw.characters.iter().enumerate() {
        for (j, module) in ch.memory_modules.iter().flatten().enumerate() {
            c.memory_module(module, format!("characters[{i}].memory_modules[{j}]"));
        }
    }

    let mut character_ids = HashSet::new();
    for (i, ch) in raw.characters.iter().enumerate() {
        c.id(
            &ch.id,
            &format!("characters[{i}].id"),
            "character",
            &mut character_ids,
        );
        c.non_empty(&ch.name, format!("characters[{i}].name"));
        c.non_empty(&ch.profile, format!("characters[{i}].profile"));
        let mut own_ids = HashSet::new();
        for (j, memory) in ch.memories.iter().enumerate() {
            c.id(
                &memory.id,
                &format!("characters[{i}].memories[{j}].id"),
                "memory",
                &mut own_ids,
            );
            c.non_empty(&memory.text, format!("characters[{i}].memories[{j}].text"));
        }
        for (j, pattern) in ch.patterns.iter().enumerate() {
            c.id(
                &pattern.id,
                &format!("characters[{i}].patterns[{j}].id"),
                "pattern",
                &mut own_ids,
            );
            c.non_empty(
                &pattern.description,
                format!("characters[{i}].patterns[{j}].description"),
            );
        }
        if !location_ids.contains(ch.location.get_ref()) {
            c.report(
                &ch.location,
                format!("characters[{i}].location"),
                format!(
                    "character {} starts at unknown location {}",
                    quote(ch.id.get_ref()),
                    quote(ch.location.get_ref())
                ),
            );
        }
    }
    for (i, ch) in raw.characters.iter().enumerate() {
        for (j, whom) in ch.knows.iter().enumerate() {
            c.acquaintance(
                ch.id.get_ref(),
                whom,
                format!("characters[{i}].knows[{j}]"),
                &character_ids,
            );
        }
        if let Some(known_as) = &ch.known_as {
            c.non_empty(known_as, format!("characters[{i}].known_as"));
            let names = std::iter::once(ch.name.get_ref()).chain(&ch.aliases);
            if let Some(name) = names
                .filter(|n| !n.trim().is_empty())
                .find(|n| known_as.get_ref().contains(n.as_str()))
            {
                c.report(
                    known_as,
                    format!("characters[{i}].known_as"),
                    format!(
                        "names the character ({}): strangers would learn it",
                        quote(name)
                    ),
                );
            }
        }
    }
    if raw.characters.is_empty() {
        c.report(
            &raw.name,
            "characters",
            "a scenario needs at least one character",
        );
    }

    let mut fact_ids = HashSet::new();
    for (i, f) in raw.facts.iter().enumerate() {
        c.id(&f.id, &format!("facts[{i}].id"), "fact", &mut fact_ids);
        c.non_empty(&f.text, format!("facts[{i}].text"));
        if f.known_by.get_ref().is_empty() {
            c.report(
                &f.known_by,
                format!("facts[{i}].known_by"),
                "name at least one character",
            );
        }
        for (j, who) in f.known_by.get_ref().iter().enumerate() {
            if !character_ids.contains(who.get_ref()) {
                c.report(
                    who,
                    format!("facts[{i}].known_by[{j}]"),
                    format!("unknown character {}", quote(who.get_ref())),
                );
            }
        }
    }

    let mut scene_ids = HashSet::new();
    for (i, s) in raw.scenes.iter().enumerate() {
        c.id(&s.id, &format!("scenes[{i}].id"), "scene", &mut scene_ids);
        if !location_ids.contains(s.location.get_ref()) {
            c.report(
                &s.location,
                format!("scenes[{i}].location"),
                format!("unknown location {}", quote(s.location.get_ref())),
            );
        }
        c.non_empty(&s.beat, format!("scenes[{i}].beat"));
        if s.cast.get_ref().is_empty() {
            c.report(
                &s.cast,
                format!("scenes[{i}].cast"),
                "a scene needs at least one actor",
            );
        }
        let mut in_cast = HashSet::new();
        for (j, who) in s.cast.get_ref().iter().enumerate() {
            if !character_ids.contains(who.get_ref()) {
                c.report(
                    who,
                    format!("scenes[{i}].cast[{j}]"),
                    format!("unknown character {}", quote(who.get_ref())),
                );
            } else if !in_cast.insert(who.get_ref().clone()) {
                c.report(
                    who,
                    format!("scenes[{i}].cast[{j}]"),
                    format!("character {} is cast twice", quote(who.get_ref())),
                );
            }
        }
        if *s.max_turns.get_ref() == 0 {
            c.report(
                &s.max_turns,
                format!("scenes[{i}].max_turns"),
                "must be at least 1",
            );
        }
        if let Some(min) = &s.min_turns
            && min.get_ref() > s.max_turns.get_ref()
        {
            c.report(
                min,
                format!("scenes[{i}].min_turns"),
                "must not exceed max_turns",
            );
        }
        if let Some(directions) = &s.directions {
            for who in directions.get_ref().keys() {
                if !in_cast.contains(who.get_ref()) {
                    c.report(
                        who,
                        format!("scenes[{i}].directions.{}", who.get_ref()),
                        format!("{} is not in this scene's cast", quote(who.get_ref())),
                    );
                }
            }
        }
        if let Some(knows) = &s.knows {
            for (who, whom) in knows.get_ref() {
                let field = format!("scenes[{i}].knows.{}", who.get_ref());
                if !character_ids.contains(who.get_ref()) {
                    c.report(
                        who,
                        field.clone(),
                        format!("unknown character {}", quote(who.get_ref())),
                    );
                }
                for (j, other) in whom.iter().enumerate() {
                    c.acquaintance(
                        who.get_ref(),
                        other,
                        format!("{field}[{j}]"),
                        &character_ids,
                    );
                }
            }
        }
    }
    match &raw.open {
        None if raw.scenes.is_empty() => c.report(
            &raw.name,
            "scenes",
            "a scenario needs at least one scene, or an [open] section for a sandbox",
        ),
        Some(open) => {
            if !raw.scenes.is_empty() {
                c.report(
                    open,
                    "open",
                    "a scenario is either scripted ([[scenes]]) or open ([open]), not both",
                );
            }
            let o = open.get_ref();
            c.non_empty(&o.premise, "open.premise");
            if *o.rounds.get_ref() == 0 {
                c.report(&o.rounds, "open.rounds", "must be at least 1");
            }
            if let Some(turns) = &o.scene_turns
                && *turns.get_ref() == 0
            {
                c.report(turns, "open.scene_turns", "must be at least 1");
            }
            if let Some(at) = &o.opening_location
                && !location_ids.contains(at.get_ref())
            {
                c.report(
                    at,
                    "open.opening_location",
                    format!("unknown location {}", quote(at.get_ref())),
                );
            }
        }
        None => {}
    }

    if !c.problems.is_empty() {
        c.problems.sort_by_key(|p| p.line);
        return Err(ScenarioError::Invalid {
            path: path.to_path_buf(),
            problems: c.problems,
        });
    }

    Ok(Scenario {
        name: raw.name.into_inner(),
        title: raw.title.into_inner(),
        description: raw.description,
        world: raw.world.description,
        locations: raw
            .locations
            .into_iter()
            .map(|l| Location {
                id: l.id.into_inner(),
                name: l.name.into_inner(),
                description: l.description,
            })
            .collect(),
        paths: raw
            .paths
            .into_iter()
            .map(|p| Path_ {
                from: p.from.into_inner(),
                to: p.to.into_inner(),
                distance: p.distance.into_inner(),
            })
            .collect(),
        characters: raw
            .characters
            .into_iter()
            .map(|ch| Character {
                id: ch.id.into_inner(),
                name: ch.name.into_inner(),
                aliases: ch.aliases,
                profile: ch.profile.into_inner(),
                style: ch.style,
                location: ch.location.into_inner(),
                memories: ch
                    .memories
                    .into_iter()
                    .map(|m| Memory {
                        id: m.id.into_inner(),
                        text: m.text.into_inner(),
                    })
                    .collect(),
                patterns: ch
                    .patterns
                    .into_iter()
                    .map(|p| Pattern {
                        id: p.id.into_inner(),
                        description: p.description.into_inner(),
                        excerpts: p.excerpts,
                    })
                    .collect(),
                goal: ch.goal,
                memory_modules: ch
                    .memory_modules
                    .map(|m| m.into_iter().map(S::into_inner).collect()),
                knows: ch.knows.into_iter().map(S::into_inner).collect(),
                known_as: ch
                    .known_as
                    .map(|k| k.into_inner().trim().to_owned())
                    .unwrap_or_default(),
            })
            .collect(),
        facts: raw
            .facts
            .into_iter()
            .map(|f| Fact {
                id: f.id.into_inner(),
                text: f.text.into_inner(),
                known_by: f
                    .known_by
                    .into_inner()
                    .into_iter()
                    .map(S::into_inner)
                    .collect::<BTreeSet<_>>(),
                subject: f.subject,
                predicate: f.predicate,
                object: f.object,
                cause: f.cause,
                route: f.route,
            })
            .collect(),
        scenes: raw
            .scenes
            .into_iter()
            .map(|s| {
                let max_turns = s.max_turns.into_inner();
                Scene {
                    id: s.id.into_inner(),
                    location: s.location.into_inner(),
                    cast: s.cast.into_inner().into_iter().map(S::into_inner).collect(),
                    beat: s.beat.into_inner(),
                    end_cues: s.end_cues,
                    min_turns: s.min_turns.map_or(max_turns.min(2), S::into_inner),
                    max_turns,
                    opening: s.opening,
                    directions: s
                        .directions
                        .map(|d| {
                            d.into_inner()
                                .into_iter()
                                .map(|(k, v)| (k.into_inner(), v))
                                .collect::<BTreeMap<_, _>>()
                        })
                        .unwrap_or_default(),
                    knows: s
                        .knows
                        .map(|k| {
                            k.into_inner()
                                .into_iter()
                                .map(|(who, whom)| {
                                    (
                                        who.into_inner(),
                                        whom.into_iter().map(S::into_inner).collect(),
                                    )
                                })
                                .collect()
                        })
                        .unwrap_or_default(),
                }
            })
            .collect(),
        open: raw.open.map(|open| {
            let o = open.into_inner();
            OpenStory {
                premise: o.premise.into_inner(),
                opening: o.opening,
                opening_location: o.opening_location.map(S::into_inner).unwrap_or_default(),
                rounds: o.rounds.into_inner(),
                scene_turns: o.scene_turns.map_or(6, S::into_inner),
            }
        }),
        memory_modules: raw
            .memory
            .map(|m| m.modules.into_iter().map(S::into_inner).collect())
            .unwrap_or_default(),
        source: path.to_path_buf(),
    })
}
