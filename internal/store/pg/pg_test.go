package pg_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
	"github.com/footprint/footprint/internal/store/storetest"
	"github.com/footprint/footprint/migrations"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) app.Store { return pgtest.Open(t) })
}

func TestInfo(t *testing.T) {
	t.Parallel()
	s := pgtest.Open(t)
	if got, want := s.Info(), (core.StoreInfo{Kind: "postgres", RanksVectors: true}); got != want {
		t.Errorf("Info() = %+v, want %+v", got, want)
	}
}

// connect opens a plain connection for arranging state the Store's API cannot (row locks,
// entries), closed when the test ends.
func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func memory(t *testing.T, tenant, id string) core.Memory {
	t.Helper()
	var s core.Strategy
	if err := s.UnmarshalJSON([]byte(`{"kind":"window","size":20}`)); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	return core.Memory{Tenant: tenant, ID: id, Type: core.Semantic, Strategy: s, Flavor: "memory",
		Version: 1, CreatedAt: now, UpdatedAt: now}
}

// TestLockTimeoutIsUnavailable checks that waiting too long for another transaction's row lock
// becomes core.ErrUnavailable (a 503 the client may retry), with the driver error kept in the
// chain for the log, and that the store works again once the lock is released.
func TestLockTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s, err := pg.Open(ctx, dsn, nil, pg.WithLockTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.CreateMemory(ctx, memory(t, "acme", "chat"), nil); err != nil {
		t.Fatal(err)
	}

	holder := connect(t, dsn)
	lockTx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockTx.Exec(ctx, "SELECT 1 FROM memories WHERE tenant = 'acme' AND id = 'chat' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}

	_, err = s.UpdateMemory(ctx, "acme", "chat", func(m *core.Memory) error { m.Version++; return nil })
	assertUnavailable(t, err, "UpdateMemory", "55P03")
	err = s.DeleteMemory(ctx, "acme", "chat", true)
	assertUnavailable(t, err, "DeleteMemory(purge)", "55P03")

	if err := lockTx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := s.UpdateMemory(ctx, "acme", "chat", func(m *core.Memory) error { m.Version++; return nil })
	if err != nil || m.Version != 2 {
		t.Fatalf("UpdateMemory after the lock was released = version %d, %v; want 2, nil", m.Version, err)
	}
}

func assertUnavailable(t *testing.T, err error, call, sqlstate string) {
	t.Helper()
	if !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("%s: error = %v, want core.ErrUnavailable", call, err)
		return
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != sqlstate {
		t.Errorf("%s: error = %v, want the cause (SQLSTATE %s) kept in the chain", call, err, sqlstate)
	}
}

// TestOpenUnreachable needs no database: nothing listens on port 1.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	_, err := pg.Open(t.Context(), "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=5", nil)
	if !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("Open(unreachable) error = %v, want core.ErrUnavailable", err)
	}
}

