//! ReverieMem's read for a turn or an answer, on the agent's side: the character's
//! `Reverie` read through an `AgentMind`, its prompts put in the shard's audit.

use dramatis_llm::LanguageModel;
use dramatis_memory::reverie::{Query, Recalled};

use crate::error::AgentError;
use crate::host::CharacterAgents;
use crate::mind::AgentMind;
use crate::shard::Shard;

impl CharacterAgents {
    /// ReverieMem's read of `query` on `shard`, Self-Probe asking `model` (nothing
    /// recalled, the mood kept, when the module is off). The prompts it sent enter the
    /// shard's audit, failed or not.
    pub(crate) async fn recall(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        query: &Query<'_>,
    ) -> Result<Recalled, AgentError> {
        let mind = AgentMind::new(self.options.embedder.as_ref(), Some(model));
        let read = shard
            .reverie()
            .read(&mind, query, &self.options.recall, &self.emotion_vectors)
            .await;
        let (_, audit) = mind.finish();
        for entry in audit {
            shard.record_prompt(entry);
        }
        Ok(read?)
    }
}
