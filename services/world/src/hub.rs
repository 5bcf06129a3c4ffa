//! The transcript hub of one world: the in-memory copy of its log plus a broadcast of
//! live items. A watcher gets every event from its offset exactly once and in order:
//! it subscribes under the copy's lock, replays the copy a chunk at a time (never a
//! copy of the whole history per watcher), then follows the broadcast, skipping
//! anything it already has and re-reading the copy if it lagged. A watcher that leaves
//! its buffer full for the hub's stall time is cut off: it holds nothing meanwhile but
//! its buffer, and learns why at the end of its stream.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use dramatis_proto::v1::{Event, TokenChunk, WatchResponse, watch_response};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::error::WorldError;
use crate::log::relay::TokenRelay;
use crate::transcript::{Items, Transcript, WATCH_BUFFER};
use futures::StreamExt as _;

/// Events a watcher's replay reads from the copy at a time.
const REPLAY_CHUNK: usize = 64;

/// How long a watcher may leave its buffer full before it is cut off, by default.
pub const WATCHER_STALL: Duration = Duration::from_secs(30);

/// Sent (once) when a watcher is cut off for not reading.
pub type CutOff = oneshot::Receiver<String>;

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
    /// How long a watcher may leave its buffer full.
    stall: Duration,
    /// Watchers now.
    watchers: Arc<AtomicUsize>,
    /// The world's id and the relay its live tokens take to other replicas, when its
    /// log is shared.
    relay: Option<(String, Arc<dyn TokenRelay>)>,
}

/// One watcher counted by its hub while it lives.
#[derive(Debug)]
pub struct WatcherSlot(Arc<AtomicUsize>);

impl Drop for WatcherSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl TranscriptHub {
    /// A hub holding `history` (events already logged, in order from seq 1).
    #[must_use]
    pub fn new(history: Vec<Event>) -> Self {
        Self::with_stall(history, WATCHER_STALL, None)
    }

    /// A hub whose watchers are cut off after leaving their buffer full for `stall`;
    /// with `relay`, live tokens also go to watchers on other replicas.
    #[must_use]
    pub fn with_stall(
        history: Vec<Event>,
        stall: Duration,
        relay: Option<(String, Arc<dyn TokenRelay>)>,
    ) -> Self {
        let (live, _) = broadcast::channel(1024);
        Self {
            inner: Arc::new(Inner {
                events: RwLock::new(history),
                live,
                closed: std::sync::atomic::AtomicBool::new(false),
                stall,
                watchers: Arc::default(),
                relay,
            }),
        }
    }

