//! A world's lifecycle: one [`Phase`], changed only by the methods here, and the gate
//! every call to an agent passes. The moves it allows:
//!
//! ```text
//!   Ready ⇄ Running          an advance begins and ends
//!   Ready → Asleep → Ready   a finished world idles (no call in flight), then is called
//!   any live → Abandoned     another replica owns the world now: no story step
//!                            runs here again, only a deletion follows
//!   any → Deleted            the world is deleted (final); it remembers whether its
//!                            characters were asleep, so their shards are woken to go
//! ```
//!
//! Three races were fixed in this area before the phase was one value, and each is a
//! rule here: a deletion waits for a sleep under way and then knows the characters are
//! detached; no sleep starts once a deletion began; a call to an agent waits for a
//! sleep under way, then wakes the world, so no character is attached in a world that
//! counts as asleep.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::error::WorldError;

/// Where a world is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Its characters are attached and no advance is under way.
    Ready,
    /// An advance is under way.
    Running,
    /// Finished and idle: its characters are detached (their shards kept) and the
    /// agents started for it released. The next call to an agent wakes it.
    Asleep,
    /// Another replica owns it now: nothing more is written from here.
    Abandoned,
    /// It is being deleted: nothing more runs in it. `detached`: its characters were
    /// asleep, so the deletion attaches them again to delete their shards.
    Deleted { detached: bool },
}

/// A world's phase, the gate of its calls to agents, and when it last called one.
#[derive(Debug)]
pub(super) struct Lifecycle {
    phase: std::sync::Mutex<Phase>,
    /// Read-held by every call to an agent, write-held by a sleep and by a deletion:
    /// neither runs beside a call.
    gate: tokio::sync::RwLock<()>,
    /// When an agent was last called (ms since the epoch).
    last_call_ms: AtomicI64,
    /// Cancelled when the world is deleted or given up: waits on people end with it.
    ended: tokio_util::sync::CancellationToken,
}

/// Held by a call to an agent: no sleep starts while it is held.
pub(super) type Pass<'a> = tokio::sync::RwLockReadGuard<'a, ()>;

/// A sleep under way: no call to an agent runs and no deletion finishes until it ends.
#[must_use = "a sleep ends with `done`"]
pub(super) struct Sleep<'a> {
    life: &'a Lifecycle,
    _quiet: tokio::sync::RwLockWriteGuard<'a, ()>,
}

impl Sleep<'_> {
    /// The characters are detached: the world is asleep (or, if its deletion began
    /// meanwhile, deleted with its characters detached).
    pub fn done(self) {
        self.life.set(|phase| match phase {
            Phase::Ready => Some(Phase::Asleep),
            Phase::Deleted { .. } => Some(Phase::Deleted { detached: true }),
            Phase::Running | Phase::Asleep | Phase::Abandoned => None,
        });
    }
}

impl Lifecycle {
    pub fn new() -> Self {
        Self {
            phase: std::sync::Mutex::new(Phase::Ready),
            gate: tokio::sync::RwLock::new(()),
            last_call_ms: AtomicI64::new(dramatis_runtime::now_ms()),
            ended: tokio_util::sync::CancellationToken::new(),
        }
    }

    pub fn phase(&self) -> Phase {
        *dramatis_runtime::lock(&self.phase)
    }

    /// Applies `step` to the phase; `None` leaves it as it is. Returns the phase before.
    fn set(&self, step: impl FnOnce(Phase) -> Option<Phase>) -> Phase {
        let mut phase = dramatis_runtime::lock(&self.phase);
        let before = *phase;
        if let Some(next) = step(before) {
            *phase = next;
        }
        before
    }

    /// An advance begins (the caller holds the world's state).
    pub fn begin_run(&self) {
        self.set(|phase| (phase == Phase::Ready).then_some(Phase::Running));
    }

    /// The advance ended.
    pub fn end_run(&self) {
        self.set(|phase| (phase == Phase::Running).then_some(Phase::Ready));
    }

