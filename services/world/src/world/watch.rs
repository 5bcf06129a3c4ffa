//! Watching a world from one character's point of view: the transcript hub's stream,
//! filtered exactly as that character's agent receives it.

use dramatis_proto::v1 as pb;

use super::World;
use crate::story::perception::PerceptionRouter;

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
    ) -> tokio::task::JoinHandle<()> {
        let (all_tx, mut all_rx) = tokio::sync::mpsc::channel(256);
        self.hub.watch(from_seq, follow, all_tx);
        let pov = pov.to_owned();
        tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    () = out.closed() => break,
                    message = all_rx.recv() => match message {
                        Some(message) => message,
                        None => break,
                    },
                };
                let seen = match message.item {
                    Some(item) => PerceptionRouter::item_for(item, &pov),
                    None => None,
                };
                if let Some(item) = seen
                    && out.send(wrap(item)).await.is_err()
                {
                    break;
                }
            }
        })
    }
}
