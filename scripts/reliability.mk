# Reliability targets, included by the Makefile (`include scripts/reliability.mk`).
# Uses the Makefile's ENV (scripts/env.sh) and its setup/build targets.
#
#   make test-schemathesis  property-based test of the REST API from its OpenAPI
#                           document (schemathesis, fixed seed, bounded examples)
#                           against the built Worker in workerd on loopback:
#                           no 5xx, every response as documented. Part of `make test`.
#   make load               60 s of mixed recall and ingest against
#                           `wrangler dev --local` on loopback (autocannon);
#                           prints throughput, p99 and errors. NOT part of
#                           `make test`; figures go into docs/load.md.
#
# Knobs: ST_EXAMPLES (default 50 per operation), ST_SEED (20261130),
#        LOAD_SECONDS (60), LOAD_CONNECTIONS (8).
ST_EXAMPLES ?= 50
ST_SEED ?= 20261130
LOAD_SECONDS ?= 60
LOAD_CONNECTIONS ?= 8

.PHONY: test-schemathesis load

test-schemathesis: setup build
	@$(ENV) ST_EXAMPLES=$(ST_EXAMPLES) ST_SEED=$(ST_SEED) bash tests/schemathesis/run.sh

load: setup
	@$(ENV) LOAD_SECONDS=$(LOAD_SECONDS) LOAD_CONNECTIONS=$(LOAD_CONNECTIONS) bash tests/load/run.sh
