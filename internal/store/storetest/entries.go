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
	"github.com/footprint/footprint/internal/core/turns"
)

// testEntries runs the core.EntryStore conformance cases: the turn derivation of
// writeSnapshot (turn = max(host turn, highest live stored turn + 1)), its serialisation per
// namespace, listing, point reads and forgetting. Every subtest uses its own tenant, so they
// share the store and run in parallel.
func testEntries(t *testing.T, s app.Store) {
	runTenantCases(t, s, "tenant", []tenantCase{
		{"EmptyStoreStartsAtOne", testTurnEmpty},
		{"HostAheadKeepsGaps", testTurnHostAhead},
		{"StaleHostNeverOverwrites", testTurnStaleHost},
		{"SameHostTurnTwice", testTurnSameTwice},
		{"OnlyLiveSnapshotsCount", testTurnOnlySnapshots},
		{"ExpiredSnapshots", testTurnExpired},
		{"LiveConflictWritesNothing", testTurnLiveConflict},
		{"NamespacesAndTenantsIndependent", testTurnIsolation},
		{"SharedTurnAcrossMemories", testTurnShared},
		{"CountMessageTurns", testTurnCountMessages},
		{"CountBeatTurns", testTurnCountBeats},
		{"BuildError", testTurnBuildError},
		{"RoundTrip", testEntryRoundTrip},
		{"FactUpsert", testFactUpsert},
		{"ListNewestFirstAndPaging", testListEntries},
		{"GetEntryTouch", testGetEntryTouch},
		{"ForgetNamespace", testForgetNamespace},
		{"ConcurrentOneNamespace", testTurnConcurrentOne},
		{"ConcurrentManyNamespaces", testTurnConcurrentMany},
		{"CanceledContext", testEntriesCanceled},
	})
}

// Memory ids the entry cases write to.
const (
	causalMem = "causal"
	chatMem   = "chat"
)

// mkEntry is an entry as a turn's Build makes one.
func mkEntry(tenant, ns, mem string, kind core.EntryKind, id string, turn, idx int) core.Entry {
	return core.Entry{Tenant: tenant, Namespace: ns, MemoryID: mem, ID: id, Kind: kind,
		Turn: turn, Index: idx, Value: json.RawMessage(`{}`)}
}

func snapEntry(tenant, ns string, turn int) core.Entry {
	return mkEntry(tenant, ns, causalMem, core.KindSnapshot, fmt.Sprintf("snap-%d", turn), turn, 0)
}

func msgEntry(tenant, ns string, turn, i int) core.Entry {
	return mkEntry(tenant, ns, chatMem, core.KindMessage, fmt.Sprintf("msg-%d-%d", turn, i), turn, i)
}

// snapWrite is a turn write of one snapshot into the causal memory at now.
func snapWrite(tenant, ns string, host int, now time.Time) Turn {
	return Turn{Tenant: tenant, Namespace: ns, HostTurn: host, MemoryIDs: []string{causalMem}, Now: now,
		Build: func(turn int) ([]core.Entry, error) {
			return []core.Entry{snapEntry(tenant, ns, turn)}, nil
		}}
}

func mustWrite(t *testing.T, es turns.Store, w Turn) (int, []core.Entry) {
	t.Helper()
	o, err := es.WriteTurn(t.Context(), w.Write())
	turn, out := o.Turn, o.Entries
	if err != nil {
		t.Fatalf("WriteTurn(%s/%s, host %d): %v", w.Tenant, w.Namespace, w.HostTurn, err)
	}
	return turn, out
}

// writeSnaps writes one snapshot per host turn and returns the resolved turns.
func writeSnaps(t *testing.T, es turns.Store, tenant, ns string, hosts ...int) []int {
	t.Helper()
	var turns []int
	for _, h := range hosts {
		turn, _ := mustWrite(t, es, snapWrite(tenant, ns, h, t0))
		turns = append(turns, turn)
	}
	return turns
}

// listAll pages through q (with q.Limit per page) and returns every entry.
func listAll(t *testing.T, es turns.Store, q core.EntryQuery) []core.Entry {
	t.Helper()
	var all []core.Entry
	for page := 0; ; page++ {
		if page > 10_000 {
			t.Fatal("ListEntries never ends")
		}
		got, next, err := es.ListEntries(t.Context(), q)
		if err != nil {
			t.Fatalf("ListEntries(%+v): %v", q, err)
		}
		if len(got) > q.Limit {
			t.Fatalf("ListEntries returned %d entries, limit %d", len(got), q.Limit)
		}
		all = append(all, got...)
		if next == "" {
			return all
		}
		if len(got) == 0 {
			t.Fatal("ListEntries returned an empty page with a next position")
		}
		q.After = next
	}
}