    /// Fails once the world is deleted or given up: no more story steps.
    pub fn check_live(&self, world_id: &str) -> Result<(), WorldError> {
        match self.phase() {
            Phase::Deleted { .. } => Err(WorldError::Deleted(world_id.to_owned())),
            Phase::Abandoned => Err(WorldError::Moved(world_id.to_owned())),
            Phase::Ready | Phase::Running | Phase::Asleep => Ok(()),
        }
    }

    /// Resolves once the world is deleted or given up.
    pub async fn ended(&self) {
        self.ended.cancelled().await;
    }

    /// Gives the world up. True the first time (a deleted world is not given up).
    pub fn abandon(&self) -> bool {
        let before = self.set(|phase| match phase {
            Phase::Ready | Phase::Running | Phase::Asleep => Some(Phase::Abandoned),
            Phase::Abandoned | Phase::Deleted { .. } => None,
        });
        self.ended.cancel();
        matches!(before, Phase::Ready | Phase::Running | Phase::Asleep)
    }

    pub fn is_abandoned(&self) -> bool {
        self.phase() == Phase::Abandoned
    }

    pub fn is_deleted(&self) -> bool {
        matches!(self.phase(), Phase::Deleted { .. })
    }

    /// Whether the characters are detached for idleness (in a world being deleted
    /// too: they are attached again to delete their shards).
    pub fn is_asleep(&self) -> bool {
        matches!(
            self.phase(),
            Phase::Asleep | Phase::Deleted { detached: true }
        )
    }

