//! How a long ingest reports its stages (the CLI draws progress bars from it).

/// Reports progress: a stage starts with a number of steps, steps, and finishes.
pub trait Progress: Send + Sync {
    fn start(&self, stage: &str, steps: u64);
    fn step(&self);
    fn finish(&self, stage: &str, note: &str);
}

/// Progress reporting that shows nothing.
#[derive(Debug, Default)]
pub struct Quiet;

impl Progress for Quiet {
    fn start(&self, _: &str, _: u64) {}
    fn step(&self) {}
    fn finish(&self, _: &str, _: &str) {}
}
