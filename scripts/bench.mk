# `make bench` (included by the Makefile; not part of `make test`): the
# built Worker in workerd on loopback, one profile filled to each size,
# ingest throughput, recall latency (end to end, per stage, against one
# bare FTS5 query), the local vector index's recall@10 against exact
# search, storage and memory. Prints the table and writes docs/bench/
# (results.md, latency.svg, results.json). Takes about two minutes here.
#
#   make bench                                  sizes 1000,10000,100000
#   make bench BENCH_SIZES=1000,10000           a quicker run
#   make bench LOCOMO=/path/to/locomo-dev.json  the LoCoMo development set
#                                               (default: ../shared/bench/locomo/locomo-dev.json)
# Other knobs (environment): BENCH_QUERIES (250), BENCH_INGEST (1000
# messages per size), BENCH_OUT (docs/bench), BENCH_STATE (keep the
# Worker's storage in that dir and resume the fill from it).
.PHONY: bench

BENCH_SIZES ?= 1000,10000,100000

bench: build-bench
	@$(ENV) BENCH_SIZES="$(BENCH_SIZES)" $(if $(LOCOMO),LOCOMO="$(LOCOMO)") node tests/bench/bench.mjs

# `make bench-native`: where recall and ingest spend their time, natively
# (tests/bench/stages.rs): per-stage latency, the SQL statements of one
# recall and of one ingested message, ingest throughput, on a generated
# profile of BENCH_NATIVE_N memories (default 10000). A profiling aid; the
# published figures come from `make bench`. BENCH_NATIVE_PART runs one
# part: recall, ingest, first-pass (the vector index's first-pass sizes),
# filtered (recall with make bench's filters beside unfiltered), cold (recall
# on SQLite alone, as a profile over the memory budget answers, with and
# without make bench's filters)
# or text-batch (a full-text row's cost by batch size).
.PHONY: bench-native
BENCH_NATIVE_N ?= 10000
BENCH_NATIVE_DIR ?= target/bench-native
BENCH_NATIVE_PART ?=

bench-native: setup
	@$(ENV) $(if $(LOCOMO),LOCOMO="$(LOCOMO)") node tests/bench/native-data.mjs "$(BENCH_NATIVE_DIR)" "$(BENCH_NATIVE_N)"
	@$(ENV) cargo bench --features bench --bench stages -- "$(BENCH_NATIVE_DIR)" $(BENCH_NATIVE_PART)

# `make bench-heap [HEAP_MESSAGES=500] [HEAP_CASE=ingest|prose|import|consolidate]`:
# the Rust heap one ingest at the published limits (or of prose, or an
# import of its export) holds, natively, step by step along the Worker's
# and its profile object's path (tests/bench/heap.rs; a counting allocator);
# HEAP_CASE=consolidate: what one consolidation window holds while its
# reasoner decides, against the room it takes (consolidate::WINDOW_ROOM_BYTES).
# Where `make bench-peaks` reads the Wasm memory's mark in workerd, this
# says which copy of the call makes it. HEAP_BIG_REALLOCS=1 prints each
# reallocation of 1 MiB or more and the frames that made it.
.PHONY: bench-heap
HEAP_MESSAGES ?= 500
bench-heap: setup
	@$(ENV) $(if $(HEAP_CASE),HEAP_CASE="$(HEAP_CASE)") $(if $(HEAP_BIG_REALLOCS),HEAP_BIG_REALLOCS=1) cargo bench --quiet --bench heap -- $(HEAP_MESSAGES)

# `make bench-import-keys [IMPORT_KEYS=M,N]`: one key's N values imported
# beside M the profile holds, said by the user in another session and by
# the agent in the same one (tests/bench/import_keys.rs; default
# 16000,16000).
.PHONY: bench-import-keys

bench-import-keys: setup
	@$(ENV) cargo bench --quiet --bench import_keys -- $(IMPORT_KEYS)

# `make bench-key-holders [KEY_HOLDERS_CALLS=2000]`: one key an agent says
# in every call (a support agent's refund reference), natively: ingest
# ms/call as its live holders grow, recall with the key channel's part,
# and the first calls over holders stored before their words' digest
# (schema version 14), beside the same calls said by the user
# (tests/bench/key_holders.rs).
.PHONY: bench-key-holders
KEY_HOLDERS_CALLS ?= 2000
bench-key-holders: setup
	@$(ENV) cargo bench --quiet --bench key_holders -- $(KEY_HOLDERS_CALLS)

# `make bench-profile BENCH_STATE=dir [PROFILE_WHAT=recall|ingest]`: a V8
# CPU profile inside workerd (tests/bench/profile.mjs) of recall, or of
# ingest over REST with its background embedding, on the profile that
# `make bench BENCH_STATE=dir` filled: functions by own and inclusive
# time (Rust names from the Wasm name section) and SQL time by caller.
# Writes dir/<what>.cpuprofile for Chrome DevTools. A profiling aid.
.PHONY: bench-profile
PROFILE_WHAT ?= recall

bench-profile: build-bench
	@test -n "$(BENCH_STATE)" || { echo "bench-profile: set BENCH_STATE to a dir filled by make bench BENCH_STATE=dir" >&2; exit 2; }
	@$(ENV) $(if $(LOCOMO),LOCOMO="$(LOCOMO)") node tests/bench/profile.mjs "$(BENCH_STATE)" "$(PROFILE_WHAT)"

