#!/bin/bash
# The hashing dumps draws.py, variants.py and logreg.py read: LoCoMo dev,
# the committed dev styles and seeds 1-31 x 4 styles (129 sets, ~200 s).
# Run from the root of a worktree with dump.patch applied (README.txt
# here), after generating the draws:
#   for s in $(seq 1 31); do python3 tests/fixtures/dev-styles/generate.py --seed $s --out target/draws/seed-$s; done
set -u
source scripts/env.sh
D=target/replay32
mkdir -p $D
run() { # set name, file
  local n=$1 f=$2
  RECALL_DUMP=$PWD/$D/$n.hash.dump LOCOMO=$f LOCOMO_CHANNELS=1 cargo bench --quiet --bench locomo >> $D/harness.log 2>&1
}
run locomo-dev ../shared/bench/locomo/locomo-dev.json
for st in coding-agent knowledge-updates long-answers support-chat; do run dev_$st tests/fixtures/dev-styles/$st.json; done
for s in $(seq 1 31); do for st in coding-agent knowledge-updates long-answers support-chat; do run s${s}_$st target/draws/seed-$s/$st.json; done; done
