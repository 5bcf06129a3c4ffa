//! Where model files and shipped scenarios live. `scripts/setup.sh` fetches models into
//! `models/` at the repository root; `DRAMATIS_MODELS_DIR` and `DRAMATIS_SCENARIOS_DIR`
//! point elsewhere.

use std::path::{Path, PathBuf};

/// The built-in language model (SmolLM2-135M-Instruct, Q4_1 GGUF).
pub const DEFAULT_LLM_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The default sentence-embedding model directory: all-MiniLM-L6-v2 (int8 ONNX) as
/// set-up rewrites it so ONNX Runtime keeps the weights in eight bits
/// (`scripts/embedder_int8.py`).
pub const DEFAULT_EMBEDDER_DIR: &str = "all-MiniLM-L6-v2-int8-nbits";

/// The ONNX Runtime library the embedder loads.
pub const ONNX_RUNTIME_LIBRARY: &str = "onnxruntime/libonnxruntime.so.1.31.1";

/// The directory holding model files: `DRAMATIS_MODELS_DIR`, else `./models`, else
/// `models/` beside the repository the executable was built in.
#[must_use]
pub fn models_dir() -> PathBuf {
    locate("DRAMATIS_MODELS_DIR", "models")
}

/// The directory of shipped scenarios, found the same way (`DRAMATIS_SCENARIOS_DIR`).
#[must_use]
pub fn scenarios_dir() -> PathBuf {
    locate("DRAMATIS_SCENARIOS_DIR", "scenarios")
}

/// The web viewer's files (`DRAMATIS_VIEWER_DIR`, else `web/`), found the same way.
#[must_use]
pub fn viewer_dir() -> PathBuf {
    locate("DRAMATIS_VIEWER_DIR", "web")
}

fn locate(variable: &str, name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(variable) {
        return PathBuf::from(dir);
    }
    let local = PathBuf::from(name);
    if local.is_dir() {
        return local;
    }
    // target/<profile>/dramatis -> <repo>/<name>
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(|root| root.join(name)))
        .filter(|dir| dir.is_dir())
        .unwrap_or(local)
}

/// Path of a model file, whether or not it exists yet.
#[must_use]
pub fn model_path(file: &str) -> PathBuf {
    models_dir().join(file)
}

/// A clear message for a missing model file.
#[must_use]
pub fn missing_message(path: &Path) -> String {
    format!(
        "model file {} not found: run `bash scripts/setup.sh` (or set DRAMATIS_MODELS_DIR)",
        path.display()
    )
}
