//! `dramatis import bookworld`: a BookWorld experiment preset (its world file,
//! locations, distance map and role directories) turned into a Dramatis scenario.
//!
//! - Each role becomes a character: name, nickname as alias, profile; its lines (when
//!   `role_lines.jsonl` exists) become a pattern's excerpts, spoken text only.
//! - Each relation becomes a fact visible to its two characters (`direct_experience`),
//!   and the two know each other by name. Nobody else is given it.
//! - Locations and the distance map become places and paths.
//! - The preset's `script` becomes one scripted scene with the whole cast; an
//!   `intervention` becomes an open story's premise; with neither, the world's own
//!   description is the premise.
//!
//! Every file is read strictly: a missing or unknown field is an error naming the file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};

use files::{LocationInfo, Preset, RoleInfo, RoleLine, WorldInfo, read_json, read_map};

use crate::file::{
    Character, Fact, Location, Open, PathEntry, Pattern, ScenarioFile, Scene, World, id_from,
};

/// What an import produced.
#[derive(Debug, Clone)]
pub struct Imported {
    pub scenario: PathBuf,
    pub name: String,
    pub characters: usize,
    pub locations: usize,
    pub paths: usize,
    pub facts: usize,
    pub excerpts: usize,
    /// Whether the story is scripted (from the preset's script) or open.
    pub scripted: bool,
    /// Things left out, each naming its file.
    pub notes: Vec<String>,
}

