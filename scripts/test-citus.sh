#!/usr/bin/env bash
# test-citus.sh — a throwaway local Citus cluster (Postgres 15 + Citus + pgvector) for tests:
# one coordinator and two workers, all on 127.0.0.1.
#
#   scripts/test-citus.sh start            # install Citus/pgvector if needed, init + start every
#                                          # node, register the workers, print the coordinator DSN
#   scripts/test-citus.sh stop             # stop every node (data kept; delete the directory to
#                                          # start over)
#   scripts/test-citus.sh url              # print the coordinator DSN
#   scripts/test-citus.sh status           # one line per node: name, port, running or stopped
#   scripts/test-citus.sh workers          # print each worker's DSN (postgres database), one a line
#   scripts/test-citus.sh kill-worker N    # crash worker N (immediate shutdown: no checkpoint,
#                                          # clients see their connections drop)
#   scripts/test-citus.sh stop-worker N    # stop worker N cleanly
#   scripts/test-citus.sh start-worker N   # start worker N again (after kill- or stop-worker)
#   scripts/test-citus.sh createdb NAME [TEMPLATE]
#                                          # create database NAME on every node with citus and
#                                          # vector, and register the workers in it; or clone
#                                          # TEMPLATE on every node (see below); prints its DSN
#   scripts/test-citus.sh dropdb NAME      # drop database NAME on every node
#
# Typical use:
#   export TEST_DATABASE_URL=$(scripts/test-citus.sh start)
#
# Only DSNs go to stdout; everything else goes to stderr, so $(...) captures just the DSN. Every
# command is idempotent: `start` on a running cluster only checks the registration and prints
# the DSN, and on a stopped one (data directories present) starts the nodes again.
#
# Databases. Citus keeps its metadata (pg_dist_node, the shards) per database and does not
# propagate CREATE DATABASE ... TEMPLATE (13.2 propagates CREATE DATABASE only with
# citus.enable_create_database_propagation, and then only from template1). A Citus database is
# made on every node: CREATE DATABASE on each, CREATE EXTENSION citus and vector on each, then
# on the coordinator citus_set_coordinator_host and citus_add_node for every worker (`createdb
# NAME`; the `postgres` database is set up so at start). A filled one can be cloned, shards and
# all, by CREATE DATABASE ... TEMPLATE under the same name on every node, since Citus reaches a
# database's shards on the workers by the database's own name (`createdb NAME TEMPLATE`). The
# template must have no sessions on any node, and every node keeps a maintenance daemon in each
# Citus database and connects to the others' (transaction recovery): they are shut out with
# ALLOW_CONNECTIONS false and ended, before cloning and before DROP DATABASE (`dropdb`).
#
# Like scripts/test-postgres.sh, the cluster is built for speed, not durability: trust auth on
# 127.0.0.1 only, fsync and synchronous_commit off. Never point anything you care about at it.
# wal_level is logical so that shards can be moved (citus_move_shard_placement).
#
# Environment:
#   FOOTPRINT_CITUS_DIR        where the cluster lives (default /tmp/footprint-citus); must be
#                              reachable by the postgres OS user when run as root
#   FOOTPRINT_CITUS_PORT       the coordinator's TCP port on 127.0.0.1 (default 54340); worker N
#                              listens on FOOTPRINT_CITUS_PORT + N
#   FOOTPRINT_CITUS_WORKERS    number of workers (default 2)
#   FOOTPRINT_CITUS_SHARED_BUFFERS  shared_buffers per node (default 256MB)
#   FOOTPRINT_CITUS_SYNCHRONOUS_COMMIT  synchronous_commit on every node (default off; on for a
#                              test that crashes a node and counts acknowledged commits)
#   PG_MAJOR                   Postgres major version (default 15)
set -euo pipefail

PG_MAJOR=${PG_MAJOR:-15}
CITUS_DIR=${FOOTPRINT_CITUS_DIR:-/tmp/footprint-citus}
COORD_PORT=${FOOTPRINT_CITUS_PORT:-54340}
WORKERS=${FOOTPRINT_CITUS_WORKERS:-2}
SHARED_BUFFERS=${FOOTPRINT_CITUS_SHARED_BUFFERS:-256MB}
SYNCHRONOUS_COMMIT=${FOOTPRINT_CITUS_SYNCHRONOUS_COMMIT:-off}
HOST=127.0.0.1
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { echo "test-citus: $*" >&2; }
die() { log "$*"; exit 1; }

