#!/usr/bin/env bash
# install-citus.sh — make sure the Citus extension is installed for Postgres 15.
#
# Idempotent: does nothing when citus.control is already in Postgres 15's extension directory.
# Debian bookworm does not package Citus, so it is built from a vendored source tarball (a `git
# archive` of the upstream tag) whose sha256 is checked before anything is unpacked. A fresh build
# takes about 4 minutes on 2 cores.
#
# Environment:
#   FOOTPRINT_CITUS_SRC  directory holding citus-<version>.tar.gz and its patches (default: the
#                        first of <repo>/../shared/vendor/citus and /work/shared/vendor/citus that
#                        has the tarball)
#   PG_MAJOR             Postgres major version (default 15; Citus 13.x supports 15-17)
#   MAKE_JOBS            parallel compile jobs (default 2)
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config}
MAKE_JOBS=${MAKE_JOBS:-2}
CITUS_VERSION=13.2.2
CITUS_SHA256=dd2453caec20a830e5e63f1def5c5a98cb6f57ae510407cdcd800916fcdab430
# Patches applied with `patch -p1` inside the unpacked tree, in this order.
CITUS_PATCHES=(pg15.20-have_createdb_privilege.patch)
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

log() { echo "install-citus: $*" >&2; }
die() { log "$*"; exit 1; }

have_pg() { [ -x "/usr/lib/postgresql/${PG_MAJOR}/bin/initdb" ] && [ -x "$PG_CONFIG" ]; }
have_citus() {
  have_pg && [ -f "$("$PG_CONFIG" --sharedir)/extension/citus.control" ] &&
    [ -f "$("$PG_CONFIG" --pkglibdir)/citus.so" ]
}

if have_citus; then
  echo "citus: already installed for Postgres ${PG_MAJOR}"
  exit 0
fi

# find_src prints the directory holding the tarball: FOOTPRINT_CITUS_SRC when set (and then it
# must hold it), else the first default location that does.
find_src() {
  local tarball="citus-${CITUS_VERSION}.tar.gz" d
  if [ -n "${FOOTPRINT_CITUS_SRC:-}" ]; then
    [ -f "$FOOTPRINT_CITUS_SRC/$tarball" ] || die "FOOTPRINT_CITUS_SRC=$FOOTPRINT_CITUS_SRC has no $tarball"
    echo "$FOOTPRINT_CITUS_SRC"
    return
  fi
  for d in "$SCRIPT_DIR/../../shared/vendor/citus" /work/shared/vendor/citus; do
    if [ -f "$d/$tarball" ]; then
      (cd "$d" && pwd)
      return
    fi
  done
  die "no $tarball in $SCRIPT_DIR/../../shared/vendor/citus or /work/shared/vendor/citus; set FOOTPRINT_CITUS_SRC"
}

SRC=$(find_src)
TARBALL="$SRC/citus-${CITUS_VERSION}.tar.gz"
echo "${CITUS_SHA256}  ${TARBALL}" | sha256sum --check --status ||
  die "$TARBALL does not match sha256 ${CITUS_SHA256}"
for p in "${CITUS_PATCHES[@]}"; do
  [ -f "$SRC/$p" ] || die "patch $SRC/$p is missing"
done

export DEBIAN_FRONTEND=noninteractive
# The libraries configure checks for (libcurl, lz4, zstd), the Kerberos headers that libpq's
# headers include, and the Postgres server headers and PGXS makefiles.
deps=("postgresql-server-dev-${PG_MAJOR}" build-essential patch libcurl4-openssl-dev liblz4-dev
  libzstd-dev libkrb5-dev)
if ! have_pg; then
  deps=("postgresql-${PG_MAJOR}" "${deps[@]}")
fi
missing=()
for p in "${deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$TARBALL" -C "$work"
dir="$work/citus-${CITUS_VERSION}"
[ -d "$dir" ] || die "$TARBALL did not unpack to citus-${CITUS_VERSION}/"
cd "$dir"
for p in "${CITUS_PATCHES[@]}"; do
  patch -p1 --quiet --forward <"$SRC/$p" || die "patch $p did not apply"
done

log "building Citus ${CITUS_VERSION} for Postgres ${PG_MAJOR} (a few minutes)"
start=$(date +%s)
./configure --quiet PG_CONFIG="$PG_CONFIG" >"$work/configure.log" 2>&1 ||
  { tail -n 30 "$work/configure.log" >&2; die "configure failed"; }
# with_llvm=no: no LLVM bitcode for JIT inlining of Citus' own functions, which halves the
# compile and needs no clang; queries still JIT as usual.
make -s -j"$MAKE_JOBS" with_llvm=no >"$work/make.log" 2>&1 ||
  { tail -n 40 "$work/make.log" >&2; die "make failed"; }
$SUDO make -s with_llvm=no install >"$work/install.log" 2>&1 ||
  { tail -n 30 "$work/install.log" >&2; die "make install failed"; }
have_citus || die "install did not produce citus.control and citus.so"
echo "citus: installed ${CITUS_VERSION} for Postgres ${PG_MAJOR} (built in $(($(date +%s) - start))s)"
