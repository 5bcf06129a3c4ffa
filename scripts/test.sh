#!/usr/bin/env bash
# The tests: set up (idempotent), check formatting, run every Rust test (release
# profile, the same build the main job uses), fuzz the scenario parser and inline
# sandbox specs for 15 s each, check the scenario JSON Schema against the
# loader and the Kubernetes manifests against the API's schemas, then drive a real
# `dramatis serve` from a Python grpcio client generated from proto/, and finally load
# the web viewer in headless Chromium (playwright-core).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh --browser --nats
cargo fmt --all -- --check
cargo test --release --workspace
# The fuzz targets (scenario parser, inline sandbox specs), briefly, from their corpus.
bash scripts/fuzz.sh 15
target="${CARGO_TARGET_DIR:-target}"
venv=".cache/venv"
# The Python side of the checks and of `dramatis bench embed`'s comparison.
if [ ! -x "$venv/bin/python" ] \
  || ! "$venv/bin/python" -c "import grpc_tools, grpc_reflection, jsonschema, onnxruntime, tokenizers, kubernetes_validate" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet grpcio==1.85.1 grpcio-tools==1.85.1 \
    grpcio-reflection==1.85.1 jsonschema==4.26.0 onnxruntime==1.31.1 tokenizers==0.23.3 numpy \
    kubernetes-validate==1.37.0
fi
"$venv/bin/python" tests/python/scenario_schema_check.py
# The Kubernetes manifests against the API's schemas, offline (every resource file the
# kustomization lists; strict: an unknown field fails).
"$venv/bin/kubernetes-validate" --strict --kubernetes-version 1.30.0 \
  deploy/k8s/namespace.yaml deploy/k8s/config.yaml deploy/k8s/world.yaml deploy/k8s/agents.yaml
"$venv/bin/python" tests/python/grpc_client_check.py "$target/release/dramatis"
# The web viewer end to end: Debian's chromium driven by playwright-core (no browser
# download), against a real `dramatis serve` of the binary built above.
DRAMATIS_BIN="$target/release/dramatis" node --test web/tests/viewer.test.mjs
