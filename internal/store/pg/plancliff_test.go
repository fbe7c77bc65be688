package pg_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
	"github.com/footprint/footprint/internal/store/storetest"
)

// TestRankingPlansSurviveGrowth reproduces the plan cliff: statistics taken while the table held
// two conversations, then forty times as many rows across many others, with autovacuum held off
// so the statistics stay stale. The plans the store's connections keep for the per-conversation
// and the corpus ranking must still be the namespace's b-tree and the HNSW index: no sequential
// scan of entries, whatever the statistics say. (With the plan the store made before, a generic
// plan from these statistics, both the ranking and its count scanned the whole table.)
func TestRankingPlansSurviveGrowth(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	conn := connect(t, dsn)
	if _, err := conn.Exec(ctx, `ALTER TABLE entries SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	writeConv := func(ns string, turns int) {
		for range turns {
			w := storetest.Turn{Tenant: "acme", Namespace: ns, HostTurn: 1, MemoryIDs: []string{"conv"}, CountMessageTurns: true, Now: now,
				Fingerprints: []core.Fingerprint{{MemoryID: "conv", Model: "m", Dims: 384}},
				Build: func(turn int) ([]core.Entry, error) {
					var out []core.Entry
					for i := range 2 {
						out = append(out, core.Entry{Tenant: "acme", Namespace: ns, MemoryID: "conv", ID: fmt.Sprintf("msg-%d-%d", turn, i),
							Kind: core.KindMessage, Turn: turn, Index: i, Value: json.RawMessage(`{"role":"user","content":"hi"}`),
							Embedding: testVector(turn*2 + i), EmbeddingModel: "m"})
					}
					return out, nil
				}}
			if _, err := s.WriteTurn(ctx, w.Write()); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeConv("acme/_/small", 50)
	writeConv("acme/_/large", 500)
	if _, err := conn.Exec(ctx, `ANALYZE entries`); err != nil {
		t.Fatal(err)
	}
	putCorpus(t, s, 100, "m")
	// Forty times as many rows, over 64 other conversations, behind the statistics' back (the
	// growth the issue measured: 20,000 turns of two messages).
	if _, err := conn.Exec(ctx, `INSERT INTO entries (tenant, memory_id, namespace, id, kind, turn, idx, value,
			created_at, updated_at, last_accessed_at, source_turn, embedding, embedding_model, embedding_dims)
		SELECT 'acme', 'conv', 'acme/_/c' || (g % 64), 'msg-' || (g / 64 + 1) || '-' || i, 'msg', g / 64 + 1, i,
			'{"role":"user","content":"hi"}', now(), now(), now(), g / 64 + 1,
			(SELECT ('[' || string_agg(((g * 2 + i + d) % 7)::text, ',') || ']')::vector FROM generate_series(1, 384) d),
			'm', 384
		FROM generate_series(0, 19999) g, generate_series(0, 1) i`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		name, want string
		q          recall.RankQuery
	}{
		{"per-conversation", "Index Scan", recall.RankQuery{Tenant: "acme", Namespace: "acme/_/small", MemoryID: "conv",
			Kinds: []core.EntryKind{core.KindMessage}, Vector: testVector(7), Model: "m", Limit: 13, Now: now}},
		// The lexical and hybrid rankings read the conversation's rows in the b-tree's own order
		// and score them in Go: the same statement shape, with its own generic plan.
		{"per-conversation lexical", "Index Scan", recall.RankQuery{Tenant: "acme", Namespace: "acme/_/small", MemoryID: "conv",
			Kinds: []core.EntryKind{core.KindMessage}, Vector: testVector(7), Model: "m", Limit: 13, Now: now,
			Ranking: core.RankLexical, Terms: []string{"hi"}}},
		{"per-conversation hybrid", "Index Scan", recall.RankQuery{Tenant: "acme", Namespace: "acme/_/small", MemoryID: "conv",
			Kinds: []core.EntryKind{core.KindMessage}, Vector: testVector(7), Model: "m", Limit: 13, Now: now,
			Ranking: core.RankHybrid, Alpha: 0.1, Terms: []string{"hi"}}},
		{"corpus", "entries_doc_hnsw_384", recall.RankQuery{Tenant: "acme", Namespace: core.CorpusNamespace, MemoryID: "docs",
			Kinds: []core.EntryKind{core.KindDocument}, Vector: testVector(3), Model: "m", Limit: 10, Now: now}},
	} {
		lines, err := s.ExplainRank(ctx, q.q)
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "Seq Scan on entries") || !strings.Contains(plan, q.want) {
			t.Errorf("%s ranking after growth: a sequential scan, or no %q:\n%s", q.name, q.want, plan)
		}
	}
}
