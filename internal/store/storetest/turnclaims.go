package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
)

// testTurnClaims runs the conformance cases of what WriteTurn does besides writing entries:
// claiming an idempotency key in the write's transaction (TurnWrite.Idempotency and Respond,
// replayed as TurnOutcome.Replay) and recording each memory's embedding fingerprint per
// namespace (TurnWrite.Fingerprints, refused as *core.FingerprintMismatch). Every subtest
// uses its own tenant, so they share the store and run in parallel.
func testTurnClaims(t *testing.T, s app.Store) {
	runTenantCases(t, s, "claims", []tenantCase{
		{"ClaimReplays", testClaimReplays},
		{"ClaimKeyReused", testClaimKeyReused},
		{"ClaimTenantsIndependent", testClaimTenants},
		{"ClaimExpired", testClaimExpired},
		{"ClaimExpiryPrecision", testClaimExpiryPrecision},
		{"ClaimFailedWriteFreesKey", testClaimFailedWrite},
		{"ClaimInFlightCommits", testClaimInFlightCommits},
		{"ClaimInFlightFails", testClaimInFlightFails},
		{"ClaimConcurrentOneKey", testClaimConcurrent},
		{"ClaimWithoutResponse", testClaimWithoutResponse},
		{"FingerprintMismatch", testFingerprintMismatch},
		{"FingerprintsIndependent", testFingerprintsIndependent},
		{"FingerprintFailedWriteRecordsNothing", testFingerprintFailedWrite},
		{"FingerprintForgetNamespace", testFingerprintForget},
	})
}

// respondTurn is the Respond of the claim cases: the resolved turn and how many entries were
// written, as a client would be answered.
func respondTurn(turn int, written []core.Entry) ([]byte, error) {
	return fmt.Appendf(nil, `{"turn":%d,"n":%d}`, turn, len(written)), nil
}

// claimWrite is snapWrite with an idempotency claim of key and hash expiring at expires, and
// respondTurn. builds, when not nil, counts the calls of Build.
func claimWrite(tenant, ns, key, hash string, now, expires time.Time, builds *atomic.Int32) Turn {
	w := snapWrite(tenant, ns, 1, now)
	build := w.Build
	w.Build = func(turn int) ([]core.Entry, error) {
		if builds != nil {
			builds.Add(1)
		}
		return build(turn)
	}
	w.Idempotency = &turns.IdempotencyClaim{Key: key, RequestHash: []byte(hash), ExpiresAt: expires}
	w.Respond = respondTurn
	return w
}

// day is how long the claim cases' claims live unless a case says otherwise.
const day = 24 * time.Hour

// mustClaimWrite performs w and checks that it wrote (no replay) at turn want, and that the
// response it stored is respondTurn's.
func mustClaimWrite(t *testing.T, es turns.Store, w Turn, want int) turns.TurnOutcome {
	t.Helper()
	o, err := es.WriteTurn(t.Context(), w.Write())
	if err != nil {
		t.Fatalf("WriteTurn(%s/%s, key %q): %v", w.Tenant, w.Namespace, w.Idempotency.Key, err)
	}
	if o.Replay != nil {
		t.Fatalf("WriteTurn(key %q) replayed %q, want a write", w.Idempotency.Key, o.Replay)
	}
	if o.Turn != want || len(o.Entries) != 1 || o.Entries[0].ID != fmt.Sprintf("snap-%d", want) {
		t.Fatalf("WriteTurn(key %q) = turn %d %v, want turn %d [snap-%d]", w.Idempotency.Key, o.Turn, entryIDs(o.Entries), want, want)
	}
	return o
}

// assertReplay checks that o replays want (byte for byte: Postgres keeps bytea verbatim) and
// carries nothing of a write.
func assertReplay(t *testing.T, what string, o turns.TurnOutcome, want []byte) {
	t.Helper()
	if !bytes.Equal(o.Replay, want) {
		t.Errorf("%s: Replay = %q, want %q", what, o.Replay, want)
	}
	if o.Turn != 0 || len(o.Entries) != 0 {
		t.Errorf("%s: replay also reports turn %d %v, want none", what, o.Turn, entryIDs(o.Entries))
	}
}

