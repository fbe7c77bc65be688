#!/usr/bin/env bash
# lint-spec.sh — lint api/openapi.yaml with Redocly CLI (pinned in package-lock.json, rules in
# redocly.yaml); `make lint-spec` and scripts/test.sh call it. Fails on any error, warning or
# problem silenced by an ignore file: an exception belongs in redocly.yaml, with its reason.
#
# Idempotent: installs the lock file's packages (scripts/npm-install.sh: npm ci, only when
# node_modules is missing or older than a package.json or package-lock.json), then lints.
# Needs Node.js and npm.
set -euo pipefail
cd "$(dirname "$0")/.."

spec=api/openapi.yaml
# No usage reports, no "new version" notices: a lint run talks to no one.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_NOTIFICATIONS=true REDOCLY_SUPPRESS_UPDATE_NOTICE=true

scripts/npm-install.sh

report=$(mktemp)
trap 'rm -f "$report"' EXIT
status=0
npx --no-install redocly lint "$spec" --config redocly.yaml --lint-config error --format json >"$report" 2>/dev/null || status=$?
# totals: "errors warnings ignored", or nothing when the report is not Redocly's JSON.
totals=$(node -e '
  const t = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).totals;
  console.log(t.errors, t.warnings, t.ignored);
' "$report" 2>/dev/null || true)
read -r errors warnings ignored <<<"${totals:-x x x}"
if [ "$status" = 0 ] && [ "$errors" = 0 ] && [ "$warnings" = 0 ] && [ "$ignored" = 0 ]; then
  echo "lint-spec: $spec: 0 errors, 0 warnings (Redocly CLI $(npx --no-install redocly --version 2>/dev/null))"
  exit 0
fi
# Lint again, for people: every problem with the spec's lines around it.
npx --no-install redocly lint "$spec" --config redocly.yaml --lint-config error >&2 || true
if [ -z "$totals" ]; then
  echo "lint-spec: redocly lint exited ${status} without a report" >&2
else
  echo "lint-spec: $spec: ${errors} errors, ${warnings} warnings, ${ignored} ignored (exit ${status}); want none of each" >&2
fi
exit 1
