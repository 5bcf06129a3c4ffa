//! A world's transcript read from the shared log, by a replica that does not own the
//! world: the events from the log's ordered follow, the words of the line being spoken
//! from the log's relay. A follower keeps the world's state beside the events, from the
//! first, so it ends when the story does.

use std::collections::VecDeque;
use std::sync::Arc;

use dramatis_proto::v1::watch_response::Item;
use dramatis_proto::v1::{self as pb, TokenChunk};
use futures::StreamExt as _;
use tokio::sync::mpsc;

use crate::error::WorldError;
use crate::log::SharedLog;
use crate::log::relay::TokenFeed;
use crate::transcript::{Items, Transcript, WATCH_BUFFER};
use dramatis_scenario::Scenario;
use dramatis_story::view::{SharedScenario, View};

/// The transcript of a world this replica does not own, read from the shared log: the
/// log's ordered follow, with the words of the line being spoken from the log's relay.
#[derive(Debug, Clone)]
pub struct SharedTranscript {
    log: SharedLog,
    /// Its scenario, so the follow knows when the story is over; shared with the view
    /// of a point-of-view watch, and read again when a newcomer joins the cast.
    scenario: SharedScenario,
    world_id: String,
}

impl SharedTranscript {
    #[must_use]
    pub fn new(log: SharedLog, scenario: SharedScenario, world_id: &str) -> Self {
        Self {
            log,
            scenario,
            world_id: world_id.to_owned(),
        }
    }
}

impl Transcript for SharedTranscript {
    fn subscribe(&self, from_seq: u64, follow: bool) -> Items {
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let transcript = self.clone();
        tokio::spawn(async move {
            if let Err(error) = transcript.run(from_seq.max(1), follow, &tx).await {
                // The watcher may have hung up; then no one is left to tell.
                let _ = tx.send(Err(error)).await;
            }
        });
        Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
    }
}

/// Where a mirrored watch's items go.
type Out = mpsc::Sender<Result<Item, WorldError>>;

impl SharedTranscript {
    async fn run(&self, from: u64, follow: bool, out: &Out) -> Result<(), WorldError> {
        if !follow {
            for event in self.log.read(&self.world_id, from).await? {
                if out.send(Ok(Item::Event(event))).await.is_err() {
                    return Ok(());
                }
            }
            return Ok(());
        }
        // A follower reads from the first event: it ends with the story only if every
        // scene's end is in the state it keeps.
        let mut state = View::new(self.scenario.clone(), &self.world_id, None);
        // Subscribed first, so no chunk published once the events are caught up is missed.
        let mut tokens: TokenFeed = match self.log.relay() {
            Some(relay) => relay.follow(&self.world_id).await?,
            None => Box::pin(futures::stream::pending()),
        };
        let mut feed = self.log.follow(&self.world_id, 1).await?;
        // The last event seen.
        let mut last = 0;
        // Chunks of lines after the next one, held until the events before them arrive
        // (the stream's delivery may lag the chunks' subject).
        let mut early: VecDeque<TokenChunk> = VecDeque::new();
        let send_token = |token: TokenChunk| async move {
            token.seq < from || out.send(Ok(Item::Token(token))).await.is_ok()
        };
        loop {
            let event = tokio::select! {
                () = out.closed() => return Ok(()),
                next = feed.next() => next,
                Some(token) = tokens.next() => {
                    if token.seq == last + 1 {
                        if !send_token(token).await {
                            return Ok(());
                        }
                    } else if token.seq > last + 1 && early.len() < EARLY_CHUNKS {
                        // When full, the newest wait no more: the oldest are the next
                        // line's start.
                        early.push_back(token);
                    }
                    continue;
                }
            };
            let Some(event) = event else { return Ok(()) };
            let event = event?;
            last = event.seq;
            self.meet_newcomers(&event).await?;
            state.pass(&event);
            if event.seq >= from && out.send(Ok(Item::Event(event))).await.is_err() {
                return Ok(());
            }
            if state.finished() {
                return Ok(());
            }
            // The next line's chunks that came early, in order; later lines' stay.
            early.retain(|t| t.seq > last);
            while let Some(at) = early.iter().position(|t| t.seq == last + 1) {
                let token = early.remove(at).unwrap_or_default();
                if !send_token(token).await {
                    return Ok(());
                }
            }
        }
    }
}

impl SharedTranscript {
    /// A character new to the story joined the cast after this watch read the world's
    /// record: before the first event that names it is taken in or shown, the cast is
    /// read again from the record, so every view knows the newcomer (and masks its
    /// name) from its entrance on.
    async fn meet_newcomers(&self, event: &pb::Event) -> Result<(), WorldError> {
        let scenario = self.scenario.now();
        let unknown = std::iter::once(&event.speaker)
            .chain(&event.perceivers)
            .any(|c| !c.is_empty() && scenario.character(c).is_none());
        if !unknown {
            return Ok(());
        }
        let Some(record) = self.log.world(&self.world_id).await? else {
            return Ok(());
        };
        let joined = record.with_newcomers(Scenario::clone(&scenario))?;
        self.scenario.replace(Arc::new(joined));
        Ok(())
    }
}

/// Chunks a mirrored watch holds for lines whose turn has not come yet.
const EARLY_CHUNKS: usize = 1024;
