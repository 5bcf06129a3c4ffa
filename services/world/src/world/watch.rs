//! Watching a world from one character's point of view: the transcript hub's stream
//! through the character's [`View`], the one a replica reading the shared log uses too.

use dramatis_proto::v1 as pb;

use super::World;

use dramatis_story::view::{View, seq_of};

/// Items a watcher's buffer holds: what one slow watcher can cost, beside one chunk of
/// replay.
pub const WATCH_BUFFER: usize = 64;

/// Events a point-of-view follower copies from the hub at a time to catch its view
/// up: the hub's lock is held for one copy, never while the view takes them in.
const CATCH_UP_CHUNK: u64 = 256;

impl World {
    /// Forwards what `pov` perceives of `world` (events as its agent got them; words of
    /// lines spoken where it is) into `out`, wrapped by `wrap`.
    pub fn follow_as<T: Send + 'static>(
        &self,
        pov: &str,
        from_seq: u64,
        follow: bool,
        out: tokio::sync::mpsc::Sender<T>,
        wrap: impl Fn(pb::watch_response::Item) -> T + Send + 'static,
    ) -> (tokio::task::JoinHandle<()>, crate::hub::CutOff) {
        let (all_tx, mut all_rx) = tokio::sync::mpsc::channel(WATCH_BUFFER);
        let cut_off = self.hub.watch(from_seq, follow, all_tx);
        let mut view = View::new(self.scenario_arc(), &self.id, Some(pov.to_owned()));
        let hub = self.hub.clone();
        let follower = tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    () = out.closed() => break,
                    message = all_rx.recv() => match message {
                        Some(message) => message,
                        None => break,
                    },
                };
                let Some(item) = message.item else { continue };
                // The view takes in every event before this item (those before the
                // watch's start, read from the hub's copy a chunk at a time).
                let upto = seq_of(&item);
                while view.next_seq() < upto {
                    let from = view.next_seq();
                    let chunk = hub.events_between(from, upto.min(from + CATCH_UP_CHUNK));
                    if chunk.is_empty() {
                        break;
                    }
                    for event in &chunk {
                        view.pass(event);
                    }
                }
                if let Some(seen) = view.see(item)
                    && out.send(wrap(seen)).await.is_err()
                {
                    break;
                }
            }
        });
        (follower, cut_off)
    }
}