[[ "$COORD_PORT" =~ ^[0-9]+$ ]] || die "FOOTPRINT_CITUS_PORT must be a port number, not '$COORD_PORT'"
[[ "$WORKERS" =~ ^[0-9]+$ ]] && [ "$WORKERS" -ge 1 ] ||
  die "FOOTPRINT_CITUS_WORKERS must be a positive number, not '$WORKERS'"

dsn() { echo "postgres://postgres@${HOST}:$1/${2:-postgres}?sslmode=disable"; }

# Nodes are numbered: 0 is the coordinator, 1..WORKERS the workers.
node_name() { if [ "$1" -eq 0 ]; then echo coordinator; else echo "worker$1"; fi; }
node_port() { echo $((COORD_PORT + $1)); }
node_data() { echo "$CITUS_DIR/$(node_name "$1")"; }
node_log() { echo "$CITUS_DIR/$(node_name "$1").log"; }
all_nodes() { seq 0 "$WORKERS"; }

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

# sql NODE DB STATEMENT: run one statement on a node, unaligned tuples only, stopping on error.
sql() {
  # client_min_messages: no NOTICEs (Citus explains at length that it does not propagate
  # CREATE DATABASE); warnings and errors still reach stderr.
  PGOPTIONS="-c client_min_messages=warning" "$BIN/psql" -X -q -v ON_ERROR_STOP=1 -At -h "$HOST" -p "$(node_port "$1")" -U postgres \
    -d "$2" -c "$3"
}

is_running() {
  local data
  data=$(node_data "$1")
  # pg_ctl status: 0 running, 3 not running, 4 no usable data directory.
  [ -f "$data/PG_VERSION" ] && as_pg "$BIN/pg_ctl" status -D "$data" >/dev/null 2>&1
}

# write_conf (re)writes the settings we own into an include file on every start, so that
# changing a port or a setting takes effect without re-initialising.
write_conf() {
  local n=$1 data plugins=""
  data=$(node_data "$n")
  # Postgres 15.20 allows only the listed libraries as logical decoding output plugins, and
  # Citus's shard split (isolate_tenant_to_new_shard, citus_split_shard_by_split_points) decodes
  # through its own "citus" plugin. Older minor releases have no such setting (and would refuse
  # to start with it).
  # (grep without -q: with pipefail, -q's early exit would fail the pipeline on SIGPIPE.)
  if "$BIN/postgres" --describe-config 2>/dev/null | grep '^output_plugin_libraries' >/dev/null; then
    plugins="output_plugin_libraries = 'pgoutput, test_decoding, citus'"
  fi
  as_pg tee "$data/footprint.conf" >/dev/null <<CONF
# Written by scripts/test-citus.sh on every start; edits are overwritten.
listen_addresses = '${HOST}'
port = $(node_port "$n")
# Our own socket directory (the data directory itself), so we never collide with a system
# cluster's /var/run/postgresql or need write access to it.
unix_socket_directories = '${data}'
shared_preload_libraries = 'citus'
# Workers serve the coordinator's connections on top of the clients'; the coordinator opens up
# to citus.max_shared_pool_size (its own max_connections) connections to each worker.
max_connections = $([ "$n" -eq 0 ] && echo 200 || echo 300)
# Citus runs a maintenance daemon (a background worker) per node and database: tests that clone
# a database per test need far more than the default 8 ("could not start maintenance background
# worker" in the log, and DROP DATABASE then waits on a half-started one).
max_worker_processes = 128
# Shard moves (citus_move_shard_placement) copy a shard and then follow its changes by logical
# replication until the switch-over.
wal_level = logical
max_wal_senders = 20
max_replication_slots = 20
${plugins}
# Throwaway test data: durability buys nothing and costs a lot of test time. fsync off survives
# a crash of a server process (the kernel still has the data); synchronous_commit off does not
# (commits acknowledged before their WAL left the server's buffers are lost), so a test that
# crashes a node sets FOOTPRINT_CITUS_SYNCHRONOUS_COMMIT=on.
fsync = off
synchronous_commit = ${SYNCHRONOUS_COMMIT}
full_page_writes = off
shared_buffers = ${SHARED_BUFFERS}
huge_pages = try
effective_cache_size = 2GB
maintenance_work_mem = 256MB
log_min_messages = warning
log_min_error_statement = panic
CONF
}

init_node() {
  local n=$1 data
  data=$(node_data "$n")
  log "initialising $(node_name "$n") in $data"
  # Partial leftovers (an interrupted initdb) would make initdb refuse; they hold nothing of value.
  rm -rf "$data"
  as_pg "$BIN/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
    --no-sync >/dev/null
  echo "include_if_exists = 'footprint.conf'" | as_pg tee -a "$data/postgresql.conf" >/dev/null
}

