//! Fingerprints the ingest sources, so that stage results cached by one build of the
//! ingest are never reused by another that would compute them differently.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

fn main() {
    let src = Path::new("src");
    println!("cargo:rerun-if-changed=src");
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    let mut hasher = DefaultHasher::new();
    for file in &files {
        file.hash(&mut hasher);
        std::fs::read(file)
            .expect("an ingest source file is readable")
            .hash(&mut hasher);
    }
    println!(
        "cargo:rustc-env=DRAMATIS_INGEST_SOURCE={:016x}",
        hasher.finish()
    );
}
