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

    /// The scenario files in the directory. A symlink whose target lies outside the
    /// directory is left out (with a warning): a name a client sends must not reach a
    /// file the operator did not put there.
    fn files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return files;
        };
        let root = std::fs::canonicalize(&self.dir).unwrap_or_else(|_| self.dir.clone());
        for entry in entries.flatten() {
            let path = entry.path();
            let candidate = if path.is_dir() {
                path.join("scenario.toml")
            } else if path.extension().is_some_and(|e| e == "toml") {
                path
            } else {
                continue;
            };
            match std::fs::canonicalize(&candidate) {
                Ok(real) if real.starts_with(&root) => {
                    if real.is_file() {
                        files.push(candidate);
                    }
                }
                Ok(_) => tracing::warn!(file = %candidate.display(),
                    "a scenario link points outside the scenarios directory; left out"),
                Err(_) => {}
            }
        }
        files.sort();
        files
    }

    /// `path` as clients are shown it: relative to the directory (never the server's
    /// own layout).
    #[must_use]
    pub fn shown(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.dir)
            .map(Path::to_path_buf)
            .unwrap_or_else(|_| path.file_name().map(PathBuf::from).unwrap_or_default())
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
                Err(e) if stem_matches => Some(Err(e.shown_as(self.shown(&path)))),
                _ => None,
            }
        })
    }
}

/// The scenario file a command-line argument names on this machine: a file, or a folder
/// holding `scenario.toml` (a scenario folder, or one `dramatis ingest` wrote). `None`
/// when nothing by that name exists here (it may be a shipped scenario's name); an error
/// for a folder with no `scenario.toml`.
pub fn local_file(arg: &str) -> Result<Option<PathBuf>, ScenarioError> {
    let path = Path::new(arg);
    if path.is_file() {
        return Ok(Some(path.to_path_buf()));
    }
    if path.is_dir() {
        let file = path.join("scenario.toml");
        if file.is_file() {
            return Ok(Some(file));
        }
        return Err(ScenarioError::Io {
            path: path.to_path_buf(),
            message: "a folder without a scenario.toml; give a scenario file, a folder that \
                      holds one (as `dramatis ingest` writes), or a shipped scenario's name"
                .to_owned(),
        });
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario linked in from outside the directory is not served by name and not
    /// listed (before, `scenario_name` followed the link); a link within it is. Paths
    /// are shown relative to the directory.
    #[test]
    fn links_out_of_the_directory_are_left_out_and_paths_are_relative() {
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/lamplighters-ledger/scenario.toml");
        let outside = tempfile::tempdir().expect("outside");
        let secret = outside.path().join("secret.toml");
        std::fs::copy(&shipped, &secret).expect("copy");
        let dir = tempfile::tempdir().expect("scenarios");
        std::fs::create_dir(dir.path().join("ledger")).expect("bundle");
        std::fs::copy(&shipped, dir.path().join("ledger/scenario.toml")).expect("copy");
        std::os::unix::fs::symlink(&secret, dir.path().join("secret.toml")).expect("link out");
        std::os::unix::fs::symlink(
            dir.path().join("ledger/scenario.toml"),
            dir.path().join("inside.toml"),
        )
        .expect("link in");
        let catalog = ScenarioCatalog::new(dir.path());
        let shown: Vec<PathBuf> = catalog
            .list()
            .into_iter()
            .map(|s| catalog.shown(&s.expect("valid").path))
            .collect();
        assert_eq!(
            shown,
            [
                PathBuf::from("inside.toml"),
                PathBuf::from("ledger/scenario.toml")
            ]
        );
        assert!(catalog.load("secret").is_none(), "the link out is followed");
        assert!(catalog.load("ledger").is_some_and(|s| s.is_ok()));
    }
}
