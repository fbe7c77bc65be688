package pg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/memories"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
	"github.com/footprint/footprint/internal/store/storetest"
)

// The tests of this file run on a Citus cluster only (make test-citus); everything else in the
// package runs there too, on databases distributed by migration 00019.

// workerConns opens a connection to the database dsn names on every worker, closed when the
// test ends. Its catalogue queries see the shards (Citus hides them from other sessions).
func workerConns(t *testing.T, dsn string) []*pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	c := pgtest.Cluster(t)
	var out []*pgx.Conn
	for i := 1; i < len(c.Nodes()); i++ {
		wdsn, err := c.NodeDSN(i, cfg.Database)
		if err != nil {
			t.Fatal(err)
		}
		conn := connect(t, wdsn)
		if _, err := conn.Exec(t.Context(), "SET citus.show_shards_for_app_name_prefixes = '*'"); err != nil {
			t.Fatal(err)
		}
		out = append(out, conn)
	}
	if len(out) == 0 {
		t.Fatal("a Citus cluster without workers")
	}
	return out
}

// TestCitusDistribution: every table of the schema is distributed by tenant in one colocation
// group (memories'), over every worker, with the template's shard count; the shards carry the
// indexes and column settings the migrations made; the functions that shards' statements call
// exist on every worker, IMMUTABLE.
func TestCitusDistribution(t *testing.T) {
	pgtest.RequireCitus(t)
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	if !pg.Distributed(s) {
		t.Fatal("the store did not find the tables distributed")
	}
	conn := connect(t, dsn)
	var local []string
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname = 'public' AND c.relname <> 'goose_db_version'
			AND NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = c.oid)`)
	if err == nil {
		local, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(local) > 0 {
		t.Errorf("tables left local on the coordinator: %v", local)
	}
	type dist struct {
		Table, Method, Column string
		Colocation, Shards    int
		Nodes                 int
	}
	rows, err = conn.Query(ctx, `SELECT p.logicalrelid::text, p.partmethod::text,
			coalesce(column_to_column_name(p.logicalrelid, p.partkey), ''), p.colocationid,
			(SELECT count(*) FROM pg_dist_shard s WHERE s.logicalrelid = p.logicalrelid)::int,
			(SELECT count(DISTINCT sp.nodeport) FROM pg_dist_shard s JOIN pg_dist_shard_placement sp USING (shardid)
				WHERE s.logicalrelid = p.logicalrelid)::int
		FROM pg_dist_partition p ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowToStructByPos[dist])
	if err != nil {
		t.Fatal(err)
	}
	workers := len(pgtest.Cluster(t).Nodes()) - 1
	var colocation int
	for _, d := range tables {
		if d.Table == "memories" {
			colocation = d.Colocation
		}
	}
	for _, d := range tables {
		if d.Method != "h" || d.Column != "tenant" || d.Colocation != colocation ||
			d.Shards != pgtest.TemplateShardCount || d.Nodes != workers {
			t.Errorf("%s: method %s column %q colocation %d (memories %d), %d shards on %d nodes; want hash by tenant, co-located, %d shards on %d workers",
				d.Table, d.Method, d.Column, d.Colocation, colocation, d.Shards, d.Nodes, pgtest.TemplateShardCount, workers)
		}
	}
	if len(tables) < 10 {
		t.Errorf("%d distributed tables, want every tenant table: %+v", len(tables), tables)
	}

	for i, w := range workerConns(t, dsn) {
		rows, err := w.Query(ctx, `SELECT proname || ':' || provolatile::text FROM pg_proc
			WHERE proname IN ('footprint_entry_in_way', 'footprint_union') ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		fns, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(fns, []string{"footprint_entry_in_way:i", "footprint_union:i"}) {
			t.Errorf("worker %d: functions %v, want both, IMMUTABLE", i+1, fns)
		}
		// Every shard of entries on this worker has the table's indexes (named <index>_<shard>)
		// and keeps vectors inline (migration 00012); receipts are lz4-compressed (00008).
		var shards, bad int
		if err := w.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE
				(SELECT count(*) FROM pg_indexes i WHERE i.tablename = c.relname AND (
					i.indexname ~ '^entries_doc_hnsw_384_[0-9]+$' OR i.indexname ~ '^entries_newest_idx_[0-9]+$'
					OR i.indexname ~ '^entries_principal_turns_idx_[0-9]+$' OR i.indexname ~ '^entries_expiry_idx_[0-9]+$')) <> 4
				OR (SELECT attstorage FROM pg_attribute WHERE attrelid = c.oid AND attname = 'embedding') <> 'm')
			FROM pg_class c WHERE c.relname ~ '^entries_[0-9]+$' AND c.relkind = 'r'`).Scan(&shards, &bad); err != nil {
			t.Fatal(err)
		}
		if shards == 0 || bad > 0 {
			t.Errorf("worker %d: %d shards of entries, %d without their indexes or with vectors not inline", i+1, shards, bad)
		}
		if err := w.QueryRow(ctx, `SELECT count(*) FILTER (WHERE attcompression <> 'l') FROM pg_attribute a
			JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname ~ '^recalls_[0-9]+$' AND a.attname = 'body'`).Scan(&bad); err != nil {
			t.Fatal(err)
		}
		if bad > 0 {
			t.Errorf("worker %d: %d shards of recalls without lz4 on body", i+1, bad)
		}
	}
}

