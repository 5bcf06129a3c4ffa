//! Forwarding one character's point of view of its world to a seat: the hub's
//! transcript through the character's [`View`], as every point-of-view watch is.

use dramatis_proto::v1 as pb;
use futures::StreamExt as _;

use super::World;

use crate::transcript;
use dramatis_story::view::View;

impl World {
    /// The transcript of this world from its hub; with `pov`, as that character
    /// perceived it.
    pub fn watch(&self, pov: Option<&str>, from_seq: u64, follow: bool) -> transcript::Items {
        let view = pov.map(|pov| View::new(self.scenario.clone(), &self.id, Some(pov.to_owned())));
        transcript::watch(&self.hub, view, from_seq, follow)
    }

    /// Forwards what `pov` perceives of this world (events as its agent got them; words
    /// of lines spoken where it is) into `out`, wrapped by `wrap`, until `out` closes or
    /// the story ends.
    pub fn follow_as<T: Send + 'static>(
        &self,
        pov: &str,
        from_seq: u64,
        out: tokio::sync::mpsc::Sender<T>,
        wrap: impl Fn(pb::watch_response::Item) -> T + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let mut items = self.watch(Some(pov), from_seq, true);
        tokio::spawn(async move {
            loop {
                let item = tokio::select! {
                    () = out.closed() => break,
                    item = items.next() => item,
                };
                // An error (a cut-off) ends the seat's view of the story as its end does.
                let Some(Ok(item)) = item else { break };
                if out.send(wrap(item)).await.is_err() {
                    break;
                }
            }
        })
    }
}
