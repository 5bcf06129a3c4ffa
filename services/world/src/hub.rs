//! The transcript hub of one world: the in-memory copy of its log plus a broadcast of
//! live items. A watcher gets every event from its offset exactly once and in order:
//! it subscribes and snapshots under one lock, replays the snapshot, then follows the
//! broadcast, skipping anything it already has and re-reading the copy if it lagged.

use std::sync::{Arc, RwLock};

use dramatis_proto::v1::{Event, TokenChunk, WatchResponse, watch_response};
use tokio::sync::{broadcast, mpsc};

/// What the broadcast carries.
#[derive(Debug, Clone)]
enum Live {
    Event(Box<Event>),
    Token(TokenChunk),
    /// The story is over: followers end once they have everything before this.
    End,
}

/// The hub. Clones share it.
#[derive(Debug, Clone)]
pub struct TranscriptHub {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// `events[i].seq == i + 1`.
    events: RwLock<Vec<Event>>,
    live: broadcast::Sender<Live>,
    /// No event will follow (set under the `events` write lock).
    closed: std::sync::atomic::AtomicBool,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl TranscriptHub {
    /// A hub holding `history` (events already logged, in order from seq 1).
    #[must_use]
    pub fn new(history: Vec<Event>) -> Self {
        let (live, _) = broadcast::channel(1024);
        Self {
            inner: Arc::new(Inner {
                events: RwLock::new(history),
                live,
                closed: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// Sequence number the next event gets.
    #[must_use]
    pub fn next_seq(&self) -> u64 {
        read(&self.inner.events).len() as u64 + 1
    }

    /// Publishes a logged event. Its seq must be the next one.
    pub fn publish(&self, event: Event) {
        let mut events = self
            .inner
            .events
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        debug_assert_eq!(
            event.seq,
            events.len() as u64 + 1,
            "events published in order"
        );
        events.push(event.clone());
        // Sent under the lock so a subscriber's snapshot and stream never overlap wrongly.
        let _ = self.inner.live.send(Live::Event(Box::new(event)));
    }

    /// The story is over: watchers that follow end after the last event, and later
    /// ones stop after their replay.
    pub fn close(&self) {
        let _events = self
            .inner
            .events
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.inner
            .closed
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = self.inner.live.send(Live::End);
    }

    fn is_closed(inner: &Inner) -> bool {
        inner.closed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Publishes a live token (not logged; only followers see it).
    pub fn publish_token(&self, token: TokenChunk) {
        let _ = self.inner.live.send(Live::Token(token));
    }

    /// Events from `from_seq` on (a copy).
    #[must_use]
    pub fn events_from(&self, from_seq: u64) -> Vec<Event> {
        let events = read(&self.inner.events);
        let start = usize::try_from(from_seq.max(1) - 1).unwrap_or(usize::MAX);
        events
            .get(start..)
            .map(<[Event]>::to_vec)
            .unwrap_or_default()
    }

    /// The events of scene `scene_id` (a copy), found from the end of the log back to
    /// the scene's start: the cost is the scene's, not the story's.
    #[must_use]
    pub fn scene_events(&self, scene_id: &str) -> Vec<Event> {
        let events = read(&self.inner.events);
        let mut scene: Vec<Event> = Vec::new();
        for event in events.iter().rev() {
            if event.scene_id == scene_id {
                scene.push(event.clone());
                if event.kind() == dramatis_proto::v1::EventKind::SceneStart {
                    break;
                }
            }
        }
        scene.reverse();
        scene
    }

    /// Starts a watcher. Items go to `out` until the watcher goes away, the hub is
    /// dropped or closed (the story is over), or (with `follow == false`) the replay
    /// is done.
    pub fn watch(&self, from_seq: u64, follow: bool, out: mpsc::Sender<WatchResponse>) {
        let (snapshot, receiver, closed) = {
            let events = read(&self.inner.events);
            let receiver = self.inner.live.subscribe();
            let closed = Self::is_closed(&self.inner);
            let start = usize::try_from(from_seq.max(1) - 1).unwrap_or(usize::MAX);
            (
                events
                    .get(start..)
                    .map(<[Event]>::to_vec)
                    .unwrap_or_default(),
                receiver,
                closed,
            )
        };
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let mut next = from_seq.max(1);
            for event in snapshot {
                next = event.seq + 1;
                if out.send(event_item(event)).await.is_err() {
                    return;
                }
            }
            if follow && !closed {
                follow_live(weak, receiver, next, &out).await;
            }
        });
    }
}

fn event_item(event: Event) -> WatchResponse {
    WatchResponse {
        item: Some(watch_response::Item::Event(event)),
    }
}

async fn follow_live(
    hub: std::sync::Weak<Inner>,
    mut receiver: broadcast::Receiver<Live>,
    mut next: u64,
    out: &mpsc::Sender<WatchResponse>,
) {
    loop {
        // A watcher that went away ends the follower now, not at the next live item
        // (a finished world may never have one).
        let received = tokio::select! {
            () = out.closed() => return,
            received = receiver.recv() => received,
        };
        match received {
            Ok(Live::Event(event)) => {
                if event.seq < next {
                    continue; // already replayed
                }
                next = event.seq + 1;
                if out.send(event_item(*event)).await.is_err() {
                    return;
                }
            }
            Ok(Live::Token(token)) => {
                if token.seq < next {
                    continue;
                }
                let item = WatchResponse {
                    item: Some(watch_response::Item::Token(token)),
                };
                if out.send(item).await.is_err() {
                    return;
                }
            }
            Ok(Live::End) => return,
            Err(broadcast::error::RecvError::Lagged(_)) => {
                // Fell behind the broadcast: catch up from the stored copy (and stop
                // there if the end went by meanwhile).
                let Some(inner) = hub.upgrade() else { return };
                let closed = TranscriptHub::is_closed(&inner);
                let missed = TranscriptHub { inner }.events_from(next);
                for event in missed {
                    next = event.seq + 1;
                    if out.send(event_item(event)).await.is_err() {
                        return;
                    }
                }
                if closed {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64) -> Event {
        Event {
            seq,
            text: format!("e{seq}"),
            ..Event::default()
        }
    }

    async fn collect(mut rx: mpsc::Receiver<WatchResponse>, n: usize) -> Vec<u64> {
        let mut seqs = Vec::new();
        while seqs.len() < n {
            match rx.recv().await.and_then(|r| r.item) {
                Some(watch_response::Item::Event(e)) => seqs.push(e.seq),
                Some(watch_response::Item::Token(_)) => {}
                None => break,
            }
        }
        seqs
    }

    #[test]
    fn a_scene_is_read_from_its_start_and_only_its_own_events() {
        let in_scene = |seq: u64, scene: &str, kind: dramatis_proto::v1::EventKind| Event {
            scene_id: scene.into(),
            kind: kind as i32,
            ..event(seq)
        };
        use dramatis_proto::v1::EventKind::{Movement, SceneEnd, SceneStart, Speech};
        let hub = TranscriptHub::new(vec![
            in_scene(1, "s1", SceneStart),
            in_scene(2, "s1", Speech),
            in_scene(3, "s1", SceneEnd),
            in_scene(4, "s2", SceneStart),
            in_scene(5, "s2", Speech),
            in_scene(6, "", Movement),
            in_scene(7, "s2", Speech),
        ]);
        let seqs =
            |scene: &str| -> Vec<u64> { hub.scene_events(scene).iter().map(|e| e.seq).collect() };
        assert_eq!(seqs("s2"), [4, 5, 7]);
        assert_eq!(seqs("s1"), [1, 2, 3]);
        assert!(seqs("s9").is_empty());
    }

    #[tokio::test]
    async fn late_watcher_gets_history_then_live_once_in_order() {
        let hub = TranscriptHub::new(Vec::new());
        hub.publish(event(1));
        hub.publish(event(2));
        let (tx, rx) = mpsc::channel(4);
        hub.watch(2, true, tx);
        hub.publish(event(3));
        hub.publish(event(4));
        assert_eq!(collect(rx, 3).await, vec![2, 3, 4]);
    }

    #[tokio::test]
    async fn lagging_watcher_recovers_from_the_copy() {
        let hub = TranscriptHub::new(Vec::new());
        let (tx, rx) = mpsc::channel(1);
        hub.watch(1, true, tx);
        // Far more than the broadcast holds while the watcher cannot drain.
        for seq in 1..=3000 {
            hub.publish(event(seq));
        }
        let seqs = collect(rx, 3000).await;
        assert_eq!(seqs, (1..=3000).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn followers_end_when_the_hub_closes_and_later_ones_after_their_replay() {
        let hub = TranscriptHub::new(vec![event(1)]);
        let (tx, rx) = mpsc::channel(8);
        hub.watch(1, true, tx);
        hub.publish(event(2));
        hub.close();
        // collect() stops at the end of the stream: it must end after 1 and 2.
        let ended =
            |rx| tokio::time::timeout(std::time::Duration::from_secs(5), collect(rx, usize::MAX));
        assert_eq!(ended(rx).await.expect("the stream ended"), vec![1, 2]);
        let (tx, rx) = mpsc::channel(8);
        hub.watch(2, true, tx);
        assert_eq!(ended(rx).await.expect("the stream ended"), vec![2]);
    }

    #[tokio::test]
    async fn replay_only_watcher_stops_after_history() {
        let hub = TranscriptHub::new(vec![event(1), event(2)]);
        let (tx, mut rx) = mpsc::channel(8);
        hub.watch(0, false, tx);
        let mut seqs = Vec::new();
        while let Some(r) = rx.recv().await {
            if let Some(watch_response::Item::Event(e)) = r.item {
                seqs.push(e.seq);
            }
        }
        assert_eq!(seqs, vec![1, 2]);
    }
}
