package pg_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// snapWrite is a turn write of one causal snapshot with a vector of dims dimensions.
func snapWrite(ns string, host int, dims int, ttl time.Duration, now time.Time) core.TurnWrite {
	vec := make([]float32, dims)
	vec[0] = 1
	return core.TurnWrite{Tenant: "acme", Namespace: ns, HostTurn: host, MemoryIDs: []string{"why"}, Now: now,
		Fingerprints: []core.Fingerprint{{MemoryID: "why", Model: "m", Dims: dims}},
		Build: func(turn int) ([]core.Entry, error) {
			e := core.Entry{Tenant: "acme", Namespace: ns, MemoryID: "why", ID: fmt.Sprintf("snap-%d", turn),
				Kind: core.KindSnapshot, Turn: turn, Value: json.RawMessage(`{}`), Embedding: vec, EmbeddingModel: "m"}
			if ttl > 0 {
				e.ExpiresAt = now.Add(ttl)
			}
			return []core.Entry{e}, nil
		}}
}

// TestTurnPredictionAcrossProcesses: two stores on one database are two server processes,
// each remembering the turns it committed. Whatever the other one did in between — writes,
// an expired snapshot, a forget with a new vector size — every write gets exactly the turn the
// stored data says, never a duplicate or a stale fingerprint.
func TestTurnPredictionAcrossProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	open := func() *pg.Store {
		s, err := pg.Open(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	a, b := open(), open()
	now := time.Now().UTC().Truncate(time.Millisecond)
	write := func(s *pg.Store, w core.TurnWrite) int {
		t.Helper()
		out, err := s.WriteTurn(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		return out.Turn
	}
	var got []int
	// Alternating: each store's memory is stale on every write but its first.
	for i := range 6 {
		s := a
		if i%2 == 1 {
			s = b
		}
		got = append(got, write(s, snapWrite("c1", 1, 4, 0, now)))
	}
	// Two in a row on a: the second is predicted right.
	got = append(got, write(a, snapWrite("c1", 1, 4, 0, now)), write(a, snapWrite("c1", 1, 4, 0, now)))
	if !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("turns %v, want 1..8", got)
	}
	// a's first write had nothing to predict; its next three found that b had moved on (stale,
	// redone); only the second of the pair was predicted right.
	if hits, stale := pg.PredictionStats(a); hits != 1 || stale != 3 {
		t.Errorf("store a: %d predicted writes, %d stale predictions; want 1 and 3", hits, stale)
	}
	// A host turn far ahead, then back to store-anchored numbering.
	if n := write(b, snapWrite("c1", 20, 4, 0, now)); n != 20 {
		t.Errorf("host turn 20: got %d", n)
	}
	if n := write(a, snapWrite("c1", 1, 4, 0, now)); n != 21 {
		t.Errorf("after 20: got %d", n)
	}
	// a's latest snapshot expires: it no longer counts, and a's memory of 22 must not win.
	if n := write(a, snapWrite("c2", 1, 4, 0, now)); n != 1 {
		t.Fatalf("c2 first: %d", n)
	}
	if n := write(a, snapWrite("c2", 1, 4, time.Second, now)); n != 2 {
		t.Fatalf("c2 second: %d", n)
	}
	later := now.Add(time.Hour)
	if n := write(a, snapWrite("c2", 1, 4, 0, later)); n != 2 {
		t.Errorf("after snap-2 expired: got turn %d, want 2 (the expired snapshot is replaced)", n)
	}
	// b forgets c1; a still remembers turn 21 and fingerprint dims 4, but the namespace now
	// starts over and accepts another vector size.
	if _, err := b.ForgetNamespace(ctx, "acme", "c1"); err != nil {
		t.Fatal(err)
	}
	if n := write(a, snapWrite("c1", 1, 8, 0, now)); n != 1 {
		t.Errorf("after a forget elsewhere: got turn %d, want 1", n)
	}
	// And a mismatch is still refused from the stored truth, on either store.
	var mm *core.FingerprintMismatch
	if _, err := b.WriteTurn(ctx, snapWrite("c1", 1, 4, 0, now)); !errors.As(err, &mm) {
		t.Errorf("dims 4 after 8: %v, want a fingerprint mismatch", err)
	}
	if _, err := a.WriteTurn(ctx, snapWrite("c1", 1, 4, 0, now)); !errors.As(err, &mm) {
		t.Errorf("dims 4 after 8 (the writer): %v, want a fingerprint mismatch", err)
	}
}

// TestTurnsTwoProcessesConcurrently: 2 stores × 16 goroutines write to one namespace at once;
// the turns are exactly 1..N.
func TestTurnsTwoProcessesConcurrently(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	var stores []*pg.Store
	for range 2 {
		s, err := pg.Open(ctx, dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		stores = append(stores, s)
	}
	const perWriter, writers = 8, 16
	var (
		mu    sync.Mutex
		turns []int
		wg    sync.WaitGroup
	)
	now := time.Now().UTC()
	for i := range 2 * writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWriter {
				out, err := stores[i%2].WriteTurn(context.WithoutCancel(ctx), snapWrite("busy", 1, 4, 0, now))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				turns = append(turns, out.Turn)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for i, s := range stores {
		hits, stale := pg.PredictionStats(s)
		t.Logf("store %d: %d predicted writes, %d stale predictions", i, hits, stale)
	}
	slices.Sort(turns)
	for i, n := range turns {
		if n != i+1 {
			t.Fatalf("turns are not 1..%d: %v", len(turns), turns)
		}
	}
}