    /// A call to an agent begins: waits for a sleep under way to end, keeps the next
    /// one off while the pass is held, and counts as activity.
    pub async fn call(&self) -> Pass<'_> {
        let pass = self.gate.read().await;
        self.last_call_ms
            .store(dramatis_runtime::now_ms(), Ordering::Relaxed);
        pass
    }

    /// The characters are attached again after a sleep.
    pub fn woke(&self) {
        self.set(|phase| match phase {
            Phase::Asleep => Some(Phase::Ready),
            Phase::Deleted { detached: true } => Some(Phase::Deleted { detached: false }),
            Phase::Ready | Phase::Running | Phase::Abandoned | Phase::Deleted { .. } => None,
        });
    }

    /// A sleep may begin: the world is ready, no agent was called for `idle`, and no
    /// call is in flight. The gate is taken before the phase is read, so a deletion
    /// that began first is seen, and one that begins later waits for the sleep.
    pub fn try_sleep(&self, idle: Duration) -> Option<Sleep<'_>> {
        let quiet_ms =
            dramatis_runtime::now_ms().saturating_sub(self.last_call_ms.load(Ordering::Relaxed));
        if u128::try_from(quiet_ms).unwrap_or(0) < idle.as_millis() {
            return None;
        }
        let quiet = self.gate.try_write().ok()?;
        (self.phase() == Phase::Ready).then_some(Sleep {
            life: self,
            _quiet: quiet,
        })
    }

    /// The deletion begins: no sleep or story step starts from here, and a call that
    /// fails is not retried. Returns once a sleep or call under way has ended.
    pub async fn stop(&self) {
        self.set(|phase| match phase {
            Phase::Asleep => Some(Phase::Deleted { detached: true }),
            Phase::Deleted { .. } => None,
            Phase::Ready | Phase::Running | Phase::Abandoned => {
                Some(Phase::Deleted { detached: false })
            }
        });
        self.ended.cancel();
        drop(self.gate.write().await);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn idle_world() -> Arc<Lifecycle> {
        let life = Lifecycle::new();
        life.last_call_ms.store(0, Ordering::Relaxed);
        Arc::new(life)
    }

    /// The first race: a deletion that begins while the characters are being detached
    /// waits for the detach, then knows they are detached (so their shards are woken
    /// to be deleted, not left behind).
    #[tokio::test]
    async fn a_deletion_waits_for_a_sleep_under_way_and_knows_the_characters_left() {
        let life = idle_world();
        let sleep = life
            .try_sleep(Duration::ZERO)
            .expect("an idle ready world sleeps");
        let deleting = tokio::spawn({
            let life = Arc::clone(&life);
            async move { life.stop().await }
        });
        tokio::task::yield_now().await;
        assert!(!deleting.is_finished(), "the deletion waits for the sleep");
        assert!(
            life.is_deleted(),
            "but nothing new starts from the moment it began"
        );
        sleep.done();
        deleting.await.expect("deletion");
        assert_eq!(life.phase(), Phase::Deleted { detached: true });
        assert!(life.is_asleep(), "the deletion wakes the characters");
        life.woke();
        assert_eq!(life.phase(), Phase::Deleted { detached: false });
    }

    /// The second: no sleep starts once a deletion began, even one still waiting.
    #[tokio::test]
    async fn no_sleep_starts_after_a_deletion_began() {
        let life = idle_world();
        let call = life.call().await;
        let deleting = tokio::spawn({
            let life = Arc::clone(&life);
            async move { life.stop().await }
        });
        tokio::task::yield_now().await;
        assert!(
            life.try_sleep(Duration::ZERO).is_none(),
            "a call is in flight"
        );
        drop(call);
        deleting.await.expect("deletion");
        life.last_call_ms.store(0, Ordering::Relaxed);
        assert!(life.try_sleep(Duration::ZERO).is_none(), "deleted");
        assert_eq!(life.phase(), Phase::Deleted { detached: false });
    }

    /// The third: a call waits for a sleep under way, then sees the world asleep (and
    /// wakes it); no sleep starts while a call is in flight.
    #[tokio::test]
    async fn a_call_waits_for_a_sleep_and_then_finds_the_world_asleep() {
        let life = idle_world();
        let sleep = life.try_sleep(Duration::ZERO).expect("sleeps");
        let calling = tokio::spawn({
            let life = Arc::clone(&life);
            async move {
                let _pass = life.call().await;
                let asleep = life.is_asleep();
                if asleep {
                    life.woke();
                }
                asleep
            }
        });
        tokio::task::yield_now().await;
        assert!(!calling.is_finished(), "the call waits for the sleep");
        sleep.done();
        assert!(
            calling.await.expect("call"),
            "the call found the world asleep"
        );
        assert_eq!(life.phase(), Phase::Ready);
        let _pass = life.call().await;
        life.last_call_ms.store(0, Ordering::Relaxed);
        assert!(
            life.try_sleep(Duration::ZERO).is_none(),
            "a call is in flight"
        );
    }

    #[tokio::test]
    async fn a_world_sleeps_only_when_ready_and_idle() {
        let life = Lifecycle::new();
        assert!(
            life.try_sleep(Duration::from_secs(60)).is_none(),
            "just called"
        );
        life.last_call_ms.store(0, Ordering::Relaxed);
        life.begin_run();
        assert!(life.try_sleep(Duration::ZERO).is_none(), "running");
        life.end_run();
        assert!(life.abandon(), "given up the first time");
        assert!(!life.abandon(), "only once");
        assert!(life.try_sleep(Duration::ZERO).is_none(), "given up");
        life.end_run();
        assert_eq!(
            life.phase(),
            Phase::Abandoned,
            "an ending run leaves it given up"
        );
        assert!(matches!(
            life.check_live("w"),
            Err(WorldError::Moved(id)) if id == "w"
        ));
    }

    #[tokio::test]
    async fn a_deleted_world_stays_deleted() {
        let life = Lifecycle::new();
        life.begin_run();
        life.stop().await;
        life.end_run();
        assert!(!life.abandon(), "a deleted world is not given up");
        assert_eq!(life.phase(), Phase::Deleted { detached: false });
        assert!(matches!(
            life.check_live("w"),
            Err(WorldError::Deleted(id)) if id == "w"
        ));
    }
}
