//! Every committed fuzz corpus file, and every scenario file in the repository, through
//! the same property checks the fuzz targets run (`scripts/fuzz.sh` runs the fuzzers
//! themselves). A crash a fuzzer once found stays fixed here, on the stable toolchain.

use std::path::{Path, PathBuf};

use dramatis_scenario::ScenarioCatalog;
use dramatis_scenario::fuzz_checks;
use dramatis_scenario::sandbox::scenario_to_spec;
use prost::Message as _;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_in(dir: &Path, extension: Option<&str>, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_in(&path, extension, into);
        } else if extension.is_none_or(|e| path.extension().is_some_and(|x| x == e)) {
            into.push(path);
        }
    }
}

#[test]
fn scenario_files_and_the_scenario_corpus_keep_the_parser_properties() {
    let mut files = Vec::new();
    for dir in [
        "scenarios",
        "crates/scenario/tests/broken",
        "tests/scenarios",
    ] {
        files_in(&repo().join(dir), Some("toml"), &mut files);
    }
    let scenarios = files.len();
    files_in(&repo().join("fuzz/corpus/scenario_text"), None, &mut files);
    assert!(scenarios >= 14, "{scenarios} scenario files");
    assert!(files.len() > scenarios, "the committed corpus is missing");
    for file in &files {
        let data = std::fs::read(file).expect("readable");
        fuzz_checks::scenario_text(&data);
    }
}

#[test]
fn the_sandbox_corpus_keeps_the_spec_properties_and_seeds_the_shipped_sandbox() {
    let corpus = repo().join("fuzz/corpus/sandbox_spec");
    // The seed: the shipped open story as the inline spec `dramatis sandbox` sends.
    let shipped = ScenarioCatalog::new(repo().join("scenarios"))
        .load("lamplighters-ledger")
        .expect("shipped")
        .expect("valid");
    let seed = scenario_to_spec(&shipped).expect("open").encode_to_vec();
    let seed_file = corpus.join("lamplighters-ledger.pb");
    if std::env::var_os("DRAMATIS_WRITE_FUZZ_SEEDS").is_some() {
        std::fs::create_dir_all(&corpus).expect("corpus dir");
        std::fs::write(&seed_file, &seed).expect("seed written");
    }
    assert_eq!(
        std::fs::read(&seed_file).expect("the seed is committed"),
        seed,
        "the seed is the shipped sandbox's spec (DRAMATIS_WRITE_FUZZ_SEEDS=1 rewrites it)"
    );
    let mut files = Vec::new();
    files_in(&corpus, None, &mut files);
    assert!(files.len() > 1, "the committed corpus is missing");
    for file in &files {
        let data = std::fs::read(file).expect("readable");
        fuzz_checks::sandbox_spec(&data);
    }
}

/// The crowd target's committed inputs (among them the one that took the quadratic
/// validation of an earlier build past libFuzzer's timeout: 50,000 empty places), and
/// its inputs at their largest: the shipped sandbox grown to `MAX_CROWD_ITEMS` items,
/// once with ids of their own (accepted) and once repeated (refused with tens of
/// thousands of duplicates), and every committed sandbox input at 64 copies.
#[test]
fn crowds_grown_from_the_sandbox_corpus_keep_the_spec_properties() {
    let mut crowds = Vec::new();
    files_in(&repo().join("fuzz/corpus/sandbox_crowd"), None, &mut crowds);
    assert!(
        crowds
            .iter()
            .any(|f| f.ends_with("fifty-thousand-empty-places")),
        "the regression input is committed"
    );
    for file in &crowds {
        fuzz_checks::sandbox_crowd(&std::fs::read(file).expect("readable"));
    }
    let corpus = repo().join("fuzz/corpus/sandbox_spec");
    let mut files = Vec::new();
    files_in(&corpus, None, &mut files);
    assert!(files.len() > 1, "the committed corpus is missing");
    for file in &files {
        let spec = std::fs::read(file).expect("readable");
        let big = file.ends_with("lamplighters-ledger.pb");
        let copies: u16 = if big { u16::MAX } else { 64 };
        for flags in [0u8, 1] {
            let mut input = copies.to_le_bytes().to_vec();
            input.push(flags);
            input.extend_from_slice(&spec);
            fuzz_checks::sandbox_crowd(&input);
        }
    }
}
