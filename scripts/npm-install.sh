#!/usr/bin/env bash
# npm-install.sh — installs the packages pinned in package-lock.json (npm ci) for the npm
# workspace at the repository's root (Redocly CLI, the TypeScript client and examples, the
# MCP SDK), only when node_modules is missing or older than a package.json or the lock file.
# Idempotent; scripts/lint-spec.sh, scripts/generate-ts.sh and scripts/node-setup.sh call it.
# Needs Node.js and npm; installs only from the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in node npm npx; do
  command -v "$tool" >/dev/null || { echo "npm-install: $tool not found; install Node.js (20.19+ or 22.12+) and npm" >&2; exit 1; }
done

# npm writes node_modules/.package-lock.json on every install: its age is the install's.
installed=node_modules/.package-lock.json
stale=0
if [ ! -f "$installed" ] || [ package-lock.json -nt "$installed" ]; then
  stale=1
else
  for manifest in package.json clients/typescript/package.json examples/agent-ts/package.json examples/mcp-ts/package.json; do
    if [ "$manifest" -nt "$installed" ]; then stale=1; fi
  done
fi
if [ "$stale" = 1 ]; then
  echo "npm-install: installing the packages in package-lock.json (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
  touch "$installed"
fi
