#!/usr/bin/env bash
# vulncheck.sh — govulncheck over the service, failing on a vulnerability its code can reach.
#
# govulncheck reads the Go vulnerability database from vuln.go.dev, which this workplace cannot
# reach; the same reports are published as the golang.org/x/vulndb module (data/osv, one OSV
# file per report), which the Go module proxy serves. So the database is built here from that
# module with vulndb's own generator (cmd/indexdb, pinned in tools/vulndb/go.mod), once per
# vulndb version, and passed to govulncheck (pinned in tools/go.mod) with -db file://.
#
# The reports are the newest the proxy has (golang.org/x/vulndb@latest), so that a report
# published after a release still fails the build; when @latest cannot be resolved, the version
# pinned in tools/vulndb/go.mod is used, and the script says so. Idempotent: a built database is
# kept under $FOOTPRINT_CACHE (default ~/.cache/footprint) until a newer version replaces it.
#
# Exit status: 0 clean, 3 a reachable vulnerability (govulncheck's own), other values errors.
set -euo pipefail
cd "$(dirname "$0")/.."
# go.mod's toolchain line names Go 1.27.3; an older local Go fetches it (see Makefile).
if [ "${GOTOOLCHAIN:-local}" = local ]; then export GOTOOLCHAIN=auto; fi

log() { echo "vulncheck: $*" >&2; }

pinned=$(go list -modfile=tools/vulndb/go.mod -m -f '{{.Version}}' golang.org/x/vulndb)
if ! version=$(go list -m -f '{{.Version}}' golang.org/x/vulndb@latest 2>/dev/null) || [ -z "$version" ]; then
  log "golang.org/x/vulndb@latest did not resolve; using the pinned $pinned"
  version=$pinned
fi

cache=${FOOTPRINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/footprint}/vulndb
db=$cache/$version
if [ ! -f "$db/index/db.json" ]; then
  log "building the vulnerability database from golang.org/x/vulndb@$version"
  src=$(go mod download -json "golang.org/x/vulndb@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src/data/osv" ] || { log "golang.org/x/vulndb@$version has no data/osv"; exit 1; }
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  go tool -modfile=tools/vulndb/go.mod indexdb -vulns "$src/data/osv" -out "$tmp/db"
  rm -rf "$db"
  mv "$tmp/db" "$db"
  # Older versions are superseded by this one.
  find "$cache" -mindepth 1 -maxdepth 1 -type d ! -name "$version" ! -name '.build.*' -exec rm -rf {} +
fi
log "reports of golang.org/x/vulndb@$version; checking with $(go env GOVERSION)"

go tool -modfile=tools/go.mod govulncheck -db "file://$db" ./...
