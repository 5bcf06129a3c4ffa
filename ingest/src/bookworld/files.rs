//! BookWorld's files as it writes them: the preset, the world file, locations, role
//! directories and the distance map, read strictly.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, anyhow, bail};
use serde::Deserialize;
use serde::de::DeserializeOwned;

// Every field BookWorld writes is listed, so that an unknown one is refused; not all
// of them are used.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Preset {
    #[serde(default)]
    pub(super) experiment_subname: String,
    pub(super) world_file_path: String,
    pub(super) map_file_path: String,
    pub(super) loc_file_path: String,
    pub(super) role_file_dir: String,
    pub(super) role_agent_codes: Vec<String>,
    #[serde(default)]
    pub(super) intervention: String,
    #[serde(default)]
    pub(super) script: String,
    pub(super) source: String,
    #[serde(default)]
    pub(super) language: String,
    #[serde(default)]
    pub(super) title: String,
}

// Every field BookWorld writes is listed, so that an unknown one is refused; not all
// of them are used.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WorldInfo {
    #[serde(default)]
    pub(super) source: String,
    #[serde(default)]
    pub(super) world_name: String,
    #[serde(default)]
    pub(super) title: String,
    pub(super) description: String,
    #[serde(default)]
    pub(super) detail: String,
    #[serde(default)]
    pub(super) language: String,
}

// Every field BookWorld writes is listed, so that an unknown one is refused; not all
// of them are used.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LocationInfo {
    pub(super) location_code: String,
    pub(super) location_name: String,
    #[serde(default)]
    pub(super) source: String,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default)]
    pub(super) detail: String,
}

// Every field BookWorld writes is listed, so that an unknown one is refused; not all
// of them are used.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RoleInfo {
    pub(super) role_code: String,
    pub(super) role_name: String,
    #[serde(default)]
    pub(super) source: String,
    #[serde(default)]
    pub(super) activity: Option<f64>,
    pub(super) profile: String,
    #[serde(default)]
    pub(super) nickname: String,
    #[serde(default)]
    pub(super) relation: BTreeMap<String, Relation>,
    #[serde(default)]
    pub(super) gender: String,
    #[serde(default)]
    pub(super) identity: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Relation {
    #[serde(default)]
    pub(super) relation: Vec<String>,
    #[serde(default)]
    pub(super) detail: String,
}

#[derive(Debug, Deserialize)]
pub(super) struct RoleLine {
    pub(super) text: String,
}

pub(super) fn read_json<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| anyhow!("{}: {e}", path.display()))
}

/// Distances between pairs of place codes.
pub(super) type Distances = BTreeMap<(String, String), u32>;

/// The distance map: a square CSV whose first row and first column name the places.
/// Returns the places in order and each pair's distance (the upper triangle, at least 1).
pub(super) fn read_map(path: &Path) -> anyhow::Result<(Vec<String>, Distances)> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(path)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| anyhow!("{}: {e}", path.display()))?
        .iter()
        .skip(1)
        .map(|h| h.trim().to_owned())
        .collect();
    let mut distances = BTreeMap::new();
    for (row, record) in reader.records().enumerate() {
        let record = record.map_err(|e| anyhow!("{}: {e}", path.display()))?;
        let from = record.get(0).unwrap_or_default().trim().to_owned();
        for (column, cell) in record.iter().skip(1).enumerate() {
            let Some(to) = header.get(column) else {
                bail!(
                    "{}:{}: more cells than places in the first row",
                    path.display(),
                    row + 2
                );
            };
            let value: f64 = cell.trim().parse().map_err(|_| {
                anyhow!(
                    "{}:{}: distance {:?} from {from} to {to} is not a number",
                    path.display(),
                    row + 2,
                    cell
                )
            })?;
            if from < *to && value > 0.0 {
                distances.insert((from.clone(), to.clone()), (value.round() as u32).max(1));
            }
        }
    }
    Ok((header, distances))
}
