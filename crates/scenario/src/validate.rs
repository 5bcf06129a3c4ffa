//! Turns a parsed file into a [`Scenario`], collecting every problem with its line.

use std::collections::HashSet;
use std::path::Path;

use dramatis_proto::v1::MemoryModules;

use dramatis_base::quote;

use super::raw::{RawScenario, RawScene, S};
use super::{FORMAT_VERSION, Lines, Problem, Scenario, ScenarioError};

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

impl Checker {
    /// The format version, and the scenario's name and title.
    fn version(&mut self, raw: &RawScenario) {
        if *raw.version.get_ref() != FORMAT_VERSION {
            self.report(
                &raw.version,
                "version",
                format!(
                    "unsupported version {}; this build reads version {FORMAT_VERSION}",
                    raw.version.get_ref()
                ),
            );
        }
        self.non_empty(&raw.name, "name");
        self.non_empty(&raw.title, "title");
    }

    /// Locations (ids unique, named, at least one) and the paths between them; the ids.
    fn places(&mut self, raw: &RawScenario) -> HashSet<String> {
        let mut location_ids = HashSet::new();
        for (i, l) in raw.locations.iter().enumerate() {
            self.id(
                &l.id,
                &format!("locations[{i}].id"),
                "location",
                &mut location_ids,
            );
            self.non_empty(&l.name, format!("locations[{i}].name"));
        }
        if raw.locations.is_empty() {
            self.report(
                &raw.name,
                "locations",
                "a scenario needs at least one location",
            );
        }

        for (i, p) in raw.paths.iter().enumerate() {
            for (end, field) in [(&p.from, "from"), (&p.to, "to")] {
                if !location_ids.contains(end.get_ref()) {
                    self.report(
                        end,
                        format!("paths[{i}].{field}"),
                        format!("unknown location {}", quote(end.get_ref())),
                    );
                }
            }
            if p.from.get_ref() == p.to.get_ref() {
                self.report(
                    &p.to,
                    format!("paths[{i}].to"),
                    "a path must join two different locations",
                );
            }
            if *p.distance.get_ref() == 0 {
                self.report(
                    &p.distance,
                    format!("paths[{i}].distance"),
                    "distance must be at least 1",
                );
            }
        }
        location_ids
    }

    fn modules(&mut self, raw: &RawScenario) {
        if let Some(memory) = &raw.memory {
            for (i, module) in memory.modules.iter().enumerate() {
                self.memory_module(module, format!("memory.modules[{i}]"));
            }
        }
        for (i, ch) in raw.characters.iter().enumerate() {
            for (j, module) in ch.memory_modules.iter().flatten().enumerate() {
                self.memory_module(module, format!("characters[{i}].memory_modules[{j}]"));
            }
        }
    }

    /// Characters, their own memories and patterns, and where they start; the ids.
    fn characters(&mut self, raw: &RawScenario, location_ids: &HashSet<String>) -> HashSet<String> {
        let mut character_ids = HashSet::new();
        for (i, ch) in raw.characters.iter().enumerate() {
            self.id(
                &ch.id,
                &format!("characters[{i}].id"),
                "character",
                &mut character_ids,
            );
            self.non_empty(&ch.name, format!("characters[{i}].name"));
            self.non_empty(&ch.profile, format!("characters[{i}].profile"));
            let mut own_ids = HashSet::new();
            for (j, memory) in ch.memories.iter().enumerate() {
                self.id(
                    &memory.id,
                    &format!("characters[{i}].memories[{j}].id"),
                    "memory",
                    &mut own_ids,
                );
                self.non_empty(&memory.text, format!("characters[{i}].memories[{j}].text"));
            }
            for (j, pattern) in ch.patterns.iter().enumerate() {
                self.id(
                    &pattern.id,
                    &format!("characters[{i}].patterns[{j}].id"),
                    "pattern",
                    &mut own_ids,
                );
                self.non_empty(
                    &pattern.description,
                    format!("characters[{i}].patterns[{j}].description"),
                );
            }
            if let Some(offstage) = &ch.offstage
                && *offstage.get_ref()
                && raw.open.is_none()
            {
                self.report(
                    offstage,
                    format!("characters[{i}].offstage"),
                    "offstage is for open stories: a script brings its characters in \
                     through its scenes' cast"
                        .to_owned(),
                );
            }
            if let Some(only) = &ch.interview_only
                && *only.get_ref()
                && ch.offstage.as_ref().is_some_and(|o| *o.get_ref())
            {
                self.report(
                    only,
                    format!("characters[{i}].interview_only"),
                    "an interview-only character never enters, so it is not offstage \
                     too: drop one of the two"
                        .to_owned(),
                );
            }
            if !location_ids.contains(ch.location.get_ref()) {
                self.report(
                    &ch.location,
                    format!("characters[{i}].location"),
                    format!(
                        "character {} starts at unknown location {}",
                        quote(ch.id.get_ref()),
                        quote(ch.location.get_ref())
                    ),
                );
            }
            if let Some(card) = &ch.card {
                self.json_object(card, format!("characters[{i}].card"));
            }
        }
        character_ids
    }