func assertStored(t *testing.T, es turns.Store, tenant, ns string, want ...string) {
	t.Helper()
	if got := list(t, es, tenant, ns); !slices.Equal(got, want) {
		t.Errorf("%s/%s stores %v, want %v", tenant, ns, got, want)
	}
}

func testClaimReplays(t *testing.T, es turns.Store, tenant string) {
	var builds atomic.Int32
	w := claimWrite(tenant, "conv", "k1", "h1", t0, t0.Add(day), &builds)
	first := mustClaimWrite(t, es, w, 1)
	response, _ := respondTurn(1, first.Entries)
	for i := range 3 {
		builds.Store(0)
		again := claimWrite(tenant, "conv", "k1", "h1", t0.Add(time.Duration(i+1)*time.Minute), t0.Add(day), &builds)
		o, err := es.WriteTurn(t.Context(), again.Write())
		if err != nil {
			t.Fatalf("replay %d: %v", i, err)
		}
		assertReplay(t, fmt.Sprintf("replay %d", i), o, response)
		if n := builds.Load(); n != 0 {
			t.Errorf("replay %d called Build %d times, want never", i, n)
		}
	}
	assertStored(t, es, tenant, "conv", "snap-1")
	// The claim holds nothing of the namespace: an unclaimed write goes on from turn 1.
	if turn, _ := mustWrite(t, es, snapWrite(tenant, "conv", 1, t0)); turn != 2 {
		t.Errorf("write after the replays got turn %d, want 2", turn)
	}
	// A key is a tenant's, not a namespace's: the same claim on another namespace replays too.
	o, err := es.WriteTurn(t.Context(), claimWrite(tenant, "other", "k1", "h1", t0, t0.Add(day), nil).Write())
	if err != nil {
		t.Fatal(err)
	}
	assertReplay(t, "same claim, other namespace", o, response)
	assertStored(t, es, tenant, "other")
}

func testClaimKeyReused(t *testing.T, es turns.Store, tenant string) {
	first := mustClaimWrite(t, es, claimWrite(tenant, "conv", "k1", "h1", t0, t0.Add(day), nil), 1)
	response, _ := respondTurn(1, first.Entries)
	for _, hash := range []string{"h2", "H1", "h1 "} {
		var builds atomic.Int32
		o, err := es.WriteTurn(t.Context(), claimWrite(tenant, "conv", "k1", hash, t0.Add(time.Minute), t0.Add(day), &builds).Write())
		if !errors.Is(err, turns.ErrKeyReused) {
			t.Errorf("key k1 with hash %q: error = %v, want core.ErrKeyReused", hash, err)
		}
		if o.Replay != nil || o.Turn != 0 || len(o.Entries) != 0 {
			t.Errorf("key k1 with hash %q: outcome %+v, want none", hash, o)
		}
		if n := builds.Load(); n != 0 {
			t.Errorf("key k1 with hash %q called Build %d times, want never", hash, n)
		}
	}
	assertStored(t, es, tenant, "conv", "snap-1")
	// The refused requests did not disturb the claim.
	o, err := es.WriteTurn(t.Context(), claimWrite(tenant, "conv", "k1", "h1", t0.Add(time.Hour), t0.Add(day), nil).Write())
	if err != nil {
		t.Fatal(err)
	}
	assertReplay(t, "original request after refusals", o, response)
}

