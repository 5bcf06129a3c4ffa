//! `dramatis-eval` measures Dramatis: Knowledge Boundary Fidelity (probes, answerers,
//! the metric), the memory-module ablation with its long generated run, and the turn
//! benchmark's harness. It drives the services as a client would (or in process, for
//! the benchmark) and returns figures; the CLI parses arguments and prints them.
//!
//! It sits above the services and below the CLI: the probes name scenario characters,
//! and the benchmark starts a world and an agent service in process.

pub mod ablation;
pub mod answerers;
pub mod asking;
pub mod bench;
pub mod corpus;
pub mod export;
pub mod judge;
pub mod kbf;
pub mod long_run;
pub mod paraphrase;
pub mod probes;
pub mod style;
pub mod walk;
pub mod words;

use std::path::Path;

use dramatis_proto::v1::create_world_request;
use dramatis_runtime::client::{WorldRpc, create_world};

/// Creates a world from a scenario file (its absolute path is sent); returns its id.
pub async fn create_world_from_file(
    client: &mut WorldRpc,
    scenario_path: &Path,
) -> anyhow::Result<String> {
    Ok(create_world(client, file_source(scenario_path), "")
        .await?
        .world_id)
}

/// A scenario file as a world's source: its absolute path, which the service reads.
#[must_use]
pub fn file_source(scenario_path: &Path) -> create_world_request::Source {
    let path = std::fs::canonicalize(scenario_path).unwrap_or_else(|_| scenario_path.to_path_buf());
    create_world_request::Source::ScenarioPath(path.to_string_lossy().into_owned())
}
