//! The long-story benchmark: one open story of many rounds, with the agent saving its
//! shards to disk as a deployment does, timed line by line from a watcher. The goal is
//! a flat cost per line: the last tenth of the story no slower than the first.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use dramatis_character::MemoryWrites;
use dramatis_embed::Embedder;
use dramatis_proto::v1::{
    SandboxCharacter, SandboxFact, SandboxLocation, SandboxPath, SandboxSpec, create_world_request,
    watch_response,
};
use dramatis_runtime::client::advance_to_end;
use dramatis_scenario::Scenario;

use super::stages::{self, StageTime};
use super::{Cluster, ClusterSetup};

/// What to play.
pub struct StorySetup {
    /// The open story, already generated ([`story_spec`]).
    pub spec: SandboxSpec,
    pub scenarios_dir: std::path::PathBuf,
    pub plain_agents: bool,
}

/// What the story measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StoryReport {
    pub characters: usize,
    pub rounds: u32,
    /// Lines spoken (events with a turn).
    pub lines: usize,
    /// Every event of the story.
    pub events: usize,
    /// Wall time per line over each tenth of the story's lines, in ms.
    pub ms_per_line_by_tenth: Vec<f64>,
    /// The last tenth's time per line over the first's.
    pub last_over_first: f64,
    /// Bytes on disk of every shard file at the end, per character.
    pub shard_bytes_per_character: u64,
    /// This process's peak resident memory (world, agent and embedder), in MB.
    pub peak_rss_mb: f64,
    pub wall_seconds: f64,
    /// Stage times over the whole story, its first tenth of lines and its last (from
    /// the stage layer, when one is installed; see [`super::stages`]).
    #[serde(skip)]
    pub stages: [Vec<(&'static str, StageTime)>; 3],
    /// The lines each of `stages` covers.
    #[serde(skip)]
    pub stage_lines: [u64; 3],
}

/// Lines between two readings of the stage times.
const STAGE_WINDOW: usize = 10;

/// The open story `base` grown to `characters` people and `rounds` rounds. Beyond the
/// base's own cast, the base's map and people are copied as further districts
/// (`<id>-2`, `<id>-3`, …, each district's opening place one step from the previous
/// one's), so every place keeps the base's crowd.
pub fn story_spec(base: &Scenario, characters: usize, rounds: u32) -> anyhow::Result<SandboxSpec> {
    let mut spec = dramatis_scenario::sandbox::scenario_to_spec(base)
        .with_context(|| format!("{} is not an open story", base.source.display()))?;
    anyhow::ensure!(
        !spec.characters.is_empty(),
        "the open story has no characters"
    );
    spec.rounds = rounds;
    let (people, places, paths, facts) = (
        std::mem::take(&mut spec.characters),
        std::mem::take(&mut spec.locations),
        std::mem::take(&mut spec.paths),
        std::mem::take(&mut spec.facts),
    );
    let copy = |id: &str, k: usize| {
        if k == 0 {
            id.to_owned()
        } else {
            format!("{id}-{}", k + 1)
        }
    };
    let districts = characters.div_ceil(people.len());
    for k in 0..districts {
        let suffix = |name: &str| {
            if k == 0 {
                name.to_owned()
            } else {
                format!("{name} {}", k + 1)
            }
        };
        spec.locations
            .extend(places.iter().map(|l| SandboxLocation {
                id: copy(&l.id, k),
                name: suffix(&l.name),
                description: l.description.clone(),
            }));
        spec.paths.extend(paths.iter().map(|p| SandboxPath {
            from: copy(&p.from, k),
            to: copy(&p.to, k),
            distance: p.distance,
        }));
        if k > 0 {
            spec.paths.push(SandboxPath {
                from: copy(&spec.opening_location, k - 1),
                to: copy(&spec.opening_location, k),
                distance: 1,
            });
        }
        let left = characters - spec.characters.len();
        spec.characters
            .extend(people.iter().take(left).map(|c| SandboxCharacter {
                id: copy(&c.id, k),
                name: suffix(&c.name),
                aliases: c.aliases.iter().map(|a| suffix(a)).collect(),
                location: copy(&c.location, k),
                ..c.clone()
            }));
        let present: Vec<&str> = spec.characters.iter().map(|c| c.id.as_str()).collect();
        spec.facts.extend(facts.iter().filter_map(|f| {
            let known_by: Vec<String> = f
                .known_by
                .iter()
                .map(|id| copy(id, k))
                .filter(|id| present.contains(&id.as_str()))
                .collect();
            (!known_by.is_empty()).then(|| SandboxFact {
                id: copy(&f.id, k),
                known_by,
                ..f.clone()
            })
        }));
    }
    Ok(spec)
}

/// Plays the story once, to its end, and measures each line.
pub async fn story(setup: &StorySetup, embedder: Arc<dyn Embedder>) -> anyhow::Result<StoryReport> {
    let cluster = Cluster::start(
        &ClusterSetup {
            scenarios_dir: setup.scenarios_dir.clone(),
            scenario_roots: Vec::new(),
            memory_writes: MemoryWrites::Digest,
            plain_agents: setup.plain_agents,
            save_shards: true,
            shard_stream: None,
            shared: None,
            fixed_width_lines: true,
        },
        embedder,
    )
    .await?;
    let (world, mut watching) = cluster
        .create_and_watch(create_world_request::Source::Sandbox(setup.spec.clone()))
        .await?;
    let mut client = cluster.client.clone();
    // The watcher notes when each line arrives, counts every event, and reads the stage
    // times every few lines (so the first and last tenths can be told apart).
    let _ = stages::take();
    let watcher = tokio::spawn(async move {
        let (mut lines, mut events, mut windows) = (Vec::new(), 0usize, Vec::new());
        while let Ok(Some(message)) = watching.message().await {
            if let Some(watch_response::Item::Event(event)) = message.item {
                events += 1;
                if event.turn > 0 {
                    lines.push(Instant::now());
                    if lines.len() % STAGE_WINDOW == 0 {
                        windows.push(stages::take());
                    }
                }
            }
        }
        windows.push(stages::take());
        (lines, events, windows)
    });
    let started = Instant::now();
    advance_to_end(&mut client, &world.world_id).await?;
    let wall_seconds = started.elapsed().as_secs_f64();
    let shard_bytes = cluster.shard_bytes();
    drop(cluster);
    let (lines, events, windows) = watcher.await.context("the watcher failed")?;
    anyhow::ensure!(lines.len() >= 10, "the story spoke {} lines", lines.len());
    // Window w holds lines [w * STAGE_WINDOW, (w + 1) * STAGE_WINDOW).
    let tenth = lines.len() / 10;
    let first_windows = (tenth / STAGE_WINDOW).max(1);
    let first = windows.iter().take(first_windows);
    let last_from = (lines.len() - tenth).div_ceil(STAGE_WINDOW);
    let stage_lines = [
        lines.len() as u64,
        (first_windows * STAGE_WINDOW).min(lines.len()) as u64,
        lines.len().saturating_sub(last_from * STAGE_WINDOW) as u64,
    ];
    let last = windows.iter().skip(last_from);
    let stages = [
        stages::sum(windows.iter().map(Vec::as_slice)),
        stages::sum(first.map(Vec::as_slice)),
        stages::sum(last.map(Vec::as_slice)),
    ];
    let ms_per_line_by_tenth = by_tenth(started, &lines);
    let characters = setup.spec.characters.len();
    Ok(StoryReport {
        characters,
        rounds: setup.spec.rounds,
        lines: lines.len(),
        events,
        last_over_first: ms_per_line_by_tenth[9] / ms_per_line_by_tenth[0],
        ms_per_line_by_tenth,
        shard_bytes_per_character: shard_bytes / characters.max(1) as u64,
        peak_rss_mb: dramatis_runtime::memory_use::peak_rss_mb(),
        wall_seconds,
        stages,
        stage_lines,
    })
}

/// Mean time per line over each tenth of `lines` (arrival times), the first tenth
/// timed from `started`.
fn by_tenth(started: Instant, lines: &[Instant]) -> Vec<f64> {
    let n = lines.len();
    (0..10)
        .map(|t| {
            let (from, to) = (t * n / 10, (t + 1) * n / 10);
            let begin = if from == 0 { started } else { lines[from - 1] };
            let spent = lines[to - 1].saturating_duration_since(begin);
            spent.as_secs_f64() * 1e3 / (to - from).max(1) as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../scenarios/lamplighters-ledger/scenario.toml");
        Scenario::load(&path).expect("the shipped sandbox loads")
    }

    #[test]
    fn a_grown_story_copies_districts_and_still_validates() {
        let spec = story_spec(&base(), 10, 7).expect("grown");
        assert_eq!(spec.rounds, 7);
        assert_eq!(spec.characters.len(), 10);
        assert_eq!(spec.locations.len(), 12, "three districts of four places");
        let ids: std::collections::BTreeSet<&str> =
            spec.characters.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids.len(), 10, "ids are distinct");
        assert!(ids.contains("ada-3") && !ids.contains("varga-3"), "{ids:?}");
        let back = dramatis_scenario::sandbox::parse_spec(&spec).expect("valid");
        assert_eq!(back.characters.len(), 10);
        let small = story_spec(&base(), 2, 3).expect("cut");
        assert_eq!(small.characters.len(), 2);
        assert_eq!(small.locations.len(), 4);
    }

    #[test]
    fn tenths_split_the_lines_evenly_and_time_the_first_from_the_start() {
        let start = Instant::now();
        let lines: Vec<Instant> = (1..=20)
            .map(|i| {
                start
                    + std::time::Duration::from_millis(if i <= 2 {
                        10 * i
                    } else {
                        20 + 30 * (i - 2)
                    })
            })
            .collect();
        let tenths = by_tenth(start, &lines);
        assert_eq!(tenths.len(), 10);
        assert!((tenths[0] - 10.0).abs() < 1e-6, "{tenths:?}");
        assert!((tenths[9] - 30.0).abs() < 1e-6, "{tenths:?}");
    }
}
