#!/usr/bin/env bash
# install-test-tools.sh — make sure the programs the test suite runs are installed: curl and jq,
# which the README's quickstart uses (cmd/server's TestQuickstart runs it), and Chromium, which
# the explorer's browser tests drive headless (internal/http/explorer, through chromedp).
#
# Idempotent: does nothing when all are on PATH. Otherwise installs the missing ones with
# apt-get (through sudo when not root), as scripts/install-pgvector.sh installs Postgres.
# Chromium is Debian's `chromium` package: browser downloads of its own are not needed.
set -euo pipefail

missing=()
for tool in curl jq; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -eq 0 ]; then
  echo "test tools: curl, jq and chromium already installed"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "test tools: ${missing[*]} missing and there is no apt-get here; install them by hand" >&2
  exit 1
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
echo "test tools: installing ${missing[*]}"
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