func testClaimTenants(t *testing.T, es turns.Store, tenant string) {
	other := tenant + "-other"
	a := mustClaimWrite(t, es, claimWrite(tenant, "conv", "k1", "h1", t0, t0.Add(day), nil), 1)
	writeSnaps(t, es, other, "conv", 1, 1)
	// Same key, another tenant: a fresh claim, whatever its hash.
	b := mustClaimWrite(t, es, claimWrite(other, "conv", "k1", "h2", t0, t0.Add(day), nil), 3)
	for _, c := range []struct {
		tenant, hash string
		first        turns.TurnOutcome
	}{{tenant, "h1", a}, {other, "h2", b}} {
		o, err := es.WriteTurn(t.Context(), claimWrite(c.tenant, "conv", "k1", c.hash, t0, t0.Add(day), nil).Write())
		if err != nil {
			t.Fatalf("%s replay: %v", c.tenant, err)
		}
		want, _ := respondTurn(c.first.Turn, c.first.Entries)
		assertReplay(t, c.tenant+" replay", o, want)
	}
	_, err := es.WriteTurn(t.Context(), claimWrite(tenant, "conv", "k1", "h2", t0, t0.Add(day), nil).Write())
	if !errors.Is(err, turns.ErrKeyReused) {
		t.Errorf("other tenant's hash under %s: error = %v, want core.ErrKeyReused", tenant, err)
	}
	assertStored(t, es, tenant, "conv", "snap-1")
	assertStored(t, es, other, "conv", "snap-3", "snap-2", "snap-1")
}

func testClaimExpired(t *testing.T, es turns.Store, tenant string) {
	expires := t0.Add(time.Hour)
	first := mustClaimWrite(t, es, claimWrite(tenant, "conv", "k1", "h1", t0, expires, nil), 1)
	response, _ := respondTurn(1, first.Entries)
	// Just before its expiry the claim still replays.
	o, err := es.WriteTurn(t.Context(), claimWrite(tenant, "conv", "k1", "h1", expires.Add(-time.Millisecond), t0.Add(day), nil).Write())
	if err != nil {
		t.Fatal(err)
	}
	assertReplay(t, "before expiry", o, response)
	// At and after it the key is free: the same request writes again, and so would another.
	later := t0.Add(2 * time.Hour)
	mustClaimWrite(t, es, claimWrite(tenant, "conv", "k1", "h1", expires, later, nil), 2)
	third := mustClaimWrite(t, es, claimWrite(tenant, "conv", "k1", "h2", later, later.Add(day), nil), 3)
	// ... and the new claim is the one replayed (or refused).
	o, err = es.WriteTurn(t.Context(), claimWrite(tenant, "conv", "k1", "h2", later.Add(time.Minute), later.Add(day), nil).Write())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := respondTurn(3, third.Entries)
	assertReplay(t, "renewed claim", o, want)
	if _, err := es.WriteTurn(t.Context(), claimWrite(tenant, "conv", "k1", "h1", later.Add(time.Minute), later.Add(day), nil).Write()); !errors.Is(err, turns.ErrKeyReused) {
		t.Errorf("expired claim's hash against the renewed claim: error = %v, want core.ErrKeyReused", err)
	}
	assertStored(t, es, tenant, "conv", "snap-3", "snap-2", "snap-1")
}

// testClaimExpiryPrecision pins that both stores compare claim expiry at Postgres's precision
// (microseconds, truncated), as they do entry expiry: a claim expiring 700ns into a microsecond
// is expired for a write 500ns into it.
func testClaimExpiryPrecision(t *testing.T, es turns.Store, tenant string) {
	base := t0.Truncate(time.Microsecond).Add(time.Hour)
	mustClaimWrite(t, es, claimWrite(tenant, "conv", "k1", "h1", t0, base.Add(700*time.Nanosecond), nil), 1)
	mustClaimWrite(t, es, claimWrite(tenant, "conv", "k1", "h1", base.Add(500*time.Nanosecond), base.Add(day), nil), 2)
}