func entryIDs(es []core.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func list(t *testing.T, es turns.Store, tenant, ns string) []string {
	t.Helper()
	return entryIDs(listAll(t, es, core.EntryQuery{Tenant: tenant, Namespace: ns, Now: t0, Limit: 100}))
}

func assertTurns(t *testing.T, got []int, want ...int) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("turns = %v, want %v", got, want)
	}
}

func testTurnEmpty(t *testing.T, es turns.Store, tenant string) {
	turn, out := mustWrite(t, es, snapWrite(tenant, "conv", 1, t0))
	if turn != 1 {
		t.Errorf("turn = %d, want 1", turn)
	}
	if len(out) != 1 || out[0].ID != "snap-1" || out[0].Version != 1 || out[0].Turn != 1 {
		t.Fatalf("written = %+v, want snap-1 at version 1", out)
	}
	want := t0.UTC().Truncate(time.Microsecond)
	for _, ts := range []time.Time{out[0].CreatedAt, out[0].UpdatedAt, out[0].LastAccessedAt} {
		if !ts.Equal(want) || ts.Location() != time.UTC {
			t.Errorf("timestamp = %v, want %v (UTC, microseconds)", ts, want)
		}
	}
	if got := list(t, es, tenant, "conv"); !slices.Equal(got, []string{"snap-1"}) {
		t.Errorf("stored = %v, want [snap-1]", got)
	}
}

func testTurnHostAhead(t *testing.T, es turns.Store, tenant string) {
	assertTurns(t, writeSnaps(t, es, tenant, "conv", 5, 7), 5, 7)
	if got := list(t, es, tenant, "conv"); !slices.Equal(got, []string{"snap-7", "snap-5"}) {
		t.Errorf("stored = %v, want [snap-7 snap-5] (no snap-6)", got)
	}
}

func testTurnStaleHost(t *testing.T, es turns.Store, tenant string) {
	assertTurns(t, writeSnaps(t, es, tenant, "conv", 1, 3), 1, 3)
	before := mustGetEntry(t, es, tenant, "conv", causalMem, "snap-3")
	w := snapWrite(tenant, "conv", 1, t0.Add(time.Hour))
	turn, _ := mustWrite(t, es, w)
	if turn != 4 {
		t.Errorf("third write (host turn 1) got turn %d, want 4", turn)
	}
	assertEntry(t, mustGetEntry(t, es, tenant, "conv", causalMem, "snap-3"), before)
}

func testTurnSameTwice(t *testing.T, es turns.Store, tenant string) {
	assertTurns(t, writeSnaps(t, es, tenant, "conv", 1, 1), 1, 2)
}

func testTurnOnlySnapshots(t *testing.T, es turns.Store, tenant string) {
	// 1,005 entries that carry no snapshot turn: facts, beats and messages of high turns, in
	// the causal memory itself and in another one.
	mustWrite(t, es, Turn{Tenant: tenant, Namespace: "conv", HostTurn: 1,
		MemoryIDs: []string{causalMem, chatMem}, Now: t0,
		Build: func(int) ([]core.Entry, error) {
			var out []core.Entry
			for i := range 500 {
				out = append(out, mkEntry(tenant, "conv", causalMem, core.KindFact, fmt.Sprintf("fact:k%d", i), 0, 0))
			}
			for i := range 500 {
				out = append(out, mkEntry(tenant, "conv", causalMem, core.KindBeat, fmt.Sprintf("beat-900-%d", i), 900, i))
			}
			for i := range 5 {
				out = append(out, msgEntry(tenant, "conv", 800, i))
			}
			return out, nil
		}})
	// A snapshot of turn 500 in a memory the write does not scan.
	other := snapEntry(tenant, "conv", 500)
	other.MemoryID = "elsewhere"
	mustWrite(t, es, Turn{Tenant: tenant, Namespace: "conv", HostTurn: 500,
		MemoryIDs: []string{"elsewhere"}, Now: t0,
		Build: func(int) ([]core.Entry, error) { return []core.Entry{other}, nil }})
	assertTurns(t, writeSnaps(t, es, tenant, "conv", 42, 1), 42, 43)
}

