//! Rebuilding worlds from the log after a restart, and the worlds a restart could not
//! rebuild (shown FAILED, retried, deletable).

use std::path::PathBuf;
use std::sync::Arc;

use dramatis_proto::v1 as pb;
use dramatis_scenario::Scenario;

use super::Worlds;
use super::paths::read_off_runtime;
use crate::error::WorldError;
use crate::log::WorldRecord;
use crate::unrestored::{RETRY_EVERY, Unrestored};
use crate::world::World;

impl Worlds {
    /// Rebuilds every world recorded in the log: state from its events, and each
    /// agent re-attached and sent again only what its character perceived. In a
    /// cluster nothing is rebuilt here: a world is taken over by the first replica a
    /// call for it reaches once its owner's lease has run out.
    pub async fn restore(&self) -> Result<usize, WorldError> {
        if self.inner.cluster.is_some() {
            return Ok(0);
        }
        let mut restored = 0;
        for record in self.inner.log.worlds().await? {
            match self.revive(&record).await {
                Ok(world) => {
                    self.inner.worlds.insert(record.world_id, world);
                    self.count_worlds();
                    restored += 1;
                }
                Err(error) => {
                    tracing::error!(world_id = %record.world_id, %error,
                        "cannot restore world; it is shown as failed until rebuilt or deleted");
                    self.inner.agents.release(&record.world_id).await;
                    let info = self.what_is_known(&record).await;
                    self.inner.unrestored.insert(
                        record.world_id.clone(),
                        Arc::new(Unrestored::new(record, info, &error)),
                    );
                }
            }
        }
        Ok(restored)
    }

    /// What can be read of a recorded world that could not be rebuilt: its scenario and
    /// where its log left the story, as far as each reads.
    pub(super) async fn what_is_known(&self, record: &WorldRecord) -> pb::WorldInfo {
        let (Ok(scenario), Ok(history)) = (
            self.recorded_scenario(record).await,
            self.inner.log.read(&record.world_id, 1).await,
        ) else {
            return pb::WorldInfo::default();
        };
        let mut state = dramatis_story::state::WorldState::initial(&scenario);
        for event in &history {
            state.apply(&scenario, event);
        }
        let next_seq = history.last().map_or(1, |e| e.seq + 1);
        let mut info = crate::convert::world_info(
            &record.world_id,
            &scenario,
            &state,
            pb::WorldStatus::Failed,
            next_seq,
        );
        if let Some(point) = &record.forked_from {
            point.show(&mut info);
        }
        info
    }

    /// A world a restart could not rebuild, tried again unless it was tried within
    /// [`RETRY_EVERY`] (or is being tried or deleted right now): the world once it is
    /// rebuilt, `None` when `world_id` is no such world, and the reason it still cannot
    /// be rebuilt otherwise.
    pub(super) async fn retry_unrestored(
        &self,
        world_id: &str,
    ) -> Result<Option<Arc<World>>, WorldError> {
        let Some(failed) = self.unrestored_entry(world_id) else {
            return Ok(None);
        };
        let Ok(mut tried) = failed.tried.try_lock() else {
            return Err(failed.error());
        };
        if !self.inner.unrestored.contains_key(world_id) {
            // Deleted while this call looked it up.
            return Err(WorldError::WorldNotFound(world_id.to_owned()));
        }
        if tried.elapsed() < RETRY_EVERY {
            return Err(failed.error());
        }
        let revived = self.revive(&failed.record).await;
        *tried = std::time::Instant::now();
        match revived {
            Ok(world) => {
                // Into the table before out of this one: a deletion waiting on `tried`
                // then finds it there.
                self.inner
                    .worlds
                    .insert(world_id.to_owned(), Arc::clone(&world));
                self.inner.unrestored.remove(world_id);
                self.count_worlds();
                tracing::info!(world_id, "a world that could not be restored is rebuilt");
                Ok(Some(world))
            }
            Err(error) => {
                tracing::warn!(world_id, %error, "the world still cannot be rebuilt");
                self.inner.agents.release(world_id).await;
                failed.failed_again(&error);
                Err(failed.error())
            }
        }
    }

    /// The entry of `world_id` if a restart could not rebuild it.
    pub(super) fn unrestored_entry(&self, world_id: &str) -> Option<Arc<Unrestored>> {
        self.inner
            .unrestored
            .get(world_id)
            .map(|f| Arc::clone(f.value()))
    }

    /// Worlds a restart could not rebuild, as clients see them.
    #[must_use]
    pub fn unrestored(&self) -> Vec<pb::WorldInfo> {
        self.inner.unrestored.iter().map(|f| f.info()).collect()
    }

    /// `world_id` as clients see it, if it is a world a restart could not rebuild.
    #[must_use]
    pub fn unrestored_info(&self, world_id: &str) -> Option<pb::WorldInfo> {
        self.unrestored_entry(world_id).map(|f| f.info())
    }

