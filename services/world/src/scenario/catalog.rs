//! The shipped scenarios: every `*.toml` under the scenarios directory (one level deep,
//! so a bundle folder `name/scenario.toml` works as well as `name.toml`).

use std::path::{Path, PathBuf};

use super::{Scenario, ScenarioError};

/// A one-line description of a shipped scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioSummary {
    pub name: String,
    pub title: String,
    pub description: String,
    pub characters: Vec<String>,
    pub scenes: usize,
    pub path: PathBuf,
}

/// The directory of shipped scenarios.
#[derive(Debug, Clone)]
pub struct ScenarioCatalog {
    dir: PathBuf,
}

impl ScenarioCatalog {
    #[must_use]
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return files;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                let inner = path.join("scenario.toml");
                if inner.is_file() {
                    files.push(inner);
                }
            } else if path.extension().is_some_and(|e| e == "toml") {
                files.push(path);
            }
        }
        files.sort();
        files
    }

    /// Every shipped scenario, each loaded and validated.
    #[must_use]
    pub fn list(&self) -> Vec<Result<ScenarioSummary, ScenarioError>> {
        self.files()
            .iter()
            .map(|path| {
                Scenario::load(path).map(|s| ScenarioSummary {
                    name: s.name.clone(),
                    title: s.title.clone(),
                    description: s.description.clone(),
                    characters: s.characters.iter().map(|c| c.id.clone()).collect(),
                    scenes: s.scenes.len(),
                    path: path.clone(),
                })
            })
            .collect()
    }

    /// Loads the shipped scenario called `name`.
    pub fn load(&self, name: &str) -> Option<Result<Scenario, ScenarioError>> {
        self.files().into_iter().find_map(|path| {
            let stem_matches = path.file_stem().is_some_and(|s| s == name)
                || path
                    .parent()
                    .and_then(Path::file_name)
                    .is_some_and(|d| d == name);
            match Scenario::load(&path) {
                Ok(s) if s.name == name || stem_matches => Some(Ok(s)),
                Err(e) if stem_matches => Some(Err(e)),
                _ => None,
            }
        })
    }
}
