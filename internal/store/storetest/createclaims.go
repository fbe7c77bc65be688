package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/memories"
	"github.com/footprint/footprint/internal/core/runs"
)

// testCreateClaims: every create other than a turn (a memory, a run, documents, an ablation)
// claims its Idempotency-Key (core.Once) in its own transaction, with the same rules as a
// turn's claim (turnclaims.go): the same request replays the stored answer and creates
// nothing; another request is core.ErrKeyReused; a create that fails frees the key; of
// concurrent requests with one key exactly one creates and the others replay; an expired
// claim is ignored; keys are the tenant's, shared by every kind of create.
func testCreateClaims(t *testing.T, s app.Store) {
	for _, c := range creators() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tenant := "once-" + c.name
			ctx := t.Context()
			once := func(key, hash string, now time.Time) *core.Once {
				return &core.Once{Claim: core.IdempotencyClaim{Key: key, RequestHash: []byte(hash), ExpiresAt: now.Add(day)},
					Now: now, Response: []byte(`{"answer":"` + key + "/" + hash + `"}`)}
			}

			// First create, then the same request: replayed, nothing created twice.
			first := once("k1", "h1", t0)
			if err := c.create(t, s, tenant, 1, first); err != nil || first.Replay != nil {
				t.Fatalf("first create: %v, replay %s", err, first.Replay)
			}
			retry := once("k1", "h1", t0.Add(time.Second))
			retry.Response = []byte(`{"answer":"not this one"}`)
			if err := c.create(t, s, tenant, 1, retry); err != nil || string(retry.Replay) != `{"answer":"k1/h1"}` {
				t.Fatalf("retry: %v, replay %s", err, retry.Replay)
			}
			if n := c.count(t, s, tenant); n != 1 {
				t.Errorf("after a replay: %d created, want 1", n)
			}
			// The key with another request is refused, and creates nothing.
			if err := c.create(t, s, tenant, 2, once("k1", "h2", t0)); !errors.Is(err, core.ErrKeyReused) {
				t.Errorf("another request with the key: %v, want core.ErrKeyReused", err)
			}
			// A create that fails (the id is taken) frees its key for the next request.
			if c.conflict != nil {
				failed := once("k2", "h1", t0)
				if err := c.conflict(t, s, tenant, failed); err == nil || errors.Is(err, core.ErrKeyReused) {
					t.Fatalf("conflicting create: %v, want its own refusal", err)
				}
				again := once("k2", "h3", t0)
				if err := c.create(t, s, tenant, 3, again); err != nil || again.Replay != nil {
					t.Errorf("the key of a failed create, reused: %v, replay %s", err, again.Replay)
				}
			}
			// An expired claim is ignored.
			late := once("k1", "h9", t0.Add(day+time.Second))
			if err := c.create(t, s, tenant, 9, late); err != nil || late.Replay != nil {
				t.Errorf("after the key expired: %v, replay %s", err, late.Replay)
			}
			// Concurrent requests with one key: one creates, the others replay its answer.
			before := c.count(t, s, tenant)
			var wg sync.WaitGroup
			results := make([]*core.Once, 8)
			errs := make([]error, len(results))
			for i := range results {
				results[i] = once("k-conc", "h", t0)
				wg.Go(func() { errs[i] = c.create(t, s, tenant, 100, results[i]) })
			}
			wg.Wait()
			created := 0
			for i, o := range results {
				switch {
				case errs[i] != nil:
					t.Errorf("concurrent %d: %v", i, errs[i])
				case o.Replay == nil:
					created++
				case !bytes.Equal(o.Replay, []byte(`{"answer":"k-conc/h"}`)):
					t.Errorf("concurrent %d replayed %s", i, o.Replay)
				}
			}
			if created != 1 || c.count(t, s, tenant) != before+1 {
				t.Errorf("concurrent creates with one key: %d performed, %d stored (was %d)", created, c.count(t, s, tenant), before)
			}
			if err := ctx.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("KeysSharedAcrossKinds", func(t *testing.T) {
		t.Parallel()
		cs := creators()
		o := &core.Once{Claim: core.IdempotencyClaim{Key: "shared", RequestHash: []byte("memory"), ExpiresAt: t0.Add(day)}, Now: t0, Response: []byte(`{}`)}
		if err := cs[0].create(t, s, "once-shared", 1, o); err != nil {
			t.Fatal(err)
		}
		for _, c := range cs[1:] {
			o := &core.Once{Claim: core.IdempotencyClaim{Key: "shared", RequestHash: []byte(c.name), ExpiresAt: t0.Add(day)}, Now: t0, Response: []byte(`{}`)}
			if err := c.create(t, s, "once-shared", 1, o); !errors.Is(err, core.ErrKeyReused) {
				t.Errorf("%s with a memory's key: %v, want core.ErrKeyReused", c.name, err)
			}
		}
	})
}

