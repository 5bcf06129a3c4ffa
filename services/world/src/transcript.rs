//! A world's transcript as its watchers take it. Two sources implement [`Transcript`]:
//! the owner's hub (`hub.rs`, the in-memory copy of the log and its live broadcast) and,
//! on a replica that does not own the world, the shared log (`cluster/mirror.rs`). A
//! point of view is one adapter over either ([`seen_by`]), so a watch shows the same
//! items wherever it is served. A turn publishes to one place, the owner's hub: events
//! after the log has them, and the words of a line (which the hub passes to the log's
//! relay for the other replicas).

use std::pin::Pin;

use dramatis_proto::v1::watch_response::Item;
use dramatis_story::view::{View, seq_of};
use futures::{Stream, StreamExt as _};

use crate::error::WorldError;

/// Items a watcher's buffer holds: what one slow watcher can cost, beside one chunk of
/// replay.
pub const WATCH_BUFFER: usize = 64;

/// What a watcher gets from a transcript, in order. An error ends it.
pub type Items = Pin<Box<dyn Stream<Item = Result<Item, WorldError>> + Send>>;

/// One world's transcript, from wherever it is read.
pub trait Transcript: Send + Sync {
    /// The transcript from event `from_seq` (1 for all of it): each logged event once,
    /// in order; when `follow`, then the events logged next and the words of the line
    /// being spoken, until the story ends. A watcher that stops reading may be cut off,
    /// and learns why from the last item.
    fn subscribe(&self, from_seq: u64, follow: bool) -> Items;
}

/// A watch of `transcript` from `from_seq`: all of it, or, given a point of view's
/// `view`, what that character perceived (read from the first event, so the view knows
/// whom the character knows and when the story ends).
pub fn watch(
    transcript: &dyn Transcript,
    view: Option<View>,
    from_seq: u64,
    follow: bool,
) -> Items {
    match view {
        None => transcript.subscribe(from_seq, follow),
        Some(view) => seen_by(transcript.subscribe(1, follow), view, from_seq),
    }
}

/// `items`, which start at the first event, as `view` shows them from `from_seq` on:
/// the events before it only taken in, and what the view's character did not perceive
/// left out.
pub fn seen_by(items: Items, mut view: View, from_seq: u64) -> Items {
    Box::pin(items.filter_map(move |item| {
        let shown = match item {
            Err(error) => Some(Err(error)),
            Ok(item) if seq_of(&item) < from_seq => {
                if let Item::Event(event) = &item {
                    view.pass(event);
                }
                None
            }
            Ok(item) => view.see(item).map(Ok),
        };
        std::future::ready(shown)
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use dramatis_proto::v1::{Event, EventKind};
    use dramatis_scenario::Scenario;

    use super::*;
    use crate::hub::TranscriptHub;

    fn scenario() -> Arc<Scenario> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/study-in-scarlet/scenario.toml");
        Arc::new(Scenario::load(&path).expect("the shipped scenario loads"))
    }

    fn line(seq: u64, location: &str, perceivers: &[&str]) -> Event {
        Event {
            seq,
            world_id: "w".into(),
            kind: EventKind::Speech.into(),
            location: location.into(),
            perceivers: perceivers.iter().map(|p| (*p).to_owned()).collect(),
            text: format!("line {seq}"),
            ..Event::default()
        }
    }

    async fn seqs(items: Items) -> Vec<Result<u64, String>> {
        items
            .map(|item| item.map(|item| seq_of(&item)).map_err(|e| e.to_string()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_watch_starts_where_asked_and_a_point_of_view_leaves_out_what_it_did_not_perceive() {
        let hub = TranscriptHub::new(vec![
            line(1, "criterion", &["watson", "stamford"]),
            line(2, "barts-lab", &["holmes"]),
            line(3, "criterion", &["watson", "stamford"]),
            line(4, "barts-lab", &["holmes"]),
        ]);
        hub.close();
        assert_eq!(
            seqs(watch(&hub, None, 2, true)).await,
            [Ok(2), Ok(3), Ok(4)]
        );
        let view = |pov: &str| Some(View::new(scenario(), "w", Some(pov.to_owned())));
        assert_eq!(seqs(watch(&hub, view("watson"), 2, true)).await, [Ok(3)]);
        assert_eq!(
            seqs(watch(&hub, view("holmes"), 1, false)).await,
            [Ok(2), Ok(4)]
        );
        assert!(
            seqs(watch(&hub, view("lestrade"), 1, true))
                .await
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_watcher_that_stops_reading_is_cut_off_and_told_why_last() {
        let events = (1..=200)
            .map(|seq| line(seq, "criterion", &["watson"]))
            .collect();
        let hub = TranscriptHub::with_stall(events, Duration::from_millis(50), None);
        let items = watch(&hub, None, 1, true);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let got = seqs(items).await;
        let (last, before) = got.split_last().expect("items");
        assert!(
            matches!(last, Err(why) if why.contains("read nothing")),
            "the last item says why: {last:?}"
        );
        let expected: Vec<_> = (1..=before.len() as u64).map(Ok).collect();
        assert_eq!(before, expected, "what was buffered comes first, in order");
        assert!(before.len() < 200, "the watcher did not get everything");
    }
}
