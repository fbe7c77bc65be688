#!/usr/bin/env bash
# test-postgres.sh — a throwaway local Postgres 15 + pgvector cluster for tests.
#
#   scripts/test-postgres.sh start   # install pgvector if needed, init + start the cluster, print the DSN
#   scripts/test-postgres.sh stop    # stop it (the data directory is kept; delete it to start over)
#   scripts/test-postgres.sh url     # print the DSN
#
# Typical use:
#   export TEST_DATABASE_URL=$(scripts/test-postgres.sh start)
#   FOOTPRINT_REQUIRE_PG=1 go test -race ./...
#
# Only the DSN goes to stdout; everything else goes to stderr, so $(...) captures just the DSN.
# Every command is idempotent: `start` on a running cluster only prints the DSN, and on a stopped
# one (data directory present) just starts it again.
#
# The cluster is built for speed, not durability: trust auth on 127.0.0.1 only, fsync and
# synchronous_commit off. Never point anything you care about at it.
#
# Environment:
#   FOOTPRINT_PG_DIR   where the cluster lives (default /tmp/footprint-pg); must be reachable by
#                      the postgres OS user when run as root
#   FOOTPRINT_PG_PORT  TCP port on 127.0.0.1 (default 54329)
#   PG_MAJOR           Postgres major version (default 15)
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
PG_DIR=${FOOTPRINT_PG_DIR:-/tmp/footprint-pg}
PG_PORT=${FOOTPRINT_PG_PORT:-54329}
PGDATA_DIR="$PG_DIR/data"
LOG_FILE="$PG_DIR/server.log"
DSN="postgres://postgres@127.0.0.1:${PG_PORT}/postgres?sslmode=disable"
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "test-postgres: $*" >&2; }
die() { log "$*"; exit 1; }

# bindir prefers the Debian versioned directory: `pg_config --bindir` on PATH may belong to a
# different (client-only) installation that has no initdb or pg_ctl.
bindir() {
  local d="/usr/lib/postgresql/${PG_MAJOR}/bin"
  if [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
  if command -v pg_config >/dev/null 2>&1; then
    d=$(pg_config --bindir)
    if [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
  fi
  die "no pg_ctl found (looked in /usr/lib/postgresql/${PG_MAJOR}/bin and pg_config --bindir)"
}

# as_pg runs a command as the postgres OS user when we are root (initdb and the server refuse to
# run as root), and as ourselves otherwise.
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

is_running() {
  # pg_ctl status: 0 running, 3 not running, 4 no usable data directory.
  [ -f "$PGDATA_DIR/PG_VERSION" ] && as_pg "$BIN/pg_ctl" status -D "$PGDATA_DIR" >/dev/null 2>&1
}

# write_conf (re)writes the settings we own into an include file, so that changing
# FOOTPRINT_PG_PORT between runs takes effect on the next start without re-initialising.
write_conf() {
  as_pg tee "$PGDATA_DIR/footprint.conf" >/dev/null <<CONF
# Written by scripts/test-postgres.sh on every start; edits are overwritten.
listen_addresses = '127.0.0.1'
port = ${PG_PORT}
# Our own socket directory (the data directory itself), so we never collide with a system
# cluster's /var/run/postgresql or need write access to it.
unix_socket_directories = '${PGDATA_DIR}'
max_connections = 200
# Throwaway test data: durability buys nothing and costs a lot of test time.
fsync = off
synchronous_commit = off
full_page_writes = off
# Big enough to hold the benchmarks' HNSW index (100k x 384-d chunks, about 200 MB) and its
# table in Postgres' own cache, as a production server sized for its corpus would (pgvector
# advises the index fit in shared_buffers); a smaller cache turns index hops into page-cache
# reads and doubles ANN latency. The machine has 24 GiB.
shared_buffers = 1GB
# Huge pages when the kernel has them reserved (see huge_pages_hint), 4 KB pages otherwise. An
# HNSW search is a random walk over the index's pages: on 2 MB pages it misses the TLB far less,
# measured 10-15% off the corpus search at 100k chunks (p50 and p99, alternated restarts).
huge_pages = try
effective_cache_size = 4GB
# HNSW builds are much faster when the graph fits in maintenance_work_mem.
maintenance_work_mem = 1GB
log_min_messages = warning
log_min_error_statement = panic
CONF
}

init_cluster() {
  log "initialising cluster in $PGDATA_DIR"
  mkdir -p "$PG_DIR"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$PG_DIR"
    runuser -u postgres -- test -w "$PG_DIR" ||
      die "the postgres user cannot write $PG_DIR; choose another FOOTPRINT_PG_DIR"
  fi
  # Partial leftovers (an interrupted initdb) would make initdb refuse; they hold nothing of value.
  rm -rf "$PGDATA_DIR"
  as_pg "$BIN/initdb" -D "$PGDATA_DIR" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
    --no-sync >&2
  echo "include_if_exists = 'footprint.conf'" | as_pg tee -a "$PGDATA_DIR/postgresql.conf" >/dev/null
}

# huge_pages_hint says how to reserve huge pages for the cluster when none are: a benchmark
# wants them, tests do not care. Reserving them is a change to the whole machine, left to you.
huge_pages_hint() {
  local free need
  free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
  need=$(as_pg "$BIN/postgres" -D "$PGDATA_DIR" -C shared_memory_size_in_huge_pages 2>/dev/null || echo 0)
  if [ "${need:-0}" -gt 0 ] && [ "${free:-0}" -lt "$need" ]; then
    log "running on 4 KB pages: for benchmark figures, stop the cluster, reserve huge pages with 'sysctl -w vm.nr_hugepages=$need' (as root) and start it again"
  fi
}

start() {
  "$SCRIPT_DIR/install-pgvector.sh" >&2
  BIN=$(bindir)
  if [ ! -f "$PGDATA_DIR/PG_VERSION" ]; then
    init_cluster
  fi
  if is_running; then
    log "already running on 127.0.0.1:${PG_PORT}"
  else
    write_conf
    huge_pages_hint
    log "starting (log: $LOG_FILE)"
    as_pg touch "$LOG_FILE"
    # 9>&-: the server must not inherit the lock file descriptor, or it would hold the lock for
    # its whole life and every later invocation would block.
    if ! as_pg "$BIN/pg_ctl" start -D "$PGDATA_DIR" -l "$LOG_FILE" -w -t 60 >&2 9>&-; then
      tail -n 30 "$LOG_FILE" >&2 || true
      die "server did not start"
    fi
  fi
  local i
  for i in $(seq 1 60); do
    if "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres; then
      echo "$DSN"
      return 0
    fi
    sleep 0.5
  done
  die "server is not accepting connections on 127.0.0.1:${PG_PORT}"
}

stop() {
  BIN=$(bindir)
  if is_running; then
    as_pg "$BIN/pg_ctl" stop -D "$PGDATA_DIR" -m fast -w >&2
  else
    log "not running"
  fi
}

cmd=${1:-}
case "$cmd" in
  start | stop)
    # Serialise concurrent invocations (two test shells starting at once) on one lock file.
    mkdir -p "$(dirname "$PG_DIR")"
    exec 9>"$PG_DIR.lock"
    flock 9
    "$cmd"
    ;;
  url) echo "$DSN" ;;
  *)
    echo "usage: $0 start|stop|url" >&2
    exit 2
    ;;
esac
