// Package storetest is the conformance suite every core.Store implementation runs: the
// in-memory store and the Postgres store must behave identically through core's interfaces,
// so that the service (and its tests against the in-memory store) cannot tell them apart.
//
// A store's test file calls Run with a constructor:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) core.Store { return memory.New() })
//	}
//
// Each subtest gets a fresh store from the constructor and runs in parallel with the others.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/memories"
	"github.com/footprint/footprint/internal/core/strategies"
	"github.com/footprint/footprint/internal/core/turns"
)

// Run runs the conformance suite against stores made by newStore. newStore is called once per
// subtest, must return an empty store, and should register its own cleanup with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) app.Store) {
	t.Helper()
	tests := []struct {
		name string
		run  func(t *testing.T, s app.Store)
	}{
		{"CreateThenGet", testCreateThenGet},
		{"CreateDuplicate", testCreateDuplicate},
		{"Missing", testMissing},
		{"TenantIsolation", testTenantIsolation},
		{"ListOrderAndPaging", testListOrderAndPaging},
		{"UpdateAppliesAndPersists", testUpdateAppliesAndPersists},
		{"UpdateKeepsIdentity", testUpdateKeepsIdentity},
		{"UpdateFuncError", testUpdateFuncError},
		{"DeleteThenGet", testDeleteThenGet},
		{"ConcurrentCreate", testConcurrentCreate},
		{"ConcurrentUpdate", testConcurrentUpdate},
		{"CanceledContext", testCanceledContext},
		{"Ping", testPing},
		{"Entries", testEntries},
		{"Principals", testPrincipals},
		{"TurnClaims", testTurnClaims},
		{"CreateClaims", testCreateClaims},
		{"Sweep", testSweep},
		{"RecallStore", testRecallStore},
		{"RankingEdges", testRankingEdges},
		{"LexicalRanking", testLexicalRanking},
		{"ExplainStore", testExplainStore},
		{"Runs", testRuns},
		{"ReadSide", testReadSide},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newStore(t))
		})
	}
}

// t0 has nanoseconds on purpose: stores keep microseconds (Postgres's precision), and the
// suite checks that both stores agree on exactly which.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

// strategy returns a stored-form strategy, built the way stores rehydrate one.
func strategy(t *testing.T, js string) core.Strategy {
	t.Helper()
	s, err := strategies.ParseStored([]byte(js))
	if err != nil {
		t.Fatalf("strategy from %s: %v", js, err)
	}
	return s
}

// minimal is a memory with every optional field unset (NULL in Postgres).
func minimal(t *testing.T, tenant, id string) core.Memory {
	t.Helper()
	return core.Memory{
		Tenant:    tenant,
		ID:        id,
		Type:      core.Episodic,
		Strategy:  strategy(t, `{"kind":"window","size":20}`),
		Flavor:    "memory",
		Version:   1,
		CreatedAt: t0,
		UpdatedAt: t0,
	}
}

// full is a memory with every field set to a non-zero value.
func full(t *testing.T, tenant, id string) core.Memory {
	t.Helper()
	return core.Memory{
		Tenant:      tenant,
		ID:          id,
		Type:        core.Causal,
		Strategy:    strategy(t, `{"kind":"topK","topK":3,"threshold":0.25,"embedder":"hash"}`),
		Description: "decisions of the billing agent — ünïcode ok",
		ReadOnly:    true,
		TTLMs:       86_400_000,
		Tier:        "warm",
		Embedder:    "openai:text-embedding-3-small",
		Projection:  "decisions",
		Corpus:      true,
		Flavor:      "rag",
		Version:     7,
		CreatedAt:   t0,
		UpdatedAt:   t0.Add(90 * time.Minute),
	}
}

// normalised is m as a store returns it: timestamps in UTC at microsecond precision.
func normalised(m core.Memory) core.Memory {
	m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Microsecond)
	m.UpdatedAt = m.UpdatedAt.UTC().Truncate(time.Microsecond)
	return m
}

