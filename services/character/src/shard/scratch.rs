//! A read that must leave no trace (an interview) runs on a scratch copy of the shard:
//! the same profile, layers, perceived events, mood and modules, but no files and an
//! empty audit. Whatever the read path and the modules' `ground` change on the way
//! (BOOKMARKS' proposals and pool, MOOM's reinforcement, DualMem's refreshed insights,
//! counters) is dropped with the copy. Only the prompts it audited come back to the real
//! shard, and a save then writes only them.
//!
//! Running the read on a copy, rather than giving every read hook a `&Shard`, keeps the
//! guarantee whole for any future step that writes while reading: the copy is the only
//! thing the interview can reach.

use super::*;

impl State {
    /// The state without its audit (the audit is the one thing a scratch copy must not
    /// carry over: it starts empty so that what it records is exactly the new prompts).
    fn without_audit(&self) -> Self {
        Self {
            format: self.format,
            memory: self.memory.clone(),
            perceived: self.perceived.clone(),
            unwritten: self.unwritten,
            moments: self.moments.clone(),
            pending: self.pending.clone(),
            mood: self.mood.clone(),
            last_seq: self.last_seq,
            audit: Vec::new(),
            names: self.names.clone(),
            goal: self.goal.clone(),
            module_set: self.module_set,
            modules: self.modules.clone(),
        }
    }
}

impl Shard {
    /// A copy of the shard for a read that must change nothing: no files (it cannot be
    /// saved) and an empty audit. Hand it back with [`Shard::keep_audit_of`].
    #[must_use]
    pub fn scratch(&self) -> Self {
        Self {
            profile: self.profile.clone(),
            state: self.state.without_audit(),
            store: None,
            saved: persist::Saved::default(),
            vocabulary: std::sync::Arc::clone(&self.vocabulary),
        }
    }

    /// Adds `note` to the purpose of every prompt this copy audited.
    pub fn mark_audit(&mut self, note: &str) {
        for entry in &mut self.state.audit {
            entry.purpose.push_str(note);
        }
    }

    /// Takes the prompts `scratch` audited into this shard's audit and queues their
    /// save; nothing else of the copy is kept. Wait for the returned save once the lock
    /// is released.
    pub fn keep_audit_of(&mut self, scratch: Self) -> Result<PendingSave, AgentError> {
        self.state.audit.extend(scratch.state.audit);
        self.save()
    }
}
