package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
)

// testRecallStore covers ranking, recall receipts and corpus documents.
func testRecallStore(t *testing.T, s app.Store) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	unit := func(x, y float64) []float32 {
		n := math.Hypot(x, y)
		return []float32{float32(x / n), float32(y / n), 0}
	}
	put := func(tenant, ns, mem, id string, turn int, vec []float32, model string, expires time.Time) {
		t.Helper()
		e := mkEntry(tenant, ns, mem, core.KindMessage, id, turn, 0)
		e.Embedding, e.EmbeddingModel, e.ExpiresAt = vec, model, expires
		e.Value, e.SourceTurn = json.RawMessage(`{"role":"user","content":"text of `+id+`"}`), turn
		w := Turn{Tenant: tenant, Namespace: ns, HostTurn: turn, MemoryIDs: []string{mem}, Now: t0,
			Fingerprints: []core.Fingerprint{{MemoryID: mem, Model: model, Dims: len(vec)}},
			Build:        func(int) ([]core.Entry, error) { return []core.Entry{e}, nil }}
		if _, err := s.WriteTurn(t.Context(), w.Write()); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("RankExactByCosine", func(t *testing.T) {
		t.Parallel()
		put("r1", "ns", "sem", "msg-1-0", 1, unit(1, 0), "m", time.Time{})
		put("r1", "ns", "sem", "msg-2-0", 2, unit(1, 1), "m", time.Time{})
		put("r1", "ns", "sem", "msg-3-0", 3, unit(0, 1), "m", time.Time{})
		put("r1", "ns", "sem", "msg-4-0", 4, unit(1, 0.1), "m", t0.Add(-time.Second)) // expired
		put("r1", "other", "sem", "msg-1-0", 1, unit(1, 0), "m", time.Time{})         // other namespace
		res, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: "r1", Namespace: "ns", MemoryID: "sem",
			Kinds: []core.EntryKind{core.KindMessage}, Vector: unit(1, 0), Model: "m", Limit: 2, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != "exact" || res.Total != 3 || len(res.Ranked) != 2 {
			t.Fatalf("mode %s total %d ranked %d", res.Mode, res.Total, len(res.Ranked))
		}
		if res.Ranked[0].Entry.ID != "msg-1-0" || res.Ranked[1].Entry.ID != "msg-2-0" {
			t.Errorf("order = %s, %s", res.Ranked[0].Entry.ID, res.Ranked[1].Entry.ID)
		}
		if math.Abs(res.Ranked[0].Score-1) > 1e-5 || math.Abs(res.Ranked[1].Score-math.Sqrt2/2) > 1e-5 {
			t.Errorf("scores = %v, %v", res.Ranked[0].Score, res.Ranked[1].Score)
		}
		// What a recall reads of a ranked entry (core.RankResult).
		got := res.Ranked[0].Entry
		var value map[string]string
		_ = json.Unmarshal(got.Value, &value)
		if got.Tenant != "r1" || got.Namespace != "ns" || got.MemoryID != "sem" || got.Kind != core.KindMessage ||
			got.Turn != 1 || got.Index != 0 || got.SourceTurn != 1 || got.EmbeddingModel != "m" ||
			!got.UpdatedAt.Equal(t0) || value["content"] != "text of msg-1-0" {
			t.Errorf("ranked entry = %+v, want what a recall reads of msg-1-0", got)
		}
		if len(res.Mismatched) != 0 {
			t.Errorf("mismatched = %v", res.Mismatched)
		}
		// A query of another vector space compares nothing: every live entry is
		// reported as mismatched, none is scored.
		other, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: "r1", Namespace: "ns", MemoryID: "sem",
			Kinds: []core.EntryKind{core.KindMessage}, Vector: []float32{1, 0, 0, 0}, Model: "m", Limit: 5, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		var mm []string
		for _, e := range other.Mismatched {
			mm = append(mm, e.ID)
		}
		if len(other.Ranked) != 0 || fmt.Sprint(mm) != "[msg-3-0 msg-2-0 msg-1-0]" {
			t.Errorf("other space: ranked %d, mismatched %v", len(other.Ranked), mm)
		}
		isolated, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: "r2", Namespace: "ns", MemoryID: "sem",
			Kinds: []core.EntryKind{core.KindMessage}, Vector: unit(1, 0), Model: "m", Limit: 5, Now: t0})
		if err != nil || len(isolated.Ranked) != 0 || isolated.Total != 0 {
			t.Errorf("another tenant ranks r1's entries: %+v %v", isolated, err)
		}
	})

	t.Run("RecallReceipts", func(t *testing.T) {
		t.Parallel()
		score := 0.91
		pos := 0
		frag := "fragment"
		r := recall.RecallResult{RecallID: "rcl_abcdefghij", Identity: core.Identity{Tenant: "rr", ConversationID: "c"},
			QueryHash: "sha256:00", Turn: 4, RunID: "run-1", CreatedAt: t0,
			Memories: []recall.MemoryRecall{{MemoryID: "m", Type: core.Causal, Flavor: "memory",
				Messages: []core.Message{{Role: "system", Content: frag}},
				Evidence: recall.Evidence{Strategy: core.TopK, QueryHash: "sha256:00", Candidates: []recall.Candidate{
					{ID: "snap-3", MemoryID: "m", Score: &score, Rank: 1, Admitted: true, PromptFragment: &frag, PromptPosition: &pos}}}}}}
		r.SystemPrompt, r.Injections = recall.Assemble(r.Memories)
		if r.SystemPrompt != frag || len(r.Injections) != 1 || r.Injections[0].SystemSpan == nil {
			t.Fatalf("assembled %q, %+v", r.SystemPrompt, r.Injections)
		}
		if err := json.Unmarshal([]byte(`{"kind":"topK","topK":1}`), &r.Memories[0].Strategy); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveRecall(t.Context(), "rr", r); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetRecall(t.Context(), "rr", r.RecallID)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(r)
		b, _ := json.Marshal(got)
		if string(a) != string(b) {
			t.Errorf("round trip:\n got %s\nwant %s", b, a)
		}
		if _, err := s.GetRecall(t.Context(), "other", r.RecallID); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("another tenant reads the receipt: %v", err)
		}
	})

	t.Run("PutDocumentsReplaces", func(t *testing.T) {
		t.Parallel()
		chunk := func(doc string, n int, x float64) core.Entry {
			e := mkEntry("docs", "", "corpus", core.KindDocument, fmt.Sprintf("%s#%d", doc, n), 0, n)
			e.Embedding, e.EmbeddingModel = unit(x, 1), "m"
			e.CreatedAt, e.UpdatedAt, e.LastAccessedAt = t0, t0, t0
			return e
		}
		if err := s.PutDocuments(t.Context(), "docs", "corpus", []string{"a", "b"},
			[]core.Entry{chunk("a", 0, 1), chunk("a", 1, 2), chunk("a", 2, 3), chunk("b", 0, 4)}, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.PutDocuments(t.Context(), "docs", "corpus", []string{"a"}, []core.Entry{chunk("a", 0, 5)}, nil); err != nil {
			t.Fatal(err)
		}
		ids := list(t, s, "docs", "")
		if fmt.Sprint(ids) != "[b#0 a#0]" && fmt.Sprint(ids) != "[a#0 b#0]" {
			t.Errorf("corpus after re-indexing a = %v, want a#0 and b#0", ids)
		}
		res, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: "docs", Namespace: "", MemoryID: "corpus",
			Kinds: []core.EntryKind{core.KindDocument}, Vector: unit(5, 1), Model: "m", Limit: 5, Now: t0})
		if err != nil || len(res.Ranked) != 2 || res.Ranked[0].Entry.ID != "a#0" {
			t.Errorf("corpus ranking: %+v %v", res, err)
		}
	})
}

