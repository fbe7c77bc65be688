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

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
	"github.com/footprint/footprint/internal/store/storetest"
)

// snapWrite is a turn write of one causal snapshot with a vector of dims dimensions.
func snapWrite(ns string, host int, dims int, ttl time.Duration, now time.Time) storetest.Turn {
	vec := make([]float32, dims)
	vec[0] = 1
	return storetest.Turn{Tenant: "acme", Namespace: ns, HostTurn: host, MemoryIDs: []string{"why"}, Now: now,
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
	a, b := openStore(t, dsn), openStore(t, dsn)
	now := time.Now().UTC().Truncate(time.Millisecond)
	write := func(s *pg.Store, w storetest.Turn) int {
		t.Helper()
		out, err := s.WriteTurn(ctx, w.Write())
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
	if _, err := b.WriteTurn(ctx, snapWrite("c1", 1, 4, 0, now).Write()); !errors.As(err, &mm) {
		t.Errorf("dims 4 after 8: %v, want a fingerprint mismatch", err)
	}
	if _, err := a.WriteTurn(ctx, snapWrite("c1", 1, 4, 0, now).Write()); !errors.As(err, &mm) {
		t.Errorf("dims 4 after 8 (the writer): %v, want a fingerprint mismatch", err)
	}
}

// TestTurnsTwoProcessesConcurrently: two stores (two server processes) × many goroutines write
// at once, to one conversation and to six; with six, both processes run shared transactions that
// lock several namespaces each (in one global order: no deadlock) and whose guesses keep going
// stale. Every conversation's turns are exactly 1..N.
func TestTurnsTwoProcessesConcurrently(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                      string
		writers, perWriter, convs int
	}{
		{"one conversation", 16, 8, 1},
		{"six conversations", 8, 12, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dsn := pgtest.DSN(t)
			stores := []*pg.Store{openStore(t, dsn), openStore(t, dsn)}
			var (
				mu     sync.Mutex
				byConv = map[string][]int{}
				wg     sync.WaitGroup
			)
			now := time.Now().UTC()
			for i := range 2 * tc.writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range tc.perWriter {
						c := fmt.Sprintf("m%d", (i+j)%tc.convs)
						out, err := stores[i%2].WriteTurn(context.WithoutCancel(ctx), snapWrite(c, 1, 4, 0, now).Write())
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						byConv[c] = append(byConv[c], out.Turn)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			for i, s := range stores {
				hits, stale := pg.PredictionStats(s)
				t.Logf("store %d: %d predicted writes, %d stale predictions, %d shared transactions", i, hits, stale, pg.GroupCommits(s))
			}
			for c, ts := range byConv {
				slices.Sort(ts)
				for i, n := range ts {
					if n != i+1 {
						t.Fatalf("%s: turns are not 1..%d: %v", c, len(ts), ts)
					}
				}
			}
		})
	}
}

// TestTurnGroupCommit: writes that queue behind a write blocked on the namespace lock are
// written together, and each still gets the outcome it would get alone: a failing Build, a live
// entry in the way, a caller that gave up and a host turn far ahead do not change the others'.
func TestTurnGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	now := time.Now().UTC().Truncate(time.Millisecond)
	if _, err := s.WriteTurn(ctx, snapWrite("g", 1, 4, 0, now).Write()); err != nil { // turn 1: now predicted
		t.Fatal(err)
	}
	holder := connect(t, dsn)
	// block takes the namespace's turn-write lock (lockNamespaceSQL) and returns its release.
	block := func() func() {
		tx, err := holder.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 7317))`, "acme", "g"); err != nil {
			t.Fatal(err)
		}
		return func() { _ = tx.Rollback(ctx) }
	}
	type result struct {
		name string
		turn int
		err  error
	}
	run := func(writes map[string]func() (context.Context, storetest.Turn)) map[string]result {
		release := block()
		results := make(chan result, len(writes))
		var wg sync.WaitGroup
		for name, mk := range writes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				wctx, w := mk()
				out, err := s.WriteTurn(wctx, w.Write())
				results <- result{name, out.Turn, err}
			}()
			time.Sleep(20 * time.Millisecond) // queue in a known order: the first blocks in Postgres
		}
		time.Sleep(100 * time.Millisecond)
		release()
		wg.Wait()
		close(results)
		got := map[string]result{}
		for r := range results {
			got[r.name] = r
		}
		return got
	}
	plain := func() (context.Context, storetest.Turn) { return ctx, snapWrite("g", 1, 4, 0, now) }
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(ctx)
	got := run(map[string]func() (context.Context, storetest.Turn){
		"a": plain, "b": plain, "c": plain,
		"fails": func() (context.Context, storetest.Turn) {
			w := snapWrite("g", 1, 4, 0, now)
			w.Build = func(int) ([]core.Entry, error) { return nil, boom }
			return ctx, w
		},
		"conflicts": func() (context.Context, storetest.Turn) {
			w := snapWrite("g", 1, 4, 0, now)
			build := w.Build
			w.Build = func(turn int) ([]core.Entry, error) {
				es, err := build(turn)
				es[0].ID = "snap-1" // live since the first write
				return es, err
			}
			return ctx, w
		},
		"gives-up": func() (context.Context, storetest.Turn) {
			time.AfterFunc(10*time.Millisecond, cancel)
			return cancelled, snapWrite("g", 1, 4, 0, now)
		},
		"ahead": func() (context.Context, storetest.Turn) { return ctx, snapWrite("g", 50, 4, 0, now) },
	})
	var ce *turns.EntryInTheWay
	if !errors.Is(got["fails"].err, boom) {
		t.Errorf("failing build: %v", got["fails"].err)
	}
	if !errors.As(got["conflicts"].err, &ce) {
		t.Errorf("live entry in the way: %v, want a conflict", got["conflicts"].err)
	}
	if got["gives-up"].err == nil {
		t.Errorf("a caller that gave up while queued was written: turn %d", got["gives-up"].turn)
	}
	var numbers []int
	for _, name := range []string{"a", "b", "c", "ahead"} {
		if got[name].err != nil {
			t.Fatalf("%s: %v", name, got[name].err)
		}
		numbers = append(numbers, got[name].turn)
	}
	if got["ahead"].turn < 50 {
		t.Errorf("host turn 50 got turn %d", got["ahead"].turn)
	}
	slices.Sort(numbers)
	if len(slices.Compact(slices.Clone(numbers))) != len(numbers) {
		t.Errorf("duplicate turns %v", numbers)
	}

	// A clean group: eight writers queued behind a blocked one, one transaction for them.
	before := pg.GroupCommits(s)
	writes := map[string]func() (context.Context, storetest.Turn){}
	for i := range 9 {
		writes[fmt.Sprint(i)] = plain
	}
	got = run(writes)
	numbers = numbers[:0]
	for _, r := range got {
		if r.err != nil {
			t.Fatal(r.err)
		}
		numbers = append(numbers, r.turn)
	}
	slices.Sort(numbers)
	for i := 1; i < len(numbers); i++ {
		if numbers[i] != numbers[i-1]+1 {
			t.Fatalf("group turns are not consecutive: %v", numbers)
		}
	}
	if pg.GroupCommits(s) == before {
		t.Errorf("no group commit happened")
	}
	// What was stored is what was answered.
	list, _, err := s.ListEntries(ctx, core.EntryQuery{Tenant: "acme", Namespace: "g", MemoryID: "why", Limit: 100, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1+4+9 {
		t.Errorf("%d snapshots stored, want 14", len(list))
	}
}

// turnResult is one write's outcome.
type turnResult struct {
	turn int
	err  error
}

// blockedWrites drives shared transactions into a known shape. It writes turn 1 to every
// conversation (so each is predicted), runs prepare, then holds the namespace locks of
// blockers on a connection of its own and starts a write to each blocker — they take every
// shared transaction there is and wait there — then one to each of queued, which queue behind
// them. whileBlocked runs with all of them in flight, given the lock holder's connection; then
// the locks are released, and every write's outcome returned.
func blockedWrites(t *testing.T, s *pg.Store, dsn string, blockers, queued []string, now time.Time, prepare func(), whileBlocked func(holder *pgx.Conn)) map[string]turnResult {
	t.Helper()
	ctx := t.Context()
	for _, c := range append(slices.Clone(blockers), queued...) {
		if _, err := s.WriteTurn(ctx, snapWrite(c, 1, 4, 0, now).Write()); err != nil {
			t.Fatal(err)
		}
	}
	prepare()
	holder := connect(t, dsn)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range blockers {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(31) || $2, 7317))`, "acme", c); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu  sync.Mutex
		got = map[string]turnResult{}
		wg  sync.WaitGroup
	)
	start := func(convs []string) {
		for _, c := range convs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := s.WriteTurn(ctx, snapWrite(c, 1, 4, 0, now).Write())
				mu.Lock()
				got[c] = turnResult{out.Turn, err}
				mu.Unlock()
			}()
		}
	}
	start(blockers)
	// The blockers are in: each session waits for its namespace lock (polled, not slept on, so
	// that a slow machine does not start the queued writes first). Polled from a connection of
	// its own: inside holder's transaction pg_stat_activity would stay the first snapshot.
	poller := connect(t, dsn)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := poller.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= len(blockers) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d blocked writes wait for their namespace lock after 10 s", waiting, len(blockers))
		}
		time.Sleep(5 * time.Millisecond)
	}
	start(queued)
	// The queued writes wait in this process, behind the blockers: nothing to poll.
	time.Sleep(100 * time.Millisecond)
	whileBlocked(holder)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return got
}

