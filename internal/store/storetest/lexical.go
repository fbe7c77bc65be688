package storetest

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
)

// testLexicalRanking covers the lexical and hybrid rankings both stores must agree on: BM25
// values computed by hand, in a conversation and in a corpus, the fused score, ties, and a
// query that matches nothing.
func testLexicalRanking(t *testing.T, s app.Store) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	unit := func(x, y float64) []float32 {
		n := math.Hypot(x, y)
		return []float32{float32(x / n), float32(y / n), 0}
	}
	put := func(tenant, ns, id string, turn int, text string, vec []float32) {
		t.Helper()
		e := mkEntry(tenant, ns, "sem", core.KindMessage, id, turn, 0)
		e.Embedding, e.EmbeddingModel, e.Lexical = vec, "m", core.LexicalOf(text)
		e.Value, e.SourceTurn = json.RawMessage(fmt.Sprintf(`{"role":"user","content":%q}`, text)), turn
		w := Turn{Tenant: tenant, Namespace: ns, HostTurn: turn, MemoryIDs: []string{"sem"}, Now: t0,
			Fingerprints: []core.Fingerprint{{MemoryID: "sem", Model: "m", Dims: len(vec)}},
			Build:        func(int) ([]core.Entry, error) { return []core.Entry{e}, nil }}
		if _, err := s.WriteTurn(t.Context(), w.Write()); err != nil {
			t.Fatal(err)
		}
	}
	rank := func(tenant, ns, mem string, kind core.EntryKind, r core.Ranking, query string, vec []float32, limit int) recall.RankResult {
		t.Helper()
		res, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: tenant, Namespace: ns, MemoryID: mem,
			Kinds: []core.EntryKind{kind}, Vector: vec, Model: "m", Ranking: r, Terms: core.QueryTerms(query),
			Alpha: 0.25, Limit: limit, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// Four entries, 13 terms, mean length 3.25. "apple" is in three of four entries (idf
	// ln(1 + 1.5/3.5) = 0.35667), "cherry" in one (ln(1 + 3.5/1.5) = 1.20397); the most the
	// query could score is (0.35667 + 1.20397) × 2.2 = 3.43343. Worked out by hand:
	//   m2 apple ×1, cherry ×2, length 4: (0.35667·2.2/(1 + 1.2·(0.25 + 0.75·4/3.25))
	//      + 1.20397·2·2.2/(2 + 1.2·(0.25 + 0.75·4/3.25))) / 3.43343 = 0.547696
	//   m1 apple ×1, length 2: 0.35667·2.2/(1 + 1.2·(0.25 + 0.75·2/3.25)) / 3.43343 = 0.123280
	//   m3 apple ×1, length 6 (longer, so lower than m1): 0.077170
	//   m4 neither term: 0
	texts := map[string]string{
		"msg-1-0": "apple banana",
		"msg-2-0": "apple cherry cherry durian",
		"msg-3-0": "Apple banana banana banana elderberry fig",
		"msg-4-0": "grape",
	}
	want := map[string]float64{"msg-2-0": 0.547696, "msg-1-0": 0.123280, "msg-3-0": 0.077170, "msg-4-0": 0}
	wantOrder := "[msg-2-0 msg-1-0 msg-3-0 msg-4-0]"
	vecs := map[string][]float32{"msg-1-0": unit(1, 0), "msg-2-0": unit(0, 1), "msg-3-0": unit(1, 1), "msg-4-0": unit(1, 0.2)}
	ids := func(res recall.RankResult) string {
		var out []string
		for _, sc := range res.Ranked {
			out = append(out, sc.Entry.ID)
		}
		return fmt.Sprint(out)
	}

	t.Run("HandComputedBM25", func(t *testing.T) {
		t.Parallel()
		for turn := 1; turn <= 4; turn++ {
			id := fmt.Sprintf("msg-%d-0", turn)
			put("lex", "ns", id, turn, texts[id], vecs[id])
		}
		put("lex", "other", "msg-1-0", 1, "cherry cherry cherry", unit(1, 0)) // another namespace: not in the statistics
		res := rank("lex", "ns", "sem", core.KindMessage, core.RankLexical, "cherry APPLE apple?", unit(1, 0), 10)
		if got := ids(res); got != wantOrder || res.Total != 4 || res.Mode != "exact" {
			t.Fatalf("lexical ranking = %s (total %d, mode %s), want %s: the rare term first, then the shorter entry", got, res.Total, res.Mode, wantOrder)
		}
		for _, sc := range res.Ranked {
			if math.Abs(sc.Lexical-want[sc.Entry.ID]) > 1e-5 || sc.Score != sc.Lexical {
				t.Errorf("%s: lexical %.6f score %.6f, want %.6f for both", sc.Entry.ID, sc.Lexical, sc.Score, want[sc.Entry.ID])
			}
		}
		// A query term no entry holds ("zebra") lowers every score alike: the maximum weighs it
		// as a term one entry holds, ln(1 + 3.5/1.5) × 2.2, so m2 scores 1.880473/6.082165.
		withUnseen := rank("lex", "ns", "sem", core.KindMessage, core.RankLexical, "cherry apple zebra", unit(1, 0), 10)
		for _, sc := range withUnseen.Ranked {
			w := map[string]float64{"msg-2-0": 0.309178, "msg-1-0": 0.069593, "msg-3-0": 0.043563, "msg-4-0": 0}[sc.Entry.ID]
			if math.Abs(sc.Lexical-w) > 1e-5 {
				t.Errorf("with an unseen term, %s: lexical %.6f, want %.6f", sc.Entry.ID, sc.Lexical, w)
			}
		}
		// Hybrid, alpha 0.25: 0.25·cosine + 0.75·lexical. m1's vector is the query's (cosine 1).
		hy := rank("lex", "ns", "sem", core.KindMessage, core.RankHybrid, "cherry apple", unit(1, 0), 10)
		for _, sc := range hy.Ranked {
			cos := float64(vecs[sc.Entry.ID][0]) // the query is (1, 0, 0)
			if math.Abs(sc.Vector-cos) > 1e-5 || math.Abs(sc.Lexical-want[sc.Entry.ID]) > 1e-5 ||
				math.Abs(sc.Score-(0.25*sc.Vector+0.75*sc.Lexical)) > 1e-9 {
				t.Errorf("%s: hybrid %.6f from vector %.6f and lexical %.6f, want vector %.6f, lexical %.6f and 0.25·v + 0.75·l",
					sc.Entry.ID, sc.Score, sc.Vector, sc.Lexical, cos, want[sc.Entry.ID])
			}
		}
		// 0.25·0 + 0.75·0.547696 = 0.4108 > 0.25·1 + 0.75·0.12328 = 0.3425 > m4 0.25·0.9806 = 0.2452 > m3 0.2346.
		if got := ids(hy); got != "[msg-2-0 msg-1-0 msg-4-0 msg-3-0]" {
			t.Errorf("hybrid ranking = %s, want [msg-2-0 msg-1-0 msg-4-0 msg-3-0]", got)
		}
		// A vector ranking computes no lexical score.
		vr := rank("lex", "ns", "sem", core.KindMessage, core.RankVector, "cherry apple", unit(1, 0), 10)
		if vr.Ranked[0].Entry.ID != "msg-1-0" || vr.Ranked[0].Lexical != 0 || vr.Ranked[0].Score != vr.Ranked[0].Vector {
			t.Errorf("vector ranking: %+v", vr.Ranked[0])
		}
	})

	t.Run("UnrelatedQueryScoresNothing", func(t *testing.T) {
		t.Parallel()
		for turn := 1; turn <= 4; turn++ {
			id := fmt.Sprintf("msg-%d-0", turn)
			put("lex-none", "ns", id, turn, texts[id], vecs[id])
		}
		res := rank("lex-none", "ns", "sem", core.KindMessage, core.RankLexical, "zxq unrelated words", unit(1, 0), 10)
		for _, sc := range res.Ranked {
			if sc.Lexical != 0 || sc.Score != 0 {
				t.Errorf("%s scores %v lexically for a query none of whose terms it holds", sc.Entry.ID, sc.Score)
			}
		}
		if len(res.Ranked) != 4 {
			t.Errorf("every candidate is still ranked (at 0): %s", ids(res))
		}
	})

	t.Run("TiesGoNewestFirst", func(t *testing.T) {
		t.Parallel()
		for turn := 1; turn <= 12; turn++ {
			put("lex-tie", "ns", fmt.Sprintf("msg-%d-0", turn), turn, "the same words each time", unit(1, 1))
		}
		for _, r := range []core.Ranking{core.RankLexical, core.RankHybrid} {
			res := rank("lex-tie", "ns", "sem", core.KindMessage, r, "same words", unit(1, 0), 3)
			if got := ids(res); got != "[msg-12-0 msg-11-0 msg-10-0]" {
				t.Errorf("%s: tied ranking = %s, want the newest three, newest first", r, got)
			}
		}
	})

	t.Run("Corpus", func(t *testing.T) {
		t.Parallel()
		chunk := func(doc string, n int, text string, vec []float32) core.Entry {
			e := mkEntry("lex-doc", "", "corpus", core.KindDocument, fmt.Sprintf("%s#%d", doc, n), 0, n)
			e.Embedding, e.EmbeddingModel, e.Lexical = vec, "m", core.LexicalOf(text)
			e.Value = json.RawMessage(fmt.Sprintf(`{"text":%q}`, text))
			e.CreatedAt, e.UpdatedAt, e.LastAccessedAt = t0, t0, t0
			return e
		}
		// A first version of document c, replaced below: its terms must leave the statistics.
		if err := s.PutDocuments(t.Context(), "lex-doc", "corpus", []string{"c"},
			[]core.Entry{chunk("c", 0, "cherry cherry cherry apple", unit(1, 0)), chunk("c", 1, "cherry", unit(1, 0))}, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.PutDocuments(t.Context(), "lex-doc", "corpus", []string{"a", "b", "c"}, []core.Entry{
			chunk("a", 0, texts["msg-1-0"], vecs["msg-1-0"]), chunk("b", 0, texts["msg-2-0"], vecs["msg-2-0"]),
			chunk("c", 0, texts["msg-3-0"], vecs["msg-3-0"]), chunk("d", 0, texts["msg-4-0"], vecs["msg-4-0"])}, nil); err != nil {
			t.Fatal(err)
		}
		res := rank("lex-doc", "", "corpus", core.KindDocument, core.RankLexical, "cherry apple", unit(1, 0), 10)
		if got := ids(res); got != "[b#0 a#0 c#0 d#0]" {
			t.Fatalf("corpus lexical ranking = %s, want [b#0 a#0 c#0 d#0]", got)
		}
		for _, sc := range res.Ranked {
			w := map[string]float64{"b#0": want["msg-2-0"], "a#0": want["msg-1-0"], "c#0": want["msg-3-0"], "d#0": 0}[sc.Entry.ID]
			if math.Abs(sc.Lexical-w) > 1e-5 {
				t.Errorf("corpus %s: lexical %.6f, want %.6f (the replaced chunks of c must not count)", sc.Entry.ID, sc.Lexical, w)
			}
		}
	})
}
