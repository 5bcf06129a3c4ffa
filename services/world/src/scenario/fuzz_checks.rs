//! The properties the fuzz targets (`fuzz/`) check, here so that `cargo test` can replay
//! every committed corpus file through exactly the same code on the stable toolchain.
//! Each function panics when a property fails: that is what a fuzzer reports.

use std::path::Path;

use dramatis_proto::v1::SandboxSpec;
use prost::Message as _;

use super::sandbox::{parse_spec, scenario_to_spec};
use super::{Scenario, ScenarioError};

/// Inputs larger than this are skipped: the service refuses larger messages before
/// any handler runs (`--max-message-bytes`, 1 MiB by default).
pub const MAX_INPUT: usize = 1024 * 1024;

/// The longest refusal any input may get: 20 problems of bounded size and a count.
pub const MAX_REFUSAL_BYTES: usize = 16 * 1024;

/// A scenario file's text: parsing never panics; a refusal names lines that exist; an
/// open story that is accepted survives the trip to an inline spec and back.
pub fn scenario_text(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Scenario::parse(text, Path::new("fuzz.toml")) {
        Ok(scenario) => accepted(&scenario, "a scenario file"),
        Err(error) => refused(&error, text.lines().count()),
    }
}

/// An inline sandbox spec as it arrives on the wire: decoding and validating never
/// panic; a refusal says why; an accepted spec is an open story that survives the trip
/// back to a spec.
pub fn sandbox_spec(data: &[u8]) {
    if data.len() > MAX_INPUT {
        return;
    }
    let Ok(spec) = SandboxSpec::decode(data) else {
        return;
    };
    match parse_spec(&spec) {
        Ok(scenario) => {
            assert!(scenario.open.is_some(), "an accepted spec is an open story");
            accepted(&scenario, "a sandbox spec");
        }
        Err(error) => {
            let text = error.to_string();
            assert!(!text.is_empty(), "a refusal says why");
            bounded(&text);
        }
    }
}

fn accepted(scenario: &Scenario, what: &str) {
    if scenario.open.is_none() {
        return;
    }
    let spec = scenario_to_spec(scenario).expect("an open story has a spec");
    if let Err(error) = parse_spec(&spec) {
        panic!("{what} was accepted, but its own spec is refused: {error}");
    }
}

/// A refusal's text is bounded whatever the input.
fn bounded(text: &str) {
    assert!(
        text.len() <= MAX_REFUSAL_BYTES,
        "a refusal of {} bytes (at most {MAX_REFUSAL_BYTES})",
        text.len()
    );
}

fn refused(error: &ScenarioError, lines: usize) {
    bounded(&error.to_string());
    match error {
        ScenarioError::Io { .. } => panic!("parsing text cannot fail to read: {error}"),
        ScenarioError::Invalid { problems, .. } => {
            assert!(!problems.is_empty(), "a refusal names at least one problem");
            for problem in problems {
                assert!(
                    (1..=lines.max(1) + 1).contains(&problem.line),
                    "problem at line {} of a {lines}-line text: {}",
                    problem.line,
                    problem.message
                );
                assert!(!problem.message.is_empty(), "a problem says what is wrong");
            }
        }
    }
}
