use std::path::PathBuf;

/// Why embedding failed.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("embedding model file {} is missing: run `bash scripts/setup.sh` (or configure another model directory)", .0.display())]
    MissingFile(PathBuf),
    #[error("onnx runtime: {0}")]
    Runtime(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("embedding worker stopped: {0}")]
    Worker(String),
}
