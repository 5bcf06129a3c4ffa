//! `EventLog` over JetStream.

use async_nats::jetstream::kv::UpdateErrorKind;
use async_trait::async_trait;
use bytes::Bytes;
use dramatis_nats::NatsError;
use dramatis_proto::v1::Event;
use futures::StreamExt as _;
use prost::Message as _;

use crate::error::WorldError;
use crate::log::relay::TokenRelay;
use crate::log::{EventFeed, EventLog, WorldRecord, check_run};

use super::handle::{JetStreamLog, Tail, decode, nats_err};

#[async_trait]
impl EventLog for JetStreamLog {
    async fn put_world(&self, record: WorldRecord) -> Result<(), WorldError> {
        let bytes = serde_json::to_vec(&record).map_err(|e| nats_err("world record", e))?;
        self.kv_put(&self.worlds, &record.world_id, bytes.into())
            .await
    }

    async fn world(&self, world_id: &str) -> Result<Option<WorldRecord>, WorldError> {
        // A direct get may be answered by a replica that has not yet stored a record
        // another replica has just written (a world created there a moment ago): a
        // miss is asked again of the bucket's leader. A deleted record's marker is
        // empty. An id no world can have (ids are letters, digits, '-' and '_') names
        // none, and would be no key.
        if dramatis_nats::subject_token(world_id) != world_id {
            return Ok(None);
        }
        let bytes = match self.kv_get(&self.worlds, world_id).await? {
            Some(bytes) => Some(bytes),
            None => dramatis_nats::last_message(
                &self.worlds_stream,
                &format!("$KV.{}_worlds.{world_id}", self.options.prefix),
                self.options.timeout,
            )
            .await?
            .map(|(_, payload)| payload)
            .filter(|payload| !payload.is_empty()),
        };
        bytes
            .map(|bytes| serde_json::from_slice(&bytes).map_err(|e| nats_err("world record", e)))
            .transpose()
    }

    async fn worlds(&self) -> Result<Vec<WorldRecord>, WorldError> {
        let mut keys = self
            .worlds
            .keys()
            .await
            .map_err(|e| nats_err("list worlds", e))?;
        let mut ids = Vec::new();
        while let Some(key) = keys.next().await {
            ids.push(key.map_err(|e| nats_err("list worlds", e))?);
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(record) = self.world(&id).await? {
                out.push(record);
            }
        }
        out.sort_by(|a: &WorldRecord, b| a.world_id.cmp(&b.world_id));
        Ok(out)
    }

    async fn append(
        &self,
        world_id: &str,
        after: u64,
        events: Vec<Event>,
    ) -> Result<(), WorldError> {
        check_run(world_id, after, &events)?;
        let remembered = self.tails.get(world_id).map(|t| *t);
        let mut tail = match remembered {
            Some(tail) if tail.event == after => tail,
            _ => self.fetch_tail(world_id).await?,
        };
        let fenced = |detail: String| WorldError::Fenced {
            world: world_id.to_owned(),
            detail,
        };
        if tail.event != after {
            return Err(fenced(format!(
                "expected it to end at event {after}, it ends at {}",
                tail.event
            )));
        }
        let subject = self.subject(world_id);
        for event in events {
            let payload = Bytes::from(event.encode_to_vec());
            // World, number and time: the same event sent again has the same id,
            // while a world deleted and created again under its name does not collide
            // with its predecessor in the duplicate window.
            let id = format!("{}.{}.{}", event.world_id, event.seq, event.timestamp_ms);
            let published = dramatis_nats::publish_after(
                &self.context,
                &self.stream,
                &subject,
                &payload,
                &id,
                tail.stream,
                self.options.timeout,
            )
            .await;
            let ack = match published {
                Ok(ack) => ack,
                Err(error) => {
                    self.tails.remove(world_id);
                    return Err(match error {
                        NatsError::Fenced(_) => fenced(format!(
                            "another writer appended after event {} (stream sequence {})",
                            tail.event, tail.stream
                        )),
                        other => other.into(),
                    });
                }
            };
            if ack.duplicate {
                // The id was seen in the duplicate window: this very event, sent again
                // after an ack was lost. Anything else under that id is a fork.
                let stored = self
                    .stream
                    .direct_get(ack.sequence)
                    .await
                    .map_err(|e| nats_err("read a duplicate", e))?;
                if stored.payload != payload {
                    self.tails.remove(world_id);
                    return Err(fenced(format!(
                        "event {} was already logged by another writer",
                        event.seq
                    )));
                }
            }
            tail = Tail {
                event: event.seq,
                stream: ack.sequence,
            };
        }
        self.tails.insert(world_id.to_owned(), tail);
        Ok(())
    }