func testTurnExpired(t *testing.T, es turns.Store, tenant string) {
	expiring := func(host int, value string) Turn {
		w := snapWrite(tenant, "conv", host, t0)
		w.Build = func(turn int) ([]core.Entry, error) {
			e := snapEntry(tenant, "conv", turn)
			e.Value = json.RawMessage(value)
			e.ExpiresAt = t0.Add(time.Hour)
			return []core.Entry{e}, nil
		}
		return w
	}
	if turn, _ := mustWrite(t, es, expiring(1, `{"old":true}`)); turn != 1 {
		t.Fatalf("turn = %d, want 1", turn)
	}
	if turn, _ := mustWrite(t, es, expiring(9, `{"old":true}`)); turn != 9 {
		t.Fatalf("turn = %d, want 9", turn)
	}
	// Two hours later both are expired: neither counts, and snap-1 is replaced.
	later := t0.Add(2 * time.Hour)
	w := snapWrite(tenant, "conv", 1, later)
	w.Build = func(turn int) ([]core.Entry, error) {
		e := snapEntry(tenant, "conv", turn)
		e.Value = json.RawMessage(`{"new":true}`)
		return []core.Entry{e}, nil
	}
	turn, out := mustWrite(t, es, w)
	if turn != 1 {
		t.Fatalf("turn with only expired snapshots stored = %d, want 1", turn)
	}
	got, err := es.GetEntry(t.Context(), tenant, "conv", causalMem, "snap-1", false, later)
	if err != nil {
		t.Fatalf("GetEntry(snap-1): %v", err)
	}
	assertEntry(t, got, out[0])
	assertJSON(t, "snap-1 value", got.Value, `{"new":true}`)
	if got.Version != 1 || !got.CreatedAt.Equal(later.Truncate(time.Microsecond)) || !got.ExpiresAt.IsZero() {
		t.Errorf("replaced snap-1 = version %d, created %v, expires %v; want a new entry (1, %v, never)",
			got.Version, got.CreatedAt, got.ExpiresAt, later)
	}
	_, err = es.GetEntry(t.Context(), tenant, "conv", causalMem, "snap-9", false, later)
	assertEntryNotFound(t, err, "snap-9")
	if got := entryIDs(listAll(t, es, core.EntryQuery{Tenant: tenant, Namespace: "conv", Now: later, Limit: 10})); !slices.Equal(got, []string{"snap-1"}) {
		t.Errorf("live entries = %v, want [snap-1]", got)
	}
}

func testTurnLiveConflict(t *testing.T, es turns.Store, tenant string) {
	writeSnaps(t, es, tenant, "conv", 1)
	before := mustGetEntry(t, es, tenant, "conv", causalMem, "snap-1")
	w := snapWrite(tenant, "conv", 1, t0.Add(time.Minute))
	w.Build = func(turn int) ([]core.Entry, error) {
		stale := snapEntry(tenant, "conv", 1)
		stale.Value = json.RawMessage(`{"overwritten":true}`)
		return []core.Entry{snapEntry(tenant, "conv", turn), msgEntry(tenant, "conv", turn, 0), stale}, nil
	}
	_, err := es.WriteTurn(t.Context(), w.Write())
	var way *turns.EntryInTheWay
	if !errors.Is(err, core.ErrConflict) || !errors.As(err, &way) || way.EntryID != "snap-1" || way.MemoryID != causalMem {
		t.Fatalf("overwriting live snap-1: error = %#v, want a *turns.EntryInTheWay naming it", err)
	}
	assertEntry(t, mustGetEntry(t, es, tenant, "conv", causalMem, "snap-1"), before)
	if got := list(t, es, tenant, "conv"); !slices.Equal(got, []string{"snap-1"}) {
		t.Errorf("stored = %v, want only [snap-1]: a failed turn writes nothing", got)
	}
}

