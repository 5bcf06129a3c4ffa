#!/usr/bin/env bash
# The tests, as suites that each run whatever failed before them:
#   setup    set-up (idempotent), with chromium and nats-server for the tests
#   format   cargo fmt --check
#   clippy   cargo clippy on every target, warnings as errors (a function over 100
#            lines among them: clippy.toml)
#   rust     every Rust test (release profile, the build the main job uses),
#            --no-fail-fast: every test runs, whichever fails; by cargo-nextest
#            when the machine has it, else by cargo test
#   fuzz     the scenario parser, inline sandbox specs, cards and EPUBs, 15 s each, from
#            their corpus (named only: the default run replays the corpus in `rust`)
#   schema   the scenario JSON Schema against the loader
#   k8s      the Kubernetes manifests against the API's schemas, offline
#   grpcio   a Python grpcio client generated from proto/ against a real `dramatis serve`
#   viewer   the web viewer in headless Chromium (playwright-core)
# It ends with one line per suite (passed or FAILED, and its time) and exits non-zero
# when any failed. `bash scripts/test.sh rust grpcio` runs only the suites named.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
target="${CARGO_TARGET_DIR:-target}"
venv=".cache/venv"

suite_setup() { bash scripts/setup.sh --browser --nats; }
suite_format() { cargo fmt --all -- --check; }
suite_clippy() { cargo clippy --release --workspace --all-targets -- -D warnings; }
# cargo-nextest, where the machine has it, runs the tests of every binary side by side
# (about 7 minutes on two cores, against about 20 for cargo test, which runs one binary
# after another, most of them waiting on servers). nextest gives each test its own
# process and runs it on the main thread; onnx_memory reads its process's resident
# memory, and glibc keeps the main thread's freed pages, so that binary runs under
# cargo test, as the agent's embedder runs off the main thread.
suite_rust() {
  if cargo nextest --version >/dev/null 2>&1; then
    local status=0
    cargo nextest run --release --workspace --no-fail-fast -E 'not binary(onnx_memory)' || status=$?
    # --workspace: the features nextest built with, so the binary is already built
    # (with -p alone, cargo resolves the package's features apart and rebuilds its
    # dependencies: a minute and a half on two cores).
    cargo test --release --workspace --test onnx_memory || status=$?
    return "$status"
  fi
  cargo test --release --workspace --no-fail-fast
}
suite_fuzz() { bash scripts/fuzz.sh 15; }

# The Python side of the checks and of `dramatis bench embed`'s comparison.
python_env() {
  if [ ! -x "$venv/bin/python" ] \
    || ! "$venv/bin/python" -c "import grpc_tools, grpc_reflection, jsonschema, onnxruntime, tokenizers, kubernetes_validate" 2>/dev/null; then
    python3 -m venv "$venv" \
      && "$venv/bin/python" -m pip install --quiet grpcio==1.85.1 grpcio-tools==1.85.1 \
        grpcio-reflection==1.85.1 jsonschema==4.26.0 onnxruntime==1.31.1 tokenizers==0.23.3 numpy \
        kubernetes-validate==1.37.0
  fi
}
suite_schema() { python_env && "$venv/bin/python" tests/python/scenario_schema_check.py; }
# Every resource file the kustomization lists; strict: an unknown field fails.
suite_k8s() {
  python_env && "$venv/bin/kubernetes-validate" --strict --kubernetes-version 1.30.0 \
    deploy/k8s/namespace.yaml deploy/k8s/config.yaml deploy/k8s/world.yaml deploy/k8s/agents.yaml
}
# The binary the Rust suite built; built here when that suite did not run or failed
# before building it.
dramatis_bin() { cargo build --release --quiet -p dramatis && printf '%s\n' "$target/release/dramatis"; }
suite_grpcio() {
  local bin
  bin="$(dramatis_bin)" && python_env && "$venv/bin/python" tests/python/grpc_client_check.py "$bin"
}
# Debian's chromium driven by playwright-core (no browser download), against a real
# `dramatis serve` of the binary built above.
suite_viewer() {
  local bin
  bin="$(dramatis_bin)" && DRAMATIS_BIN="$bin" node --test web/tests/viewer.test.mjs
}

all=(setup format clippy rust fuzz schema k8s grpcio viewer)
# The default run leaves the live fuzzers out: their instrumented build of their own is
# minutes of the CI budget, and the Rust suite replays every committed corpus input
# through the same checks (crates/scenario/tests/fuzz_corpus.rs). `bash scripts/test.sh
# fuzz` runs them.
default=(setup format clippy rust schema k8s grpcio viewer)
chosen=("$@")
((${#chosen[@]})) || chosen=("${default[@]}")
for name in "${chosen[@]}"; do
  if ! declare -F "suite_$name" >/dev/null; then
    printf 'test: unknown suite %s (known: %s)\n' "$name" "${all[*]}" >&2
    exit 2
  fi
done

summary=()
failed=0
for name in "${chosen[@]}"; do
  printf '\n==== test: %s\n' "$name" >&2
  started=$SECONDS
  if "suite_$name"; then
    status="passed"
  else
    status="FAILED (exit $?)"
    failed=$((failed + 1))
  fi
  took=$((SECONDS - started))
  summary+=("$(printf '%-8s %-16s %dm%02ds' "$name" "$status" $((took / 60)) $((took % 60)))")
done

printf '\n==== test: summary\n'
printf '%s\n' "${summary[@]}"
if ((failed)); then
  printf 'test: %d of %d suites failed\n' "$failed" "${#chosen[@]}"
  exit 1
fi
printf 'test: all %d suites passed in %dm%02ds\n' "${#chosen[@]}" $((SECONDS / 60)) $((SECONDS % 60))
