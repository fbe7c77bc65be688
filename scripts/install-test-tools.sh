#!/usr/bin/env bash
# install-test-tools.sh — make sure the command-line tools the test suite runs are installed:
# curl and jq, which the README's quickstart uses (cmd/server's TestQuickstart runs it).
#
# Idempotent: does nothing when both are on PATH. Otherwise installs the missing ones with
# apt-get (through sudo when not root), as scripts/install-pgvector.sh installs Postgres.
set -euo pipefail

missing=()
for tool in curl jq; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "test tools: curl and jq already installed"
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
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
