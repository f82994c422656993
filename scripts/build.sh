#!/usr/bin/env bash
# Builds the Worker into build/ with worker-build, fully offline:
#   build/index.js       ES module (wasm-bindgen glue + worker-build shim),
#                        exports `default` and the Durable Object classes
#   build/index_bg.wasm  the Rust code
# src/entry.mjs imports build/index.js. wrangler.toml's [build] runs this.
#
# Optional size pass: WASM_OPT_BIN=/path/to/wasm-opt, or OPTIMIZE=1 with the
# npm package binaryen installed (node_modules/.bin/wasm-opt).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

for bin in "$CARGO_HOME/bin/worker-build" "$WASM_BINDGEN_BIN" "$ESBUILD_BIN"; do
  if [ ! -x "$bin" ]; then
    echo "build.sh: missing $bin - run scripts/setup.sh first" >&2
    exit 1
  fi
done

# worker-build would download wasm-opt; never let it (--no-opt). If asked,
# run wasm-opt ourselves afterwards with the flags worker-build would use.
wasm_opt="${WASM_OPT_BIN:-}"
if [ -z "$wasm_opt" ] && [ "${OPTIMIZE:-0}" = 1 ]; then
  wasm_opt="$ROOT/node_modules/.bin/wasm-opt"
  [ -x "$wasm_opt" ] || { echo "build.sh: OPTIMIZE=1 needs 'npm install --no-save binaryen'" >&2; exit 1; }
fi
unset WASM_OPT_BIN

# FEATURES=bench builds the benchmark operations in (make bench and its
# kin); the production build (make build, wrangler's [build]) has none.
features=()
[ -n "${FEATURES:-}" ] && features=(--features "$FEATURES")
"$CARGO_HOME/bin/worker-build" --release --no-opt "${features[@]}" "$@"
printf '%s\n' "${FEATURES:-}" > build/features

# The production build carries no function names (wasm-opt drops them too,
# unless asked to keep debug info); a benchmark build keeps them for
# `make bench-profile`'s function names.
if [ -z "${FEATURES:-}" ]; then
  node "$ROOT/scripts/strip-names.mjs" build/index_bg.wasm
fi

if [ -n "$wasm_opt" ]; then
  echo "build.sh: wasm-opt -Oz build/index_bg.wasm" >&2
  "$wasm_opt" build/index_bg.wasm -o build/index_bg.opt.wasm -Oz --debuginfo \
    --enable-mutable-globals --enable-sign-ext --enable-nontrapping-float-to-int \
    --enable-bulk-memory --enable-multivalue --enable-reference-types \
    --enable-exception-handling
  mv build/index_bg.opt.wasm build/index_bg.wasm
fi