func testTurnIsolation(t *testing.T, es turns.Store, tenant string) {
	other := tenant + "-other"
	assertTurns(t, writeSnaps(t, es, tenant, "a", 1, 1, 1), 1, 2, 3)
	assertTurns(t, writeSnaps(t, es, tenant, "b", 1, 1), 1, 2)
	assertTurns(t, writeSnaps(t, es, other, "a", 1), 1)
	assertTurns(t, writeSnaps(t, es, tenant, "a", 1), 4)
	if got := list(t, es, other, "a"); !slices.Equal(got, []string{"snap-1"}) {
		t.Errorf("other tenant's entries = %v, want [snap-1]", got)
	}
}

// chatTurn writes msg-{t}-0 and msg-{t}-1 in the chat memory and snap-{t} in the causal one.
func chatTurn(tenant, ns string, host int, countMessages bool, now time.Time) Turn {
	return Turn{Tenant: tenant, Namespace: ns, HostTurn: host, CountMessageTurns: countMessages,
		MemoryIDs: []string{chatMem, causalMem}, Now: now,
		Build: func(turn int) ([]core.Entry, error) {
			return []core.Entry{msgEntry(tenant, ns, turn, 0), msgEntry(tenant, ns, turn, 1), snapEntry(tenant, ns, turn)}, nil
		}}
}

func testTurnShared(t *testing.T, es turns.Store, tenant string) {
	turn, out := mustWrite(t, es, chatTurn(tenant, "conv", 1, false, t0))
	if turn != 1 || !slices.Equal(entryIDs(out), []string{"msg-1-0", "msg-1-1", "snap-1"}) {
		t.Fatalf("first turn = %d %v, want 1 [msg-1-0 msg-1-1 snap-1]", turn, entryIDs(out))
	}
	for _, e := range out {
		if e.Turn != 1 {
			t.Errorf("%s: turn %d, want 1", e.ID, e.Turn)
		}
	}
	turn, out = mustWrite(t, es, chatTurn(tenant, "conv", 1, true, t0))
	if turn != 2 || !slices.Equal(entryIDs(out), []string{"msg-2-0", "msg-2-1", "snap-2"}) {
		t.Errorf("second turn = %d %v, want 2 [msg-2-0 msg-2-1 snap-2]", turn, entryIDs(out))
	}
}

func testTurnCountMessages(t *testing.T, es turns.Store, tenant string) {
	msgs := func(host int, count bool) Turn {
		return Turn{Tenant: tenant, Namespace: "conv", HostTurn: host, CountMessageTurns: count,
			MemoryIDs: []string{chatMem, causalMem}, Now: t0,
			Build: func(turn int) ([]core.Entry, error) {
				return []core.Entry{msgEntry(tenant, "conv", turn, 0), msgEntry(tenant, "conv", turn, 1)}, nil
			}}
	}
	if turn, _ := mustWrite(t, es, msgs(7, false)); turn != 7 {
		t.Fatalf("turn = %d, want 7", turn)
	}
	// Messages do not count unless asked: the snapshot scan alone sees nothing.
	if turn, _ := mustWrite(t, es, snapWrite(tenant, "conv", 1, t0)); turn != 1 {
		t.Errorf("snapshot turn with msg-7-* stored = %d, want 1", turn)
	}
	if turn, _ := mustWrite(t, es, msgs(1, true)); turn != 8 {
		t.Errorf("CountMessageTurns with msg-7-* stored: turn = %d, want 8", turn)
	}
}

// testTurnCountBeats: a narrative memory's beats are numbered by turn, so a turn that writes
// beats counts the stored ones; otherwise its second turn would collide with beat-1-0.
func testTurnCountBeats(t *testing.T, es turns.Store, tenant string) {
	beats := func(host int, count bool) Turn {
		return Turn{Tenant: tenant, Namespace: "conv", HostTurn: host, CountBeatTurns: count,
			MemoryIDs: []string{chatMem}, Now: t0,
			Build: func(turn int) ([]core.Entry, error) {
				return []core.Entry{mkEntry(tenant, "conv", chatMem, core.KindBeat, fmt.Sprintf("beat-%d-0", turn), turn, 0)}, nil
			}}
	}
	if turn, _ := mustWrite(t, es, beats(1, true)); turn != 1 {
		t.Fatalf("first beat turn = %d, want 1", turn)
	}
	if turn, out := mustWrite(t, es, beats(1, true)); turn != 2 || !slices.Equal(entryIDs(out), []string{"beat-2-0"}) {
		t.Errorf("second beat turn = %d %v, want 2 [beat-2-0]", turn, entryIDs(out))
	}
	// Without the flag the beats are not scanned: the write collides with beat-1-0 and is refused.
	if _, err := es.WriteTurn(t.Context(), beats(1, false).Write()); !errors.Is(err, core.ErrConflict) {
		t.Errorf("uncounted beat write over beat-1-0: %v, want a conflict", err)
	}
}

