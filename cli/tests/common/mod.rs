//! What the binary's test files share: the binary, the repository, and a way to run
//! one command to its end.

#![allow(dead_code)]

pub const EXE: &str = env!("CARGO_BIN_EXE_dramatis");

pub fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `dramatis ARGS` to completion; returns (success, stdout, stderr).
pub async fn dramatis(args: &[&str]) -> (bool, String, String) {
    let output = tokio::process::Command::new(EXE)
        .args(args)
        .current_dir(repo())
        .output()
        .await
        .expect("dramatis ran");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