func testClaimFailedWrite(t *testing.T, es turns.Store, tenant string) {
	boom := errors.New("boom")
	writeSnaps(t, es, tenant, "conv", 1) // snap-1 is live: the conflict case below overwrites it
	mustWrite(t, es, Turn{Tenant: tenant, Namespace: "conv", HostTurn: 1, Now: t0,
		Fingerprints: []core.Fingerprint{{MemoryID: causalMem, Model: "a", Dims: 3}},
		Build:        func(int) ([]core.Entry, error) { return nil, nil }})
	failures := []struct {
		name string
		edit func(w *Turn)
		is   func(error) bool
	}{
		{"Build", func(w *Turn) {
			w.Build = func(turn int) ([]core.Entry, error) { return []core.Entry{snapEntry(tenant, "conv", turn)}, boom }
		}, func(err error) bool { return errors.Is(err, boom) }},
		{"Respond", func(w *Turn) {
			w.Respond = func(int, []core.Entry) ([]byte, error) { return nil, boom }
		}, func(err error) bool { return errors.Is(err, boom) }},
		{"Conflict", func(w *Turn) {
			build := w.Build
			w.Build = func(turn int) ([]core.Entry, error) {
				out, _ := build(turn)
				return append(out, snapEntry(tenant, "conv", 1)), nil
			}
		}, func(err error) bool { var way *turns.EntryInTheWay; return errors.As(err, &way) }},
		{"Fingerprint", func(w *Turn) {
			w.Fingerprints = []core.Fingerprint{{MemoryID: causalMem, Model: "a", Dims: 4}}
		}, func(err error) bool { var fm *core.FingerprintMismatch; return errors.As(err, &fm) }},
	}
	for i, f := range failures {
		key := "k-" + f.name
		w := claimWrite(tenant, "conv", key, "h1", t0, t0.Add(day), nil)
		f.edit(&w)
		o, err := es.WriteTurn(t.Context(), w.Write())
		if !f.is(err) || o.Replay != nil {
			t.Errorf("failing %s: %+v, %v; want its error", f.name, o, err)
		}
		assertStored(t, es, tenant, "conv", newestFirst(1+i)...)
		// The key is free again: the retry (same key, same hash, or another) writes.
		hash := []string{"h1", "h2"}[i%2]
		retry := mustClaimWrite(t, es, claimWrite(tenant, "conv", key, hash, t0.Add(time.Minute), t0.Add(day), nil), 2+i)
		want, _ := respondTurn(2+i, retry.Entries)
		o, err = es.WriteTurn(t.Context(), claimWrite(tenant, "conv", key, hash, t0.Add(time.Hour), t0.Add(day), nil).Write())
		if err != nil {
			t.Fatalf("replaying the retry of %s: %v", f.name, err)
		}
		assertReplay(t, "retry of "+f.name, o, want)
	}
}

// newestFirst returns snap-n .. snap-1, as a namespace holding them lists them.
func newestFirst(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("snap-%d", n-i)
	}
	return out
}

// inFlight starts a claimed write whose Build blocks until release is closed, and returns once
// Build has been entered (the claim is held) with the channel its outcome arrives on.
func inFlight(t *testing.T, es turns.Store, w Turn, release <-chan struct{}, fail error) <-chan error {
	t.Helper()
	entered := make(chan struct{})
	var once sync.Once
	build := w.Build
	w.Build = func(turn int) ([]core.Entry, error) {
		once.Do(func() { close(entered) })
		<-release
		if fail != nil {
			return nil, fail
		}
		return build(turn)
	}
	done := make(chan error, 1)
	go func() {
		_, err := es.WriteTurn(t.Context(), w.Write())
		done <- err
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("in-flight write returned before Build: %v", err)
	}
	return done
}

type result struct {
	o   turns.TurnOutcome
	err error
}

// waiters starts one claimed write per hash, all on key k1, and returns their results in order
// once they are all done.
func waiters(t *testing.T, es turns.Store, tenant string, hashes ...string) func() []result {
	out := make([]result, len(hashes))
	var wg sync.WaitGroup
	for i, h := range hashes {
		wg.Go(func() {
			out[i].o, out[i].err = es.WriteTurn(t.Context(), claimWrite(tenant, "conv", "k1", h, t0.Add(time.Second), t0.Add(day), nil).Write())
		})
	}
	return func() []result { wg.Wait(); return out }
}

