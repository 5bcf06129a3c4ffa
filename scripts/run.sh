#!/usr/bin/env bash
# The main job: set up (idempotent), build, and play the shipped scenario on the
# built-in model, streaming the transcript. Extra arguments go to `dramatis run`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
cargo build --release -p dramatis
target="${CARGO_TARGET_DIR:-target}"
exec "$target/release/dramatis" run study-in-scarlet "$@"
