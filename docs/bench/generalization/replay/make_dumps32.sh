#!/bin/bash
# The dumps draws.py, variants.py, logreg.py and qpp.py read: LoCoMo dev,
# the committed dev styles and seeds 1-31 x 4 styles (129 sets).
# Run from the root of a worktree with dump.patch applied (README.txt
# here), after generating the draws:
#   for s in $(seq 1 31); do python3 tests/fixtures/dev-styles/generate.py --seed $s --out target/draws/seed-$s; done
# EMBEDDER=hash (default): the hashing dumps into target/replay32 (~200 s).
# EMBEDDER=minilm: the MiniLM dumps into target/replay32m, one vector cache
# for all sets (a text embedded once); needs the embed server:
#   make embed-server EMBED_PORT=8811   (another shell)
# A MiniLM set already dumped is kept, so a run cut short goes on.
set -u
source scripts/env.sh
case "${EMBEDDER:-hash}" in
  hash) D=target/replay32; KIND=hash; EMBED=() ;;
  minilm) D=target/replay32m; KIND=minilm
    EMBED=(LOCOMO_EMBEDDER=openai OPENAI_BASE_URL=http://127.0.0.1:8811/v1 OPENAI_EMBEDDING_MODEL=all-MiniLM-L6-v2 OPENAI_EMBED_CACHE=$PWD/$D/vectors.cache) ;;
  *) echo "EMBEDDER is hash or minilm" >&2; exit 2 ;;
esac
mkdir -p $D
run() { # set name, file
  local n=$1 f=$2 out=$D/$1.$KIND.dump
  [ "$KIND" = minilm ] && [ -s $out ] && return
  env "${EMBED[@]}" RECALL_DUMP=$PWD/$out.part LOCOMO=$f LOCOMO_CHANNELS=1 \
    cargo bench --quiet --bench locomo >> $D/harness.log 2>&1 && mv $out.part $out
}
run locomo-dev ../shared/bench/locomo/locomo-dev.json
for st in coding-agent knowledge-updates long-answers support-chat; do run dev_$st tests/fixtures/dev-styles/$st.json; done
for s in $(seq 1 31); do for st in coding-agent knowledge-updates long-answers support-chat; do run s${s}_$st target/draws/seed-$s/$st.json; done; done
