//! What the world service counts for Prometheus (served by `serve --metrics-listen`):
//! worlds, watchers and seats held, turns played, log appends, agent restarts and
//! lease changes. Language-model calls are counted where they are made
//! (`dramatis_llm`).

use std::sync::LazyLock;

use dramatis_runtime::{latency, metric};
use prometheus::{Histogram, IntCounter, IntCounterVec, IntGauge};

/// Worlds this service (replica) holds in memory.
pub static WORLDS: LazyLock<IntGauge> = metric!(
    IntGauge,
    "dramatis_worlds",
    "Worlds held by this world-service replica."
);

/// Open `Watch` streams.
pub static WATCHERS: LazyLock<IntGauge> =
    metric!(IntGauge, "dramatis_watchers", "Open Watch streams.");

/// Watchers cut off for leaving their buffer full.
pub static WATCHERS_CUT: LazyLock<IntCounter> = metric!(
    IntCounter,
    "dramatis_watchers_cut_total",
    "Watch streams cut off because the watcher read nothing while its buffer was full."
);

/// Characters a person plays now.
pub static SEATS: LazyLock<IntGauge> = metric!(
    IntGauge,
    "dramatis_seats",
    "Characters played by a person (open seats)."
);

/// Turns taken by characters.
pub static TURNS: LazyLock<IntCounter> = metric!(
    IntCounter,
    "dramatis_turns_total",
    "Character turns played."
);

/// How long a durable append to the event log takes.
pub static LOG_APPEND: LazyLock<Histogram> = latency!(
    "dramatis_log_append_seconds",
    "Time to append one event durably to the event log."
);

/// Agents found dead and reached again (restarted or replaced).
pub static AGENT_RESTARTS: LazyLock<IntCounter> = metric!(
    IntCounter,
    "dramatis_agent_restarts_total",
    "Agents found dead and reached again."
);

/// World leases taken, renewed, lost to another replica, released.
pub static LEASE_CHANGES: LazyLock<IntCounterVec> = metric!(
    IntCounterVec,
    "dramatis_lease_changes_total",
    "World ownership lease changes by this replica: taken, lost, released.",
    &["change"]
);

/// Counts an open watcher until the returned guard is dropped.
#[must_use]
pub fn watcher() -> Watching {
    WATCHERS.inc();
    Watching
}

/// Held by an open watcher's stream.
#[derive(Debug)]
pub struct Watching;

impl Drop for Watching {
    fn drop(&mut self) {
        WATCHERS.dec();
    }
}
