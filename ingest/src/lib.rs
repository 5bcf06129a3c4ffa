//! `dramatis-ingest` turns sources into scenarios: BookWorld presets today
//! (`bookworld.rs`), Source-to-Memory book ingest next. What it writes is a scenario
//! folder in the format `dramatis run` reads, checked by the world's own loader.
//!
//! It sits beside `eval/`, above the services: it validates its output with the world
//! service's scenario loader.

pub mod bookworld;
pub mod file;