/// A preset's path (`./data/…`), relative to the BookWorld folder that holds
/// `experiment_presets/`, or else to the preset's own folder.
fn resolve(preset: &Path, relative: &str) -> PathBuf {
    let dir = preset.parent().unwrap_or(Path::new("."));
    let root = if dir.file_name().is_some_and(|n| n == "experiment_presets") {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    root.join(relative.trim_start_matches("./"))
}

/// The speech of a role line: BookWorld writes "[thought] (action) speech".
fn spoken(line: &str) -> String {
    let mut out = String::new();
    let mut depth = 0i32;
    for c in line.chars() {
        match c {
            '[' | '(' | '【' | '（' => depth += 1,
            ']' | ')' | '】' | '）' => depth = (depth - 1).max(0),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Unique ids for `codes`, in order.
fn ids(codes: &[String], prefix: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    codes
        .iter()
        .enumerate()
        .map(|(i, code)| {
            let base = id_from(code, &format!("{prefix}-{}", i + 1));
            let mut id = base.clone();
            let mut n = 2;
            while !seen.insert(id.clone()) {
                id = format!("{base}-{n}");
                n += 1;
            }
            id
        })
        .collect()
}

/// The scenario name an import of the preset at `preset` gets: its source, and its
/// sub-name when that says more.
pub fn scenario_name(preset: &Path) -> anyhow::Result<String> {
    Ok(name_of_preset(&read_json(preset)?))
}

fn name_of_preset(preset: &Preset) -> String {
    let subname = preset.experiment_subname.trim();
    if subname.is_empty() || subname == preset.source {
        id_from(&preset.source, "bookworld")
    } else {
        id_from(&format!("{}-{subname}", preset.source), "bookworld")
    }
}

/// Imports the preset at `preset` into the scenario folder `out`.
pub fn import(preset_path: &Path, out: &Path) -> anyhow::Result<Imported> {
    let preset: Preset = read_json(preset_path)?;
    if preset.role_agent_codes.is_empty() {
        bail!("{}: role_agent_codes: no roles", preset_path.display());
    }
    let world_path = resolve(preset_path, &preset.world_file_path);
    let world: WorldInfo = read_json(&world_path)?;
    let mut notes = Vec::new();
    let (locations, paths) = places(preset_path, &preset, &mut notes)?;
    let start = locations[0].id.clone();

    let role_dir = resolve(preset_path, &preset.role_file_dir).join(&preset.source);
    let roles = read_roles(&role_dir, &preset.role_agent_codes)?;
    let role_ids = ids(&preset.role_agent_codes, "person");
    let id_of_role: BTreeMap<&str, &str> = preset
        .role_agent_codes
        .iter()
        .map(String::as_str)
        .zip(role_ids.iter().map(String::as_str))
        .collect();
    let (facts, knows) = relations(&roles, &id_of_role, &role_dir, &mut notes);
    let excerpt_count = roles.iter().map(|r| r.excerpts.len()).sum();
    let characters = characters(roles, &id_of_role, knows, &start);

    let premise = first_non_empty(&[&world.description, &world.detail]);
    let cast: Vec<String> = characters.iter().map(|c| c.id.clone()).collect();
    let scripted = !preset.script.trim().is_empty();
    let (open, scenes) = story(&preset, &premise, &start, cast);
    let name = name_of_preset(&preset);
    let title = first_non_empty(&[&preset.title, &world.title, &world.world_name, &name]);
    let file = ScenarioFile {
        version: 1,
        name: name.clone(),
        title,
        description: premise.clone(),
        world: World {
            description: premise,
        },
        open,
        locations,
        paths,
        characters,
        facts,
        scenes,
    };
    let header = format!(
        "# Imported from the BookWorld preset {} by `dramatis import bookworld`.\n\
         # Format: scenarios/README.md.",
        preset_path.display()
    );
    let scenario = file.write(out, &header)?;
    Ok(Imported {
        scenario,
        name,
        characters: file.characters.len(),
        locations: file.locations.len(),
        paths: file.paths.len(),
        facts: file.facts.len(),
        excerpts: excerpt_count,
        scripted,
        notes,
    })
}

/// The preset's places, in the distance map's order when it lists them, and the paths
/// between them. A mapped place the locations file lacks is noted and left out.
fn places(
    preset_path: &Path,
    preset: &Preset,
    notes: &mut Vec<String>,
) -> anyhow::Result<(Vec<Location>, Vec<PathEntry>)> {
    let loc_path = resolve(preset_path, &preset.loc_file_path);
    let places: BTreeMap<String, LocationInfo> = read_json(&loc_path)?;
    if places.is_empty() {
        bail!("{}: no locations", loc_path.display());
    }
    let map_path = resolve(preset_path, &preset.map_file_path);
    let (order, distances) = read_map(&map_path)?;
    let mut codes: Vec<String> = order
        .iter()
        .filter(|c| places.contains_key(*c))
        .cloned()
        .collect();
    let unmapped: Vec<String> = places
        .keys()
        .filter(|c| !codes.contains(c))
        .cloned()
        .collect();
    codes.extend(unmapped);
    for code in order.iter().filter(|c| !places.contains_key(*c)) {
        notes.push(format!(
            "{}: {code:?} is not in {}; its distances are left out",
            map_path.display(),
            loc_path.display()
        ));
    }
    let place_ids = ids(&codes, "place");
    let id_of_place: BTreeMap<&str, &str> = codes
        .iter()
        .map(String::as_str)
        .zip(place_ids.iter().map(String::as_str))
        .collect();
    let locations: Vec<Location> = codes
        .iter()
        .zip(&place_ids)
        .map(|(code, id)| {
            let info = &places[code];
            Location {
                id: id.clone(),
                name: if info.location_name.trim().is_empty() {
                    info.location_code.clone()
                } else {
                    info.location_name.clone()
                },
                description: first_non_empty(&[&info.description, &info.detail]),
            }
        })
        .collect();
    let mut paths = Vec::new();
    for ((a, b), distance) in distances {
        if let (Some(from), Some(to)) = (id_of_place.get(a.as_str()), id_of_place.get(b.as_str())) {
            paths.push(PathEntry {
                from: (*from).to_owned(),
                to: (*to).to_owned(),
                distance,
            });
        }
    }
    Ok((locations, paths))
}

/// One role of the preset: its code, its info file and up to three lines it speaks.
struct Role {
    code: String,
    info: RoleInfo,
    excerpts: Vec<String>,
}

/// Each role's `role_info.json` and the first three spoken lines of its
/// `role_lines.jsonl`, if it has one.
fn read_roles(role_dir: &Path, codes: &[String]) -> anyhow::Result<Vec<Role>> {
    let mut roles = Vec::new();
    for code in codes {
        let dir = role_dir.join(code);
        let info: RoleInfo = read_json(&dir.join("role_info.json"))?;
        let lines_path = dir.join("role_lines.jsonl");
        let mut excerpts = Vec::new();
        if lines_path.is_file() {
            let text = std::fs::read_to_string(&lines_path)
                .with_context(|| format!("cannot read {}", lines_path.display()))?;
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let parsed: RoleLine = serde_json::from_str(line)
                    .map_err(|e| anyhow!("{}:{}: {e}", lines_path.display(), n + 1))?;
                let said = spoken(&parsed.text);
                if said.chars().count() >= 2 && excerpts.len() < 3 {
                    excerpts.push(said);
                }
            }
        }
        roles.push(Role {
            code: code.clone(),
            info,
            excerpts,
        });
    }
    Ok(roles)
}

/// The roles' relations: one fact each, visible to the two it joins, who therefore know
/// each other by name. A relation to someone outside the cast is noted and left out.
fn relations(
    roles: &[Role],
    id_of_role: &BTreeMap<&str, &str>,
    role_dir: &Path,
    notes: &mut Vec<String>,
) -> (Vec<Fact>, BTreeMap<String, BTreeSet<String>>) {
    let name_of: BTreeMap<&str, &str> = roles
        .iter()
        .map(|r| (r.code.as_str(), r.info.role_name.as_str()))
        .collect();
    let mut facts = Vec::new();
    let mut knows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for Role { code, info, .. } in roles {
        let me = id_of_role[code.as_str()];
        for (other, relation) in &info.relation {
            let Some(them) = id_of_role.get(other.as_str()) else {
                notes.push(format!(
                    "{}: relation to {other:?}, who is not in the preset's cast, is left out",
                    role_dir.join(code).join("role_info.json").display()
                ));
                continue;
            };
            if *them == me {
                continue;
            }
            knows
                .entry(me.to_owned())
                .or_default()
                .insert((*them).to_owned());
            knows
                .entry((*them).to_owned())
                .or_default()
                .insert(me.to_owned());
            let kinds = relation.relation.join(", ");
            let text = [
                format!(
                    "{} and {}: {kinds}.",
                    info.role_name,
                    name_of[other.as_str()]
                ),
                relation.detail.trim().to_owned(),
            ]
            .into_iter()
            .filter(|t| !t.trim().is_empty() && t != ":.")
            .collect::<Vec<_>>()
            .join(" ");
            facts.push(Fact {
                id: format!("relation-{me}-{them}"),
                text,
                known_by: vec![me.to_owned(), (*them).to_owned()],
                route: "direct_experience".to_owned(),
                ..Fact::default()
            });
        }
    }
    (facts, knows)
}

/// The roles as characters, all starting at `start`.
fn characters(
    roles: Vec<Role>,
    id_of_role: &BTreeMap<&str, &str>,
    mut knows: BTreeMap<String, BTreeSet<String>>,
    start: &str,
) -> Vec<Character> {
    roles
        .into_iter()
        .map(
            |Role {
                 code,
                 info,
                 excerpts,
             }| {
                let id = id_of_role[code.as_str()].to_owned();
                let aliases = [info.nickname.trim()]
                    .into_iter()
                    .filter(|n| !n.is_empty() && *n != info.role_name)
                    .map(str::to_owned)
                    .collect();
                Character {
                    knows: knows
                        .remove(&id)
                        .map(|k| k.into_iter().collect())
                        .unwrap_or_default(),
                    patterns: if excerpts.is_empty() {
                        Vec::new()
                    } else {
                        vec![Pattern {
                            id: "in-the-book".to_owned(),
                            description: format!("{} as the book has them speak", info.role_name),
                            excerpts,
                        }]
                    },
                    id,
                    name: info.role_name,
                    aliases,
                    profile: info.profile,
                    style: "in their own voice, as in the book".to_owned(),
                    location: start.to_owned(),
                    ..Character::default()
                }
            },
        )
        .collect()
}

/// The preset's script as one scripted scene, or else its intervention (or the world's
/// premise) as an open story.
fn story(
    preset: &Preset,
    premise: &str,
    start: &str,
    cast: Vec<String>,
) -> (Option<Open>, Vec<Scene>) {
    if preset.script.trim().is_empty() {
        let premise = first_non_empty(&[&preset.intervention, premise]);
        let open = Open {
            opening: premise.clone(),
            premise,
            opening_location: start.to_owned(),
            rounds: 6,
            openings: Vec::new(),
            scene_turns: 8,
        };
        (Some(open), Vec::new())
    } else {
        let scene = Scene {
            id: "scene-1".to_owned(),
            location: start.to_owned(),
            cast,
            beat: preset.script.trim().to_owned(),
            min_turns: 3,
            max_turns: 8,
            opening: preset.script.trim().to_owned(),
            ..Scene::default()
        };
        (None, vec![scene])
    }
}

fn first_non_empty(texts: &[&str]) -> String {
    texts
        .iter()
        .map(|t| t.trim())
        .find(|t| !t.is_empty())
        .unwrap_or_default()
        .to_owned()
}

mod files;
#[cfg(test)]
mod tests;
