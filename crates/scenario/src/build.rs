//! A checked raw scenario made into the validated [`Scenario`]: spans dropped,
//! defaults filled in.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::raw::{RawCharacter, RawScenario, RawScene, S};
use super::{Character, Fact, Keys, Location, Memory, OpenStory, Path_, Pattern, Scenario, Scene};

/// The scenario `raw` describes; `raw` has passed every check.
pub(super) fn scenario(raw: RawScenario, path: &Path) -> Scenario {
    Scenario {
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
        characters: raw.characters.into_iter().map(character).collect(),
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
                keys: Keys {
                    keys: f.keys,
                    secondary_keys: f.secondary_keys,
                    selective: f.selective,
                    constant: f.constant,
                    case_sensitive: f.case_sensitive,
                },
                secret: f.secret.is_some_and(S::into_inner),
                entry: f.entry.map(S::into_inner).unwrap_or_default(),
            })
            .collect(),
        scenes: raw.scenes.into_iter().map(scene).collect(),
        open: raw.open.map(|open| {
            let o = open.into_inner();
            OpenStory {
                premise: o.premise.into_inner(),
                opening: o.opening,
                opening_location: o.opening_location.map(S::into_inner).unwrap_or_default(),
                rounds: o.rounds.into_inner(),
                scene_turns: o.scene_turns.map_or(6, S::into_inner),
                openings: o.openings,
            }
        }),
        memory_modules: raw
            .memory
            .map(|m| m.modules.into_iter().map(S::into_inner).collect())
            .unwrap_or_default(),
        attention: raw.attention.map(|a| a.into_inner() as usize),
        source: path.to_path_buf(),
        index: super::CastIndex::default(),
    }
}

/// One character, with its own memories and patterns.
fn character(ch: RawCharacter) -> Character {
    Character {
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
        offstage: ch.offstage.is_some_and(S::into_inner),
        interview_only: ch.interview_only.is_some_and(S::into_inner),
        tags: ch.tags,
        card: ch.card.map(S::into_inner).unwrap_or_default(),
    }
}

/// One scripted scene; `min_turns` defaults to two (or `max_turns` if fewer).
fn scene(s: RawScene) -> Scene {
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
}
