#!/usr/bin/env bash
# node-setup.sh — what the Node tests need: the npm packages (scripts/npm-install.sh) and the
# TypeScript client and example built with tsc (into their dist/, which git ignores).
# Idempotent; cmd/server's TestNodeClients calls it before running `node --test`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/npm-install.sh
npm run --silent build -w clients/typescript -w examples/agent-ts >&2
