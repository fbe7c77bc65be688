package pg_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// TestCorpusRankUsesHNSW pins that corpus recall at 384 dimensions is served by the HNSW index
// (entries_doc_hnsw_384): if a change to the query or the index stops the planner from using
// it, this fails. The plan is taken with the store's own statement and settings (ExplainRank).
func TestCorpusRankUsesHNSW(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
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
	if _, err := conn.Exec(ctx, "ANALYZE entries"); err != nil {
		t.Fatal(err)
	}
	// The plan of the very statement RankEntries runs, under its own settings.
	lines, err := s.ExplainRank(ctx, core.RankQuery{Tenant: "acme", Namespace: "", MemoryID: "docs",
		Kinds: []core.EntryKind{core.KindDocument}, Vector: vec(3), Model: "footprint-hash-v1", Limit: 10, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "Index Scan using entries_doc_hnsw_384") {
		t.Errorf("corpus ranking does not use the HNSW index:\n%s", plan)
	}
	// A conversation is never searched through it.
	lines, err = s.ExplainRank(ctx, core.RankQuery{Tenant: "acme", Namespace: "acme/c1", MemoryID: "docs",
		Kinds: []core.EntryKind{core.KindDocument}, Vector: vec(3), Model: "footprint-hash-v1", Limit: 10, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); strings.Contains(plan, "hnsw") {
		t.Errorf("conversation ranking uses the HNSW index:\n%s", plan)
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
