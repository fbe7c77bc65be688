package pg_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
	"github.com/footprint/footprint/internal/store/storetest"
)

// TestMaxLiveTurnUsesIndex pins that the turn derivation is served by entries_newest_idx: an
// index scan in the index's own order, no sort, no scan of the namespace's other entries.
// Sequential scans are disabled for the session because on a table this small the planner
// would rightly prefer one; what matters is that the index can serve the query as written.
func TestMaxLiveTurnUsesIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	now := time.Now()
	for host := 1; host <= 20; host++ {
		_, err := s.WriteTurn(ctx, storetest.Turn{Tenant: "acme", Namespace: "conv", HostTurn: host,
			MemoryIDs: []string{"causal"}, Now: now,
			Build: func(turn int) ([]core.Entry, error) {
				return []core.Entry{
					{Tenant: "acme", Namespace: "conv", MemoryID: "causal", ID: fmt.Sprintf("snap-%d", turn),
						Kind: core.KindSnapshot, Turn: turn, Value: json.RawMessage(`{}`)},
					{Tenant: "acme", Namespace: "conv", MemoryID: "chat", ID: fmt.Sprintf("msg-%d-0", turn),
						Kind: core.KindMessage, Turn: turn, Value: json.RawMessage(`{}`)},
				}, nil
			}}.Write())
		if err != nil {
			t.Fatal(err)
		}
	}
	conn := connect(t, dsn)
	if _, err := conn.Exec(ctx, "ANALYZE entries"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	sql, args := pg.MaxLiveTurn("acme", "conv", []string{"causal", "chat"}, []string{"snap", "msg"}, now)
	rows, err := conn.Query(ctx, "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if !strings.Contains(text, "Index Scan using entries_newest_idx") || strings.Contains(text, "Sort") {
		t.Errorf("turn derivation is not an ordered scan of entries_newest_idx:\n%s", text)
	}
	t.Logf("plan:\n%s", text)
}

// TestVectorsStayInline pins migration 00012: an entry whose row is over the TOAST threshold
// keeps its vector in the row (the ranking reads every candidate's vector) and moves its value
// out instead. It fails under pgvector's default STORAGE EXTERNAL, where the vector, the
// row's largest value, is the one moved to the TOAST table.
func TestVectorsStayInline(t *testing.T) {
	pgtest.SkipOnCitus(t, "TestCitusVectorsStayInline (the shards' TOAST tables)")
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	writeLongEntries(t, s)

	conn := connect(t, dsn)
	var toast string
	if err := conn.QueryRow(ctx, `SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'entries'::regclass`).Scan(&toast); err != nil {
		t.Fatal(err)
	}
	// Each out-of-line value is one chunk_id; its chunks hold the value without its 4-byte
	// header.
	rows, err := conn.Query(ctx, `SELECT sum(octet_length(chunk_data))::int FROM `+toast+` GROUP BY chunk_id`)
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	checkOutOfLine(t, sizes)
}