// assertMemory fails t unless got equals want field for field (want's timestamps normalised).
// Comparing whole structs, not listed fields, makes a field a store forgets to persist fail
// here as soon as core adds it.
func assertMemory(t *testing.T, got, want core.Memory) {
	t.Helper()
	want = normalised(want)
	if !got.Strategy.Equal(want.Strategy) {
		gs, _ := json.Marshal(got.Strategy)
		ws, _ := json.Marshal(want.Strategy)
		t.Errorf("memory %q: strategy = %s, want %s", want.ID, gs, ws)
	}
	if got.CreatedAt.Location() != time.UTC || got.UpdatedAt.Location() != time.UTC {
		t.Errorf("memory %q: timestamps in %v/%v, want UTC", want.ID, got.CreatedAt.Location(), got.UpdatedAt.Location())
	}
	// time.Time holds a location pointer and a monotonic reading, so compare instants with
	// Equal and the rest of the struct with the timestamps aligned.
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("memory %q: createdAt, updatedAt = %v, %v, want %v, %v", want.ID,
			got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	got.Strategy, want.Strategy = core.Strategy{}, core.Strategy{}
	got.CreatedAt, want.CreatedAt = time.Time{}, time.Time{}
	got.UpdatedAt, want.UpdatedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("memory %q:\n got %+v\nwant %+v", want.ID, got, want)
	}
}

func mustCreate(t *testing.T, s app.Store, m core.Memory) {
	t.Helper()
	if err := s.CreateMemory(t.Context(), m, nil); err != nil {
		t.Fatalf("CreateMemory(%s/%s): %v", m.Tenant, m.ID, err)
	}
}

func mustGet(t *testing.T, s app.Store, tenant, id string) core.Memory {
	t.Helper()
	m, err := s.GetMemory(t.Context(), tenant, id)
	if err != nil {
		t.Fatalf("GetMemory(%s/%s): %v", tenant, id, err)
	}
	return m
}

// assertNotFound fails t unless err is ErrNotFound carried by a *core.NotFoundError for the
// memory id.
func assertNotFound(t *testing.T, err error, call, id string) {
	t.Helper()
	var nf *core.NotFoundError
	switch {
	case !errors.Is(err, core.ErrNotFound):
		t.Errorf("%s: error = %v, want core.ErrNotFound", call, err)
	case !errors.As(err, &nf) || nf.What != "memory" || nf.ID != id:
		t.Errorf("%s: error = %#v, want *core.NotFoundError{What: memory, ID: %q}", call, err, id)
	}
}

// assertExists fails t unless err is memories.ErrMemoryExists (a core.ErrConflict), what a
// store answers for a taken id.
func assertExists(t *testing.T, err error, call string) {
	t.Helper()
	switch {
	case !errors.Is(err, core.ErrConflict):
		t.Errorf("%s: error = %v, want core.ErrConflict", call, err)
	case !errors.Is(err, memories.ErrMemoryExists):
		t.Errorf("%s: error = %#v, want memories.ErrMemoryExists", call, err)
	}
}

func ids(ms []core.Memory) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func testCreateThenGet(t *testing.T, s app.Store) {
	for _, m := range []core.Memory{
		minimal(t, "acme", "chat"),
		full(t, "acme", "billing-decisions"),
		strategyMemory(t, "acme", "hybrid", `{"kind":"hybrid","strategies":[{"kind":"window","size":4},{"kind":"budget","maxEntries":8}]}`),
	} {
		mustCreate(t, s, m)
		assertMemory(t, mustGet(t, s, m.Tenant, m.ID), m)
	}
}

func strategyMemory(t *testing.T, tenant, id, js string) core.Memory {
	m := minimal(t, tenant, id)
	m.Strategy = strategy(t, js)
	return m
}

func testCreateDuplicate(t *testing.T, s app.Store) {
	first := full(t, "acme", "chat")
	mustCreate(t, s, first)
	second := minimal(t, "acme", "chat")
	second.Description = "the second one"
	assertExists(t, s.CreateMemory(t.Context(), second, nil), "second CreateMemory")
	assertMemory(t, mustGet(t, s, "acme", "chat"), first)
}

func testMissing(t *testing.T, s app.Store) {
	ctx := t.Context()
	mustCreate(t, s, minimal(t, "acme", "present"))

	_, err := s.GetMemory(ctx, "acme", "absent")
	assertNotFound(t, err, "GetMemory", "absent")

	called := false
	_, err = s.UpdateMemory(ctx, "acme", "absent", func(*core.Memory) error { called = true; return nil })
	assertNotFound(t, err, "UpdateMemory", "absent")
	if called {
		t.Error("UpdateMemory called fn for a missing memory")
	}

	for _, purge := range []bool{false, true} {
		err = s.DeleteMemory(ctx, "acme", "absent", purge)
		assertNotFound(t, err, fmt.Sprintf("DeleteMemory(purge=%v)", purge), "absent")
	}
	mustGet(t, s, "acme", "present")
}

