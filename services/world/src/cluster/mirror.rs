//! A watcher served from the log, by a replica that does not own the world: the events
//! come from the shared stream (the log's ordered follow from the requested sequence);
//! the world's state is rebuilt beside them from its scenario, so a point-of-view watch
//! names people as that character knew them at the time, and the watch ends when the
//! story does.

use std::sync::Arc;

use dramatis_proto::v1::{TokenChunk, WatchResponse, watch_response};
use futures::StreamExt as _;
use tokio::sync::mpsc;

use crate::error::WorldError;
use crate::log::SharedLog;
use crate::log::relay::TokenFeed;
use dramatis_scenario::Scenario;
use dramatis_story::view::View;

/// What one mirrored watch asks for.
#[derive(Debug, Clone)]
pub struct MirrorWatch {
    pub world_id: String,
    pub from_seq: u64,
    /// Keep following after the replay.
    pub follow: bool,
    /// One character's point of view (its id).
    pub pov: Option<String>,
}

/// Starts a watcher of `request.world_id` from `log`; items go to `out` until the
/// watcher goes away, the story ends, or (without `follow`) the logged events are sent.
pub fn watch(
    log: SharedLog,
    scenario: Arc<Scenario>,
    request: MirrorWatch,
    out: mpsc::Sender<Result<WatchResponse, tonic::Status>>,
) {
    tokio::spawn(async move {
        if let Err(error) = run(&log, scenario, &request, &out).await {
            // The watcher may have hung up; then no one is left to tell.
            let _ = out.send(Err(tonic::Status::from(error))).await;
        }
    });
}

async fn run(
    log: &SharedLog,
    scenario: Arc<Scenario>,
    request: &MirrorWatch,
    out: &mpsc::Sender<Result<WatchResponse, tonic::Status>>,
) -> Result<(), WorldError> {
    let from = request.from_seq.max(1);
    // The view takes in every event from the first: with a point of view, the state
    // before `from` says whom the character knows, and a follower sees the story end
    // only if every scene's end is in its state. A replay of all of it needs neither.
    let start = if request.pov.is_some() || request.follow {
        1
    } else {
        from
    };
    let mut view = View::new(scenario, &request.world_id, request.pov.clone());
    if !request.follow {
        for event in log.read(&request.world_id, start).await? {
            if !send(&mut view, request, event, out).await {
                return Ok(());
            }
        }
        return Ok(());
    }
    if view.finished() {
        return Ok(());
    }
    // Subscribed first, so no chunk published once the events are caught up is missed.
    let mut tokens: TokenFeed = match log.relay() {
        Some(relay) => relay.follow(&request.world_id).await?,
        None => Box::pin(futures::stream::pending()),
    };
    let mut feed = log.follow(&request.world_id, start).await?;
    // The last event seen: none before the follow's start.
    let mut last = start.saturating_sub(1);
    // Chunks of lines after the next one, held until the events before them arrive
    // (the stream's delivery may lag the chunks' subject).
    let mut early: std::collections::VecDeque<TokenChunk> = std::collections::VecDeque::new();
    loop {
        let event = tokio::select! {
            () = out.closed() => return Ok(()),
            next = feed.next() => next,
            Some(token) = tokens.next() => {
                if token.seq == last + 1 {
                    if !send_token(&mut view, request, token, out).await {
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
        if !send(&mut view, request, event, out).await || view.finished() {
            return Ok(());
        }
        // The next line's chunks that came early, in order; later lines' stay.
        early.retain(|t| t.seq > last);
        while let Some(at) = early.iter().position(|t| t.seq == last + 1) {
            let token = early.remove(at).unwrap_or_default();
            if !send_token(&mut view, request, token, out).await {
                return Ok(());
            }
        }
    }
}

/// Chunks a mirrored watch holds for lines whose turn has not come yet.
const EARLY_CHUNKS: usize = 1024;

/// Sends a live chunk of the next line, as the view shows it, unless it precedes the
/// watch's start.
async fn send_token(
    view: &mut View,
    request: &MirrorWatch,
    token: TokenChunk,
    out: &mpsc::Sender<Result<WatchResponse, tonic::Status>>,
) -> bool {
    token.seq < request.from_seq || send_item(view, watch_response::Item::Token(token), out).await
}

/// Takes `event` into the view and sends it (as the view shows it) when it is at or
/// past the requested start; `false` once the watcher is gone.
async fn send(
    view: &mut View,
    request: &MirrorWatch,
    event: dramatis_proto::v1::Event,
    out: &mpsc::Sender<Result<WatchResponse, tonic::Status>>,
) -> bool {
    if event.seq < request.from_seq.max(1) {
        view.pass(&event);
        return true;
    }
    send_item(view, watch_response::Item::Event(event), out).await
}

/// Sends `item` as the view shows it (nothing when it shows nothing); `false` once
/// the watcher is gone.
async fn send_item(
    view: &mut View,
    item: watch_response::Item,
    out: &mpsc::Sender<Result<WatchResponse, tonic::Status>>,
) -> bool {
    match view.see(item) {
        Some(item) => out
            .send(Ok(WatchResponse { item: Some(item) }))
            .await
            .is_ok(),
        None => true,
    }
}
