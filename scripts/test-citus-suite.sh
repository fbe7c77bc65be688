#!/usr/bin/env bash
# test-citus-suite.sh — every test that touches Postgres, on a Citus cluster (`make test-citus`
# calls this; .ci/run runs it after `make test`).
#
# 1. Builds Citus from the vendored source if it is not installed (scripts/install-citus.sh,
#    about 1.5 minutes on 2 cores, once) and starts the throwaway cluster of one coordinator
#    and two workers (scripts/test-citus.sh start), unless TEST_DATABASE_URL already names a
#    Citus coordinator.
# 2. Runs the packages whose tests use Postgres against it, REQUIRING both: Postgres tests fail
#    rather than skip (FOOTPRINT_REQUIRE_PG=1), and so do the Citus-only tests
#    (FOOTPRINT_REQUIRE_CITUS=1; on plain Postgres they skip). Every per-test database is a
#    clone of a template distributed by the migrations (internal/store/pg/pgtest), so the same
#    tests run on distributed tables: the store conformance suite, the HTTP suites (turns,
#    idempotency, recall, runs and their SSE, explain and ablations, forget, sweeps), the
#    migration tests, the crash test with a worker killed (on a private cluster of its own),
#    two service processes on one conversation, shard moves while writing, the Node clients.
#
# Without -race: `make test` runs every package with the race detector on plain Postgres, and
# nothing here is racy in a way Citus could change; the cluster's three servers already share
# this machine's cores with the tests. Extra arguments go to go test (e.g. -run, -v).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${GOTOOLCHAIN:-local}" = local ]; then export GOTOOLCHAIN=auto; fi

step() { printf '\n== %s\n' "$*"; }

if [ -z "${TEST_DATABASE_URL:-}" ]; then
  step "citus (throwaway cluster: coordinator 127.0.0.1:${FOOTPRINT_CITUS_PORT:-54340} and two workers)"
  start=$(date +%s)
  TEST_DATABASE_URL=$(scripts/test-citus.sh start)
  export TEST_DATABASE_URL
  echo "cluster up in $(($(date +%s) - start))s: $TEST_DATABASE_URL"
fi
export FOOTPRINT_REQUIRE_PG=1 FOOTPRINT_REQUIRE_CITUS=1
# The TypeScript client and MCP tests (cmd/server TestNodeClients) fail, never skip, without Node.
export FOOTPRINT_REQUIRE_NODE=1

# Every package with a test that opens Postgres (pgtest), and nothing else.
packages=(./internal/store/... ./internal/http/... ./cmd/server ./client ./examples/...)

step "go test on Citus (${packages[*]})"
start=$(date +%s)
go test -count=1 -timeout 20m "$@" "${packages[@]}"
echo "Citus suite: $(($(date +%s) - start))s"