func testClaimInFlightCommits(t *testing.T, es turns.Store, tenant string) {
	release := make(chan struct{})
	done := inFlight(t, es, claimWrite(tenant, "conv", "k1", "h1", t0, t0.Add(day), nil), release, nil)
	wait := waiters(t, es, tenant, "h1", "h2", "h1")
	time.Sleep(50 * time.Millisecond) // let the waiters reach the held claim
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("in-flight write: %v", err)
	}
	want, _ := respondTurn(1, make([]core.Entry, 1))
	for i, r := range wait() {
		if i == 1 {
			if !errors.Is(r.err, turns.ErrKeyReused) {
				t.Errorf("waiter with another hash: error = %v, want core.ErrKeyReused", r.err)
			}
			continue
		}
		if r.err != nil {
			t.Errorf("waiter %d: %v", i, r.err)
			continue
		}
		assertReplay(t, fmt.Sprintf("waiter %d", i), r.o, want)
	}
	assertStored(t, es, tenant, "conv", "snap-1")
}

func testClaimInFlightFails(t *testing.T, es turns.Store, tenant string) {
	boom := errors.New("boom")
	release := make(chan struct{})
	done := inFlight(t, es, claimWrite(tenant, "conv", "k1", "h1", t0, t0.Add(day), nil), release, boom)
	wait := waiters(t, es, tenant, "h1")
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-done; !errors.Is(err, boom) {
		t.Fatalf("in-flight write: error = %v, want %v", err, boom)
	}
	// The claim died with its write: the waiter claims the key and writes.
	r := wait()[0]
	if r.err != nil || r.o.Replay != nil || r.o.Turn != 1 || !slices.Equal(entryIDs(r.o.Entries), []string{"snap-1"}) {
		t.Errorf("waiter after the claim failed: %+v, %v; want a write of snap-1", r.o, r.err)
	}
	assertStored(t, es, tenant, "conv", "snap-1")
}

func testClaimConcurrent(t *testing.T, es turns.Store, tenant string) {
	const writers = 50
	var builds atomic.Int32
	results := make([]result, writers)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-gate
			results[i].o, results[i].err = es.WriteTurn(t.Context(), claimWrite(tenant, "conv", "k1", "h1", t0, t0.Add(day), &builds).Write())
		})
	}
	close(gate)
	wg.Wait()
	var wrote []int
	var bodies [][]byte
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Errorf("writer %d: %v", i, r.err)
		case r.o.Replay == nil:
			wrote = append(wrote, i)
			if r.o.Turn != 1 || !slices.Equal(entryIDs(r.o.Entries), []string{"snap-1"}) {
				t.Errorf("writer %d wrote turn %d %v, want 1 [snap-1]", i, r.o.Turn, entryIDs(r.o.Entries))
			}
			b, _ := respondTurn(r.o.Turn, r.o.Entries)
			bodies = append(bodies, b)
		default:
			if r.o.Turn != 0 || len(r.o.Entries) != 0 {
				t.Errorf("writer %d replayed and reports turn %d %v", i, r.o.Turn, entryIDs(r.o.Entries))
			}
			bodies = append(bodies, r.o.Replay)
		}
	}
	if len(wrote) != 1 {
		t.Errorf("writers %v wrote, want exactly one (the other %d replay)", wrote, writers-1)
	}
	want, _ := respondTurn(1, make([]core.Entry, 1))
	for i, b := range bodies {
		if !bytes.Equal(b, want) {
			t.Errorf("response %d = %q, want %q", i, b, want)
		}
	}
	assertStored(t, es, tenant, "conv", "snap-1")
	if n := builds.Load(); n < 1 {
		t.Errorf("Build called %d times, want at least once", n)
	}
}

