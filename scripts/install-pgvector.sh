#!/usr/bin/env bash
# install-pgvector.sh — make sure Postgres 15 and the pgvector extension are installed.
#
# Idempotent: does nothing when pgvector's control file is already in Postgres 15's
# extension directory. Debian bookworm does not package pgvector, so it is built from
# Debian's own source package in the trixie suite (deb-src only: no binaries from trixie
# are installed).
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config}
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

have_pg() { [ -x "/usr/lib/postgresql/${PG_MAJOR}/bin/initdb" ]; }
have_vector() { have_pg && [ -f "$("$PG_CONFIG" --sharedir)/extension/vector.control" ]; }

if have_vector; then
  echo "pgvector: already installed for Postgres ${PG_MAJOR}"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! have_pg; then
  echo "postgres: installing postgresql-${PG_MAJOR}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "postgresql-${PG_MAJOR}" >/dev/null
fi

src_list=/etc/apt/sources.list.d/footprint-trixie-src.sources
if [ ! -f "$src_list" ]; then
  $SUDO tee "$src_list" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "postgresql-server-dev-${PG_MAJOR}" build-essential dpkg-dev >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get source -qq pgvector >/dev/null 2>&1 || apt-get source pgvector
dir=$(find . -maxdepth 1 -type d -name 'pgvector-*' | head -n1)
[ -n "$dir" ] || { echo "pgvector: source package not found" >&2; exit 1; }
cd "$dir"
make -s PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >/dev/null
$SUDO make -s PG_CONFIG="$PG_CONFIG" install >/dev/null
have_vector || { echo "pgvector: install did not produce vector.control" >&2; exit 1; }
echo "pgvector: installed $(basename "$dir") for Postgres ${PG_MAJOR}"