func testTurnBuildError(t *testing.T, es turns.Store, tenant string) {
	boom := errors.New("boom")
	var calledWith []int
	var mu sync.Mutex
	w := snapWrite(tenant, "conv", 1, t0)
	w.Build = func(turn int) ([]core.Entry, error) {
		mu.Lock()
		calledWith = append(calledWith, turn)
		mu.Unlock()
		return []core.Entry{snapEntry(tenant, "conv", turn)}, boom
	}
	if _, err := es.WriteTurn(t.Context(), w.Write()); !errors.Is(err, boom) {
		t.Errorf("WriteTurn with a failing Build: error = %v, want %v", err, boom)
	}
	if len(calledWith) == 0 || calledWith[0] != 1 {
		t.Errorf("Build called with %v, want turn 1", calledWith)
	}
	if got := list(t, es, tenant, "conv"); len(got) != 0 {
		t.Errorf("stored after a failed Build = %v, want nothing", got)
	}
	assertTurns(t, writeSnaps(t, es, tenant, "conv", 1), 1)
}

// full entry: every optional field set.
func fullEntry(tenant, ns string, turn int) core.Entry {
	e := snapEntry(tenant, ns, turn)
	e.Value = json.RawMessage(`{"query": "why?", "finalContent": "because", "n": [1, 2.5, null]}`)
	e.Metadata = json.RawMessage(`{"source": "test", "ünï": "côdé"}`)
	e.ExpiresAt = t0.Add(48 * time.Hour)
	e.Tier = "warm"
	e.SourceTurn = turn
	e.SourceRunID = "run-1"
	e.Embedding = []float32{0.25, -1, 3.5}
	e.EmbeddingModel = "hash"
	return e
}

func testEntryRoundTrip(t *testing.T, es turns.Store, tenant string) {
	w := snapWrite(tenant, "conv", 3, t0)
	w.Build = func(turn int) ([]core.Entry, error) {
		return []core.Entry{fullEntry(tenant, "conv", turn), mkEntry(tenant, "conv", causalMem, core.KindFact, "fact:x", 0, 0)}, nil
	}
	_, out := mustWrite(t, es, w)
	want := fullEntry(tenant, "conv", 3)
	ts := t0.UTC().Truncate(time.Microsecond)
	want.Version, want.CreatedAt, want.UpdatedAt, want.LastAccessedAt = 1, ts, ts, ts
	want.ExpiresAt = want.ExpiresAt.Truncate(time.Microsecond)
	assertEntry(t, out[0], want)
	assertEntry(t, mustGetEntry(t, es, tenant, "conv", causalMem, "snap-3"), want)
	fact := mkEntry(tenant, "conv", causalMem, core.KindFact, "fact:x", 0, 0)
	fact.Metadata = json.RawMessage(`{}`)
	fact.Version, fact.CreatedAt, fact.UpdatedAt, fact.LastAccessedAt = 1, ts, ts, ts
	assertEntry(t, out[1], fact)

	q := core.EntryQuery{Tenant: tenant, Namespace: "conv", Now: t0, Limit: 10, Kind: core.KindSnapshot}
	listed, _, err := es.ListEntries(t.Context(), q)
	if err != nil || len(listed) != 1 {
		t.Fatalf("ListEntries = %v, %v", entryIDs(listed), err)
	}
	noVec := want
	noVec.Embedding = nil
	assertEntry(t, listed[0], noVec)
	q.WithEmbedding = true
	listed, _, err = es.ListEntries(t.Context(), q)
	if err != nil || len(listed) != 1 {
		t.Fatalf("ListEntries(WithEmbedding) = %v, %v", entryIDs(listed), err)
	}
	assertEntry(t, listed[0], want)

	// Returned values are copies.
	listed[0].Embedding[0] = 99
	listed[0].Value[0] = '['
	assertEntry(t, mustGetEntry(t, es, tenant, "conv", causalMem, "snap-3"), want)
}

