//! The world's data as clients and agents see it on the wire: a world's summary and
//! map, and the profile an agent gets for a character (only the facts it knows).

use dramatis_proto::v1::{self as pb, WorldStatus};
use dramatis_runtime::saturating_u32;

use dramatis_scenario::Scenario;
use dramatis_story::state::WorldState;

/// The world as clients see it: where the story is, who is where, the map, the cost.
#[must_use]
pub fn world_info(
    world_id: &str,
    scenario: &Scenario,
    state: &WorldState,
    status: WorldStatus,
    next_seq: u64,
) -> pb::WorldInfo {
    let finished = status == WorldStatus::Finished;
    pb::WorldInfo {
        world_id: world_id.to_owned(),
        scenario: scenario.name.clone(),
        title: scenario.title.clone(),
        status: status as i32,
        current_scene: if finished {
            0
        } else {
            saturating_u32(state.scene + 1)
        },
        total_scenes: saturating_u32(scenario.length()),
        scene_turn: state.scene_turn,
        next_seq,
        characters: scenario
            .characters
            .iter()
            .map(|c| {
                // Rounds are shown 1-based, like scenes.
                let (travelling_to, arrives_round) = state
                    .travelling
                    .get(&c.id)
                    .map(|(to, at)| (to.clone(), saturating_u32(at + 1)))
                    .unwrap_or_default();
                pb::CharacterState {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    location: state.locations.get(&c.id).cloned().unwrap_or_default(),
                    travelling_to,
                    arrives_round,
                }
            })
            .collect(),
        usage: Some(state.usage),
        total_turns: state.total_turns,
        locations: scenario
            .locations
            .iter()
            .map(|l| pb::LocationInfo {
                id: l.id.clone(),
                name: l.name.clone(),
                description: l.description.clone(),
            })
            .collect(),
        paths: scenario.wire_paths(),
        scene_location: state.scene_location.clone(),
        open: scenario.open.is_some(),
        failure: String::new(),
        forked_from: String::new(),
        fork_seq: 0,
    }
}

/// What an agent is told of `character_id` when it is attached: the profile, the facts
/// this character knows at the start (no one else's), its memories and patterns.
#[must_use]
pub fn attach_request(
    world_id: &str,
    scenario: &Scenario,
    character_id: &str,
) -> pb::AttachRequest {
    let character = scenario.character(character_id);
    pb::AttachRequest {
        character: Some(pb::CharacterRef {
            world_id: world_id.to_owned(),
            character_id: character_id.to_owned(),
        }),
        profile: character.map(|c| pb::CharacterProfile {
            id: c.id.clone(),
            name: c.name.clone(),
            aliases: c.aliases.clone(),
            profile: c.profile.clone(),
            speaking_style: c.style.clone(),
            knowledge: scenario
                .knowledge_of(&c.id)
                .map(|f| pb::KnownFact {
                    id: f.id.clone(),
                    text: f.text.clone(),
                    subject: f.subject.clone(),
                    predicate: f.predicate.clone(),
                    object: f.object.clone(),
                    cause: f.cause.clone(),
                    route: f.route.as_str().to_owned(),
                    keys: f.keys.to_wire(),
                })
                .collect(),
            memories: c
                .memories
                .iter()
                .map(|m| pb::StartingMemory {
                    id: m.id.clone(),
                    text: m.text.clone(),
                })
                .collect(),
            patterns: c
                .patterns
                .iter()
                .map(|p| pb::PersonalityPattern {
                    id: p.id.clone(),
                    description: p.description.clone(),
                    excerpts: p.excerpts.clone(),
                })
                .collect(),
            goal: c.goal.clone(),
            memory_modules: scenario.memory_modules_of(c),
        }),
    }
}
