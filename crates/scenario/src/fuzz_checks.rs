//! The properties the fuzz targets (`fuzz/`) check, here so that `cargo test` can replay
//! every committed corpus file through exactly the same code on the stable toolchain.
//! Each function panics when a property fails: that is what a fuzzer reports.

use std::path::Path;

use dramatis_proto::v1::{
    SandboxCharacter, SandboxFact, SandboxLocation, SandboxPath, SandboxSpec,
};
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
    spec_checks(&spec);
}

/// Most listed items (places, paths, characters, facts) a crowd input grows a spec to:
/// fifty times the service's count limits, so validation is measured well past them.
pub const MAX_CROWD_ITEMS: usize = 50_000;

/// A small input that stands for a large spec: the first two bytes (little-endian) say
/// how many copies of each listed item to make, bit 0 of the third whether the copies
/// get ids of their own (so a valid spec stays valid) or repeat them (every copy a
/// duplicate to refuse); the rest is a spec. Random mutation of a spec seldom lists
/// enough items to show validation that grows faster than its input, and a
/// megabyte of spec is slow to fuzz; this way a few hundred bytes reach tens of
/// thousands of items. The same checks hold, and libFuzzer's `-timeout` catches a
/// validation that is not linear.
pub fn sandbox_crowd(data: &[u8]) {
    let [low, high, flags, rest @ ..] = data else {
        return;
    };
    if rest.len() > MAX_INPUT {
        return;
    }
    let Ok(mut spec) = SandboxSpec::decode(rest) else {
        return;
    };
    let listed = spec.locations.len() + spec.paths.len() + spec.characters.len() + spec.facts.len();
    let copies =
        usize::from(u16::from_le_bytes([*low, *high])).min(MAX_CROWD_ITEMS / listed.max(1));
    let own = flags & 1 == 1;
    let renamed = |id: &mut String, n: usize| {
        if own {
            id.push_str(&format!("~{n}"));
        }
    };
    grow(&mut spec.locations, copies, |l: &mut SandboxLocation, n| {
        renamed(&mut l.id, n)
    });
    grow(&mut spec.paths, copies, |p: &mut SandboxPath, n| {
        renamed(&mut p.from, n);
        renamed(&mut p.to, n);
    });
    grow(
        &mut spec.characters,
        copies,
        |c: &mut SandboxCharacter, n| {
            renamed(&mut c.id, n);
            renamed(&mut c.location, n);
        },
    );
    grow(&mut spec.facts, copies, |f: &mut SandboxFact, n| {
        renamed(&mut f.id, n);
        for knower in &mut f.known_by {
            renamed(knower, n);
        }
    });
    spec_checks(&spec);
}

/// Appends `copies - 1` copies of every item of `items`, the `n`th made by `rename`.
fn grow<T: Clone>(items: &mut Vec<T>, copies: usize, rename: impl Fn(&mut T, usize)) {
    let first = items.len();
    items.reserve(first * copies.saturating_sub(1));
    for n in 1..copies {
        for i in 0..first {
            let mut copy = items[i].clone();
            rename(&mut copy, n);
            items.push(copy);
        }
    }
}

/// Validating `spec` never panics; a refusal says why, within bounds; an accepted spec
/// is an open story that survives the trip back to a spec.
fn spec_checks(spec: &SandboxSpec) {
    match parse_spec(spec) {
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