func testFactUpsert(t *testing.T, es turns.Store, tenant string) {
	fact := func(now time.Time, value string) Turn {
		w := snapWrite(tenant, "conv", 1, now)
		w.Build = func(int) ([]core.Entry, error) {
			e := mkEntry(tenant, "conv", causalMem, core.KindFact, "fact:name", 0, 0)
			e.Value = json.RawMessage(value)
			return []core.Entry{e}, nil
		}
		return w
	}
	mustWrite(t, es, fact(t0, `"ada"`))
	mustGetEntry(t, es, tenant, "conv", causalMem, "fact:name") // access count survives upserts
	if _, err := es.GetEntry(t.Context(), tenant, "conv", causalMem, "fact:name", true, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	later := t0.Add(time.Hour)
	_, out := mustWrite(t, es, fact(later, `"grace"`))
	got := mustGetEntry(t, es, tenant, "conv", causalMem, "fact:name")
	assertEntry(t, got, out[0])
	assertJSON(t, "fact value", got.Value, `"grace"`)
	ts := t0.Truncate(time.Microsecond)
	if got.Version != 2 || !got.CreatedAt.Equal(ts) || !got.UpdatedAt.Equal(later.Truncate(time.Microsecond)) || got.AccessCount != 1 {
		t.Errorf("upserted fact: version %d, created %v, updated %v, accessed %d; want 2, %v, %v, 1",
			got.Version, got.CreatedAt, got.UpdatedAt, got.AccessCount, ts, later)
	}
}

func testListEntries(t *testing.T, es turns.Store, tenant string) {
	for _, host := range []int{2, 9, 10} {
		w := chatTurn(tenant, "conv", host, true, t0)
		build := w.Build
		w.Build = func(turn int) ([]core.Entry, error) {
			out, _ := build(turn)
			out[2].Tier = "hot"
			out = append(out, mkEntry(tenant, "conv", causalMem, core.KindFact, "fact:name", 0, 0))
			expired := mkEntry(tenant, "conv", causalMem, core.KindBeat, fmt.Sprintf("beat-%d-0", turn), turn, 0)
			expired.ExpiresAt = t0.Add(-time.Second)
			return append(out, expired), nil
		}
		if turn, _ := mustWrite(t, es, w); turn != host {
			t.Fatalf("turn = %d, want %d", turn, host)
		}
	}
	want := []string{"msg-10-1", "snap-10", "msg-10-0", "msg-9-1", "snap-9", "msg-9-0",
		"msg-2-1", "snap-2", "msg-2-0", "fact:name"}
	query := core.EntryQuery{Tenant: tenant, Namespace: "conv", Now: t0}
	for limit := 1; limit <= len(want)+1; limit++ {
		q := query
		q.Limit = limit
		if got := entryIDs(listAll(t, es, q)); !slices.Equal(got, want) {
			t.Errorf("limit %d: listed %v, want %v", limit, got, want)
		}
	}
	filters := []struct {
		name string
		edit func(*core.EntryQuery)
		want []string
	}{
		{"kind", func(q *core.EntryQuery) { q.Kind = core.KindSnapshot }, []string{"snap-10", "snap-9", "snap-2"}},
		{"memory", func(q *core.EntryQuery) { q.MemoryID = chatMem }, []string{"msg-10-1", "msg-10-0", "msg-9-1", "msg-9-0", "msg-2-1", "msg-2-0"}},
		{"tier", func(q *core.EntryQuery) { q.Tier = "hot" }, []string{"snap-10", "snap-9", "snap-2"}},
		{"memory+kind", func(q *core.EntryQuery) { q.MemoryID, q.Kind = causalMem, core.KindFact }, []string{"fact:name"}},
		{"none", func(q *core.EntryQuery) { q.Kind = core.KindDocument }, nil},
		{"before expiry", func(q *core.EntryQuery) { q.Kind, q.Now = core.KindBeat, t0.Add(-time.Minute) }, []string{"beat-10-0", "beat-9-0", "beat-2-0"}},
		{"other namespace", func(q *core.EntryQuery) { q.Namespace = "other" }, nil},
	}
	for _, f := range filters {
		q := query
		q.Limit = 2
		f.edit(&q)
		if got := entryIDs(listAll(t, es, q)); !slices.Equal(got, f.want) {
			t.Errorf("%s: listed %v, want %v", f.name, got, f.want)
		}
	}
	q := query
	q.Limit = 0
	if got, next, err := es.ListEntries(t.Context(), q); err != nil || len(got) != 0 || next != "" {
		t.Errorf("limit 0: %v, %q, %v; want nothing", entryIDs(got), next, err)
	}
	q.Limit, q.After = 5, "not a position!"
	if _, _, err := es.ListEntries(t.Context(), q); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("garbage position: error = %v, want core.ErrInvalid", err)
	}
}