func testTenantIsolation(t *testing.T, s app.Store) {
	ctx := t.Context()
	a := full(t, "tenant-a", "shared-id")
	mustCreate(t, s, a)

	_, err := s.GetMemory(ctx, "tenant-b", "shared-id")
	assertNotFound(t, err, "B GetMemory(A's id)", "shared-id")
	if got, err := s.ListMemories(ctx, "tenant-b", "", 100); err != nil || len(got) != 0 {
		t.Errorf("B ListMemories = %v, %v; want none", ids(got), err)
	}
	called := false
	_, err = s.UpdateMemory(ctx, "tenant-b", "shared-id", func(m *core.Memory) error {
		called = true
		m.Description = "hijacked"
		return nil
	})
	assertNotFound(t, err, "B UpdateMemory(A's id)", "shared-id")
	if called {
		t.Error("B UpdateMemory called fn on A's memory")
	}
	assertNotFound(t, s.DeleteMemory(ctx, "tenant-b", "shared-id", true), "B DeleteMemory(A's id)", "shared-id")
	assertMemory(t, mustGet(t, s, "tenant-a", "shared-id"), a)

	// B's namespace of ids is its own: the same id is free for B.
	b := minimal(t, "tenant-b", "shared-id")
	b.Description = "B's own"
	mustCreate(t, s, b)
	assertMemory(t, mustGet(t, s, "tenant-a", "shared-id"), a)
	assertMemory(t, mustGet(t, s, "tenant-b", "shared-id"), b)
	for _, tenant := range []string{"tenant-a", "tenant-b"} {
		got, err := s.ListMemories(ctx, tenant, "", 100)
		if err != nil || len(got) != 1 || got[0].Tenant != tenant {
			t.Errorf("ListMemories(%s) = %+v, %v; want only its own memory", tenant, got, err)
		}
	}

	// Deleting B's leaves A's.
	if err := s.DeleteMemory(ctx, "tenant-b", "shared-id", true); err != nil {
		t.Fatalf("B DeleteMemory: %v", err)
	}
	assertMemory(t, mustGet(t, s, "tenant-a", "shared-id"), a)
}

func testListOrderAndPaging(t *testing.T, s app.Store) {
	ctx := t.Context()
	// Byte order, not a linguistic collation: upper case before lower case, '-' (0x2d) before
	// digits before '_' (0x5f), multi-byte UTF-8 last. A Postgres column without COLLATE "C"
	// on an en_US database orders these differently and fails here.
	want := []string{"B", "Z", "a", "a-b", "a1", "a_b", "ab", "b", "snap-10", "snap-9", "é"}
	created := slices.Clone(want)
	// Create out of order so that insertion order cannot pass for sorting.
	slices.Reverse(created)
	created[0], created[4] = created[4], created[0]
	for _, id := range created {
		mustCreate(t, s, minimal(t, "acme", id))
	}
	mustCreate(t, s, minimal(t, "other-tenant", "aa"))

	all, err := s.ListMemories(ctx, "acme", "", 100)
	if err != nil {
		t.Fatalf("ListMemories: %v", err)
	}
	if got := ids(all); !slices.Equal(got, want) {
		t.Errorf("ListMemories ids = %q, want %q", got, want)
	}
	if len(all) > 0 {
		assertMemory(t, all[0], minimal(t, "acme", want[0]))
	}

	for _, limit := range []int{1, 3, len(want), len(want) + 1} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			var seen []string
			after := ""
			for pages := 0; ; pages++ {
				if pages > len(want)+1 {
					t.Fatalf("paging did not terminate; seen %q", seen)
				}
				page, err := s.ListMemories(ctx, "acme", after, limit)
				if err != nil {
					t.Fatalf("ListMemories(after=%q, limit=%d): %v", after, limit, err)
				}
				if len(page) > limit {
					t.Fatalf("ListMemories(limit=%d) returned %d", limit, len(page))
				}
				if len(page) == 0 {
					break
				}
				seen = append(seen, ids(page)...)
				after = page[len(page)-1].ID
			}
			if !slices.Equal(seen, want) {
				t.Errorf("paged ids = %q, want %q", seen, want)
			}
		})
	}

	// after need not be an existing id.
	page, err := s.ListMemories(ctx, "acme", "a0", 2)
	if got := ids(page); err != nil || !slices.Equal(got, []string{"a1", "a_b"}) {
		t.Errorf("ListMemories(after=a0, limit=2) = %q, %v; want [a1 a_b]", got, err)
	}
	page, err = s.ListMemories(ctx, "acme", "é", 10)
	if err != nil || len(page) != 0 {
		t.Errorf("ListMemories(after=last) = %q, %v; want none", ids(page), err)
	}
	page, err = s.ListMemories(ctx, "acme", "", 0)
	if err != nil || len(page) != 0 {
		t.Errorf("ListMemories(limit=0) = %q, %v; want none", ids(page), err)
	}
}

