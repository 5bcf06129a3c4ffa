//! Delivery: sending each character the logged events it perceived, exactly once and in
//! order, across failed calls and replaced agents. This module owns the state that
//! decides it, and nothing outside it reads or writes that state:
//!
//! - a [`Cursor`] per character: the highest seq considered for delivery to it, and a
//!   rewind a re-attach may ask for (its shard ended earlier than the cursor);
//! - the world's [`Backlog`]: whether a logged event may not have reached all its
//!   perceivers.
//!
//! Its rules:
//! 1. An event is delivered only after it is logged and published: delivery reads the
//!    transcript hub, never a draft (`emit.rs` keeps that order).
//! 2. A character's deliveries run one at a time (its cursor's lock), so its events
//!    reach it in order, each once.
//! 3. The cursor moves past an event only once every batch up to it was taken.
//! 4. A re-attach that reports a shard ending before the cursor rewinds it: the next
//!    delivery sends again from the shard's end (the agent drops what it holds).
//! 5. While the backlog is set, nothing more is logged until every character was sent
//!    what it lacks (`catch_up`): the story never runs on without a perceiver.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dramatis_proto::v1::{self as pb, Event};
use futures::future::try_join_all;

use super::World;
use crate::error::WorldError;

/// Most events in one `Perceive` call.
const PERCEIVE_BATCH: usize = 256;

/// No rewind pending.
const NO_REWIND: u64 = u64::MAX;

/// Where delivery to one character stands.
#[derive(Debug)]
pub(super) struct Cursor {
    /// Highest seq already considered for delivery to this character; its lock makes
    /// one delivery to the character at a time.
    delivered: tokio::sync::Mutex<u64>,
    /// The highest seq the character's shard held when it was attached again after
    /// its agent was replaced ([`NO_REWIND`]: none pending): delivery goes back to it.
    rewind: AtomicU64,
}

impl Cursor {
    /// A character whose shard holds every event up to `delivered`.
    pub fn at(delivered: u64) -> Self {
        Self {
            delivered: tokio::sync::Mutex::new(delivered),
            rewind: AtomicU64::new(NO_REWIND),
        }
    }

    /// The character was attached again and its shard ends at `last_seq`: delivery
    /// resumes after it if that is earlier than where it stands (rule 4).
    pub fn attached_at(&self, last_seq: u64) {
        self.rewind.fetch_min(last_seq, Ordering::AcqRel);
    }

    fn rewind_pending(&self) -> bool {
        self.rewind.load(Ordering::Acquire) != NO_REWIND
    }
}

/// Whether a logged event may not have reached all its perceivers (rule 5).
#[derive(Debug)]
pub(super) struct Backlog(AtomicBool);

impl Backlog {
    /// `behind`: a world rebuilt with a shard that ends before the last event its
    /// character perceived.
    pub fn new(behind: bool) -> Self {
        Self(AtomicBool::new(behind))
    }

    /// A delivery failed: catch up before logging more.
    pub fn fell_behind(&self) {
        self.0.store(true, Ordering::Release);
    }

    fn is_behind(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn caught_up(&self) {
        self.0.store(false, Ordering::Release);
    }
}

impl World {
    /// Sends each of `characters` what it perceived and lacks; on a failure, marks the
    /// world behind (rule 5) and returns the error.
    pub(super) async fn deliver_to(&self, characters: &[&str]) -> Result<(), WorldError> {
        let delivered = try_join_all(characters.iter().map(|c| self.deliver_pending(c))).await;
        if delivered.is_err() {
            self.backlog.fell_behind();
        }
        delivered.map(drop)
    }

    /// After a delivery failed (or a world was rebuilt with a shard that ends early),
    /// sends every character what it has not been sent yet; an error here fails the
    /// caller before it logs anything more.
    pub(crate) async fn catch_up(&self) -> Result<(), WorldError> {
        if !self.backlog.is_behind() {
            return Ok(());
        }
        let characters = self.agents.characters();
        try_join_all(characters.iter().map(|c| self.deliver_pending(c))).await?;
        self.backlog.caught_up();
        tracing::info!(world_id = %self.id, "every character has its story again");
        Ok(())
    }

    /// Sends `character` every logged event it perceived and has not been sent yet
    /// (again from where its shard ends, when its agent was replaced meanwhile).
    pub(super) async fn deliver_pending(&self, character: &str) -> Result<(), WorldError> {
        let Some(slot) = self.agents.slot(character) else {
            return Ok(());
        };
        let cursor = &slot.cursor;
        let mut delivered = cursor.delivered.lock().await;
        loop {
            let rewind = cursor.rewind.swap(NO_REWIND, Ordering::AcqRel);
            if rewind < *delivered {
                tracing::info!(world_id = %self.id, character, from = rewind + 1,
                    "sending a moved character its story again");
                *delivered = rewind;
            }
            let fresh = self.hub.events_from(*delivered + 1);
            let Some(last) = fresh.last().map(|e| e.seq) else {
                return Ok(());
            };
            let views: Vec<Event> = {
                let scenario = self.scenario();
                let state = dramatis_runtime::lock(&self.snapshot);
                let view = self.perspective(&scenario, &state, character);
                fresh.iter().filter_map(|e| view.event(e)).collect()
            };
            // In batches, so a long history (a restored world's first delivery) never
            // makes one oversized message.
            for batch in views.chunks(PERCEIVE_BATCH) {
                let request = pb::PerceiveRequest {
                    character: Some(self.character_ref(character)),
                    events: batch.to_vec(),
                };
                self.call_agent(character, |port| {
                    let request = request.clone();
                    async move {
                        // An agent replaced during this delivery attached the
                        // character with less than this batch follows: send nothing
                        // more now (it would take these and then refuse the earlier
                        // events as old); the loop starts again from its shard's end.
                        if cursor.rewind_pending() {
                            return Ok(());
                        }
                        port.perceive(request).await
                    }
                })
                .await?;
            }
            *delivered = last;
            // An agent replaced during these calls may have attached the character
            // with less than was just sent.
            if !cursor.rewind_pending() {
                return Ok(());
            }
        }
    }
}