// TestSharedCommitAcrossConversations: predicted writes to different conversations that queue
// while every shared transaction is busy are written together, and a failure stays with its
// conversation: a live entry in the way fails that write alone, a stale guess is redone the long
// way, and every other write commits on the turn it would get alone.
func TestSharedCommitAcrossConversations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	now := time.Now().UTC().Truncate(time.Millisecond)
	var convs []string
	for i := range 12 {
		convs = append(convs, fmt.Sprintf("c%d", i))
	}
	var groups, stale int64
	got := blockedWrites(t, s, dsn, []string{"x", "y"}, convs, now, func() {
		// c0: a live entry in the way of its next snapshot, which the turn check does not count.
		inTheWay := core.Entry{Tenant: "acme", Namespace: "c0", MemoryID: "why", ID: "snap-2", Kind: core.KindBeat,
			Turn: 2, Value: json.RawMessage(`{}`)}
		if err := s.PutEntries(ctx, []core.Entry{inTheWay}); err != nil {
			t.Fatal(err)
		}
		// c1: another process wrote its turn 2, so this one's guess is stale.
		if out, err := openStore(t, dsn).WriteTurn(ctx, snapWrite("c1", 1, 4, 0, now).Write()); err != nil || out.Turn != 2 {
			t.Fatalf("other process: turn %d, %v", out.Turn, err)
		}
		groups = pg.GroupCommits(s)
		_, stale = pg.PredictionStats(s)
	}, func(*pgx.Conn) {})
	var ce *turns.EntryInTheWay
	if r := got["c0"]; !errors.As(r.err, &ce) {
		t.Errorf("c0, a live entry in the way: turn %d, %v; want a conflict", r.turn, r.err)
	}
	if r := got["c1"]; r.err != nil || r.turn != 3 {
		t.Errorf("c1, after another process's turn 2: turn %d, %v; want 3", r.turn, r.err)
	}
	for c, r := range got {
		if c != "c0" && c != "c1" && (r.err != nil || r.turn != 2) {
			t.Errorf("%s: turn %d, %v; want 2", c, r.turn, r.err)
		}
	}
	if n := pg.GroupCommits(s) - groups; n < 1 {
		t.Errorf("%d shared transactions of two or more writes, want at least 1", n)
	}
	if _, after := pg.PredictionStats(s); after-stale != 1 {
		t.Errorf("%d stale predictions, want 1 (c1's, counted once)", after-stale)
	}
	if e, err := s.GetEntry(ctx, "acme", "c0", "why", "snap-2", false, now); err != nil || e.Kind != core.KindBeat {
		t.Errorf("the entry in the way after the conflict: %+v, %v; want it untouched", e, err)
	}
}

