#!/usr/bin/env bash
# install-bench-text.sh — make sure the real text the benchmarks read is installed: the man
# pages (man-db, manpages, manpages-dev) that bench/quality and bench/recall draw their
# queries, conversations and corpora from. Every other installed package adds its own pages.
#
# Idempotent: does nothing when the packages are installed. Otherwise installs the missing ones
# with apt-get (through sudo when not root). A system whose dpkg is told to leave man pages out
# (a path-exclude for /usr/share/man, as minimal container images have) gets none: the script
# says so.
set -euo pipefail

missing=()
for p in man-db manpages manpages-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "bench text: ${missing[*]} missing and there is no apt-get here; install them by hand" >&2
    exit 1
  fi
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  echo "bench text: installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
pages=$(find /usr/share/man/man1 /usr/share/man/man5 /usr/share/man/man8 -type f 2>/dev/null | wc -l)
if grep -rqs 'path-exclude=/usr/share/man' /etc/dpkg/dpkg.cfg.d/; then
  echo "bench text: dpkg excludes /usr/share/man here (/etc/dpkg/dpkg.cfg.d): remove that line and reinstall the packages to get their pages" >&2
fi
echo "bench text: ${pages} man pages in sections 1, 5 and 8"