// TestCitusVectorsStayInline is TestVectorsStayInline on the shards: a row over the TOAST
// threshold keeps its vector and moves its value out of line, on the worker that stores it.
func TestCitusVectorsStayInline(t *testing.T) {
	pgtest.RequireCitus(t)
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	writeLongEntries(t, s)
	var sizes []int
	for _, w := range workerConns(t, dsn) {
		rows, err := w.Query(ctx, `SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname ~ '^entries_[0-9]+$' AND relkind = 'r'`)
		if err != nil {
			t.Fatal(err)
		}
		toasts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, toast := range toasts {
			rows, err := w.Query(ctx, `SELECT sum(octet_length(chunk_data))::int FROM `+toast+` GROUP BY chunk_id`)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[int])
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, got...)
		}
	}
	checkOutOfLine(t, sizes)
}

// TestCitusRankingPlans: a conversation's ranking and a corpus search are each one task on one
// worker (a router plan), read through the shard's b-tree and the shard's HNSW index.
func TestCitusRankingPlans(t *testing.T) {
	pgtest.RequireCitus(t)
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	putCorpus(t, s, 300, "m")
	now := time.Now().UTC()
	for i := range 3 {
		if _, err := s.WriteTurn(ctx, snapWrite("acme/c1", i+1, 384, 0, now).Write()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := connect(t, dsn).Exec(ctx, "ANALYZE entries"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		q     recall.RankQuery
		index *regexp.Regexp
	}{
		{"conversation", recall.RankQuery{Tenant: "acme", Namespace: "acme/c1", MemoryID: "why",
			Kinds: []core.EntryKind{core.KindSnapshot}, Vector: testVector(1), Model: "m", Limit: 5, Now: now},
			regexp.MustCompile(`(Index (Only )?Scan using|Bitmap Index Scan on) (entries_newest_idx|entries_pkey)_[0-9]+`)},
		{"corpus", recall.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs",
			Kinds: []core.EntryKind{core.KindDocument}, Vector: testVector(3), Model: "m", Limit: 5, Now: now},
			regexp.MustCompile(`Index Scan using entries_doc_hnsw_384_[0-9]+ on entries_[0-9]+`)},
	} {
		lines, err := s.ExplainRank(ctx, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "Custom Scan (Citus Adaptive)") || !strings.Contains(plan, "Task Count: 1") ||
			!tc.index.MatchString(plan) || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s ranking: not one task through the shard's index:\n%s", tc.name, plan)
		}
		t.Logf("%s ranking:\n%s", tc.name, plan)
		if res, err := s.RankEntries(ctx, tc.q); err != nil || len(res.Ranked) == 0 {
			t.Errorf("%s: RankEntries %v, %d ranked", tc.name, err, len(res.Ranked))
		}
	}
}