func testUpdateAppliesAndPersists(t *testing.T, s app.Store) {
	start := minimal(t, "acme", "chat")
	mustCreate(t, s, start)

	later := t0.Add(time.Hour + 123456789*time.Nanosecond)
	want := full(t, "acme", "chat")
	want.CreatedAt = start.CreatedAt
	want.UpdatedAt = later
	want.Version = start.Version + 1
	got, err := s.UpdateMemory(t.Context(), "acme", "chat", func(m *core.Memory) error {
		assertMemory(t, *m, start) // fn sees the stored memory
		// Replace every mutable field.
		*m = want
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateMemory: %v", err)
	}
	assertMemory(t, got, want)
	assertMemory(t, mustGet(t, s, "acme", "chat"), want)
}

// testUpdateKeepsIdentity pins that fn cannot move a memory: Tenant, ID and CreatedAt are the
// row's identity and survive whatever fn does to them.
func testUpdateKeepsIdentity(t *testing.T, s app.Store) {
	start := minimal(t, "acme", "chat")
	mustCreate(t, s, start)
	got, err := s.UpdateMemory(t.Context(), "acme", "chat", func(m *core.Memory) error {
		m.Tenant, m.ID, m.CreatedAt = "evil", "renamed", t0.Add(-time.Hour)
		m.Description = "changed"
		return nil
	})
	if err != nil {
		t.Fatalf("UpdateMemory: %v", err)
	}
	want := start
	want.Description = "changed"
	assertMemory(t, got, want)
	assertMemory(t, mustGet(t, s, "acme", "chat"), want)
	_, err = s.GetMemory(t.Context(), "acme", "renamed")
	assertNotFound(t, err, "GetMemory(renamed)", "renamed")
	_, err = s.GetMemory(t.Context(), "evil", "chat")
	assertNotFound(t, err, "GetMemory(evil tenant)", "chat")
}

func testUpdateFuncError(t *testing.T, s app.Store) {
	start := full(t, "acme", "chat")
	mustCreate(t, s, start)
	// A domain error, as core's validation would return from fn.
	refusal := &core.ValidationError{Code: core.CodeInvalidField, Path: "strategy.size", Detail: "too big"}
	_, err := s.UpdateMemory(t.Context(), "acme", "chat", func(m *core.Memory) error {
		m.Description = "half-applied"
		m.Version++
		return refusal
	})
	if err != error(refusal) { //nolint:errorlint // the contract is identity: fn's error unchanged
		t.Errorf("UpdateMemory error = %#v, want fn's error itself", err)
	}
	assertMemory(t, mustGet(t, s, "acme", "chat"), start)
}

func testDeleteThenGet(t *testing.T, s app.Store) {
	ctx := t.Context()
	for _, purge := range []bool{false, true} {
		t.Run(fmt.Sprintf("purge=%v", purge), func(t *testing.T) {
			id := fmt.Sprintf("doomed-%v", purge)
			mustCreate(t, s, full(t, "acme", id))
			mustCreate(t, s, minimal(t, "acme", id+"-neighbour"))
			if err := s.DeleteMemory(ctx, "acme", id, purge); err != nil {
				t.Fatalf("DeleteMemory: %v", err)
			}
			_, err := s.GetMemory(ctx, "acme", id)
			assertNotFound(t, err, "GetMemory after delete", id)
			assertNotFound(t, s.DeleteMemory(ctx, "acme", id, purge), "second DeleteMemory", id)
			mustGet(t, s, "acme", id+"-neighbour")
			if page, err := s.ListMemories(ctx, "acme", "", 100); err != nil || slices.Contains(ids(page), id) {
				t.Errorf("ListMemories after delete = %q, %v; want without %q", ids(page), err, id)
			}
			// The id is free again.
			again := minimal(t, "acme", id)
			mustCreate(t, s, again)
			assertMemory(t, mustGet(t, s, "acme", id), again)
		})
	}
}

const concurrency = 20

func testConcurrentCreate(t *testing.T, s app.Store) {
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range concurrency {
		wg.Go(func() {
			m := minimal(t, "acme", "contested")
			m.Description = fmt.Sprintf("writer %d", i)
			<-start
			errs[i] = s.CreateMemory(t.Context(), m, nil)
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Errorf("writers %d and %d both created the memory", winner, i)
			}
			winner = i
			continue
		}
		assertExists(t, err, fmt.Sprintf("writer %d", i))
	}
	if winner < 0 {
		t.Fatal("no writer created the memory")
	}
	if got := mustGet(t, s, "acme", "contested"); got.Description != fmt.Sprintf("writer %d", winner) {
		t.Errorf("stored description = %q, want the winner's (writer %d)", got.Description, winner)
	}
}

func testConcurrentUpdate(t *testing.T, s app.Store) {
	start := minimal(t, "acme", "counter")
	mustCreate(t, s, start)

	versions := make([]int64, concurrency)
	errs := make([]error, concurrency)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range concurrency {
		wg.Go(func() {
			<-gate
			m, err := s.UpdateMemory(t.Context(), "acme", "counter", func(m *core.Memory) error {
				m.Version++
				return nil
			})
			versions[i], errs[i] = m.Version, err
		})
	}
	close(gate)
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Errorf("update %d: %v", i, err)
		}
	}
	if got := mustGet(t, s, "acme", "counter").Version; got != start.Version+concurrency {
		t.Errorf("final version = %d, want %d (lost updates)", got, start.Version+concurrency)
	}
	// Each update saw a distinct predecessor: the returned versions are exactly start+1..start+N.
	slices.Sort(versions)
	for i, v := range versions {
		if want := start.Version + int64(i) + 1; v != want {
			t.Errorf("returned versions = %v, want %d..%d each once", versions, start.Version+1, start.Version+concurrency)
			break
		}
	}
}

