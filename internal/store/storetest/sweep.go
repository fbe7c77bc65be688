package storetest

import (
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/turns"
)

// testSweep: expired entries and idempotency claims are reclaimed, live
// ones are untouched, and a swept store reads exactly as before.
func testSweep(t *testing.T, s app.Store) {
	sw, ok := s.(core.Sweeper)
	if !ok {
		t.Fatalf("%T does not implement core.Sweeper", s)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	expiring := snapWrite("sweep", "conv", 1, t0)
	build := expiring.Build
	expiring.Build = func(turn int) ([]core.Entry, error) {
		es, err := build(turn)
		for i := range es {
			es[i].ExpiresAt = t0.Add(time.Minute)
		}
		return es, err
	}
	expiring.Idempotency = &turns.IdempotencyClaim{Key: "k", RequestHash: []byte("h"), ExpiresAt: t0.Add(time.Minute)}
	expiring.Respond = func(int, []core.Entry) ([]byte, error) { return []byte(`{}`), nil }
	mustWrite(t, s, expiring)
	mustWrite(t, s, snapWrite("sweep", "conv", 5, t0)) // never expires
	before := list(t, s, "sweep", "conv")

	n, err := sw.Sweep(t.Context(), core.NewSweepPolicy(t0.Add(30*time.Second), 0))
	if err != nil || n != 0 {
		t.Fatalf("sweep before expiry = %d, %v; want 0", n, err)
	}
	n, err = sw.Sweep(t.Context(), core.NewSweepPolicy(t0.Add(2*time.Minute), 0))
	if err != nil || n != 2 {
		t.Fatalf("sweep after expiry = %d, %v; want 2 (one entry, one key)", n, err)
	}
	after := list(t, s, "sweep", "conv")
	if len(after) != 1 || after[0] != "snap-5" || len(before) != 2 {
		t.Errorf("entries before %v, after %v", before, after)
	}

	// Recall receipts and ablations are kept for the audit retention (30 days).
	r := recall.RecallResult{RecallID: "rcl_old", Identity: core.Identity{Tenant: "sweep", ConversationID: "c"}, QueryHash: "sha256:0",
		CreatedAt: t0, Memories: []recall.MemoryRecall{}, Injections: []recall.Injection{}}
	if err := s.SaveRecall(t.Context(), "sweep", r); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveAblation(t.Context(), "sweep", "ns", 1, explain.Ablation{ID: "abl_old", Excluded: []string{}, CreatedAt: t0}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sw.Sweep(t.Context(), core.NewSweepPolicy(t0.Add(29*24*time.Hour), 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRecall(t.Context(), "sweep", "rcl_old"); err != nil {
		t.Errorf("a 29-day-old receipt was swept: %v", err)
	}
	if _, err := sw.Sweep(t.Context(), core.NewSweepPolicy(t0.Add(31*24*time.Hour), 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetRecall(t.Context(), "sweep", "rcl_old"); err == nil {
		t.Errorf("a 31-day-old receipt survived the sweep")
	}
	if as, _ := s.Ablations(t.Context(), "sweep", "ns", 1); len(as) != 0 {
		t.Errorf("a 31-day-old ablation survived the sweep")
	}
}
