package pg

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
)

// Citus: the store on a Citus coordinator whose tenant tables are distributed by tenant
// (migration 00019, docs/scale-out.md). Everything Citus-specific in the store is here or
// branches on Store.distributed, which Open sets from the database; on plain Postgres, and on a
// Citus database whose tables are still local, the store runs exactly as it always has.
//
// What changes on a distributed database, and why:
//
//   - Settings reach the workers only as SET LOCAL inside a transaction block, and only with
//     citus.propagate_set_commands = 'local', which every pooled session sets at connect
//     (distributedParams). set_config(..., true), which the store uses on one node to scope a
//     setting to a pipelined batch's implicit transaction, applies to the coordinator alone: a
//     corpus search's hnsw.ef_search and iterative scan, an exact ranking's enable_seqscan, a
//     receipt's synchronous_commit. Those statements therefore run in an explicit transaction
//     that opens with their SET LOCALs (still one pipelined round trip), and Citus sends the
//     SETs to the worker with its BEGIN. TestCitusSettingsReachTheWorker reads them back there.
//   - lock_timeout is a session setting of the coordinator's connections, and the workers'
//     sessions (opened by Citus, shared by nothing) have none: a statement blocked on a row
//     lock on a worker would wait until statement_timeout. Every write transaction therefore
//     opens with SET LOCAL lock_timeout (txBegin).
//   - Exact rankings do not force a generic plan: Citus cannot plan the ranking's count
//     subquery generically ("could not create distributed plan"), and the reason for forcing
//     one does not hold, since the worker receives the statement with its values written in
//     and plans it afresh every time whatever the coordinator keeps.
//   - Receipts are written by INSERT ... VALUES (router), not INSERT ... SELECT (which Citus
//     runs by pulling the row to the coordinator).
//
// Serialisation per namespace needs nothing here: pg_advisory_xact_lock touches no table, so it
// runs on the coordinator, and Citus commits on the workers before the coordinator's
// transaction ends and frees the lock, so the next holder sees every row of the previous one.
// It holds for every service replica connected to the coordinator (or to the one standby that
// replaces it), which is why Open refuses a worker (checkCoordinator).

// clusterInfo is what Open learns of the database.
type clusterInfo struct {
	citus       bool // the citus extension is installed
	coordinator bool // this node is a Citus coordinator (meaningful when citus)
	distributed bool // memories is a distributed table: the tenant tables are distributed
}

// probeCluster reads clusterInfo on conn.
func probeCluster(ctx context.Context, conn *pgx.Conn) (clusterInfo, error) {
	var ci clusterInfo
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')`).Scan(&ci.citus); err != nil {
		return ci, err
	}
	if !ci.citus {
		return ci, nil
	}
	err := conn.QueryRow(ctx, `SELECT citus_is_coordinator(),
		EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass('memories'))`).Scan(&ci.coordinator, &ci.distributed)
	return ci, err
}

// errCitusWorker is Open's answer when the DSN names a Citus worker.
var errCitusWorker = errors.New("pg: DATABASE_URL names a Citus worker node; connect every replica to the " +
	"coordinator (turn writes are serialised by advisory locks, which live on the node that takes " +
	"them, and migrations must run there; see docs/scale-out.md)")

// checkCoordinator refuses a Citus node that is not the coordinator.
func (ci clusterInfo) checkCoordinator() error {
	if ci.citus && !ci.coordinator {
		return errCitusWorker
	}
	return nil
}

// distributedParams are the session settings of every pooled connection on a distributed
// database: SET LOCAL statements are sent on to the workers a transaction uses.
func distributedParams(params map[string]string) {
	params["citus.propagate_set_commands"] = "local"
}

// distributeSQL distributes the tables a migration added since the database was distributed
// (migration 00019 defines it; idempotent, and it returns how many tables it distributed).
const distributeSQL = `SELECT footprint_distribute()`

