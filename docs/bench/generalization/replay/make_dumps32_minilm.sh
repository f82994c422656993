#!/bin/bash
# The MiniLM dumps of the same 129 sets as make_dumps32.sh, into
# target/replay32m, one vector cache for all sets (a text embedded once).
# Needs the embed server: make embed-server EMBED_PORT=8811 (another shell).
# Run from the root of a worktree with dump.patch applied, after generating
# the draws (make_dumps32.sh says how). Sets given as arguments: only those.
set -u
source scripts/env.sh
D=target/replay32m
mkdir -p $D
run() { # set name, file
  local n=$1 f=$2
  [ -s $D/$n.minilm.dump ] && return
  RECALL_DUMP=$PWD/$D/$n.minilm.dump.part LOCOMO=$f LOCOMO_CHANNELS=1 \
    LOCOMO_EMBEDDER=openai OPENAI_BASE_URL=http://127.0.0.1:8811/v1 \
    OPENAI_EMBEDDING_MODEL=all-MiniLM-L6-v2 OPENAI_EMBED_CACHE=$PWD/$D/vectors.cache \
    cargo bench --quiet --bench locomo >> $D/harness.log 2>&1 && mv $D/$n.minilm.dump.part $D/$n.minilm.dump
}
run locomo-dev ../shared/bench/locomo/locomo-dev.json
for st in coding-agent knowledge-updates long-answers support-chat; do run dev_$st tests/fixtures/dev-styles/$st.json; done
for s in $(seq 1 31); do for st in coding-agent knowledge-updates long-answers support-chat; do run s${s}_$st target/draws/seed-$s/$st.json; done; done
