//! Perceive: the events a character perceived go into its shard, its memory modules
//! observe them, and every scene that ended is written to its long-term memory (with
//! model-written memories, one rewrite call per scene, as it ends).

use dramatis_llm::ModelRole;
use dramatis_proto::v1::Event;
use tracing::Instrument as _;

use crate::character::Character;
use crate::error::AgentError;
use crate::host::MemoryWrites;
use crate::mind::AgentMind;
use crate::shard::{PendingSave, SceneDraft, Shard};

/// Every event sent to a character of `world` is one of its events.
pub fn check_world(world: &str, events: &[Event]) -> Result<(), AgentError> {
    if let Some(foreign) = events.iter().find(|e| e.world_id != world) {
        return Err(AgentError::InvalidArgument(format!(
            "event {} belongs to world {:?}, not {world:?}",
            foreign.seq, foreign.world_id
        )));
    }
    Ok(())
}

impl Character {
    /// Stores events the character perceived; writes every scene that ended to
    /// long-term memory.
    pub async fn perceive(&self, events: &[Event]) -> Result<(u32, u64), AgentError> {
        let (agents, world) = (&self.agents, self.world.as_str());
        check_world(world, events)?;
        let mut shard = self.shard.lock().await;
        let before = shard.perceived().len();
        let (accepted, ended) = {
            let _span = tracing::info_span!("perceive_store").entered();
            shard.perceive(events)?
        };
        if shard.modules().any() {
            let lines: Vec<_> = shard.perceived()[before..]
                .iter()
                .filter_map(crate::shard::Perceived::storyline_line)
                .collect();
            let model = agents.options.models.get(ModelRole::Character);
            let mind = agents.mind(model.as_ref());
            for line in lines {
                shard.modules_mut().observe(&mind, line).await;
            }
            for draft in &ended {
                shard.modules_mut().scene_end(&mind, &draft.scene_id).await;
            }
            let (_, audit) = mind.finish();
            for entry in audit {
                shard.record_prompt(entry);
            }
        }
        // ReverieMem writes each ended scene (nothing, with the module off), and the
        // place of a scene the character just arrived in, known from now on.
        let rewrite = agents.options.memory_writes == MemoryWrites::Model;
        let model = agents.options.models.get(ModelRole::Character);
        let mind = agents.mind(model.as_ref());
        let written = write_memories(&mut shard, &mind, &ended, rewrite, before).await;
        let (_, audit) = mind.finish();
        for entry in audit {
            shard.record_prompt(entry);
        }
        written?;
        let last_seq = shard.last_seq();
        let saved = if accepted > 0 {
            let _span = tracing::info_span!("perceive_save").entered();
            shard.save()?
        } else {
            PendingSave::none()
        };
        drop(shard);
        saved
            .wait()
            .instrument(tracing::info_span!("perceive_save"))
            .await?;
        Ok((accepted, last_seq))
    }
}

/// ReverieMem's writes of one perceive: each scene of `ended`, in story order (with
/// `rewrite`, the model rewrites its memory in a call of its own, whose prompt holds
/// that scene's lines only, so no memory is written with later scenes in view), then
/// the places of the scenes begun among the events perceived from `before` on. Each is
/// committed as it is written.
async fn write_memories(
    shard: &mut Shard,
    mind: &AgentMind<'_>,
    ended: &[SceneDraft],
    rewrite: bool,
    before: usize,
) -> Result<(), AgentError> {
    for draft in ended {
        let Some((written, rewritten)) = shard.reverie().write(mind, draft, rewrite).await? else {
            continue;
        };
        shard.commit(written);
        if let Some(rewritten) = rewritten {
            shard.commit_rewrite(rewritten);
        }
    }
    let places = shard
        .reverie()
        .arrive(mind, &shard.perceived()[before..])
        .await?;
    shard.commit_facts(places);
    Ok(())
}
