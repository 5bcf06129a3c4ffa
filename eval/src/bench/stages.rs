//! Where a line's time goes: a tracing layer that times the stage spans of a turn. The
//! benchmarks run the world and agent services in this process, so one layer sees both
//! sides: the world's `act` call and its `log_append` and `deliver` (the perception
//! fan-out), and inside the agent `recall` (its `embed_query`, `anchor` and the
//! first round's `retrieve`), `grounding` (memory modules), `model` and `guard`, and on the perceiving side `perceive_store`, `scene_write` and
//! `perceive_save` (a turn saves nothing itself: its state goes to disk with its
//! character's own event).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Instant;

use tracing::span::{Attributes, Id};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The spans timed, in the order a turn runs them.
pub const STAGES: [&str; 12] = [
    "act",
    "recall",
    "embed_query",
    "anchor",
    "retrieve",
    "grounding",
    "model",
    "guard",
    "log_append",
    "deliver",
    "perceive_store",
    "scene_write",
];

/// Timed too, listed after the stages above: `perceive_save`, and every embedding the
/// process runs, a turn's or a perceiver's (`embed_wait` for the process's one ONNX
/// session, `embed_run` for the model run).
const ALSO: [&str; 3] = ["perceive_save", "embed_wait", "embed_run"];

/// Total time and count of each stage since the last [`take`].
static TIMES: Mutex<BTreeMap<&'static str, (u64, f64)>> = Mutex::new(BTreeMap::new());

/// The layer; give it to `dramatis_runtime::telemetry::init_with`.
#[derive(Debug, Default)]
pub struct StageLayer;

struct Started(Instant);

fn timed(name: &str) -> Option<&'static str> {
    STAGES.iter().chain(&ALSO).copied().find(|s| *s == name)
}

impl<S> tracing_subscriber::Layer<S> for StageLayer
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if timed(attrs.metadata().name()).is_some()
            && let Some(span) = ctx.span(id)
        {
            span.extensions_mut().insert(Started(Instant::now()));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(name) = timed(span.name()) else {
            return;
        };
        if let Some(Started(at)) = span.extensions().get::<Started>() {
            let micros = at.elapsed().as_secs_f64() * 1e6;
            let mut times = dramatis_runtime::lock(&TIMES);
            let entry = times.entry(name).or_default();
            entry.0 += 1;
            entry.1 += micros;
        }
    }
}

/// One stage's figures.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct StageTime {
    pub count: u64,
    pub total_us: f64,
}

/// Every stage timed since the last call, in turn order (stages never seen are absent),
/// and the counters reset.
pub fn take() -> Vec<(&'static str, StageTime)> {
    let times = std::mem::take(&mut *dramatis_runtime::lock(&TIMES));
    STAGES
        .iter()
        .chain(&ALSO)
        .filter_map(|name| {
            times.get(name).map(|(count, total_us)| {
                (
                    *name,
                    StageTime {
                        count: *count,
                        total_us: *total_us,
                    },
                )
            })
        })
        .collect()
}

/// Stage times added up, in turn order.
#[must_use]
pub fn sum<'a>(
    parts: impl IntoIterator<Item = &'a [(&'static str, StageTime)]>,
) -> Vec<(&'static str, StageTime)> {
    let mut totals: BTreeMap<&'static str, StageTime> = BTreeMap::new();
    for part in parts {
        for (name, time) in part {
            let total = totals.entry(name).or_insert(StageTime {
                count: 0,
                total_us: 0.0,
            });
            total.count += time.count;
            total.total_us += time.total_us;
        }
    }
    STAGES
        .iter()
        .chain(&ALSO)
        .filter_map(|name| totals.get(name).map(|time| (*name, *time)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn named_spans_are_timed_and_others_are_not() {
        let subscriber = tracing_subscriber::registry().with(StageLayer);
        tracing::subscriber::with_default(subscriber, || {
            let _ = take();
            for _ in 0..3 {
                let _recall = tracing::info_span!("recall").entered();
                let _other = tracing::info_span!("unrelated").entered();
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            let _model = tracing::info_span!("model").entered();
        });
        let times = take();
        let names: Vec<&str> = times.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["recall", "model"]);
        assert_eq!(times[0].1.count, 3);
        assert!(times[0].1.total_us >= 6_000.0, "{:?}", times[0]);
        assert!(take().is_empty(), "taken once");
    }
}
