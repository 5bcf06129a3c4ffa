//! One character attached to an agent, as the agent's calls reach it.

use std::sync::Arc;

use tokio::sync::Mutex;

use crate::error::AgentError;
use crate::host::CharacterAgents;
use crate::shard::Shard;

/// One character attached to this agent: the handle its calls go through (perceive,
/// act, answer, recall). It holds the character's shard beside the agent's shared
/// parts, so no call names its world and character again. Take one per call: a
/// handle kept across calls would miss a detach, or a lost save that makes the next
/// call read the character again.
#[derive(Debug, Clone)]
pub struct Character {
    pub(crate) agents: CharacterAgents,
    pub(crate) world: String,
    pub(crate) shard: Arc<Mutex<Shard>>,
}

impl CharacterAgents {
    /// `character` of `world`, if it is attached here.
    pub fn character(&self, world: &str, character: &str) -> Result<Character, AgentError> {
        Ok(Character {
            agents: self.clone(),
            world: world.to_owned(),
            shard: self.shard(world, character)?,
        })
    }
}
