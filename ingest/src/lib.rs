//! `dramatis-ingest` turns sources into scenarios: a book's text through ReverieMem's
//! Source-to-Memory stages (`book.rs`), and BookWorld presets (`bookworld.rs`). What it writes is a scenario
//! folder in the format `dramatis run` reads, checked by the world's own loader.
//!
//! It sits beside `eval/`, above the services: it validates its output with the world
//! service's scenario loader.

pub mod answers;
pub mod book;
pub mod bookworld;
pub mod file;