start_node() {
  local n=$1 data logf
  data=$(node_data "$n")
  logf=$(node_log "$n")
  [ -f "$data/PG_VERSION" ] || init_node "$n"
  if is_running "$n"; then
    return 0
  fi
  write_conf "$n"
  log "starting $(node_name "$n") on ${HOST}:$(node_port "$n") (log: $logf)"
  as_pg touch "$logf"
  # 9>&-: the server must not inherit the lock file descriptor, or it would hold the lock for
  # its whole life and every later invocation would block.
  if ! as_pg "$BIN/pg_ctl" start -D "$data" -l "$logf" -w -t 60 >/dev/null 9>&-; then
    tail -n 30 "$logf" >&2 || true
    die "$(node_name "$n") did not start"
  fi
  wait_ready "$n"
}

wait_ready() {
  local i
  for i in $(seq 1 60); do
    if "$BIN/pg_isready" -q -h "$HOST" -p "$(node_port "$1")" -U postgres; then
      return 0
    fi
    sleep 0.5
  done
  die "$(node_name "$1") is not accepting connections on ${HOST}:$(node_port "$1")"
}

# setup_database DB: the extensions on every node's DB, then the coordinator's registration of
# itself and of every worker. Each step checks first, so re-running it costs a few queries.
# DB must already exist on every node.
setup_database() {
  local db=$1 n port
  # Only the missing ones: on a worker that has Citus metadata, any extension DDL (IF NOT
  # EXISTS included) fails with "operation is not allowed on this node".
  local ext
  for n in $(all_nodes); do
    for ext in citus vector; do
      if [ "$(sql "$n" "$db" "SELECT count(*) FROM pg_extension WHERE extname = '$ext'")" = 0 ]; then
        sql "$n" "$db" "CREATE EXTENSION $ext"
      fi
    done
  done
  if [ "$(sql 0 "$db" "SELECT count(*) FROM pg_dist_node WHERE groupid = 0")" = 0 ]; then
    sql 0 "$db" "SELECT citus_set_coordinator_host('${HOST}', ${COORD_PORT})" >/dev/null
  fi
  for n in $(seq 1 "$WORKERS"); do
    port=$(node_port "$n")
    if [ "$(sql 0 "$db" "SELECT count(*) FROM pg_dist_node WHERE nodename = '${HOST}' AND nodeport = ${port}")" = 0 ]; then
      log "registering $(node_name "$n") (${HOST}:${port}) in database $db"
      sql 0 "$db" "SELECT citus_add_node('${HOST}', ${port})" >/dev/null
    fi
  done
}

start() {
  "$SCRIPT_DIR/install-pgvector.sh" >&2
  "$SCRIPT_DIR/install-citus.sh" >&2
  BIN=$(bindir)
  mkdir -p "$CITUS_DIR"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres:postgres "$CITUS_DIR"
    runuser -u postgres -- test -w "$CITUS_DIR" ||
      die "the postgres user cannot write $CITUS_DIR; choose another FOOTPRINT_CITUS_DIR"
  fi
  local n
  # Workers first: the coordinator's maintenance daemon connects to them.
  for n in $(seq 1 "$WORKERS") 0; do
    start_node "$n"
  done
  setup_database postgres
  dsn "$COORD_PORT"
}

stop() {
  BIN=$(bindir)
  local n any=0
  for n in 0 $(seq 1 "$WORKERS"); do
    if is_running "$n"; then
      as_pg "$BIN/pg_ctl" stop -D "$(node_data "$n")" -m fast -w >/dev/null
      log "stopped $(node_name "$n")"
      any=1
    fi
  done
  [ "$any" = 1 ] || log "not running"
}