// TestSharedCommitLostConnectionIsNotRedone: when the connection of a transaction in flight is
// lost, its COMMIT may have been applied with the answer lost, so its writes are not redone:
// their callers get an error (and here, where the session died waiting for a lock, nothing was
// stored). The writes queued behind it are not affected.
func TestSharedCommitLostConnectionIsNotRedone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := pgtest.DSN(t)
	s := openStore(t, dsn)
	now := time.Now().UTC().Truncate(time.Millisecond)
	blockers, queued := []string{"lx", "ly"}, []string{"q0", "q1", "q2", "q3"}
	got := blockedWrites(t, s, dsn, blockers, queued, now, func() {}, func(holder *pgx.Conn) {
		// The blockers' transactions wait for their locks: end their sessions.
		var killed int
		if err := holder.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		if killed != len(blockers) {
			t.Fatalf("terminated %d sessions waiting for a namespace lock, want %d", killed, len(blockers))
		}
		time.Sleep(100 * time.Millisecond)
	})
	for _, c := range blockers {
		if r := got[c]; r.err == nil {
			t.Errorf("%s: turn %d written; want an error (its session was ended)", c, r.turn)
		}
		list, _, err := s.ListEntries(ctx, core.EntryQuery{Tenant: "acme", Namespace: c, Now: now, Limit: 10})
		if err != nil || len(list) != 1 {
			t.Errorf("%s after its lost write: %d entries, %v; want only turn 1's", c, len(list), err)
		}
	}
	for _, c := range queued {
		if r := got[c]; r.err != nil || r.turn != 2 {
			t.Errorf("%s, queued behind the lost ones: turn %d, %v; want 2", c, r.turn, r.err)
		}
	}
}

// TestTurnDerivationManyMemories: a tenant with more writing memories than the turn check spells
// out probes them over arrays instead; turns are derived the same way, predicted or not.
func TestTurnDerivationManyMemories(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openStore(t, pgtest.DSN(t))
	now := time.Now().UTC().Truncate(time.Millisecond)
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf("other-%02d", i))
	}
	many = append(many, "why")
	for want := 1; want <= 3; want++ { // the first the long way, then predicted
		w := snapWrite("wide", 1, 4, 0, now)
		w.MemoryIDs = many
		out, err := s.WriteTurn(ctx, w.Write())
		if err != nil || out.Turn != want {
			t.Fatalf("write %d: turn %d, %v", want, out.Turn, err)
		}
	}
	if hits, _ := pg.PredictionStats(s); hits < 2 {
		t.Errorf("%d predicted writes, want 2", hits)
	}
}
