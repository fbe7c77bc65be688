package pg_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/turns"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
	"github.com/footprint/footprint/internal/store/storetest"
)

// TestPrincipalRankUsesBTree: a principal-scoped memory ranks over the principal's namespace with
// an exact scan that a b-tree selects, whatever else the table holds: here 40 conversations of
// the principal wrote into it, and other principals' and conversations' rows outnumber it.
func TestPrincipalRankUsesBTree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	now := time.Now().UTC()
	write := func(principal, conv string, n int) {
		id := core.Identity{Tenant: "acme", Principal: principal, ConversationID: conv}
		for range n {
			w := storetest.Turn{Tenant: "acme", Namespace: id.Namespace(), PrincipalNamespace: id.PrincipalNamespace(), HostTurn: 1,
				Shared: &turns.SharedScope{Namespace: id.PrincipalNamespace(), Conversation: conv, MemoryIDs: []string{"profile"},
					Kinds: turns.CountedKinds(true, false)},
				MemoryIDs: []string{"profile"}, CountMessageTurns: true, Now: now,
				Fingerprints: []core.Fingerprint{{MemoryID: "profile", Namespace: id.PrincipalNamespace(), Model: "m", Dims: 384}},
				Build: func(turn int) ([]core.Entry, error) {
					var out []core.Entry
					for i := range 2 {
						out = append(out, core.Entry{Tenant: "acme", Namespace: id.PrincipalNamespace(), MemoryID: "profile",
							ID: core.ScopedEntryID(fmt.Sprintf("msg-%d-%d", turn, i), conv), Kind: core.KindMessage, Turn: turn, Index: i,
							Value: json.RawMessage(`{"role":"user","content":"hi"}`), Embedding: testVector(turn*2 + i), EmbeddingModel: "m",
							SourceTurn: turn, SourceConversation: conv})
					}
					return out, nil
				}}
			if _, err := s.WriteTurn(ctx, w.Write()); err != nil {
				t.Fatal(err)
			}
		}
	}
	for c := range 40 {
		write("ada", fmt.Sprintf("c%d", c), 2)
	}
	for p := range 20 {
		write(fmt.Sprintf("p%d", p), "c0", 10)
	}
	conn := connect(t, dsn)
	if _, err := conn.Exec(ctx, "ANALYZE entries"); err != nil {
		t.Fatal(err)
	}
	q := recall.RankQuery{Tenant: "acme", Namespace: core.Identity{Tenant: "acme", Principal: "ada"}.PrincipalNamespace(), MemoryID: "profile",
		Kinds: []core.EntryKind{core.KindMessage}, Vector: testVector(5), Model: "m", Limit: 13, Now: now}
	lines, err := s.ExplainRank(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "entries_") || strings.Contains(plan, "hnsw") {
		t.Errorf("per-principal ranking is not an index-selected exact scan:\n%s", plan)
	}
	res, err := s.RankEntries(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "exact" || res.Total != 160 || len(res.Ranked) != 13 || res.Ranked[0].Entry.SourceConversation == "" {
		t.Errorf("ranking: mode %s, total %d, %d ranked, first from %q; want exact over 160, 13, a source conversation",
			res.Mode, res.Total, len(res.Ranked), res.Ranked[0].Entry.SourceConversation)
	}
	t.Logf("plan:\n%s", plan)
}
