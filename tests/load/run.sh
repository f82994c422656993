#!/usr/bin/env bash
# `make load`: 60 s of mixed recall and ingest against `wrangler dev --local`
# on a free loopback port, with fresh local state. Not part of `make test`.
#   LOAD_SECONDS=60 LOAD_CONNECTIONS=8 bash tests/load/run.sh
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/env.sh"
cd "$ROOT"

SECONDS_=${LOAD_SECONDS:-60}
CONNECTIONS=${LOAD_CONNECTIONS:-8}
work="$(mktemp -d)"
port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
url="http://127.0.0.1:$port"

pgid=""
cleanup() {
  if [ -n "$pgid" ]; then
    kill -TERM -- "-$pgid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 -- "-$pgid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pgid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Build once, then serve a snapshot of the Worker (entry, build/, www/ and
# wrangler.toml without its [build] table) so that edits or rebuilds in the
# work tree during the run cannot make wrangler reload mid-measurement.
bash scripts/build.sh >"$work/build.log" 2>&1 || { tail -40 "$work/build.log" >&2; exit 1; }
app="$work/app"
mkdir -p "$app/src"
cp src/entry.mjs "$app/src/"
cp -r build "$app/build"
cp -r www "$app/www"
awk '/^\[/{skip=($0=="[build]")} !skip' wrangler.toml >"$app/wrangler.toml"
cp .dev.vars.example "$app/.dev.vars"  # the local token, as make dev has it
setsid wrangler dev --config "$app/wrangler.toml" --local --ip 127.0.0.1 --port "$port" \
  --persist-to "$work/state" --show-interactive-dev-session=false >"$work/wrangler.log" 2>&1 &
pgid=$!
echo "load: wrangler dev --local on $url" >&2
for i in $(seq 1 600); do
  if curl -fsS "$url/health" >/dev/null 2>&1; then break; fi
  kill -0 "$pgid" 2>/dev/null || { tail -40 "$work/wrangler.log" >&2; echo "load: wrangler exited" >&2; exit 1; }
  [ "$i" = 600 ] && { tail -40 "$work/wrangler.log" >&2; echo "load: no /health after 5 min" >&2; exit 1; }
  sleep 0.5
done

# Figures also land in build/load.json (git-ignored) for docs/load.md.
mkdir -p build
status=0
node tests/load/load.mjs --url "$url" --duration "$SECONDS_" --connections "$CONNECTIONS" \
  --json build/load.json || status=$?
cp "$work/wrangler.log" build/load-wrangler.log
if [ "$status" != 0 ]; then
  echo "load: errors; the last lines of wrangler's log (all of it in build/load-wrangler.log):" >&2
  grep -v '^\[wrangler:info\] POST .* 200 OK' "$work/wrangler.log" | tail -40 >&2
fi
exit "$status"
