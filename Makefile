# Sluice. `make run` installs what is missing, builds the dashboard and starts one node on the embedded store
# (./data); `make test` runs the whole suite on PostgreSQL and on PGlite (below: how); `make build` compiles the
# server to dist/ for plain node (and builds the dashboard); `make sdk` builds the TypeScript SDK and the
# `sluice` CLI (clients/typescript → dist/), which the tests and the typecheck use; `make bench` runs the load
# scenarios.
NODE := node --import tsx
# The node's own flags, as the Dockerfile and deploy/systemd start it (docs/operations.md, "Sizing"): a young
# generation twice V8's default, so that scavenges come half as often.
NODE_FLAGS := --max-semi-space-size=32
TESTS := $(wildcard test/*.test.ts)
SRC := $(shell find src -type f)
UI_SRC := $(shell find ui/src -type f) ui/build.ts ui/tsconfig.json
SDK := clients/typescript

# tsc writes its output even when it reports errors: a failed build must not leave a dist/main.js that make
# would then take for up to date.
.DELETE_ON_ERROR:

.PHONY: install run ui build sdk sdk-types test test-pg test-pglite test-pg-parallel test-pglite-parallel test-serial typecheck lint-deps bench screenshots clean

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.package-lock.json

# The dashboard's static files, served by the node at /ui (ui/README.md).
ui/dist/index.html: node_modules/.package-lock.json $(UI_SRC)
	$(NODE) ui/build.ts

ui: ui/dist/index.html

# The server as JavaScript for plain node: tsc into dist/, plus the migrations it reads at boot. The proto
# file and the dashboard are found beside dist/ (proto/, ui/dist/), as they are beside src/.
dist/main.js: node_modules/.package-lock.json tsconfig.json tsconfig.build.json $(SRC)
	rm -rf dist
	npx tsc -p tsconfig.build.json
	cp -r src/io/db/migrations dist/io/db/migrations
	@touch $@

build: dist/main.js ui

run: install ui
	$(NODE) $(NODE_FLAGS) src/main.ts

sdk: install
	npx tsc -p $(SDK)

# The SDK's TypeScript copy of the OpenAPI document (clients/typescript/src/openapi.ts), from a fresh node;
# test/openapi.test.ts fails while it is stale.
sdk-types: install
	SLUICE_TEST_STORE=pglite $(NODE) test/openapi-types.ts

typecheck: sdk
	npx tsc --noEmit -p .
	npx tsc --noEmit -p ui
	npx tsc --noEmit -p examples

# The layers' import rules (.dependency-cruiser.cjs); test/boundaries.test.ts checks what imports cannot show.
lint-deps: install
	npx depcruise src --config .dependency-cruiser.cjs

# `make test` runs the two stores' suites side by side (a test spends most of its time waiting on a store, a timer
# or a child node, not on a core), then, alone, the files that run three nodes at once or measure the node's
# liveness under hostile load. `make test-pg` / `make test-pglite` run one store's whole suite. Test nodes run two
# actor threads (test/helpers.ts), except in the embedded store's suites (test-pglite, test-pglite-parallel), which
# run them on the main thread (SLUICE_TEST_ACTOR_THREADS=0; ACTOR_THREADS=0 is the default on two cores or fewer):
# each mode gets the whole suite on one store.
SERIAL := test/fuzz.test.ts test/cluster.test.ts test/cluster-failover.test.ts
PARALLEL := $(filter-out $(SERIAL),$(TESTS))

test: typecheck lint-deps build
	$(MAKE) --no-print-directory -j2 --output-sync=target test-pg-parallel test-pglite-parallel
	$(MAKE) --no-print-directory test-serial

test-pg-parallel: sdk
	SLUICE_TEST_STORE=pg $(NODE) --test --test-concurrency=1 $(PARALLEL)

test-pglite-parallel: sdk
	SLUICE_TEST_STORE=pglite SLUICE_TEST_ACTOR_THREADS=0 $(NODE) --test --test-concurrency=1 $(PARALLEL)

test-serial: sdk
	SLUICE_TEST_STORE=pg $(NODE) --test --test-concurrency=1 $(SERIAL)
	SLUICE_TEST_STORE=pglite $(NODE) --test --test-concurrency=1 $(SERIAL)

test-pg: sdk
	SLUICE_TEST_STORE=pg $(NODE) --test --test-concurrency=1 $(TESTS)

test-pglite: sdk
	SLUICE_TEST_STORE=pglite SLUICE_TEST_ACTOR_THREADS=0 $(NODE) --test --test-concurrency=1 $(TESTS)

bench: install
	$(NODE) bench/run.ts

# Screenshots of the main pages into docs/img/ (shown in the README), from a node seeded with sample work.
screenshots: ui
	$(NODE) test/screenshots.ts docs/img

clean:
	rm -rf .tmp data dist ui/dist $(SDK)/dist