// creator is one kind of idempotent create: create performs the n-th distinct one, count says
// how many exist, conflict (when the kind has one) performs a create the store refuses.
type creator struct {
	name     string
	create   func(t *testing.T, s app.Store, tenant string, n int, once *core.Once) error
	count    func(t *testing.T, s app.Store, tenant string) int
	conflict func(t *testing.T, s app.Store, tenant string, once *core.Once) error
}

func creators() []creator {
	memory := func(tenant string, n int) core.Memory {
		return core.Memory{Tenant: tenant, ID: fmt.Sprintf("m%d", n), Type: core.Episodic,
			Strategy: core.NewStrategy(core.Window, []core.StrategyField{{Name: "size", Value: int64(5)}}, nil), Flavor: "memory", Version: 1, CreatedAt: t0, UpdatedAt: t0}
	}
	run := func(tenant string, n int) runs.Run {
		return runs.Run{Tenant: tenant, ID: fmt.Sprintf("run-%d", n), MaxEvents: 10, CreatedAt: t0,
			Namespace: core.Identity{Tenant: tenant}.Namespace()}
	}
	chunk := func(tenant string, n int) core.Entry {
		e := mkEntry(tenant, core.CorpusNamespace, "corpus", core.KindDocument, fmt.Sprintf("d%d#0", n), 0, 0)
		e.Embedding, e.EmbeddingModel = []float32{1, 0, 0}, "m"
		return e
	}
	return []creator{
		{name: "Memory",
			create: func(t *testing.T, s app.Store, tenant string, n int, once *core.Once) error {
				return s.CreateMemory(t.Context(), memory(tenant, n), once)
			},
			count: func(t *testing.T, s app.Store, tenant string) int {
				ms, err := s.ListMemories(t.Context(), tenant, "", 1000)
				if err != nil {
					t.Fatal(err)
				}
				return len(ms)
			},
			conflict: func(t *testing.T, s app.Store, tenant string, once *core.Once) error {
				err := s.CreateMemory(t.Context(), memory(tenant, 1), once)
				if err != nil && !errors.Is(err, memories.ErrMemoryExists) && !errors.Is(err, core.ErrKeyReused) {
					t.Errorf("taken id: %v, want memories.ErrMemoryExists", err)
				}
				return err
			}},
		{name: "Run",
			create: func(t *testing.T, s app.Store, tenant string, n int, once *core.Once) error {
				return s.CreateRun(t.Context(), run(tenant, n), nil, once)
			},
			count: func(t *testing.T, s app.Store, tenant string) int {
				rs, err := s.ListRuns(t.Context(), runs.RunQuery{Tenant: tenant, Limit: 1000})
				if err != nil {
					t.Fatal(err)
				}
				return len(rs)
			},
			conflict: func(t *testing.T, s app.Store, tenant string, once *core.Once) error {
				err := s.CreateRun(t.Context(), run(tenant, 1), nil, once)
				if err != nil && !errors.Is(err, runs.ErrRunExists) {
					t.Errorf("taken id: %v, want runs.ErrRunExists", err)
				}
				return err
			}},
		{name: "Documents",
			create: func(t *testing.T, s app.Store, tenant string, n int, once *core.Once) error {
				return s.PutDocuments(t.Context(), tenant, "corpus", []string{fmt.Sprintf("d%d", n)}, []core.Entry{chunk(tenant, n)}, once)
			},
			count: func(t *testing.T, s app.Store, tenant string) int {
				es, _, err := s.ListEntries(t.Context(), core.EntryQuery{Tenant: tenant, Namespace: core.CorpusNamespace, MemoryID: "corpus",
					Limit: 1000, Now: t0})
				if err != nil {
					t.Fatal(err)
				}
				return len(es)
			}},
		{name: "Ablation",
			create: func(t *testing.T, s app.Store, tenant string, n int, once *core.Once) error {
				return s.SaveAblation(t.Context(), tenant, "ns", 3, explain.Ablation{ID: fmt.Sprintf("abl_%d", n), Excluded: []string{},
					Answer: "a", CreatedAt: t0.Add(time.Duration(n) * time.Millisecond)}, once)
			},
			count: func(t *testing.T, s app.Store, tenant string) int {
				as, err := s.Ablations(t.Context(), tenant, "ns", 3)
				if err != nil {
					t.Fatal(err)
				}
				return len(as)
			}},
	}
}