// testClaimWithoutResponse pins what a claim committed with no response (Respond unset)
// does to a retry: there is nothing to replay, and guessing would write the turn twice, so the
// retry is refused as a reused key and writes nothing.
func testClaimWithoutResponse(t *testing.T, es turns.Store, tenant string) {
	w := claimWrite(tenant, "conv", "k1", "h1", t0, t0.Add(day), nil)
	w.Respond = nil
	o, err := es.WriteTurn(t.Context(), w.Write())
	if err != nil || o.Replay != nil || o.Turn != 1 {
		t.Fatalf("claimed write without Respond: %+v, %v; want a write at turn 1", o, err)
	}
	var builds atomic.Int32
	o, err = es.WriteTurn(t.Context(), claimWrite(tenant, "conv", "k1", "h1", t0.Add(time.Minute), t0.Add(day), &builds).Write())
	if !errors.Is(err, turns.ErrKeyReused) || o.Replay != nil || o.Turn != 0 || builds.Load() != 0 {
		t.Errorf("retry of a claim without a response: %+v, %v (Build called %d times); want core.ErrKeyReused, nothing built",
			o, err, builds.Load())
	}
	assertStored(t, es, tenant, "conv", "snap-1")
}

// fpWrite is snapWrite carrying fingerprints fs.
func fpWrite(tenant, ns string, now time.Time, fs ...core.Fingerprint) Turn {
	w := snapWrite(tenant, ns, 1, now)
	w.Fingerprints = fs
	return w
}

// assertMismatch checks that err is the *core.FingerprintMismatch want (and core.ErrInvalid).
func assertMismatch(t *testing.T, what string, err error, want core.FingerprintMismatch) {
	t.Helper()
	var fm *core.FingerprintMismatch
	if !errors.As(err, &fm) || !errors.Is(err, core.ErrInvalid) {
		t.Errorf("%s: error = %v, want a *core.FingerprintMismatch", what, err)
		return
	}
	if *fm != want {
		t.Errorf("%s: mismatch = %+v, want %+v", what, *fm, want)
	}
}

func fp(mem, model string, dims int) core.Fingerprint {
	return core.Fingerprint{MemoryID: mem, Model: model, Dims: dims}
}

func testFingerprintMismatch(t *testing.T, es turns.Store, tenant string) {
	const m = "vectors"
	mustWrite(t, es, fpWrite(tenant, "conv", t0, fp(m, "a", 3)))
	for _, c := range []struct {
		name string
		got  core.Fingerprint
	}{{"dims", fp(m, "a", 4)}, {"model", fp(m, "b", 3)}, {"both", fp(m, "b", 4)}} {
		_, err := es.WriteTurn(t.Context(), fpWrite(tenant, "conv", t0, c.got).Write())
		assertMismatch(t, c.name, err, core.FingerprintMismatch{MemoryID: m,
			HaveModel: "a", HaveDims: 3, GotModel: c.got.Model, GotDims: c.got.Dims})
		assertStored(t, es, tenant, "conv", "snap-1")
	}
	// One bad fingerprint among good ones fails the whole write.
	_, err := es.WriteTurn(t.Context(), fpWrite(tenant, "conv", t0, fp("fresh", "x", 2), fp(m, "a", 3), fp(m+"2", "y", 8), fp(m, "b", 3)).Write())
	assertMismatch(t, "mixed", err, core.FingerprintMismatch{MemoryID: m, HaveModel: "a", HaveDims: 3, GotModel: "b", GotDims: 3})
	assertStored(t, es, tenant, "conv", "snap-1")
	// The first fingerprint stays the memory's: the same again, or none, is accepted.
	mustWrite(t, es, fpWrite(tenant, "conv", t0, fp(m, "a", 3)))
	mustWrite(t, es, fpWrite(tenant, "conv", t0))
	// ... and the failed write recorded none of its others.
	mustWrite(t, es, fpWrite(tenant, "conv", t0, fp("fresh", "z", 5), fp(m+"2", "z", 5)))
	_, err = es.WriteTurn(t.Context(), fpWrite(tenant, "conv", t0, fp("fresh", "x", 2)).Write())
	assertMismatch(t, "fresh after it was recorded", err, core.FingerprintMismatch{MemoryID: "fresh", HaveModel: "z", HaveDims: 5, GotModel: "x", GotDims: 2})
	assertStored(t, es, tenant, "conv", newestFirst(4)...)
}

