# LoCoMo evidence-recall benchmark, included by the Makefile
# (`include scripts/locomo.mk`). Uses the Makefile's ENV (scripts/env.sh).
#
#   make locomo                   every session of every conversation into a
#                                 fresh native profile (rule-based provider),
#                                 every question of categories 1-4 recalled;
#                                 prints evidence recall@5/10/20, overall and
#                                 per category, next to a fixed FTS5 bm25
#                                 baseline over the raw turns, and timing. The
#                                 last line is `recall@10 pipeline=x bm25=y`.
#   make locomo LOCOMO=path.json  another copy of the data (default:
#                                 ../shared/bench/locomo/locomo-dev.json from
#                                 the crate root, else /work/shared/...).
#   make locomo MEMORY_URL=http://127.0.0.1:8787
#                                 the same against a live Worker over REST
#                                 (profiles namespaces/locomo/profiles/<conv>,
#                                 token MEMORY_TOKEN, default dev-token), e.g.
#                                 a `make dev` in another shell.
#
# Knobs: LOCOMO_VERBOSE=1 (one line per question), LOCOMO_CHANNELS=1 (each
# channel's recall on its own; native only), LOCOMO_SETTLE_MS (live: wait
# after ingest for the alarm to vectorize, default 2000).
LOCOMO ?=

.PHONY: locomo

locomo:
	@$(ENV) LOCOMO="$(LOCOMO)" cargo bench --bench locomo