// TestCitusSettingsReachTheWorker: the settings each statement runs with are the worker's,
// where the statement runs, not only the coordinator's. First the control: a set_config on the
// coordinator does not reach the worker (so the probe reads the worker's session).
func TestCitusSettingsReachTheWorker(t *testing.T) {
	pgtest.RequireCitus(t)
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	conn := connect(t, dsn)
	var coordinator, worker string
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT set_config('hnsw.ef_search', '123', true)`).Scan(&coordinator); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT coalesce(current_setting('hnsw.ef_search', true), 'unset'), count(*) FROM memories WHERE tenant = 'acme'`).Scan(&worker, new(int64))
	})
	if err != nil {
		t.Fatal(err)
	}
	if coordinator != "123" || worker == "123" {
		t.Fatalf("control: set_config gave %s on the coordinator and %s on the worker; the probe does not read the worker", coordinator, worker)
	}

	// The test cluster commits asynchronously everywhere; a production worker does not. The
	// workers' sessions in this database commit synchronously, so that a receipt's "off" can
	// only come from the receipt's own setting.
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range workerConns(t, dsn) {
		if _, err := w.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{cfg.Database}.Sanitize()+" SET synchronous_commit = on"); err != nil {
			t.Fatal(err)
		}
	}

	s, err := pg.Open(ctx, dsn, nil, pg.WithLockTimeout(1234*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, tc := range []struct {
		what  string
		names []string
		want  []string
	}{
		{"ann", []string{"hnsw.ef_search", "hnsw.iterative_scan", "hnsw.max_scan_tuples", "enable_sort", "jit"},
			[]string{fmt.Sprint(pg.AnnEfSearch(10)), "relaxed_order", "200000", "off", "off"}},
		{"exact", []string{"enable_seqscan", "max_parallel_workers_per_gather"}, []string{"off", "0"}},
		{"hybrid", []string{"hnsw.ef_search", "hnsw.iterative_scan", "enable_sort", "plan_cache_mode"},
			[]string{fmt.Sprint(pg.AnnEfSearch(10)), "off", "off", "auto"}},
		{"receipt", []string{"synchronous_commit"}, []string{"off"}},
		{"write", []string{"lock_timeout", "synchronous_commit"}, []string{"1234ms", "on"}},
	} {
		got, err := pg.WorkerSettings(ctx, s, tc.what, "acme", tc.names)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: the worker runs with %v = %v, want %v", tc.what, tc.names, got, tc.want)
		}
	}
	// And none of it stays on the pooled sessions, on the coordinator or the workers.
	got, err := pg.WorkerSettings(ctx, s, "write", "acme", []string{"hnsw.ef_search", "enable_seqscan"})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] == fmt.Sprint(pg.AnnEfSearch(10)) || got[1] != "on" {
		t.Errorf("after the statements: the worker session keeps hnsw.ef_search %s, enable_seqscan %s", got[0], got[1])
	}
}

// TestCitusRefusesWorker: a DSN that names a worker (whose copy of the metadata would let
// queries run there) is refused at Open, since advisory locks live on the node that takes them.
func TestCitusRefusesWorker(t *testing.T) {
	pgtest.RequireCitus(t)
	t.Parallel()
	dsn := pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	wdsn, err := pgtest.Cluster(t).NodeDSN(1, cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]pg.Option{nil, {pg.WithoutMigrations()}} {
		s, err := pg.Open(t.Context(), wdsn, nil, opts...)
		if err == nil {
			s.Close()
			t.Fatal("Open on a worker succeeded")
		}
		if !strings.Contains(err.Error(), "Citus worker") || errors.Is(err, core.ErrUnavailable) {
			t.Errorf("Open on a worker: %v, want the configuration error", err)
		}
	}
}

