#!/usr/bin/env bash
# Property-based test of the REST API from its OpenAPI document: schemathesis
# (pinned in tests/schemathesis/requirements.txt, installed by scripts/setup.sh
# into .tools/schemathesis) against the BUILT Worker served in workerd on a
# free loopback port (tests/schemathesis/serve.mjs). Fixed seed, bounded
# examples per operation; fails on any 5xx or any response that does not
# conform to the document. Run by `make test-schemathesis`.
#
#   ST_EXAMPLES=30 ST_SEED=20261130 bash tests/schemathesis/run.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"

ST="$ROOT/.tools/schemathesis/bin/st"
EXAMPLES="${ST_EXAMPLES:-30}"
SEED="${ST_SEED:-20261130}"
[ -x "$ST" ] || { echo "run.sh: $ST missing - run scripts/setup.sh" >&2; exit 1; }
[ -f build/index.js ] || { echo "run.sh: build/ missing - run scripts/build.sh" >&2; exit 1; }

work="$(mktemp -d)"
server_pid=""
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ] && [ -s "$work/serve.err" ]; then
    echo "--- the server's stderr (last 60 lines) ---" >&2
    tail -n 60 "$work/serve.err" >&2
  fi
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The server stops by itself after 15 minutes whatever happens here.
# Deleted profiles are purged at once, so the run goes on with them empty.
node tests/schemathesis/serve.mjs --var PROFILE_DELETE_GRACE_SECONDS=0 --max-seconds 900 >"$work/serve.out" 2>"$work/serve.err" &
server_pid=$!
url=""
for _ in $(seq 1 300); do
  url="$(awk '/^READY /{print $2; exit}' "$work/serve.out")"
  [ -n "$url" ] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.err" >&2; echo "run.sh: server exited" >&2; exit 1; }
  sleep 0.2
done
[ -n "$url" ] || { echo "run.sh: server did not start within 60 s" >&2; exit 1; }
case "$url" in http://127.0.0.1:*) ;; *) echo "run.sh: refusing non-loopback $url" >&2; exit 1 ;; esac
echo "schemathesis: $url, seed $SEED, $EXAMPLES examples per operation" >&2

# Checks: no 5xx; status codes, content types, headers and bodies as
# documented; 405 for undocumented methods; a deleted resource is gone
# (use_after_free); a created one is there; auth is not ignored.
# Not checked: positive_data_acceptance / negative_data_rejection (whether
# the document's request schemas are exactly as strict as validation;
# see tests/schemathesis/README.md).
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance
checks+=,response_schema_conformance,unsupported_method,use_after_free,ensure_resource_availability,ignored_auth

cd "$work"
timeout 900 "$ST" run "$url/openapi.json" \
  --url "$url" \
  -H "Authorization: Bearer dev-token" \
  --checks "$checks" \
  --phases coverage,fuzzing,stateful \
  --max-examples "$EXAMPLES" \
  --seed "$SEED" \
  --workers 1 \
  --request-timeout 30 \
  --generation-database none \
  --no-color \
  --report junit --report-junit-path "$work/junit.xml"