// testRankingEdges covers what both stores must agree on beyond plain cosine order: ties,
// a model-only fingerprint mismatch, and corpus isolation between tenants.
func testRankingEdges(t *testing.T, s app.Store) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	same := []float32{0.6, 0.8, 0}
	put := func(tenant, ns, mem, id string, turn int, vec []float32, model string) {
		t.Helper()
		e := mkEntry(tenant, ns, mem, core.KindMessage, id, turn, 0)
		e.Embedding, e.EmbeddingModel = vec, model
		w := Turn{Tenant: tenant, Namespace: ns, HostTurn: turn, MemoryIDs: []string{mem}, Now: t0,
			Fingerprints: []core.Fingerprint{{MemoryID: mem, Model: model, Dims: len(vec)}},
			Build:        func(int) ([]core.Entry, error) { return []core.Entry{e}, nil }}
		if _, err := s.WriteTurn(t.Context(), w.Write()); err != nil {
			t.Fatal(err)
		}
	}
	rankIDs := func(res recall.RankResult) []string {
		var out []string
		for _, sc := range res.Ranked {
			out = append(out, sc.Entry.ID)
		}
		return out
	}

	t.Run("TiesGoNewestFirst", func(t *testing.T) {
		t.Parallel()
		// Turns 1..12 with one vector: ids compared as text would put msg-9-0 first.
		for turn := 1; turn <= 12; turn++ {
			put("tie", "ns", "sem", fmt.Sprintf("msg-%d-0", turn), turn, same, "m")
		}
		res, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: "tie", Namespace: "ns", MemoryID: "sem",
			Kinds: []core.EntryKind{core.KindMessage}, Vector: same, Model: "m", Limit: 3, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(rankIDs(res)); got != "[msg-12-0 msg-11-0 msg-10-0]" {
			t.Errorf("tied ranking = %s, want the newest three, newest first", got)
		}
		chunk := func(doc string, n int) core.Entry {
			e := mkEntry("tie", "", "corpus", core.KindDocument, fmt.Sprintf("%s#%d", doc, n), 0, n)
			e.Embedding, e.EmbeddingModel = same, "m"
			e.CreatedAt, e.UpdatedAt, e.LastAccessedAt = t0, t0, t0
			return e
		}
		if err := s.PutDocuments(t.Context(), "tie", "corpus", []string{"a", "b"},
			[]core.Entry{chunk("a", 0), chunk("a", 1), chunk("b", 0), chunk("b", 1)}, nil); err != nil {
			t.Fatal(err)
		}
		docs, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: "tie", Namespace: "", MemoryID: "corpus",
			Kinds: []core.EntryKind{core.KindDocument}, Vector: same, Model: "m", Limit: 10, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(rankIDs(docs)); got != "[b#1 a#1 b#0 a#0]" {
			t.Errorf("tied corpus ranking = %s, want [b#1 a#1 b#0 a#0] (chunk index, then id, descending)", got)
		}
	})

	t.Run("ModelOnlyMismatch", func(t *testing.T) {
		t.Parallel()
		put("mdl", "ns", "sem", "msg-1-0", 1, same, "model-a")
		put("mdl", "ns", "sem", "msg-2-0", 2, same, "model-a")
		res, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: "mdl", Namespace: "ns", MemoryID: "sem",
			Kinds: []core.EntryKind{core.KindMessage}, Vector: same, Model: "model-b", Limit: 5, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		var mm []string
		for _, e := range res.Mismatched {
			mm = append(mm, e.ID+"@"+e.EmbeddingModel)
		}
		if len(res.Ranked) != 0 || fmt.Sprint(mm) != "[msg-2-0@model-a msg-1-0@model-a]" {
			t.Errorf("same dimensions, another model: ranked %d, mismatched %v", len(res.Ranked), mm)
		}
		// A write of the other model is refused by the fingerprint, with what is stored.
		e := mkEntry("mdl", "ns", "sem", core.KindMessage, "msg-3-0", 3, 0)
		e.Embedding, e.EmbeddingModel = same, "model-b"
		_, err = s.WriteTurn(t.Context(), Turn{Tenant: "mdl", Namespace: "ns", HostTurn: 3, MemoryIDs: []string{"sem"}, Now: t0,
			Fingerprints: []core.Fingerprint{{MemoryID: "sem", Model: "model-b", Dims: 3}},
			Build:        func(int) ([]core.Entry, error) { return []core.Entry{e}, nil }}.Write())
		var fm *core.FingerprintMismatch
		if !errors.As(err, &fm) || fm.HaveModel != "model-a" || fm.GotModel != "model-b" {
			t.Errorf("write of another model: %v", err)
		}
		// Documents too.
		doc := mkEntry("mdl", "", "corpus", core.KindDocument, "a#0", 0, 0)
		doc.Embedding, doc.EmbeddingModel = same, "model-a"
		if err := s.PutDocuments(t.Context(), "mdl", "corpus", []string{"a"}, []core.Entry{doc}, nil); err != nil {
			t.Fatal(err)
		}
		doc2 := doc
		doc2.ID, doc2.EmbeddingModel, doc2.Embedding = "b#0", "model-a", []float32{1, 0, 0, 0}
		err = s.PutDocuments(t.Context(), "mdl", "corpus", []string{"b"}, []core.Entry{doc2}, nil)
		if !errors.As(err, &fm) || fm.HaveDims != 3 || fm.GotDims != 4 {
			t.Errorf("documents of another dimension: %v", err)
		}
		if got := list(t, s, "mdl", ""); fmt.Sprint(got) != "[a#0]" {
			t.Errorf("corpus after a refused batch = %v", got)
		}
	})

	t.Run("CorpusIsolatedByTenant", func(t *testing.T) {
		t.Parallel()
		doc := mkEntry("iso-a", "", "corpus", core.KindDocument, "secret#0", 0, 0)
		doc.Embedding, doc.EmbeddingModel = same, "m"
		if err := s.PutDocuments(t.Context(), "iso-a", "corpus", []string{"secret"}, []core.Entry{doc}, nil); err != nil {
			t.Fatal(err)
		}
		for _, tenant := range []string{"iso-b", "iso-A", "iso-a "} {
			res, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: tenant, Namespace: "", MemoryID: "corpus",
				Kinds: []core.EntryKind{core.KindDocument}, Vector: same, Model: "m", Limit: 10, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Ranked) != 0 || len(res.Mismatched) != 0 || res.Total > 0 {
				t.Errorf("tenant %q ranks another tenant's corpus: %+v", tenant, res)
			}
			if got := list(t, s, tenant, ""); len(got) != 0 {
				t.Errorf("tenant %q lists another tenant's corpus: %v", tenant, got)
			}
		}
		res, err := s.RankEntries(t.Context(), recall.RankQuery{Tenant: "iso-a", Namespace: "", MemoryID: "corpus",
			Kinds: []core.EntryKind{core.KindDocument}, Vector: same, Model: "m", Limit: 10, Now: t0})
		if err != nil || fmt.Sprint(rankIDs(res)) != "[secret#0]" {
			t.Errorf("the owner's ranking: %+v %v", res, err)
		}
	})
}
