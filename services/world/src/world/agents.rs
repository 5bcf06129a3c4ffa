//! Supervision of a world's agents. Every call to an agent goes through
//! [`World::call_agent`]: when the agent is gone (its process died, its connection
//! broke) or has forgotten the character (it was restarted elsewhere), the world asks
//! its [`AgentDirectory`](crate::agent_clients::AgentDirectory) to recover it, attaches
//! again every character that agent hosted (each from its saved shard), and retries.
//! Deliveries resume from the last event each agent acknowledged, and agents drop
//! events they already hold, so nothing is lost or perceived twice.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tonic::Code;

use super::{Slot, World};
use dramatis_proto::v1 as pb;

use crate::agent_clients::{AgentLinks, AgentRpc, Loss};
use crate::convert::attach_request;
use crate::error::WorldError;

/// Calls to one agent, including the first, before the failure is the caller's.
const ATTEMPTS: u32 = 4;

/// Where a character's agent is.
pub(super) struct Link {
    pub endpoint: String,
    pub client: AgentRpc,
    /// Bumped each time the link is replaced, so concurrent callers that saw the same
    /// failure recover it once.
    pub generation: u64,
}

/// The agents of a world's characters: where each character is hosted, the links
/// supervision replaces when an agent dies, and the lock that makes one recovery at a
/// time.
pub(super) struct Supervisor {
    /// A slot per character; one is added when a newcomer joins the story.
    pub slots: std::sync::RwLock<BTreeMap<String, Arc<Slot>>>,
    pub links: AgentLinks,
    /// Held while a dead agent is replaced, so two callers never restart it twice.
    pub reviving: tokio::sync::Mutex<()>,
}

impl Supervisor {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Slot>>> {
        self.slots
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The slot of `character`, if it is one of the world's.
    pub fn slot(&self, character: &str) -> Option<Arc<Slot>> {
        self.read().get(character).cloned()
    }

    /// Every character's id, in order.
    pub fn characters(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// Every character with its slot, in order.
    pub fn all(&self) -> Vec<(String, Arc<Slot>)> {
        self.read()
            .iter()
            .map(|(id, slot)| (id.clone(), Arc::clone(slot)))
            .collect()
    }

    /// Adds the slot of a character new to the story.
    pub fn add(&self, character: String, slot: Slot) {
        self.slots
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(character, Arc::new(slot));
    }
}

impl Slot {
    /// A client of this character's agent, as it is now.
    pub(super) fn client(&self) -> AgentRpc {
        dramatis_runtime::lock(&self.link).client.clone()
    }

    fn current(&self) -> (AgentRpc, u64, String) {
        let link = dramatis_runtime::lock(&self.link);
        (link.client.clone(), link.generation, link.endpoint.clone())
    }
}

/// What a failed agent call says about the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// The transport failed: the agent may be dead or unreachable.
    Transport,
    /// The agent answered that it does not host the character (it restarted).
    Detached,
    /// The agent answered with an error of its own.
    Answer,
}

fn classify(status: &tonic::Status) -> Failure {
    match status.code() {
        // An agent never sends UNKNOWN or CANCELLED itself: those come from a broken
        // connection. UNAVAILABLE is either (a refused connection, or a model that
        // is down); the directory tells the two apart by the agent's liveness.
        // DEADLINE_EXCEEDED is the world's own backstop on a call that never ended.
        Code::Unavailable | Code::Unknown | Code::Cancelled | Code::DeadlineExceeded => {
            Failure::Transport
        }
        // The only NOT_FOUND an agent sends: the character is not attached to it.
        Code::NotFound => Failure::Detached,
        _ => Failure::Answer,
    }
}

impl World {
    /// Runs `call` against `character`'s agent, recovering the agent and retrying when
    /// it is gone. Errors name the character.
    pub(super) async fn call_agent<T, F, Fut>(
        &self,
        character: &str,
        call: F,
    ) -> Result<T, WorldError>
    where
        F: Fn(AgentRpc) -> Fut,
        Fut: Future<Output = Result<T, tonic::Status>>,
    {
        let slot = self
            .agents
            .slot(character)
            .ok_or_else(|| WorldError::CharacterNotFound {
                world: self.id.clone(),
                character: character.to_owned(),
            })?;
        // Waits for a sleep in progress to finish, and keeps the next one off.
        let _active = self.life.call().await;
        if self.life.is_asleep() {
            self.wake().await?;
        }
        let mut attempt = 1;
        loop {
            let (client, generation, endpoint) = slot.current();
            let status = match call(client).await {
                Ok(value) => return Ok(value),
                Err(status) => status,
            };
            let failure = classify(&status);
            if failure == Failure::Answer || attempt >= ATTEMPTS || self.life.is_deleted() {
                return Err(WorldError::agent(character, &status));
            }
            tracing::warn!(world_id = %self.id, character, %endpoint, attempt, %status,
                "agent call failed; recovering the agent");
            match self
                .recover(character, generation, &endpoint, failure)
                .await
            {
                Ok(true) => {}
                Ok(false) => return Err(WorldError::agent(character, &status)),
                // A new agent that died starting up counts as an attempt.
                Err(error) if attempt + 1 < ATTEMPTS => {
                    tracing::warn!(world_id = %self.id, character, %error, "recovery failed");
                }
                Err(error) => return Err(error),
            }
            attempt += 1;
        }
    }