# `make bench-path BENCH_STATE=dir`: where a recall's time goes on its way
# (tests/bench/path.mjs): /health and recall through miniflare's entry
# worker and on the Worker's own socket, a hop to the Durable Object, the
# recall inside it and its SQL alone, the same questions through every
# layer in turn. Writes docs/bench/path.md. A profiling aid.
.PHONY: bench-path

bench-path: build-bench
	@test -n "$(BENCH_STATE)" || { echo "bench-path: set BENCH_STATE to a dir filled by make bench BENCH_STATE=dir" >&2; exit 2; }
	@$(ENV) $(if $(LOCOMO),LOCOMO="$(LOCOMO)") node tests/bench/path.mjs "$(BENCH_STATE)"

# `make bench-multi` (not part of make test): MULTI_PROFILES (24) profiles
# of the LoCoMo development set (~5k memories each) and one of MULTI_BIG
# (100,000) memories in one workerd, recalled round robin MULTI_ROUNDS (2)
# times: the Wasm memory's high-water mark, workerd RSS, recall p50/p95
# for resident and just-evicted profiles, evictions, errors
# (tests/bench/multi.mjs; writes docs/bench/multi/multi.md and multi.json,
# BENCH_OUT elsewhere). MEMORY_BUDGET_MB overrides the budget; MULTI_BIG=0
# leaves the large profile out.
.PHONY: bench-multi
bench-multi: build-bench
	@$(ENV) $(if $(LOCOMO),LOCOMO="$(LOCOMO)") $(if $(MEMORY_BUDGET_MB),MEMORY_BUDGET_MB="$(MEMORY_BUDGET_MB)") node tests/bench/multi.mjs

# `make bench-many` (not part of make test): MANY_PROFILES (2,000) small
# profiles in one workerd, each given a short conversation and recalled,
# then recalled again MANY_ROUNDS - 1 (2) more times, round robin; then
# MANY_LARGE (4) ingests at the documented limits at once: the Wasm memory's
# high-water mark every MANY_STEP (250) profiles, the profiles the budget
# keeps warm, recall p50/p95 per round (tests/bench/many.mjs; writes
# docs/bench/many/many.md and many.json, BENCH_OUT elsewhere).
# MEMORY_BUDGET_MB overrides the budget.
.PHONY: bench-many
bench-many: build
	@$(ENV) $(if $(LOCOMO),LOCOMO="$(LOCOMO)") $(if $(MEMORY_BUDGET_MB),MEMORY_BUDGET_MB="$(MEMORY_BUDGET_MB)") node tests/bench/many.mjs

# `make bench-peaks` (not part of make test): the Wasm memory one large
# request leaves behind, each case in a fresh workerd: an ingest at the
# limits (500 messages of 32 KB; and PEAKS_PROSE_MESSAGES, default 500, of
# prose whose every sentence is a statement, at most 32 kept a message), exports
# of that profile after one and PEAKS_SOURCE_INGESTS (default 4) such
# ingests, imports of PEAKS_SIZES (4,8) MiB NDJSON files cut from the
# second export; before -> after and the growth per body byte
# (tests/bench/peaks.mjs; writes docs/bench/peaks.md and peaks.json,
# BENCH_OUT elsewhere). Takes several minutes.
.PHONY: bench-peaks
bench-peaks: build-bench
	@$(ENV) $(if $(PEAKS_SIZES),PEAKS_SIZES="$(PEAKS_SIZES)") $(if $(PEAKS_SOURCE_INGESTS),PEAKS_SOURCE_INGESTS="$(PEAKS_SOURCE_INGESTS)") $(if $(PEAKS_PROSE_MESSAGES),PEAKS_PROSE_MESSAGES="$(PEAKS_PROSE_MESSAGES)") node tests/bench/peaks.mjs

# `make bench-sequential` (not part of make test): the Wasm memory's mark
# after each of SEQ_INGESTS (default 4) large prose ingests run one after
# another, a profile each, drained in between (tests/bench/sequential.mjs;
# writes docs/bench/sequential.md, BENCH_OUT elsewhere).
.PHONY: bench-sequential
bench-sequential: build
	@$(ENV) $(if $(SEQ_INGESTS),SEQ_INGESTS="$(SEQ_INGESTS)") $(if $(SEQ_MESSAGES),SEQ_MESSAGES="$(SEQ_MESSAGES)") $(if $(SEQ_SETTLE),SEQ_SETTLE="$(SEQ_SETTLE)") node tests/bench/sequential.mjs

# `make bench-first` (not part of make test): what a fresh isolate's first
# calls cost (the runtime's first Durable Object and database, the Wasm
# code each path runs for the first time, the patterns compiled on first
# use), beside the same calls once paid for: FIRST_RUNS (5) fresh workerds
# (tests/bench/first.mjs; writes docs/bench/first.md, BENCH_OUT elsewhere).
.PHONY: bench-first
bench-first: build
	@$(ENV) $(if $(FIRST_RUNS),FIRST_RUNS="$(FIRST_RUNS)") node tests/bench/first.mjs