func testGetEntryTouch(t *testing.T, es turns.Store, tenant string) {
	writeSnaps(t, es, tenant, "conv", 1)
	if got := mustGetEntry(t, es, tenant, "conv", causalMem, "snap-1"); got.AccessCount != 0 {
		t.Errorf("access count = %d, want 0", got.AccessCount)
	}
	for i := 1; i <= 3; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		got, err := es.GetEntry(t.Context(), tenant, "conv", causalMem, "snap-1", true, at)
		if err != nil {
			t.Fatal(err)
		}
		if got.AccessCount != int64(i) || !got.LastAccessedAt.Equal(at.Truncate(time.Microsecond)) {
			t.Errorf("touch %d: access count %d, last accessed %v; want %d, %v", i, got.AccessCount, got.LastAccessedAt, i, at)
		}
	}
	if got := mustGetEntry(t, es, tenant, "conv", causalMem, "snap-1"); got.AccessCount != 3 {
		t.Errorf("access count after 3 touches = %d, want 3", got.AccessCount)
	}
	for _, c := range []struct{ tenant, ns, mem, id string }{
		{tenant, "conv", causalMem, "snap-2"},
		{tenant, "conv", chatMem, "snap-1"},
		{tenant, "other", causalMem, "snap-1"},
		{tenant + "-other", "conv", causalMem, "snap-1"},
	} {
		_, err := es.GetEntry(t.Context(), c.tenant, c.ns, c.mem, c.id, true, t0)
		assertEntryNotFound(t, err, c.id)
	}
}

func testForgetNamespace(t *testing.T, es turns.Store, tenant string) {
	other := tenant + "-other"
	mustWrite(t, es, chatTurn(tenant, "a", 1, false, t0))
	mustWrite(t, es, chatTurn(tenant, "a", 1, false, t0))
	mustWrite(t, es, chatTurn(tenant, "b", 1, false, t0))
	mustWrite(t, es, chatTurn(other, "a", 1, false, t0))
	n, err := es.ForgetNamespace(t.Context(), tenant, "a")
	if err != nil || n != 6 {
		t.Errorf("ForgetNamespace = %d, %v; want 6", n, err)
	}
	if got := list(t, es, tenant, "a"); len(got) != 0 {
		t.Errorf("forgotten namespace still lists %v", got)
	}
	if got := list(t, es, tenant, "b"); len(got) != 3 {
		t.Errorf("other namespace lists %v, want its 3 entries", got)
	}
	if got := list(t, es, other, "a"); len(got) != 3 {
		t.Errorf("other tenant's namespace lists %v, want its 3 entries", got)
	}
	if n, err := es.ForgetNamespace(t.Context(), tenant, "a"); err != nil || n != 0 {
		t.Errorf("forgetting again = %d, %v; want 0", n, err)
	}
	// The namespace starts over.
	assertTurns(t, writeSnaps(t, es, tenant, "a", 1), 1)
}

// concurrentTurns runs writers concurrent snapshot writes (host turn 1) to one namespace and
// checks that they got exactly turns 1..writers.
func concurrentTurns(t *testing.T, es turns.Store, tenant, ns string, writers int, gate <-chan struct{}) {
	t.Helper()
	got := make([]int, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-gate
			var o turns.TurnOutcome
			o, errs[i] = es.WriteTurn(t.Context(), snapWrite(tenant, ns, 1, t0).Write())
			got[i] = o.Turn
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s writer %d: %v", ns, i, err)
		}
	}
	slices.Sort(got)
	for i, turn := range got {
		if turn != i+1 {
			t.Errorf("%s: turns = %v, want 1..%d each once", ns, got, writers)
			break
		}
	}
	if got := list(t, es, tenant, ns); len(got) != writers {
		t.Errorf("%s: %d snapshots stored, want %d", ns, len(got), writers)
	}
}

func testTurnConcurrentOne(t *testing.T, es turns.Store, tenant string) {
	gate := make(chan struct{})
	close(gate)
	concurrentTurns(t, es, tenant, "conv", 64, gate)
}

