#!/usr/bin/env bash
# test.sh — the whole test suite, exactly as CI runs it (`make test` calls this).
#
# 1. Checks that committed generated code matches api/openapi.yaml (regenerates, then git diff:
#    the server's internal/http/gen, the Go client's client/client.gen.go and the TypeScript
#    client's clients/typescript/src/schema.d.ts, which scripts/generate-ts.sh makes),
#    and lints the spec with Redocly CLI: no error, no warning (scripts/lint-spec.sh; needs
#    Node.js and npm, and installs the CLI from package-lock.json when it is missing or stale).
# 2. gofmt, go vet and golangci-lint (depguard enforces the one-way layering); govulncheck fails
#    on a vulnerability the code can reach (scripts/vulncheck.sh).
# 3. Installs curl and jq if missing (the README's quickstart, which a test runs, uses them),
#    and Chromium (the explorer's browser tests drive it headless), and REQUIRES the browser:
#    those tests fail, never skip. Their screenshots land in tmp/explorer-screenshots/.
# 4. Starts a throwaway Postgres 15 + pgvector (installing pgvector if missing) unless
#    TEST_DATABASE_URL is already set, and REQUIRES it: Postgres-backed tests fail, never skip.
# 5. go test -race over every package, the Node tests included (cmd/server TestNodeClients: the
#    TypeScript client, the TypeScript agent example and the official TypeScript MCP SDK against
#    the real program on both stores; scripts/node-setup.sh installs and builds what they need).
set -euo pipefail
cd "$(dirname "$0")/.."
# go.mod's toolchain line names Go 1.27.3; an older local Go fetches it (see Makefile).
if [ "${GOTOOLCHAIN:-local}" = local ]; then export GOTOOLCHAIN=auto; fi

step() { printf '\n== %s\n' "$*"; }

step "generated code is up to date"
go generate ./...
scripts/generate-ts.sh
if ! git diff --exit-code --stat -- internal/http/gen api client clients/typescript/src; then
  echo "generated code differs from the committed files: run 'make generate' and commit" >&2
  exit 1
fi

step "OpenAPI lint (Redocly CLI, pinned in package-lock.json; rules in redocly.yaml)"
scripts/lint-spec.sh

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi

step "go vet"
go vet ./...

step "golangci-lint (pinned in tools/go.mod; includes the depguard layering rules)"
go tool -modfile=tools/go.mod golangci-lint run ./...

step "govulncheck (pinned in tools/go.mod; reports from golang.org/x/vulndb on the module proxy)"
scripts/vulncheck.sh

step "test tools (curl and jq for the README's quickstart, chromium for the explorer)"
scripts/install-test-tools.sh
export FOOTPRINT_REQUIRE_BROWSER=1

if [ -z "${TEST_DATABASE_URL:-}" ]; then
  step "postgres (throwaway cluster)"
  TEST_DATABASE_URL=$(scripts/test-postgres.sh start)
  export TEST_DATABASE_URL
fi
export FOOTPRINT_REQUIRE_PG=1
# The TypeScript client and MCP tests (cmd/server TestNodeClients) fail, never skip, without Node.
export FOOTPRINT_REQUIRE_NODE=1

step "go test -race"
go test -race -count=1 -timeout 20m "$@" ./...

# 6. Each fuzz target explores for a bounded number of inputs (FUZZTIME, default 10000x) after
#    the normal tests; a crasher fails the run and is left under that package's testdata/fuzz/.
#    A count, not a duration: with a duration, Go 1.26's fuzz coordinator could report its own
#    deadline as a failure ("context deadline exceeded", no crasher) when the workers were
#    starved of CPU at the end (golang/go#75804, fixed in Go 1.27); a count also makes runs on
#    machines of different speeds explore alike.
FUZZTIME=${FUZZTIME:-10000x}
step "fuzz (bounded: ${FUZZTIME} per target)"
for pkg in ./internal/http/server ./internal/http/eventio; do
  for target in $(go test "$pkg" -list '^Fuzz' | grep '^Fuzz'); do
    echo "-- $pkg $target"
    go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME}"
  done
done