    /// Counts one more watcher, unless `max` watch already.
    pub fn enter_watcher(&self, max: usize) -> Option<WatcherSlot> {
        let count = &self.inner.watchers;
        count
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| WatcherSlot(Arc::clone(count)))
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
        // An error means no follower is subscribed: no one to tell.
        let _ = self.inner.live.send(Live::End);
    }

    fn is_closed(inner: &Inner) -> bool {
        inner.closed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Publishes a live token (not logged): to this replica's followers, and through
    /// the relay to watchers on other replicas. The one route a token takes.
    pub fn publish_token(&self, token: TokenChunk) {
        if let Some((world_id, relay)) = &self.inner.relay {
            relay.publish(world_id, &token);
        }
        // An error means no follower is subscribed: a live token is for followers only.
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

    /// The seq of the last event logged in a scene, named by its id or by its number in
    /// the order scenes began (1 is the first); `None` when no such scene has begun.
    #[must_use]
    pub fn scene_last_seq(&self, scene: &str) -> Option<u64> {
        let events = read(&self.inner.events);
        let id = match scene.trim().parse::<usize>() {
            Ok(number) => events
                .iter()
                .filter(|e| e.kind() == dramatis_proto::v1::EventKind::SceneStart)
                .nth(number.checked_sub(1)?)?
                .scene_id
                .clone(),
            Err(_) => scene.trim().to_owned(),
        };
        events
            .iter()
            .rev()
            .find(|e| e.scene_id == id)
            .map(|e| e.seq)
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
    /// is done. The answer says why, if the watcher is cut off for not reading.
    pub fn watch(&self, from_seq: u64, follow: bool, out: mpsc::Sender<WatchResponse>) -> CutOff {
        let (receiver, closed) = {
            let _events = read(&self.inner.events);
            (self.inner.live.subscribe(), Self::is_closed(&self.inner))
        };
        let (cut, cut_off) = oneshot::channel();
        let weak = Arc::downgrade(&self.inner);
        let stall = self.inner.stall;
        tokio::spawn(async move {
            let out = Paced {
                out,
                stall,
                cut: std::sync::Mutex::new(Some(cut)),
            };
            let Some(next) = replay(&weak, from_seq.max(1), &out).await else {
                return;
            };
            if follow && !closed {
                follow_live(weak, receiver, next, &out).await;
            }
        });
        cut_off
    }
}

impl Transcript for TranscriptHub {
    /// The hub's watch as a stream, ending with RESOURCE_EXHAUSTED if the watcher was
    /// cut off for not reading.
    fn subscribe(&self, from_seq: u64, follow: bool) -> Items {
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        let cut_off = self.watch(from_seq, follow, tx);
        let verdict = futures::stream::once(cut_off)
            .filter_map(|why| std::future::ready(why.ok().map(|why| Err(WorldError::Full(why)))));
        let items = tokio_stream::wrappers::ReceiverStream::new(rx)
            .filter_map(|response| std::future::ready(response.item.map(Ok)));
        Box::pin(items.chain(verdict))
    }
}

/// A watcher's sender that gives up on a watcher that does not read.
struct Paced {
    out: mpsc::Sender<WatchResponse>,
    stall: Duration,
    cut: std::sync::Mutex<Option<oneshot::Sender<String>>>,
}

impl Paced {
    /// Sends `item`; false when the watcher is gone, or was cut off (and told why).
    async fn send(&self, item: WatchResponse) -> bool {
        match tokio::time::timeout(self.stall, self.out.send(item)).await {
            Ok(sent) => sent.is_ok(),
            Err(_) => {
                crate::metrics::WATCHERS_CUT.inc();
                if let Some(cut) = dramatis_runtime::lock(&self.cut).take() {
                    // The watcher may be gone already; then it needs no reason.
                    let _ = cut.send(format!(
                        "this watcher read nothing for {} s while its buffer was full; \
                         watch again from the last event it has",
                        self.stall.as_secs()
                    ));
                }
                false
            }
        }
    }

    async fn closed(&self) {
        self.out.closed().await;
    }
}

/// Sends the copy's events from `next` on, a chunk at a time; where the copy ended
/// (the next seq), or `None` when the watcher is gone.
async fn replay(hub: &std::sync::Weak<Inner>, mut next: u64, out: &Paced) -> Option<u64> {
    loop {
        let chunk = {
            let inner = hub.upgrade()?;
            let events = read(&inner.events);
            let start = usize::try_from(next - 1).unwrap_or(usize::MAX);
            let end = start.saturating_add(REPLAY_CHUNK).min(events.len());
            events
                .get(start..end)
                .map(<[Event]>::to_vec)
                .unwrap_or_default()
        };
        if chunk.is_empty() {
            return Some(next);
        }
        for event in chunk {
            next = event.seq + 1;
            if !out.send(event_item(event)).await {
                return None;
            }
        }
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
    out: &Paced,
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
                if !out.send(event_item(*event)).await {
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
                if !out.send(item).await {
                    return;
                }
            }
            Ok(Live::End) => return,
            Err(broadcast::error::RecvError::Lagged(_)) => {
                // Fell behind the broadcast: catch up from the stored copy (and stop
                // there if the end went by meanwhile).
                let closed = match hub.upgrade() {
                    Some(inner) => TranscriptHub::is_closed(&inner),
                    None => return,
                };
                let Some(caught_up) = replay(&hub, next, out).await else {
                    return;
                };
                next = caught_up;
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