// txBegin returns what opens a write transaction: BEGIN, and on a distributed database the
// SET LOCAL that carries this store's lock_timeout to the workers' sessions (setLockTimeout).
// Batches queue each statement (queueBegin). Never as one simple-protocol string "BEGIN; SET
// LOCAL ...": Citus sends a SET LOCAL on to the workers as the text of the message that held
// it, so each worker transaction would begin with a second BEGIN (a WARNING in its log).
func (s *Store) txBegin() []string {
	if !s.distributed {
		return []string{"BEGIN"}
	}
	return []string{"BEGIN", s.setLockTimeout()}
}

// setLockTimeout is the SET LOCAL of this store's lock_timeout.
func (s *Store) setLockTimeout() string { return "SET LOCAL lock_timeout = " + literal(s.lockTimeout) }

// queueBegin queues txBegin's statements on b and returns how many results they leave to read.
func (s *Store) queueBegin(b *pgx.Batch) int {
	begin := s.txBegin()
	for _, stmt := range begin {
		b.Queue(stmt)
	}
	return len(begin)
}

// readN reads n results of statements that return nothing of interest.
func readN(br pgx.BatchResults, n int) error {
	for range n {
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	return nil
}

// setting is a planner or extension setting a statement runs with, scoped to its transaction.
type setting struct{ name, value string }

// setLocal is the SET LOCAL statement of a setting whose value is a number or one of the
// store's constants, never user text (SET takes no parameters).
func (st setting) setLocal() string {
	return fmt.Sprintf("SET LOCAL %s = %s", st.name, literal(st.value))
}

// exactSettingsCitus are genericPlanSQL's settings that a distributed database runs an exact
// ranking with: all but the forced generic plan (see the top of this file).
var exactSettingsCitus = []setting{{"enable_seqscan", "off"}, {"max_parallel_workers_per_gather", "0"}}

// annSettingsCitus are annSettingsSQL's settings for ef and scan.
func annSettingsCitus(ef int, scan string) []setting {
	return []setting{
		{"enable_sort", "off"}, {"jit", "off"}, {"plan_cache_mode", "force_generic_plan"},
		{"hnsw.iterative_scan", scan}, {"hnsw.max_scan_tuples", "200000"},
		{"hnsw.ef_search", strconv.Itoa(ef)},
	}
}

// annLexicalSettingsCitus are the settings of a corpus's hybrid search (annLexicalSQL) on a
// distributed database: annSettingsCitus's, without the forced generic plan, which Citus
// cannot make of the statement's lexical-score subquery ("could not create distributed plan";
// the worker plans the statement afresh anyway, see exactSettingsCitus).
func annLexicalSettingsCitus(ef int) []setting {
	var out []setting
	for _, st := range annSettingsCitus(ef, scanOnce) {
		if st.name != "plan_cache_mode" {
			out = append(out, st)
		}
	}
	return out
}

// queueSettings opens a batch that runs its statements under settings: on one node, sql (a
// set_config SELECT scoping them to the batch's implicit transaction) with args; on a
// distributed database BEGIN and a SET LOCAL per setting, which Citus sends to the worker with
// its BEGIN, and the caller must end the batch with COMMIT (queueSettingsEnd). It returns how
// many results the head leaves to read.
func (s *Store) queueSettings(b *pgx.Batch, sql string, args []any, citus []setting) int {
	if !s.distributed {
		b.Queue(sql, args...)
		return 1
	}
	b.Queue("BEGIN")
	for _, st := range citus {
		b.Queue(st.setLocal())
	}
	return 1 + len(citus)
}

// queueSettingsEnd ends a batch queueSettings opened.
func (s *Store) queueSettingsEnd(b *pgx.Batch) {
	if s.distributed {
		b.Queue("COMMIT")
	}
}

// Distributed reports whether Open found the tenant tables distributed (a Citus coordinator).
func (s *Store) Distributed() bool { return s.distributed }