    /// Whom each character knows, and how strangers know it.
    fn acquaintances(&mut self, raw: &RawScenario, character_ids: &HashSet<String>) {
        for (i, ch) in raw.characters.iter().enumerate() {
            for (j, whom) in ch.knows.iter().enumerate() {
                self.acquaintance(
                    ch.id.get_ref(),
                    whom,
                    format!("characters[{i}].knows[{j}]"),
                    character_ids,
                );
            }
            if let Some(known_as) = &ch.known_as {
                self.non_empty(known_as, format!("characters[{i}].known_as"));
                let names = std::iter::once(ch.name.get_ref()).chain(&ch.aliases);
                if let Some(name) = names
                    .filter(|n| !n.trim().is_empty())
                    .find(|n| known_as.get_ref().contains(n.as_str()))
                {
                    self.report(
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
            self.report(
                &raw.name,
                "characters",
                "a scenario needs at least one character",
            );
        }
    }

    /// A carried JSON object (a card's or a lorebook entry's fields, kept for export).
    fn json_object(&mut self, at: &S<String>, field: String) {
        match serde_json::from_str::<serde_json::Value>(at.get_ref()) {
            Ok(serde_json::Value::Object(_)) => {}
            Ok(_) => self.report(at, field, "is not a JSON object"),
            Err(e) => self.report(at, field, format!("is not JSON: {e}")),
        }
    }

    fn facts(&mut self, raw: &RawScenario, character_ids: &HashSet<String>) {
        let mut fact_ids = HashSet::new();
        for (i, f) in raw.facts.iter().enumerate() {
            self.id(&f.id, &format!("facts[{i}].id"), "fact", &mut fact_ids);
            self.non_empty(&f.text, format!("facts[{i}].text"));
            if let Some(entry) = &f.entry {
                self.json_object(entry, format!("facts[{i}].entry"));
            }
            let secret = f.secret.as_ref().is_some_and(|s| *s.get_ref());
            if f.known_by.get_ref().is_empty() && !secret {
                self.report(
                    &f.known_by,
                    format!("facts[{i}].known_by"),
                    "name at least one character (or mark the fact `secret = true`: \
                     known to no one until a director reveals it)",
                );
            }
            if let Some(flag) = &f.secret
                && *flag.get_ref()
                && !f.known_by.get_ref().is_empty()
            {
                self.report(
                    flag,
                    format!("facts[{i}].secret"),
                    "a secret fact is known to no one: leave `known_by` empty",
                );
            }
            for (j, who) in f.known_by.get_ref().iter().enumerate() {
                if !character_ids.contains(who.get_ref()) {
                    self.report(
                        who,
                        format!("facts[{i}].known_by[{j}]"),
                        format!("unknown character {}", quote(who.get_ref())),
                    );
                }
            }
        }
    }

    fn scenes(
        &mut self,
        raw: &RawScenario,
        location_ids: &HashSet<String>,
        character_ids: &HashSet<String>,
    ) {
        let mut scene_ids = HashSet::new();
        let interview_only: HashSet<&str> = raw
            .characters
            .iter()
            .filter(|c| c.interview_only.as_ref().is_some_and(|o| *o.get_ref()))
            .map(|c| c.id.get_ref().as_str())
            .collect();
        for (i, s) in raw.scenes.iter().enumerate() {
            self.scene(i, s, &mut scene_ids, location_ids, character_ids);
            for (j, who) in s.cast.get_ref().iter().enumerate() {
                if interview_only.contains(who.get_ref().as_str()) {
                    self.report(
                        who,
                        format!("scenes[{i}].cast[{j}]"),
                        format!(
                            "{} is interview_only: it is asked, never cast",
                            quote(who.get_ref())
                        ),
                    );
                }
            }
        }
    }

    /// One scripted scene: its place, cast, turn limits, directions and acquaintances.
    fn scene(
        &mut self,
        i: usize,
        s: &RawScene,
        scene_ids: &mut HashSet<String>,
        location_ids: &HashSet<String>,
        character_ids: &HashSet<String>,
    ) {
        self.id(&s.id, &format!("scenes[{i}].id"), "scene", scene_ids);
        if !location_ids.contains(s.location.get_ref()) {
            self.report(
                &s.location,
                format!("scenes[{i}].location"),
                format!("unknown location {}", quote(s.location.get_ref())),
            );
        }
        self.non_empty(&s.beat, format!("scenes[{i}].beat"));
        if s.cast.get_ref().is_empty() {
            self.report(
                &s.cast,
                format!("scenes[{i}].cast"),
                "a scene needs at least one actor",
            );
        }
        let mut in_cast = HashSet::new();
        for (j, who) in s.cast.get_ref().iter().enumerate() {
            if !character_ids.contains(who.get_ref()) {
                self.report(
                    who,
                    format!("scenes[{i}].cast[{j}]"),
                    format!("unknown character {}", quote(who.get_ref())),
                );
            } else if !in_cast.insert(who.get_ref().clone()) {
                self.report(
                    who,
                    format!("scenes[{i}].cast[{j}]"),
                    format!("character {} is cast twice", quote(who.get_ref())),
                );
            }
        }
        if *s.max_turns.get_ref() == 0 {
            self.report(
                &s.max_turns,
                format!("scenes[{i}].max_turns"),
                "must be at least 1",
            );
        }
        if let Some(min) = &s.min_turns
            && min.get_ref() > s.max_turns.get_ref()
        {
            self.report(
                min,
                format!("scenes[{i}].min_turns"),
                "must not exceed max_turns",
            );
        }
        if let Some(directions) = &s.directions {
            for who in directions.get_ref().keys() {
                if !in_cast.contains(who.get_ref()) {
                    self.report(
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
                    self.report(
                        who,
                        field.clone(),
                        format!("unknown character {}", quote(who.get_ref())),
                    );
                }
                for (j, other) in whom.iter().enumerate() {
                    self.acquaintance(who.get_ref(), other, format!("{field}[{j}]"), character_ids);
                }
            }
        }
    }

    /// An open story's section, or the script it replaces.
    fn open(&mut self, raw: &RawScenario, location_ids: &HashSet<String>) {
        match &raw.open {
            None if raw.scenes.is_empty() => self.report(
                &raw.name,
                "scenes",
                "a scenario needs at least one scene, or an [open] section for a sandbox",
            ),
            Some(open) => {
                if !raw.scenes.is_empty() {
                    self.report(
                        open,
                        "open",
                        "a scenario is either scripted ([[scenes]]) or open ([open]), not both",
                    );
                }
                let o = open.get_ref();
                self.non_empty(&o.premise, "open.premise");
                if *o.rounds.get_ref() == 0 {
                    self.report(&o.rounds, "open.rounds", "must be at least 1");
                }
                if let Some(turns) = &o.scene_turns
                    && *turns.get_ref() == 0
                {
                    self.report(turns, "open.scene_turns", "must be at least 1");
                }
                if let Some(at) = &o.opening_location
                    && !location_ids.contains(at.get_ref())
                {
                    self.report(
                        at,
                        "open.opening_location",
                        format!("unknown location {}", quote(at.get_ref())),
                    );
                }
            }
            None => {}
        }
    }
}

/// Checks `raw` (the text `text` of the file at `path`) and builds the scenario, or
/// reports every problem with its line and field.
pub(super) fn validate(
    raw: RawScenario,
    text: &str,
    path: &Path,
) -> Result<Scenario, ScenarioError> {
    let mut c = Checker {
        lines: Lines::of(text),
        problems: Vec::new(),
    };
    c.version(&raw);
    let location_ids = c.places(&raw);
    c.modules(&raw);
    let character_ids = c.characters(&raw, &location_ids);
    c.acquaintances(&raw, &character_ids);
    c.facts(&raw, &character_ids);
    c.scenes(&raw, &location_ids, &character_ids);
    c.open(&raw, &location_ids);
    if let Some(attention) = &raw.attention
        && (*attention.get_ref() as usize) < super::MIN_ATTENTION
    {
        c.report(
            attention,
            "attention",
            format!("must be at least {}", super::MIN_ATTENTION),
        );
    }
    if !c.problems.is_empty() {
        c.problems.sort_by_key(|p| p.line);
        return Err(ScenarioError::Invalid {
            path: path.to_path_buf(),
            problems: c.problems,
        });
    }
    Ok(super::build::scenario(raw, path))
}
