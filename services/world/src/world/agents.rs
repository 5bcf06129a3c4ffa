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
use tonic::Code;

use super::World;
use super::delivery::Cursor;
use dramatis_proto::v1 as pb;

use crate::agent_clients::{AgentLinks, AgentPort, Loss};
use crate::convert::attach_request;
use crate::error::WorldError;

/// Calls to one agent, including the first, before the failure is the caller's.
const ATTEMPTS: u32 = 4;

/// Where a character's agent is.
pub(super) struct Link {
    pub endpoint: String,
    pub client: Arc<dyn AgentPort>,
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

/// One character of a world: where its agent is, and where delivery to it stands.
pub(super) struct Slot {
    /// The agent hosting this character; replaced when that agent dies.
    link: std::sync::Mutex<Link>,
    /// Owned by `delivery.rs`.
    pub cursor: Cursor,
}

impl Slot {
    /// A character at `link` whose shard holds every event up to `delivered`.
    pub fn new(link: Link, delivered: u64) -> Self {
        Self {
            link: std::sync::Mutex::new(link),
            cursor: Cursor::at(delivered),
        }
    }

    /// The port of this character's agent, as it is now.
    pub(super) fn port(&self) -> Arc<dyn AgentPort> {
        Arc::clone(&dramatis_runtime::lock(&self.link).client)
    }

    fn current(&self) -> (Arc<dyn AgentPort>, u64, String) {
        let link = dramatis_runtime::lock(&self.link);
        (
            Arc::clone(&link.client),
            link.generation,
            link.endpoint.clone(),
        )
    }

    fn endpoint(&self) -> String {
        dramatis_runtime::lock(&self.link).endpoint.clone()
    }

    /// Moves the character to the agent at `endpoint`.
    fn relink(&self, endpoint: &str, client: Arc<dyn AgentPort>) -> Option<String> {
        let mut link = dramatis_runtime::lock(&self.link);
        let left = (link.endpoint != endpoint).then(|| link.endpoint.clone());
        endpoint.clone_into(&mut link.endpoint);
        link.client = client;
        link.generation += 1;
        left
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
        F: Fn(Arc<dyn AgentPort>) -> Fut,
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
            .filter(|(_, slot)| slot.endpoint() == endpoint)
            .collect();
        let scenario = self.scenario();
        for (id, slot) in moved {
            let id = id.as_str();
            let port = self.agents.links.pool.port(&fresh, id)?;
            slot.relink(&fresh, Arc::clone(&port));
            // A failed attach is not final: the next call finds the character
            // detached and attaches it again.
            match port.attach(attach_request(&self.id, &scenario, id)).await {
                // What the shard lacks is sent at the next delivery.
                Ok(attached) => slot.cursor.attached_at(attached.last_seq),
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
        // Not while an advance runs (its phase is Running) or a call to an agent is in
        // flight (it holds the gate): the lifecycle decides both.
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
            if let Err(status) = slot.port().detach(request).await {
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
            let port = self.agents.links.pool.port(&endpoint, id)?;
            let attached = port
                .attach(attach_request(&self.id, &scenario, id))
                .await
                .map_err(|s| WorldError::agent(id, &s))?;
            slot.cursor.attached_at(attached.last_seq);
            if let Some(left) = slot.relink(&endpoint, port) {
                self.agents.links.pool.forget(&left);
            }
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
