#!/usr/bin/env bash
# generate-ts.sh — regenerates the TypeScript client's types, clients/typescript/src/schema.ts,
# from api/openapi.yaml with openapi-typescript (pinned in package-lock.json). `make generate`
# and scripts/test.sh (the drift check) call it; the output is committed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/npm-install.sh
npm run --silent generate -w clients/typescript >/dev/null
