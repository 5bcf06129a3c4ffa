//! Perceive: the events a character perceived go into its shard, its memory modules
//! observe them, and every scene that ended is written to its long-term memory (with
//! model-written memories, one rewrite call per scene, as it ends).

use dramatis_llm::ModelRole;
use dramatis_memory::modules::ModuleKind;
use dramatis_proto::v1::Event;
use tracing::Instrument as _;

use crate::character::Character;
use crate::error::AgentError;
use crate::host::{CharacterAgents, MemoryWrites};
use crate::reverie::writer::{Author, arrival_facts, rewrite_scene, write_scene};
use crate::shard::{AuditEntry, PendingSave, PerceivedKind, SceneDraft, Shard};
use dramatis_runtime::now_ms;

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
        let (id, name) = (shard.profile.id.clone(), shard.profile.name.clone());
        let writer = Author {
            id: &id,
            name: &name,
        };
        // With ReverieMem's layers off, scenes are not written to them (the profile's
        // starting memories stay, unread).
        let ended = if shard.module_set().contains(ModuleKind::Reverie) {
            ended
        } else {
            Vec::new()
        };
        for draft in ended {
            let written = write_scene(writer, &draft, agents.options.embedder.as_ref())
                .instrument(tracing::info_span!("scene_write"))
                .await?;
            shard.commit(written);
            if agents.options.memory_writes == MemoryWrites::Model {
                agents.rewrite(&mut shard, writer, &draft).await?;
            }
        }
        // The place of a scene the character just arrived in, known from now on.
        if shard.module_set().contains(ModuleKind::Reverie) {
            let places = arrival_facts(
                writer,
                &shard.perceived()[before..],
                agents.options.embedder.as_ref(),
            )
            .await?;
            shard.commit_facts(places);
        }
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

impl CharacterAgents {
    /// The model rewrites the memory of the scene `draft`, which just ended, in a call
    /// of its own: its prompt holds this scene's lines only (each ended scene is
    /// rewritten in story order before the next), so no memory is written with later
    /// scenes in view. The prompt is audited with the scene's lines.
    async fn rewrite(
        &self,
        shard: &mut Shard,
        writer: Author<'_>,
        draft: &SceneDraft,
    ) -> Result<(), AgentError> {
        let model = self.options.models.get(ModelRole::Character);
        let rewritten = rewrite_scene(
            writer,
            draft,
            model.as_ref(),
            self.options.embedder.as_ref(),
        )
        .await?;
        let items = draft
            .events
            .iter()
            .filter(|e| e.kind != PerceivedKind::SceneEnd)
            .map(|e| (e.memory_id(), crate::shard::PERCEIVED.to_owned()))
            .collect();
        shard.record_prompt(AuditEntry {
            purpose: "scene_memory".into(),
            prompt: rewritten.prompt.clone(),
            items,
            timestamp_ms: now_ms(),
            flagged: Vec::new(),
            guard: Vec::new(),
        });
        shard.commit_rewrite(rewritten);
        Ok(())
    }
}