// testCanceledContext pins that a caller's cancellation surfaces as context.Canceled, not as
// an outage (ErrUnavailable) or a missing resource, and changes nothing.
func testCanceledContext(t *testing.T, s app.Store) {
	mustCreate(t, s, minimal(t, "acme", "chat"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"CreateMemory", func() error { return s.CreateMemory(ctx, minimal(t, "acme", "new"), nil) }},
		{"GetMemory", func() error { _, err := s.GetMemory(ctx, "acme", "chat"); return err }},
		{"ListMemories", func() error { _, err := s.ListMemories(ctx, "acme", "", 10); return err }},
		{"UpdateMemory", func() error {
			_, err := s.UpdateMemory(ctx, "acme", "chat", func(m *core.Memory) error { m.Version++; return nil })
			return err
		}},
		{"DeleteMemory", func() error { return s.DeleteMemory(ctx, "acme", "chat", true) }},
	}
	for _, c := range calls {
		err := c.call()
		if !errors.Is(err, context.Canceled) || errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrNotFound) {
			t.Errorf("%s with a canceled context: error = %v, want context.Canceled only", c.name, err)
		}
	}
	assertMemory(t, mustGet(t, s, "acme", "chat"), minimal(t, "acme", "chat"))
	_, err := s.GetMemory(t.Context(), "acme", "new")
	assertNotFound(t, err, "GetMemory(new)", "new")
}

func testPing(t *testing.T, s app.Store) {
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if info := s.Info(); info.Kind == "" {
		t.Errorf("Info().Kind is empty")
	}
}

// tenantCase is one conformance case that needs a tenant of its own, so that the
// cases can share one store and run in parallel.
type tenantCase struct {
	name string
	run  func(t *testing.T, es turns.Store, tenant string)
}

// runTenantCases runs each case as a parallel subtest with tenant "<prefix>-<i>".
func runTenantCases(t *testing.T, s app.Store, prefix string, cases []tenantCase) {
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, s, fmt.Sprintf("%s-%d", prefix, i))
		})
	}
}
