//! Watching a world from one character's point of view: the transcript hub's stream,
//! filtered and named exactly as that character's agent receives it.

use dramatis_proto::v1 as pb;

use super::World;
use std::sync::Arc;

use dramatis_story::names::Perspective;
use dramatis_story::perception::PerceptionRouter;

/// Items a watcher's buffer holds: what one slow watcher can cost, beside one chunk of
/// replay.
pub const WATCH_BUFFER: usize = 64;

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
        let pov = pov.to_owned();
        let (scenario, world_id, snapshot) = (
            Arc::clone(&self.scenario),
            self.id.clone(),
            Arc::clone(&self.snapshot),
        );
        let follower = tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    () = out.closed() => break,
                    message = all_rx.recv() => match message {
                        Some(message) => message,
                        None => break,
                    },
                };
                let seen = message.item.and_then(|item| {
                    let state = dramatis_runtime::lock(&snapshot);
                    let view = Perspective {
                        scenario: &scenario,
                        world_id: &world_id,
                        known: &state.acquaintances,
                        me: &pov,
                    };
                    PerceptionRouter::item_for(item, &view)
                });
                if let Some(item) = seen
                    && out.send(wrap(item)).await.is_err()
                {
                    break;
                }
            }
        });
        (follower, cut_off)
    }
}