// TestCitusDistributeExistingDatabase follows docs/scale-out.md's procedure on a database that
// served on a single node: the citus extension in it on every node, the workers registered,
// then SELECT footprint_distribute(). Everything stored is then read through the shards, and
// the service goes on where it stopped.
func TestCitusDistributeExistingDatabase(t *testing.T) {
	pgtest.RequireCitus(t)
	t.Parallel()
	ctx := t.Context()
	c := pgtest.Cluster(t)
	name := fmt.Sprintf("footprint_t_existing_%d", time.Now().UnixNano())
	coord := c.Nodes()[0]
	if err := execSQL(ctx, coord, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Drop(context.Background(), name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	dsn, err := c.DSN(name)
	if err != nil {
		t.Fatal(err)
	}
	// A single-node database: migrated without the citus extension.
	single := openStore(t, dsn)
	if pg.Distributed(single) {
		t.Fatal("distributed before Citus was added")
	}
	now := time.Now().UTC()
	mem := memory(t, "acme", "why")
	if err := single.CreateMemory(ctx, mem, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := single.WriteTurn(ctx, snapWrite("acme/c1", i+1, 384, 0, now).Write()); err != nil {
			t.Fatal(err)
		}
	}
	putCorpus(t, single, 50, "m")
	single.Close()

	// The procedure.
	for i, node := range c.Nodes() {
		if i > 0 {
			if err := execSQL(ctx, node, "CREATE DATABASE "+name); err != nil {
				t.Fatal(err)
			}
		}
		ndsn, err := c.NodeDSN(i, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := execSQL(ctx, ndsn, "CREATE EXTENSION IF NOT EXISTS citus; CREATE EXTENSION IF NOT EXISTS vector"); err != nil {
			t.Fatal(err)
		}
	}
	conn := connect(t, dsn)
	if _, err := conn.Exec(ctx, "SET citus.shard_count = 4"); err != nil {
		t.Fatal(err)
	}
	for i, node := range c.Nodes() {
		cfg, err := pgx.ParseConfig(node)
		if err != nil {
			t.Fatal(err)
		}
		fn := "citus_add_node"
		if i == 0 {
			fn = "citus_set_coordinator_host"
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf("SELECT %s($1, %d)", fn, cfg.Port), cfg.Host); err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
	}
	// Before the command, a store warns and runs on local tables; after it, on the shards.
	var n int
	if err := conn.QueryRow(ctx, "SELECT footprint_distribute()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("footprint_distribute() distributed %d tables", n)
	}
	if err := conn.QueryRow(ctx, "SELECT footprint_distribute()").Scan(&n); err != nil || n != 0 {
		t.Errorf("footprint_distribute() again: %d, %v; want 0", n, err)
	}
	var localBytes int64
	if err := conn.QueryRow(ctx, `SELECT sum(pg_relation_size(logicalrelid)) FROM pg_dist_partition`).Scan(&localBytes); err != nil {
		t.Fatal(err)
	}
	if localBytes != 0 {
		t.Errorf("the coordinator's local tables keep %d bytes after distributing", localBytes)
	}

	s := openStore(t, dsn)
	if !pg.Distributed(s) {
		t.Fatal("the store did not find the tables distributed")
	}
	if err := s.CreateMemory(ctx, mem, nil); !errors.Is(err, memories.ErrMemoryExists) {
		t.Errorf("CreateMemory of an existing id after distributing: %v, want a conflict", err)
	}
	out, err := s.WriteTurn(ctx, snapWrite("acme/c1", 6, 384, 0, now).Write())
	if err != nil || out.Turn != 6 {
		t.Fatalf("next turn after distributing: %d, %v; want 6", out.Turn, err)
	}
	res, err := s.RankEntries(ctx, recall.RankQuery{Tenant: "acme", Namespace: "acme/c1", MemoryID: "why",
		Kinds: []core.EntryKind{core.KindSnapshot}, Vector: testVector(0), Model: "m", Limit: 10, Now: now})
	if err != nil || res.Total != 6 {
		t.Errorf("rank the conversation: total %d, %v; want 6", res.Total, err)
	}
	res, err = s.RankEntries(ctx, recall.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs",
		Kinds: []core.EntryKind{core.KindDocument}, Vector: testVector(3), Model: "m", Limit: 5, Now: now})
	if err != nil || res.Mode != "ann" || len(res.Ranked) != 5 || res.Ranked[0].Entry.ID != "d#3" {
		t.Errorf("search the corpus: %v, mode %s, %d ranked", err, res.Mode, len(res.Ranked))
	}
}

// execSQL runs one statement on its own connection.
func execSQL(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, sql)
	return err
}

// writeLongEntries writes, in one turn of tenant acme's conversation conv, an entry of a 384-d
// and of a 1536-d memory whose rows are over the TOAST threshold (TestVectorsStayInline).
func writeLongEntries(t *testing.T, s *pg.Store) {
	t.Helper()
	now := time.Now()
	// Text that pglz cannot shrink by a quarter, so the value really is moved out of line.
	var long strings.Builder
	x := uint32(1)
	for long.Len() < 1200 { // over the TOAST threshold with a 384-d vector, yet smaller than it
		x = x*1664525 + 1013904223
		long.WriteByte(byte('a' + x>>24%26))
		if x%7 == 0 {
			long.WriteByte(' ')
		}
	}
	value, err := json.Marshal(core.Message{Role: "assistant", Content: long.String()})
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]core.Entry, 0, 2)
	for i, dims := range []int{384, 1536} {
		vec := make([]float32, dims)
		for j := range vec {
			vec[j] = float32((j*7+i)%13) - 6
		}
		entries = append(entries, core.Entry{Tenant: "acme", Namespace: "conv", MemoryID: fmt.Sprintf("sem%d", dims),
			ID: "msg-1-0", Kind: core.KindMessage, Turn: 1, Value: value, Embedding: vec,
			EmbeddingModel: "m", Metadata: json.RawMessage(`{}`), CreatedAt: now, UpdatedAt: now, LastAccessedAt: now})
	}
	if _, err := s.WriteTurn(t.Context(), storetest.Turn{Tenant: "acme", Namespace: "conv", HostTurn: 1,
		MemoryIDs: []string{"sem384", "sem1536"}, Now: now,
		Build: func(int) ([]core.Entry, error) { return entries, nil }}.Write()); err != nil {
		t.Fatal(err)
	}
}

// checkOutOfLine fails unless something was moved out of line and none of it is a vector: a
// vector of d dimensions is 4 + 4·d bytes without its header.
func checkOutOfLine(t *testing.T, sizes []int) {
	t.Helper()
	if len(sizes) == 0 {
		t.Fatal("nothing was moved out of line: the rows are not over the TOAST threshold, the test proves nothing")
	}
	for _, size := range sizes {
		if size == 4+4*384 || size == 4+4*1536 {
			t.Errorf("a vector was moved to the TOAST table (%d bytes out of line; every out-of-line value: %v)", size, sizes)
		}
	}
}
