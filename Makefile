# footprint — run `make help` for the targets.
.DEFAULT_GOAL := help
SHELL := /usr/bin/env bash

# go.mod's toolchain line names Go 1.27.3, the first release without the standard-library
# vulnerabilities govulncheck reports in 1.26.8. With an older Go, `auto` fetches 1.27.3 from the
# module proxy; a Go environment that says GOTOOLCHAIN=local would build with the older Go.
export GOTOOLCHAIN := $(if $(filter-out local,$(GOTOOLCHAIN)),$(GOTOOLCHAIN),auto)

.PHONY: help run test test-citus generate verify lint lint-spec vulncheck bench postgres citus

help: ## Show this help.
	@grep -hE '^[a-z-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-10s %s\n", $$1, $$2}'

run: ## Run the server (no config: in-memory store, built-in embedder, open single tenant).
	go run ./cmd/server

test: ## Run the whole test suite (starts a throwaway Postgres + pgvector; what CI runs).
	scripts/test.sh

test-citus: ## Run every Postgres-backed test on a Citus cluster (builds Citus once, starts one coordinator and two workers).
	scripts/test-citus-suite.sh

generate: ## Regenerate everything made from api/openapi.yaml: the HTTP layer, the Go client, the TypeScript client's types.
	go generate ./...
	scripts/generate-ts.sh

verify: generate ## Fail if generated code drifted, or gofmt/vet complain.
	git diff --exit-code -- internal/http/gen api client clients/typescript/src
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...

lint: ## Run golangci-lint (pinned in tools/go.mod).
	go tool -modfile=tools/go.mod golangci-lint run ./...

lint-spec: ## Lint api/openapi.yaml with Redocly CLI (pinned in package-lock.json; rules in redocly.yaml).
	scripts/lint-spec.sh

vulncheck: ## Run govulncheck (pinned in tools/go.mod) against reports from the module proxy's golang.org/x/vulndb.
	scripts/vulncheck.sh

bench: ## Run the benchmarks (they print ratios against in-run baselines).
	go test -run '^$$' -bench . -benchmem ./...

postgres: ## Start the throwaway test Postgres and print its DSN.
	scripts/test-postgres.sh start

citus: ## Start the throwaway test Citus cluster (coordinator and two workers) and print the coordinator's DSN.
	scripts/test-citus.sh start