// TestDeletePurge checks what DeleteMemory erases besides the definition: with purge, the
// memory's entries and embedding fingerprints in every namespace, and nothing of any other
// memory or tenant; without purge, nothing.
func TestDeletePurge(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	conn := connect(t, dsn)

	for _, m := range []core.Memory{memory(t, "acme", "chat"), memory(t, "acme", "facts"), memory(t, "other", "chat")} {
		if err := s.CreateMemory(ctx, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Two namespaces for acme/chat, plus a neighbour memory and another tenant's same id.
	rows := []struct{ tenant, memory, namespace string }{
		{"acme", "chat", "acme/_/c1"},
		{"acme", "chat", "acme/_/c2"},
		{"acme", "facts", "acme/_/c1"},
		{"other", "chat", "other/_/c1"},
	}
	for _, r := range rows {
		if _, err := conn.Exec(ctx, `INSERT INTO entries (tenant, memory_id, namespace, id, kind, turn, idx, value,
				created_at, updated_at, last_accessed_at, embedding, embedding_model, embedding_dims)
			VALUES ($1, $2, $3, 'msg-1-0', 'msg', 1, 0, '{"role":"user","content":"hi"}', now(), now(), now(),
				'[0.6,0.8,0]', 'hash', 3)`, r.tenant, r.memory, r.namespace); err != nil {
			t.Fatalf("insert entry: %v", err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO embedding_fingerprints (tenant, memory_id, namespace, model, dims)
			VALUES ($1, $2, $3, 'hash', 3)`, r.tenant, r.memory, r.namespace); err != nil {
			t.Fatalf("insert fingerprint: %v", err)
		}
	}
	count := func(table, tenant, memory string) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table+" WHERE tenant = $1 AND memory_id = $2",
			tenant, memory).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	if err := s.DeleteMemory(ctx, "acme", "facts", false); err != nil {
		t.Fatal(err)
	}
	if n := count("entries", "acme", "facts"); n != 1 {
		t.Errorf("after DeleteMemory(purge=false): %d entries of acme/facts, want 1 (kept)", n)
	}

	if err := s.DeleteMemory(ctx, "acme", "chat", true); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"entries", "embedding_fingerprints"} {
		if n := count(table, "acme", "chat"); n != 0 {
			t.Errorf("after DeleteMemory(purge=true): %d %s of acme/chat, want 0", n, table)
		}
		if n := count(table, "acme", "facts"); n != 1 {
			t.Errorf("purging acme/chat touched acme/facts: %d %s, want 1", n, table)
		}
		if n := count(table, "other", "chat"); n != 1 {
			t.Errorf("purging acme/chat touched other/chat: %d %s, want 1", n, table)
		}
	}
}

// TestEntryIndexes pins that the queries turn writes and recall depend on are served by
// entries_newest_idx: the highest live snapshot (turn numbers) and the newest entries of one
// kind (windows, listings), the latter without a sort. enable_seqscan is off because the
// tables are tiny; the question is whether the index CAN serve the query, not whether the
// planner prefers it today.
func TestEntryIndexes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	conn := connect(t, pgtest.DSN(t))
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, query string
		args        []any
		noSort      bool
	}{
		{"max live snapshot", `SELECT max(turn) FROM entries
			WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = 'snap'
			AND (expires_at IS NULL OR expires_at > now())`, []any{"acme", "acme/_/c1", "chat"}, false},
		{"newest first", `SELECT id FROM entries
			WHERE tenant = $1 AND namespace = $2 AND memory_id = $3 AND kind = 'msg'
			AND (expires_at IS NULL OR expires_at > now())
			ORDER BY turn DESC NULLS LAST, idx DESC NULLS LAST LIMIT 20`, []any{"acme", "acme/_/c1", "chat"}, true},
		{"forget a conversation", `DELETE FROM entries WHERE tenant = $1 AND namespace = $2`, []any{"acme", "acme/_/c1"}, false},
	}
	for _, tc := range tests {
		rows, err := conn.Query(ctx, "EXPLAIN "+tc.query, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, "entries_newest_idx") {
			t.Errorf("%s: plan does not use entries_newest_idx:\n%s", tc.name, plan)
		}
		if tc.noSort && strings.Contains(plan, "Sort") {
			t.Errorf("%s: plan sorts instead of reading the index in order:\n%s", tc.name, plan)
		}
	}
}

// TestMigrationsDownAndUp checks that every Down section undoes its Up (the schema can be
// rolled back and re-applied), and that concurrent migrators, as when replicas start
// together, serialise on the advisory lock instead of failing.
func TestMigrationsDownAndUp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(ctx, 0); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_tables
		WHERE schemaname = 'public' AND tablename <> 'goose_db_version'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("after migrating down, %d tables remain", tables)
	}

	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = pg.Migrate(ctx, dsn, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrator %d: %v", i, err)
		}
	}
	current, target, err := provider.GetVersions(ctx)
	if err != nil || current != target {
		t.Fatalf("after concurrent Migrate: version %d of %d, %v", current, target, err)
	}
	s, err := pg.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateMemory(ctx, memory(t, "acme", "chat"), nil); err != nil {
		t.Fatalf("CreateMemory on the re-migrated schema: %v", err)
	}
}

// TestIDCollation pins COLLATE "C" on the columns clients page or sort by. The conformance
// suite's ordering test cannot catch a missing collation on a cluster whose default is already
// byte order (C, C.UTF-8, as scripts/test-postgres.sh creates); production clusters often use
// en_US.UTF-8, where '-' and case are ignored at first and ListMemories would disagree with
// the in-memory store and could skip ids while paging.
func TestIDCollation(t *testing.T) {
	t.Parallel()
	conn := connect(t, pgtest.DSN(t))
	rows, err := conn.Query(t.Context(), `SELECT table_name || '.' || column_name, coalesce(collation_name, '')
		FROM information_schema.columns
		WHERE table_schema = 'public' AND (table_name, column_name) IN
			(('memories', 'id'), ('entries', 'id'), ('entries', 'namespace'), ('entries', 'memory_id'))`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var column, collation string
	if _, err := pgx.ForEachRow(rows, []any{&column, &collation}, func() error {
		got[column] = collation
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("found columns %v, want 4", got)
	}
	for column, collation := range got {
		if collation != "C" {
			t.Errorf("%s has collation %q, want C", column, collation)
		}
	}
}