    /// Deletes a world a restart could not rebuild: its log and kept spec, then its
    /// characters' shards, each removed by the agent that would host it (attached or
    /// not). The characters are its scenario's, or, with the scenario unreadable, every
    /// one its log shows acting or perceiving.
    pub(super) async fn delete_unrestored(&self, world_id: &str) -> Result<(), WorldError> {
        let Some(failed) = self.unrestored_entry(world_id) else {
            return Err(WorldError::WorldNotFound(world_id.to_owned()));
        };
        let tried = failed.tried.lock().await;
        if !self.inner.unrestored.contains_key(world_id) {
            drop(tried);
            // Rebuilt meanwhile (or deleted by another call).
            return if self.inner.worlds.contains_key(world_id) {
                Box::pin(self.delete(world_id)).await
            } else {
                Err(WorldError::WorldNotFound(world_id.to_owned()))
            };
        }
        let characters: Vec<String> = match self.recorded_scenario(&failed.record).await {
            Ok(scenario) => scenario.characters.iter().map(|c| c.id.clone()).collect(),
            Err(_) => {
                let history = self.inner.log.read(world_id, 1).await?;
                let mut seen = std::collections::BTreeSet::new();
                for event in history {
                    seen.extend(event.perceivers);
                    seen.insert(event.speaker);
                }
                seen.remove("");
                seen.into_iter().collect()
            }
        };
        self.inner.log.delete_world(world_id).await?;
        self.forget_sandbox(world_id);
        self.inner.unrestored.remove(world_id);
        for character in characters {
            let request = pb::DetachRequest {
                character: Some(pb::CharacterRef {
                    world_id: world_id.to_owned(),
                    character_id: character.clone(),
                }),
                keep_shard: false,
            };
            let removed = async {
                let endpoint = self.inner.agents.endpoint_for(world_id, &character).await?;
                self.inner
                    .pool
                    .port(&endpoint, &character)?
                    .detach(request)
                    .await
                    .map_err(|s| WorldError::agent(&character, &s))
            };
            if let Err(error) = removed.await {
                tracing::warn!(world_id, character, %error, "cannot remove the shard");
            }
        }
        self.inner.agents.release(world_id).await;
        tracing::info!(world_id, "a world that could not be restored is deleted");
        Ok(())
    }

    /// A recorded world rebuilt from its log.
    pub(super) async fn revive(&self, record: &WorldRecord) -> Result<Arc<World>, WorldError> {
        if let Some(kept) = self.inner.log.cut_short(&record.world_id).await? {
            return Err(WorldError::Log(format!(
                "its events after {kept} were lost to damage in the event log (see `dramatis \
                 repair`), so it cannot be replayed as it was; delete it to free its id"
            )));
        }
        let scenario = self.recorded_scenario(record).await?;
        let history = self.inner.log.read(&record.world_id, 1).await?;
        let world = self
            .start(record.world_id.clone(), scenario, history)
            .await?
            .forked_from(record.forked_from.clone());
        // A shard that ends early (rebuilt after its store was found corrupt) gets its
        // story now, not at the next line; if that fails, the next line retries first.
        if let Err(error) = world.catch_up().await {
            tracing::warn!(world_id = %record.world_id, %error,
                "a character's shard is behind the log; it is sent the rest before the next line");
        }
        Ok(Arc::new(world))
    }

    /// The scenario a recorded world was created from. An inline spec travels in the
    /// record (any replica can rebuild it) and is kept as a file here too.
    pub(super) async fn recorded_scenario(
        &self,
        record: &WorldRecord,
    ) -> Result<Arc<Scenario>, WorldError> {
        let path = match &record.sandbox_toml {
            Some(text) => {
                let file = self
                    .inner
                    .sandboxes
                    .join(format!("{}.toml", record.world_id));
                std::fs::create_dir_all(&self.inner.sandboxes)
                    .and_then(|()| std::fs::write(&file, text))
                    .map_err(|e| {
                        WorldError::Log(format!("cannot keep sandbox {}: {e}", file.display()))
                    })?;
                file
            }
            None => PathBuf::from(&record.scenario_path),
        };
        let scenario = read_off_runtime(move || Ok(Scenario::load(&path)?)).await?;
        Ok(Arc::new(record.with_newcomers(scenario)?))
    }

    /// The scenario of a world recorded in the log, wherever it is served (for a
    /// watcher served from the log).
    pub async fn scenario_of(&self, world_id: &str) -> Result<Arc<Scenario>, WorldError> {
        if let Some(world) = self.local(world_id) {
            return Ok(world.scenario());
        }
        let record = self
            .inner
            .log
            .world(world_id)
            .await?
            .ok_or_else(|| WorldError::WorldNotFound(world_id.to_owned()))?;
        self.recorded_scenario(&record).await
    }
}
