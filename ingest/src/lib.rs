//! `dramatis-ingest` turns sources into scenarios: a book's text through ReverieMem's
//! Source-to-Memory stages (`book.rs`), and BookWorld presets (`bookworld.rs`). What it
//! writes is a scenario folder in the format `dramatis run` reads, checked by the
//! scenario crate's own loader. A reader's answer file (`answers.rs`) and the score of
//! an ingest against it (`scoring.rs`) measure it.
//!
//! It links the scenario crate, never a service.

pub mod answers;
pub mod book;
pub mod bookworld;
pub mod card;
pub mod file;
pub mod scoring;
