# footprint — run `make help` for the targets.
.DEFAULT_GOAL := help
SHELL := /usr/bin/env bash

.PHONY: help run test generate verify lint bench postgres

help: ## Show this help.
	@grep -hE '^[a-z-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-10s %s\n", $$1, $$2}'

run: ## Run the server (no config: in-memory store, built-in embedder, open single tenant).
	go run ./cmd/server

test: ## Run the whole test suite (starts a throwaway Postgres + pgvector; what CI runs).
	scripts/test.sh

generate: ## Regenerate the HTTP layer from api/openapi.yaml.
	go generate ./...

verify: generate ## Fail if generated code drifted, or gofmt/vet complain.
	git diff --exit-code -- internal/http/api api
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	go vet ./...

lint: ## Run golangci-lint (pinned in tools/go.mod).
	go tool -modfile=tools/go.mod golangci-lint run ./...

bench: ## Run the benchmarks (they print ratios against in-run baselines).
	go test -run '^$$' -bench . -benchmem ./...

postgres: ## Start the throwaway test Postgres and print its DSN.
	scripts/test-postgres.sh start