func testFingerprintsIndependent(t *testing.T, es turns.Store, tenant string) {
	const m = "vectors"
	other := tenant + "-other"
	mustWrite(t, es, fpWrite(tenant, "a", t0, fp(m, "a", 3)))
	// Another namespace, another memory, another tenant: each is first.
	mustWrite(t, es, fpWrite(tenant, "b", t0, fp(m, "b", 4)))
	mustWrite(t, es, fpWrite(tenant, "a", t0, fp(m+"2", "b", 4)))
	mustWrite(t, es, fpWrite(other, "a", t0, fp(m, "c", 5)))
	for _, c := range []struct {
		tenant, ns, mem string
		have            core.Fingerprint
	}{
		{tenant, "a", m, fp(m, "a", 3)},
		{tenant, "b", m, fp(m, "b", 4)},
		{tenant, "a", m + "2", fp(m+"2", "b", 4)},
		{other, "a", m, fp(m, "c", 5)},
	} {
		mustWrite(t, es, fpWrite(c.tenant, c.ns, t0, c.have))
		got := fp(c.mem, "d", 6)
		_, err := es.WriteTurn(t.Context(), fpWrite(c.tenant, c.ns, t0, got).Write())
		assertMismatch(t, c.tenant+"/"+c.ns+"/"+c.mem, err, core.FingerprintMismatch{MemoryID: c.mem,
			HaveModel: c.have.Model, HaveDims: c.have.Dims, GotModel: "d", GotDims: 6})
	}
	assertStored(t, es, tenant, "a", "snap-4", "snap-3", "snap-2", "snap-1")
	assertStored(t, es, tenant, "b", "snap-2", "snap-1")
	assertStored(t, es, other, "a", "snap-2", "snap-1")
}

func testFingerprintFailedWrite(t *testing.T, es turns.Store, tenant string) {
	boom := errors.New("boom")
	w := fpWrite(tenant, "conv", t0, fp("vectors", "a", 3))
	w.Build = func(int) ([]core.Entry, error) { return nil, boom }
	if _, err := es.WriteTurn(t.Context(), w.Write()); !errors.Is(err, boom) {
		t.Fatalf("failing Build: error = %v, want %v", err, boom)
	}
	// Nothing was recorded: another fingerprint is the first.
	mustWrite(t, es, fpWrite(tenant, "conv", t0, fp("vectors", "b", 4)))
	_, err := es.WriteTurn(t.Context(), fpWrite(tenant, "conv", t0, fp("vectors", "a", 3)).Write())
	assertMismatch(t, "after a failed write", err, core.FingerprintMismatch{MemoryID: "vectors",
		HaveModel: "b", HaveDims: 4, GotModel: "a", GotDims: 3})
}

func testFingerprintForget(t *testing.T, es turns.Store, tenant string) {
	const m = "vectors"
	mustWrite(t, es, fpWrite(tenant, "a", t0, fp(m, "a", 3)))
	mustWrite(t, es, fpWrite(tenant, "b", t0, fp(m, "a", 3)))
	if _, err := es.ForgetNamespace(t.Context(), tenant, "a"); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, es, fpWrite(tenant, "a", t0, fp(m, "b", 4)))
	_, err := es.WriteTurn(t.Context(), fpWrite(tenant, "a", t0, fp(m, "a", 3)).Write())
	assertMismatch(t, "forgotten namespace", err, core.FingerprintMismatch{MemoryID: m,
		HaveModel: "b", HaveDims: 4, GotModel: "a", GotDims: 3})
	// The namespace not forgotten keeps its fingerprint.
	_, err = es.WriteTurn(t.Context(), fpWrite(tenant, "b", t0, fp(m, "b", 4)).Write())
	assertMismatch(t, "namespace not forgotten", err, core.FingerprintMismatch{MemoryID: m,
		HaveModel: "a", HaveDims: 3, GotModel: "b", GotDims: 4})
	assertStored(t, es, tenant, "a", "snap-1")
}
