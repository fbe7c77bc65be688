package pg_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// TestCorpusRankUsesHNSW pins that corpus recall at 384 dimensions is served by the HNSW index
// (entries_doc_hnsw_384): if a change to the query or the index stops the planner from using
// it, this fails. Sorts and sequential scans are off, as the store turns sorts off for this
// query (so that the HNSW ordered scan is the plan that runs and "ann" is the truth).
func TestCorpusRankUsesHNSW(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s, err := pg.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	vec := func(seed int) []float32 {
		v := make([]float32, 384)
		v[seed%384], v[(seed*7)%384] = 1, 0.5
		return v
	}
	var chunks []core.Entry
	for i := range 50 {
		chunks = append(chunks, core.Entry{Tenant: "acme", MemoryID: "docs", ID: fmt.Sprintf("d#%d", i), Kind: core.KindDocument,
			Index: i, Value: []byte(`{"text":"x"}`), Embedding: vec(i), EmbeddingModel: "footprint-hash-v1"})
	}
	if err := s.PutDocuments(ctx, "acme", "docs", []string{"d"}, chunks); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dsn)
	for _, q := range []string{"ANALYZE entries", "SET enable_seqscan = off", "SET enable_sort = off"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	plan := explain(ctx, t, conn, "EXPLAIN "+pg.AnnRankSQL(384),
		"acme", "", "docs", []string{"doc"}, time.Now(), pgvector.NewVector(vec(3)), "footprint-hash-v1", 10)
	if !strings.Contains(plan, "entries_doc_hnsw_384") {
		t.Errorf("corpus ranking does not use the HNSW index:\n%s", plan)
	}
	res, err := s.RankEntries(ctx, core.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs",
		Kinds: []core.EntryKind{core.KindDocument}, Vector: vec(3), Model: "footprint-hash-v1", Limit: 5, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "ann" || len(res.Ranked) != 5 || res.Ranked[0].Entry.ID != "d#3" {
		t.Errorf("ann ranking: mode %s, %d results, first %v", res.Mode, len(res.Ranked), res.Ranked)
	}
}

func explain(ctx context.Context, t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	return strings.Join(plan, "\n")
}