    /// Replaces the agent at `endpoint` (as `character`'s slot saw it at `generation`)
    /// and attaches its characters again. Returns false when the directory says the
    /// agent is alive and the failure was its own answer.
    async fn recover(
        &self,
        character: &str,
        generation: u64,
        endpoint: &str,
        failure: Failure,
    ) -> Result<bool, WorldError> {
        let _one_at_a_time = self.agents.reviving.lock().await;
        if self
            .agents
            .slot(character)
            .is_some_and(|slot| slot.current().1 != generation)
        {
            // Someone else recovered this agent while we waited.
            return Ok(true);
        }
        let fresh = match failure {
            Failure::Detached => endpoint.to_owned(),
            Failure::Transport | Failure::Answer => {
                let loss = match self.agents.links.pool.probe(endpoint).await {
                    None => {
                        tracing::warn!(world_id = %self.id, character, %endpoint,
                            "agent answers nothing, not even a health check: it is frozen");
                        Loss::Frozen
                    }
                    Some(_) => Loss::Broken,
                };
                match self
                    .agents
                    .links
                    .directory
                    .recover(&self.id, character, endpoint, loss)
                    .await?
                {
                    Some(fresh) => fresh,
                    None => return Ok(false),
                }
            }
        };
        crate::metrics::AGENT_RESTARTS.inc();
        if fresh != endpoint {
            self.agents.links.pool.forget(endpoint);
            tracing::warn!(world_id = %self.id, dead = %endpoint, %fresh,
                "agent replaced; attaching its characters again");
        }
        // Every character the dead agent hosted moves to the fresh one.
        let moved: Vec<(String, Arc<Slot>)> = self
            .agents
            .all()
            .into_iter()
            .filter(|(_, slot)| dramatis_runtime::lock(&slot.link).endpoint == endpoint)
            .collect();
        let scenario = self.scenario();
        for (id, slot) in moved {
            let id = id.as_str();
            let client = self.agents.links.pool.client(&fresh, id)?;
            {
                let mut link = dramatis_runtime::lock(&slot.link);
                link.endpoint.clone_from(&fresh);
                link.client = client.clone();
                link.generation += 1;
            }
            // A failed attach is not final: the next call finds the character
            // detached and attaches it again.
            match client
                .clone()
                .attach(attach_request(&self.id, &scenario, id))
                .await
            {
                // What the shard lacks is sent at the next delivery.
                Ok(attached) => {
                    slot.rewind
                        .fetch_min(attached.into_inner().last_seq, Ordering::Relaxed);
                }
                Err(status) => tracing::warn!(world_id = %self.id, character = %id, %status,
                    "attach after recovery failed"),
            }
        }
        Ok(true)
    }
}

impl World {
    /// Detaches the characters of a finished world that has not called an agent for
    /// `idle`, and releases the agents started for it. Returns true if it did.
    pub(crate) async fn sleep_if_idle(&self, idle: std::time::Duration) -> bool {
        if !self.is_finished() {
            return false;
        }
        // Not while an advance or any call to an agent runs.
        let Ok(_state) = self.state.try_lock() else {
            return false;
        };
        let Some(sleep) = self.life.try_sleep(idle) else {
            return false;
        };
        let _one_at_a_time = self.agents.reviving.lock().await;
        self.detach_all(true).await;
        self.agents.links.directory.release(&self.id).await;
        sleep.done();
        tracing::info!(world_id = %self.id, "finished and idle: characters detached, agents released");
        true
    }

    /// Detaches every character from its agent (best effort), keeping or deleting
    /// their saved shards.
    pub(super) async fn detach_all(&self, keep_shard: bool) {
        for (character, slot) in self.agents.all() {
            let request = pb::DetachRequest {
                character: Some(self.character_ref(&character)),
                keep_shard,
            };
            if let Err(status) = slot.client().detach(request).await {
                tracing::debug!(%status, character, "detach failed");
            }
        }
    }

    /// Attaches the characters of a sleeping world again, each from its saved shard,
    /// on agents the directory gives (started anew if it starts them).
    pub(super) async fn wake(&self) -> Result<(), WorldError> {
        let _one_at_a_time = self.agents.reviving.lock().await;
        if !self.life.is_asleep() {
            return Ok(());
        }
        let scenario = self.scenario();
        for (id, slot) in self.agents.all() {
            let id = id.as_str();
            let endpoint = self
                .agents
                .links
                .directory
                .endpoint_for(&self.id, id)
                .await?;
            let client = self.agents.links.pool.client(&endpoint, id)?;
            let attached = client
                .clone()
                .attach(attach_request(&self.id, &scenario, id))
                .await
                .map_err(|s| WorldError::agent(id, &s))?;
            slot.rewind
                .fetch_min(attached.into_inner().last_seq, Ordering::Relaxed);
            let mut link = dramatis_runtime::lock(&slot.link);
            if link.endpoint != endpoint {
                self.agents.links.pool.forget(&link.endpoint);
            }
            link.endpoint = endpoint;
            link.client = client;
            link.generation += 1;
        }
        self.life.woke();
        tracing::info!(world_id = %self.id, "woken: characters attached again");
        Ok(())
    }

    fn is_finished(&self) -> bool {
        dramatis_runtime::lock(&self.snapshot).finished(&self.scenario())
    }

    /// Whether the world's characters are detached for idleness.
    #[must_use]
    pub fn is_asleep(&self) -> bool {
        self.life.is_asleep()
    }
}