func testTurnConcurrentMany(t *testing.T, es turns.Store, tenant string) {
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for n := range 16 {
		wg.Go(func() { concurrentTurns(t, es, tenant, fmt.Sprintf("conv-%d", n), 8, gate) })
	}
	close(gate)
	wg.Wait()
}

func mustGetEntry(t *testing.T, es turns.Store, tenant, ns, mem, id string) core.Entry {
	t.Helper()
	e, err := es.GetEntry(t.Context(), tenant, ns, mem, id, false, t0)
	if err != nil {
		t.Fatalf("GetEntry(%s/%s/%s/%s): %v", tenant, ns, mem, id, err)
	}
	return e
}

func assertEntryNotFound(t *testing.T, err error, id string) {
	t.Helper()
	var nf *core.NotFoundError
	if !errors.Is(err, core.ErrNotFound) || !errors.As(err, &nf) || nf.What != "entry" || nf.ID != id {
		t.Errorf("GetEntry(%s): error = %v, want *core.NotFoundError{What: entry, ID: %q}", id, err, id)
	}
}

// assertJSON fails t unless got and want are the same JSON value (stores may reformat it).
func assertJSON(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s: stored %s is not JSON: %v", what, got, err)
		return
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		panic(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

// assertEntry fails t unless got equals want field for field, JSON compared as values and
// timestamps as instants in UTC.
func assertEntry(t *testing.T, got, want core.Entry) {
	t.Helper()
	assertJSON(t, want.ID+" value", got.Value, string(want.Value))
	wantMeta := want.Metadata
	if wantMeta == nil {
		wantMeta = json.RawMessage(`{}`)
	}
	assertJSON(t, want.ID+" metadata", got.Metadata, string(wantMeta))
	for _, p := range []struct {
		name      string
		got, want time.Time
	}{
		{"createdAt", got.CreatedAt, want.CreatedAt},
		{"updatedAt", got.UpdatedAt, want.UpdatedAt},
		{"lastAccessedAt", got.LastAccessedAt, want.LastAccessedAt},
		{"expiresAt", got.ExpiresAt, want.ExpiresAt},
	} {
		if !p.got.Equal(p.want) || (!p.got.IsZero() && p.got.Location() != time.UTC) {
			t.Errorf("%s: %s = %v, want %v (UTC)", want.ID, p.name, p.got, p.want)
		}
	}
	got.Value, want.Value, got.Metadata, want.Metadata = nil, nil, nil, nil
	got.CreatedAt, got.UpdatedAt, got.LastAccessedAt, got.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	want.CreatedAt, want.UpdatedAt, want.LastAccessedAt, want.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entry %s:\n got %+v\nwant %+v", want.ID, got, want)
	}
}

// testEntriesCanceled pins that a caller's cancellation surfaces as context.Canceled (not an
// outage or a missing entry) from every EntryStore method, and writes nothing.
func testEntriesCanceled(t *testing.T, es turns.Store, tenant string) {
	writeSnaps(t, es, tenant, "conv", 1)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"WriteTurn", func() error { _, err := es.WriteTurn(ctx, snapWrite(tenant, "conv", 1, t0).Write()); return err }},
		{"ListEntries", func() error {
			_, _, err := es.ListEntries(ctx, core.EntryQuery{Tenant: tenant, Namespace: "conv", Now: t0, Limit: 5})
			return err
		}},
		{"GetEntry", func() error { _, err := es.GetEntry(ctx, tenant, "conv", causalMem, "snap-1", true, t0); return err }},
		{"ForgetNamespace", func() error { _, err := es.ForgetNamespace(ctx, tenant, "conv"); return err }},
	}
	for _, c := range calls {
		err := c.call()
		if !errors.Is(err, context.Canceled) || errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrNotFound) {
			t.Errorf("%s with a canceled context: error = %v, want context.Canceled only", c.name, err)
		}
	}
	if got := mustGetEntry(t, es, tenant, "conv", causalMem, "snap-1"); got.AccessCount != 0 {
		t.Errorf("access count after a canceled touch = %d, want 0", got.AccessCount)
	}
	if got := list(t, es, tenant, "conv"); !slices.Equal(got, []string{"snap-1"}) {
		t.Errorf("stored = %v, want [snap-1]", got)
	}
}
