#!/usr/bin/env bash
# Fuzzes the scenario parser, inline sandbox specs, and the card and EPUB readers with
# cargo fuzz (libFuzzer):
# `sandbox_crowd` grows each spec to up to 50,000 listed items from a count in its
# first bytes, so validation that grows faster than its input shows as a timeout.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]     (default: 30 s each, every target)
#
# Installs cargo-fuzz (a pinned version, `cargo install --locked`) when it is missing.
# Builds with the nightly toolchain when one is installed; otherwise with the stable
# one, letting it accept libFuzzer's unstable flags (RUSTC_BOOTSTRAP=1). No sanitizer:
# the project forbids unsafe code, so a panic is what a fuzzer can find. Inputs go up
# to 1 MiB, the service's largest message, and one that takes over 10 s counts as a
# crash too (libFuzzer's -timeout): a slow path is as much a finding as a panic.
#
# Each target starts from the committed corpus (fuzz/corpus/TARGET/) and, for the
# scenario parser, from every scenario file in the repository. New inputs go to
# .cache/fuzz/TARGET/ (never into the committed corpus: `FUZZ_MINIMIZE=1` merges them
# in, minimised to a set cover of inputs of at most 2 KB); a crash is saved under .cache/fuzz/artifacts/TARGET/ and fails
# this script. The last lines are one summary per target: executions, corpus, crashes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-30}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(scenario_text sandbox_spec sandbox_crowd card_file epub_file)
version="0.13.2"
say() { printf 'fuzz: %s\n' "$*" >&2; }

if ! cargo fuzz --version 2>/dev/null | grep -q " $version"; then
  say "installing cargo-fuzz $version (cargo install --locked)"
  cargo install --quiet --locked cargo-fuzz --version "$version"
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  fuzz=(cargo +nightly fuzz)
else
  say "no nightly toolchain: building with stable and RUSTC_BOOTSTRAP=1"
  export RUSTC_BOOTSTRAP=1
  fuzz=(cargo fuzz)
fi
target_dir="${CARGO_TARGET_DIR:-$PWD/target}/fuzz"
scratch=".cache/fuzz"
summaries=()
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  new="$scratch/$target"
  artifacts="$scratch/artifacts/$target/"
  seeds="$scratch/seeds/$target"
  mkdir -p "$corpus" "$new" "$artifacts" "$seeds"
  if [ "$target" = scenario_text ]; then
    # Every scenario file in the repository, valid and broken, as seeds.
    find scenarios crates/scenario/tests ingest/tests tests/scenarios -name '*.toml' -size -64k \
      -exec cp -t "$seeds" {} + 2>/dev/null || true
  fi
  if [ "$target" = card_file ] || [ "$target" = epub_file ]; then
    # Other tools' real files beside the repository (never copied into it), and small
    # cards and EPUBs made here, as seeds.
    kind=cards; [ "$target" = epub_file ] && kind=epub
    if [ -d "../shared/fixtures/$kind" ]; then
      find "../shared/fixtures/$kind" -type f -size -1024k -exec cp -t "$seeds" {} + 2>/dev/null || true
    fi
    [ "$target" = card_file ] && find ../shared/fixtures/lorebooks -type f -exec cp -t "$seeds" {} + 2>/dev/null || true
  fi
  if [ "$target" = sandbox_crowd ]; then
    # The 32 smallest specs of the sandbox corpus (mostly broken ones), each grown as
    # far as the target grows anything, with ids repeated and with ids of their own.
    # (awk reads to the end: `head` would close the pipe on `sort`, a SIGPIPE that
    # pipefail turns into a failure.)
    find fuzz/corpus/sandbox_spec -type f -printf '%s %p\n' | sort -n | awk 'NR <= 32' \
      | while read -r _ spec; do
        { printf '\xff\xff\x00'; cat "$spec"; } >"$seeds/$(basename "$spec")-repeated"
        { printf '\xff\xff\x01'; cat "$spec"; } >"$seeds/$(basename "$spec")-own"
      done
  fi
  say "$target: ${seconds}s"
  log="$scratch/$target.log"
  status=0
  "${fuzz[@]}" run --fuzz-dir fuzz --target-dir "$target_dir" --sanitizer none "$target" \
    "$new" "$corpus" "$seeds" -- \
    -max_total_time="$seconds" -artifact_prefix="$artifacts" -print_final_stats=1 \
    -max_len=1048576 -timeout=10 \
    >"$log" 2>&1 || status=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  crashes=$(find "$artifacts" -type f | wc -l)
  units=$(find "$new" "$corpus" -type f | wc -l)
  summaries+=("$target: ${runs:-0} executions in ${seconds}s, corpus $units inputs, crashes $crashes")
  if [ "$status" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    tail -n 40 "$log" >&2
    say "${summaries[-1]}"
    say "$target failed (exit $status); the input is in $artifacts"
    exit 1
  fi
  if [ "${FUZZ_MINIMIZE:-0}" = 1 ]; then
    # The smallest set of inputs covering every feature seen (libFuzzer's set-cover
    # merge), inputs over 2 KB left out so the committed corpus stays small; named
    # seeds (*.pb) stay.
    say "$target: minimising $corpus with the new inputs"
    host=$(rustc -vV | sed -n 's/^host: //p')
    merged=$(mktemp -d)
    "$target_dir/$host/release/$target" -set_cover_merge=1 "$merged" "$corpus" "$new" >>"$log" 2>&1
    find "$merged" -type f -size +2048c -delete
    find "$corpus" -type f ! -name '*.pb' -delete
    cp "$merged"/* "$corpus"/
    rm -rf "$merged"
    say "$target: $(find "$corpus" -type f | wc -l) inputs in $corpus"
  fi
done
printf '%s\n' "${summaries[@]}"