    async fn read(&self, world_id: &str, from_seq: u64) -> Result<Vec<Event>, WorldError> {
        let from_seq = from_seq.max(1);
        let tail = self.fetch_tail(world_id).await?;
        if tail.event < from_seq {
            return Ok(Vec::new());
        }
        let start = self.start_of(world_id, from_seq).await?;
        let mut out = Vec::new();
        for (_, payload) in self
            .deliver_from(world_id, start)
            .await?
            .read_to(tail.stream)
            .await?
        {
            let event = decode(&payload)?;
            if event.seq >= from_seq {
                out.push(event);
            }
        }
        Ok(out)
    }

    async fn follow(&self, world_id: &str, from_seq: u64) -> Result<EventFeed, WorldError> {
        let from_seq = from_seq.max(1);
        let start = self.start_of(world_id, from_seq).await?;
        let messages = self.deliver_from(world_id, start).await?;
        // The feed outlives its consumers (see `SubjectFeed`): it ends only when no
        // consumer can be made, and then the watcher hears why.
        let events = futures::stream::unfold(messages, |mut messages| async move {
            let event = messages
                .next()
                .await
                .map_err(WorldError::from)
                .and_then(|(_, payload)| decode(&payload));
            Some((event, messages))
        });
        Ok(crate::log::in_order(from_seq, events))
    }

    async fn put_notes(&self, world_id: &str, notes: Vec<u8>) -> Result<(), WorldError> {
        let expected = match self.note_revisions.get(world_id).map(|r| *r) {
            Some(revision) => revision,
            None => self.note_entry(world_id).await?.0,
        };
        let value = Bytes::from(notes);
        let written = self
            .patiently(|| async {
                match self.notes.update(world_id, value.clone(), expected).await {
                    Ok(revision) => Ok(Ok(revision)),
                    Err(e) if matches!(e.kind(), UpdateErrorKind::WrongLastRevision) => Ok(Err(())),
                    Err(e) => Err(nats_err("write the narrator's notes", e)),
                }
            })
            .await?;
        let revision = match written {
            Ok(revision) => revision,
            Err(()) => {
                // Refused: another owner wrote them, or an attempt that seemed to fail
                // was stored after all (then they are these very notes).
                let (revision, stored) = self.note_entry(world_id).await?;
                if stored.as_ref() != Some(&value) {
                    self.note_revisions.remove(world_id);
                    return Err(WorldError::Fenced {
                        world: world_id.to_owned(),
                        detail: format!(
                            "another writer replaced the narrator's notes (revision {expected})"
                        ),
                    });
                }
                revision
            }
        };
        self.note_revisions.insert(world_id.to_owned(), revision);
        Ok(())
    }

    async fn notes(&self, world_id: &str) -> Result<Option<Vec<u8>>, WorldError> {
        Ok(self.note_entry(world_id).await?.1.map(|b| b.to_vec()))
    }

    async fn delete_world(&self, world_id: &str) -> Result<(), WorldError> {
        self.stream
            .purge()
            .filter(self.subject(world_id))
            .await
            .map_err(|e| nats_err("purge the world's events", e))?;
        self.tails.remove(world_id);
        self.note_revisions.remove(world_id);
        for store in [&self.worlds, &self.notes] {
            store
                .purge(world_id)
                .await
                .map_err(|e| nats_err("remove the world's keys", e))?;
        }
        Ok(())
    }

    fn relay(&self) -> Option<std::sync::Arc<dyn TokenRelay>> {
        Some(std::sync::Arc::new(self.relay.clone()))
    }

    fn describe(&self) -> String {
        format!(
            "JetStream at {} (stream {}, {} replicas)",
            dramatis_nats::redacted(&self.options.servers),
            self.stream.cached_info().config.name,
            self.options.replicas
        )
    }
}