worker_arg() {
  [[ "${1:-}" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$WORKERS" ] ||
    die "name a worker from 1 to $WORKERS, not '${1:-}'"
}

stop_worker() {
  local n=$1 mode=$2
  BIN=$(bindir)
  if is_running "$n"; then
    as_pg "$BIN/pg_ctl" stop -D "$(node_data "$n")" -m "$mode" -w >/dev/null
    log "$(node_name "$n") stopped (${mode})"
  else
    log "$(node_name "$n") is not running"
  fi
}

start_worker() {
  BIN=$(bindir)
  [ -f "$(node_data "$1")/PG_VERSION" ] || die "$(node_name "$1") has no data directory: run start first"
  start_node "$1"
}

status() {
  BIN=$(bindir)
  local n state
  for n in $(all_nodes); do
    state=stopped
    is_running "$n" && state=running
    echo "$(node_name "$n") ${HOST}:$(node_port "$n") $state"
  done
}

valid_dbname() {
  [[ "${1:-}" =~ ^[a-z_][a-z0-9_]*$ ]] || die "database names here are [a-z_][a-z0-9_]*, not '${1:-}'"
}

# refuse_connections DB: on every node, make DB refuse new connections and end the ones it has.
# Each node runs a Citus maintenance daemon per database, and the daemons of the other nodes
# connect to it (transaction recovery); they would reconnect as soon as they were ended.
refuse_connections() {
  local db=$1 n
  for n in $(all_nodes); do
    if [ "$(sql "$n" postgres "SELECT count(*) FROM pg_database WHERE datname = '$db' AND datallowconn")" = 1 ]; then
      sql "$n" postgres "ALTER DATABASE $db WITH ALLOW_CONNECTIONS false"
    fi
  done
  for n in $(all_nodes); do
    # error: a session that ended on its own meanwhile only draws a WARNING.
    sql "$n" postgres "SET client_min_messages = error; SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '$db'" >/dev/null
  done
}

# retry_busy NODE STATEMENT: run a CREATE/DROP DATABASE that fails while a session is still in
# the database concerned ("is being accessed by other users": a maintenance daemon that has
# not exited yet), retrying for up to 10 seconds.
retry_busy() {
  local i out
  for i in $(seq 1 20); do
    if out=$(sql "$1" postgres "$2" 2>&1); then
      return 0
    fi
    case "$out" in
      *"is being accessed by other users"*) sleep 0.5 ;;
      *) echo "$out" >&2; return 1 ;;
    esac
  done
  echo "$out" >&2
  return 1
}

# createdb NAME [TEMPLATE]: NAME on every node, with citus and vector and the workers
# registered. With TEMPLATE (a Citus database made by createdb and filled through the
# coordinator), NAME is a copy of it on every node, shards included; TEMPLATE then no longer
# accepts connections (CREATE DATABASE ... TEMPLATE needs it idle), and stays usable as a
# template.
createdb() {
  local db=$1 tpl=${2:-} n
  valid_dbname "$db"
  [ -z "$tpl" ] || valid_dbname "$tpl"
  BIN=$(bindir)
  for n in $(all_nodes); do
    is_running "$n" || die "$(node_name "$n") is not running: run start first"
  done
  if [ -n "$tpl" ]; then
    for n in $(all_nodes); do
      [ "$(sql "$n" postgres "SELECT count(*) FROM pg_database WHERE datname = '$tpl'")" = 1 ] ||
        die "template $tpl does not exist on $(node_name "$n")"
    done
    refuse_connections "$tpl"
  fi
  for n in $(all_nodes); do
    if [ "$(sql "$n" postgres "SELECT count(*) FROM pg_database WHERE datname = '$db'")" = 0 ]; then
      retry_busy "$n" "CREATE DATABASE $db${tpl:+ TEMPLATE $tpl}" || die "CREATE DATABASE $db failed on $(node_name "$n")"
    fi
  done
  setup_database "$db"
  dsn "$COORD_PORT" "$db"
}

dropdb() {
  local db=$1 n
  valid_dbname "$db"
  BIN=$(bindir)
  for n in $(all_nodes); do
    is_running "$n" || die "$(node_name "$n") is not running: start it first, or $db stays there"
  done
  refuse_connections "$db"
  for n in $(all_nodes); do
    retry_busy "$n" "DROP DATABASE IF EXISTS $db WITH (FORCE)" || die "DROP DATABASE $db failed on $(node_name "$n")"
  done
}

cmd=${1:-}
case "$cmd" in
  start | stop | status | kill-worker | stop-worker | start-worker | createdb | dropdb)
    # Serialise concurrent invocations (two test shells starting at once) on one lock file.
    mkdir -p "$(dirname "$CITUS_DIR")"
    exec 9>"$CITUS_DIR.lock"
    flock 9
    case "$cmd" in
      kill-worker) worker_arg "${2:-}"; stop_worker "$2" immediate ;;
      stop-worker) worker_arg "${2:-}"; stop_worker "$2" fast ;;
      start-worker) worker_arg "${2:-}"; start_worker "$2" ;;
      createdb) createdb "${2:-}" "${3:-}" ;;
      dropdb) dropdb "${2:-}" ;;
      *) "$cmd" ;;
    esac
    ;;
  url) dsn "$COORD_PORT" ;;
  workers)
    for n in $(seq 1 "$WORKERS"); do dsn "$(node_port "$n")"; done
    ;;
  *)
    echo "usage: $0 start|stop|url|status|workers|kill-worker N|stop-worker N|start-worker N|createdb NAME [TEMPLATE]|dropdb NAME" >&2
    exit 2
    ;;
esac
