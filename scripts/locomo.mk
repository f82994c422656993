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
#                                 A file in LongMemEval's format (a list of
#                                 questions with haystack_sessions) is
#                                 recognised from its content: one fresh
#                                 profile per question, turn-level recall@k
#                                 (evidence = turns with has_answer) and
#                                 LongMemEval's session-level recall_any@5 /
#                                 recall_all@5, per question_type, beside the
#                                 same bm25 baseline (tests/bench/longmemeval.rs).
#   make locomo MEMORY_URL=http://127.0.0.1:8787
#                                 the same against a live Worker over REST
#                                 (profiles namespaces/locomo/profiles/<conv>,
#                                 token MEMORY_TOKEN, default dev-token), e.g.
#                                 a `make dev` in another shell.
#   make locomo-styles            LOCOMO_CHANNELS=1 over the hand-written
#                                 tests/fixtures/longmemeval-mini.json and the
#                                 generated tests/fixtures/dev-styles/*.json
#                                 (coding-agent sessions, support chats, long
#                                 assistant answers, knowledge updates;
#                                 python3 tests/fixtures/dev-styles/generate.py
#                                 rewrites them, deterministically).
#
#   make locomo-draws             the same over other draws of the four
#                                 styles: the generator run with each seed of
#                                 DRAW_SEEDS (default 1 2 3) into
#                                 target/draws/seed-<s>/ (same templates,
#                                 other values, phrasings and distractors),
#                                 then tests/bench/draws.py's table: each
#                                 set's recall@10 by channel and fused, and
#                                 each style pooled over the committed draw
#                                 and the seeds', flagging fusion below its
#                                 best channel and a channel below its plain
#                                 counterpart. LOCOMO_EMBEDDER etc. apply;
#                                 DRAW_DEV=0 leaves the committed draw out.
#   make locomo-one-profile       the four generated styles' haystacks, each
#                                 session once, in ONE native profile (~4.6k
#                                 memories of long-turn chats), every question
#                                 asked of all of it: ingest throughput and
#                                 recall latency at that size (its recall
#                                 figures mix the sets' facts; read the
#                                 timing line).
#   make locomo-together          LoCoMo's conversations in ONE native
#                                 profile beside the generated styles'
#                                 sessions (the committed draw and the draws
#                                 of FILLER_SEEDS, default 1-7: ~45k turns no
#                                 question asks for), every LoCoMo question
#                                 asked of all of it at each thinking level
#                                 (tests/bench/one_profile.rs;
#                                 docs/bench/generalization/names.txt).
#                                 FILLER_SEEDS= (empty) leaves the five
#                                 conversations alone together.
#
# Knobs: LOCOMO_VERBOSE=1 (one line per question), LOCOMO_ONE_PROFILE=1
# (every question's haystack in one profile, as locomo-one-profile), LOCOMO_CHANNELS=1 (each
# channel's recall on its own; native only), LOCOMO_SETTLE_MS (live: wait
# after ingest for the alarm to vectorize, default 2000), LOCOMO_THINKING
# (low|medium|high), LOCOMO_EMBEDDER=openai (native profiles embed through an
# OpenAI-compatible POST $(OPENAI_BASE_URL)/embeddings, default
# http://127.0.0.1:11434/v1, model OPENAI_EMBEDDING_MODEL, default
# nomic-embed-text, optional OPENAI_API_KEY; at most 64 texts a request;
# e.g. a `make embed-server` in another shell; OPENAI_EMBED_CACHE=<file>
# keeps the vectors fetched, by model and text, so a rerun that changes
# only the scoring asks the server for nothing; the embeddings line counts
# what the file answered). The header names the embedder used. LOCOMO_PASSAGES=<words> [LOCOMO_PASSAGE_MIX=<only|share>]
# makes the bm25 baseline score long turns as passages (windows of that
# many words): by the best window alone, or by the turn's own bm25 plus
# share x its best window's (docs/bench/generalization/passages.txt).
# LOCOMO_VERBOSE=1 with LOCOMO_CHANNELS=1 prints each channel's recall@10
# per question of a LongMemEval-format file. LOCOMO_EXPLAIN=<text> recalls
# every question containing <text> with `explain` (native) and prints, on
# stderr, each candidate's fused score, sources, channel contributions
# (channel@rank=value) and summary. LOCOMO_DUMP=<dir> writes each native
# profile's export NDJSON there (one file per conversation, or per question
# of a LongMemEval-format file). LOCOMO_VERBOSE=1 also names, for a
# LongMemEval-format file, the evidence turns no live memory cites.
LOCOMO ?=
LOCOMO_STYLES ?= tests/fixtures/longmemeval-mini.json $(wildcard tests/fixtures/dev-styles/*.json)

DRAW_SEEDS ?= 1 2 3
FILLER_SEEDS ?= 1 2 3 4 5 6 7
# DRAW_DEV=0 leaves out the committed draw: the seeds' draws alone (e.g.
# seeds held out from a choice made on the others).
DRAW_DEV ?= 1
DRAW_STYLES := coding-agent knowledge-updates long-answers support-chat

.PHONY: locomo locomo-styles locomo-draws locomo-one-profile locomo-together

locomo:
	@$(ENV) LOCOMO="$(LOCOMO)" cargo bench --bench locomo

locomo-styles:
	@set -e; for f in $(LOCOMO_STYLES); do \
		echo "== $$f"; \
		$(ENV) LOCOMO="$$f" LOCOMO_CHANNELS=1 cargo bench --quiet --bench locomo; \
	done

locomo-draws:
	@set -eo pipefail; for s in $(DRAW_SEEDS); do \
		python3 tests/fixtures/dev-styles/generate.py --seed $$s --out target/draws/seed-$$s > /dev/null; \
	done; \
	for f in $(foreach s,$(if $(filter 0,$(DRAW_DEV)),,dev) $(DRAW_SEEDS),$(foreach t,$(DRAW_STYLES),$(if $(filter dev,$(s)),tests/fixtures/dev-styles/$(t).json,target/draws/seed-$(s)/$(t).json))); do \
		echo "== $$f"; \
		$(ENV) LOCOMO="$$f" LOCOMO_CHANNELS=1 cargo bench --quiet --bench locomo; \
	done | python3 tests/bench/draws.py

locomo-one-profile:
	@mkdir -p target
	@python3 -c 'import json,sys; json.dump([q for f in sys.argv[1:] for q in json.load(open(f))], open("target/all-styles.json","w"))' $(wildcard tests/fixtures/dev-styles/*.json)
	@$(ENV) LOCOMO=target/all-styles.json LOCOMO_ONE_PROFILE=1 cargo bench --quiet --bench locomo

locomo-together:
	@set -eo pipefail; for s in $(FILLER_SEEDS); do \
		python3 tests/fixtures/dev-styles/generate.py --seed $$s --out target/draws/seed-$$s > /dev/null; \
	done; \
	filler="$(if $(strip $(FILLER_SEEDS)),$(wildcard tests/fixtures/dev-styles/*.json) $(foreach s,$(FILLER_SEEDS),$(foreach t,$(DRAW_STYLES),target/draws/seed-$(s)/$(t).json)))"; \
	for level in low medium high; do \
		echo "== thinkingLevel $$level"; \
		$(ENV) LOCOMO="$(LOCOMO)" LOCOMO_ONE_PROFILE=1 LOCOMO_FILLER="$$filler" LOCOMO_THINKING=$$level cargo bench --quiet --bench locomo; \
	done
