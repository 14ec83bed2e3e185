# Sluice. `make run` installs what is missing and starts one node on the embedded store (./data);
# `make test` runs the whole suite on PostgreSQL and on PGlite (one file at a time: the long-poll latency test
# must not share the 2 cores with a load test); `make bench` runs the load scenarios. `make sdk` builds the
# TypeScript SDK and the `sluice` CLI (clients/typescript → dist/), which the tests and the typecheck use.
NODE := node --import tsx
TESTS := $(wildcard test/*.test.ts)
SDK := clients/typescript

.PHONY: install run sdk test test-pg test-pglite typecheck bench clean

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.package-lock.json

run: install
	$(NODE) src/main.ts

sdk: install
	npx tsc -p $(SDK)

typecheck: sdk
	npx tsc --noEmit -p .
	npx tsc --noEmit -p examples

test: typecheck test-pg test-pglite

test-pg: sdk
	SLUICE_TEST_STORE=pg $(NODE) --test --test-concurrency=1 $(TESTS)

test-pglite: sdk
	SLUICE_TEST_STORE=pglite $(NODE) --test --test-concurrency=1 $(TESTS)

bench: install
	$(NODE) bench/run.ts

clean:
	rm -rf .tmp data $(SDK)/dist
