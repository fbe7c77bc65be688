package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/runs"
)

// testRuns: run recordings behave identically in every store: the seed's tail rules through
// the store, finish rules, tenant isolation, listing and retention.
func testRuns(t *testing.T, s app.Store) {
	t.Run("OpenGetDuplicate", func(t *testing.T) { runsOpen(t, s) })
	t.Run("SeedRules", func(t *testing.T) { runsSeed(t, s) })
	t.Run("Repeats", func(t *testing.T) { runsRepeats(t, s) })
	t.Run("RepeatsByValueAsSent", func(t *testing.T) { runsRepeatsAsSent(t, s) })
	t.Run("ServerTimes", func(t *testing.T) { runsServerTimes(t, s) })
	t.Run("Finish", func(t *testing.T) { runsFinish(t, s) })
	t.Run("TenantIsolation", func(t *testing.T) { runsTenants(t, s) })
	t.Run("List", func(t *testing.T) { runsList(t, s) })
	t.Run("OpenLimit", func(t *testing.T) { runsLimit(t, s) })
	t.Run("Truncation", func(t *testing.T) { runsTruncation(t, s) })
	t.Run("Concurrent", func(t *testing.T) { runsConcurrent(t, s) })
	t.Run("Retention", func(t *testing.T) { runsRetention(t, s) })
}

var rt0 = time.Date(2026, 2, 3, 4, 5, 6, 789000000, time.UTC)

func newRun(tenant, id string, maxEvents int) runs.Run {
	return runs.Run{Tenant: tenant, ID: id, MaxEvents: maxEvents, CreatedAt: rt0,
		Namespace: core.Identity{Tenant: tenant}.Namespace()}
}

func mustOpenRun(t *testing.T, s app.Store, r runs.Run) {
	t.Helper()
	if err := s.CreateRun(t.Context(), r, nil, nil); err != nil {
		t.Fatalf("CreateRun(%s/%s): %v", r.Tenant, r.ID, err)
	}
}

// plainEvents returns n events of type "step" with payload {"n":i} for i in from..from+n-1.
func plainEvents(from, n int) []runs.RunEventInput {
	out := make([]runs.RunEventInput, n)
	for i := range out {
		out[i] = runs.RunEventInput{Type: "step", Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, from+i)),
			Meta: json.RawMessage(fmt.Sprintf(`{"wallClockMs":%d}`, 1796019302000+int64(from+i)))}
	}
	return out
}

// AppendInputs appends raw inputs through s the way the service does.
func AppendInputs(t *testing.T, s runs.Store, tenant, id string, in []runs.RunEventInput) (runs.Run, error) {
	t.Helper()
	return s.AppendEvents(t.Context(), tenant, id, func(r runs.Run) ([]runs.RunEvent, error) {
		return runs.PrepareEvents(in, r.RecordEmbeddings, time.Time{}), nil
	})
}

// finishRun finishes a run through the runs service, at the time at: the rules of finishing
// are the service's; locking and persisting them, the store's.
func finishRun(ctx context.Context, s runs.Store, tenant, id string, complete bool, at time.Time) (runs.Run, error) {
	return runs.New(runs.Deps{Store: s, Now: func() time.Time { return at }}).FinishRun(ctx, tenant, id, complete)
}

// atMost is an admit function for CreateRun that refuses a run once max are open.
func atMost(max int) func(open int) error {
	return func(open int) error {
		if open >= max {
			return &core.LimitError{Detail: "too many open runs"}
		}
		return nil
	}
}

func mustAppend(t *testing.T, s app.Store, tenant, id string, in []runs.RunEventInput) runs.Run {
	t.Helper()
	r, err := AppendInputs(t, s, tenant, id, in)
	if err != nil {
		t.Fatalf("AppendEvents(%s/%s): %v", tenant, id, err)
	}
	return r
}

func readAll(t *testing.T, s app.Store, tenant, id string) (runs.Run, []runs.RunEvent) {
	t.Helper()
	r, evs, err := s.RunEvents(t.Context(), tenant, id, -1, 0)
	if err != nil {
		t.Fatalf("RunEvents(%s/%s): %v", tenant, id, err)
	}
	return r, evs
}

func indexes(evs []runs.RunEvent) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Index
	}
	return out
}

func assertCode(t *testing.T, err error, code, call string) {
	t.Helper()
	var ce *core.ConflictError
	if !errors.As(err, &ce) || ce.Code != code {
		t.Errorf("%s: error = %v, want a conflict %q", call, err, code)
	}
}

func runsOpen(t *testing.T, s app.Store) {
	r := newRun("acme", "open-1", 5)
	r.ConversationID, r.Principal, r.Turn, r.RecordEmbeddings = "conv", "alice", 4, true
	r.Namespace = core.Identity{Tenant: "acme", Principal: "alice", ConversationID: "conv"}.Namespace()
	r.StartedAt = rt0.Add(-time.Second)
	mustOpenRun(t, s, r)
	got, err := s.GetRun(t.Context(), "acme", "open-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ConversationID != "conv" || got.Principal != "alice" || got.Turn != 4 || !got.RecordEmbeddings ||
		got.MaxEvents != 5 || !got.StartedAt.Equal(r.StartedAt) || !got.CreatedAt.Equal(rt0) || got.Finished ||
		got.NextIndex != 0 || got.Namespace != r.Namespace {
		t.Errorf("GetRun = %+v, want %+v", got, r)
	}
	if err := s.CreateRun(t.Context(), newRun("acme", "open-1", 3), nil, nil); !errors.Is(err, runs.ErrRunExists) {
		t.Errorf("duplicate CreateRun = %v, want runs.ErrRunExists", err)
	}
	_, err = s.GetRun(t.Context(), "acme", "absent")
	var nf *core.NotFoundError
	if !errors.As(err, &nf) || nf.What != "run" {
		t.Errorf("GetRun(absent) = %v, want NotFoundError{run}", err)
	}
	if _, err := AppendInputs(t, s, "acme", "absent", plainEvents(0, 1)); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("append to absent = %v, want not found", err)
	}
	if _, _, err := s.RunEvents(t.Context(), "acme", "absent", -1, 0); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("RunEvents(absent) = %v, want not found", err)
	}
}

func runsSeed(t *testing.T, s app.Store) {
	// cap 5 push 5 → count 5, dropped 0.
	mustOpenRun(t, s, newRun("acme", "cap5", 5))
	r := mustAppend(t, s, "acme", "cap5", plainEvents(0, 5))
	if r.EventCount() != 5 || r.Dropped != 0 {
		t.Errorf("cap 5 push 5: count %d dropped %d, want 5, 0", r.EventCount(), r.Dropped)
	}
	// cap 3 push 0..6 (in three batches) → retained [4,5,6], dropped 4.
	mustOpenRun(t, s, newRun("acme", "cap3", 3))
	mustAppend(t, s, "acme", "cap3", plainEvents(0, 2))
	mustAppend(t, s, "acme", "cap3", plainEvents(2, 4))
	r = mustAppend(t, s, "acme", "cap3", plainEvents(6, 1))
	if r.EventCount() != 3 || r.Dropped != 4 || r.NextIndex != 7 {
		t.Errorf("cap 3 push 0..6: %+v, want count 3 dropped 4", r)
	}
	got, evs := readAll(t, s, "acme", "cap3")
	if !slices.Equal(indexes(evs), []int64{4, 5, 6}) || got.Dropped != 4 {
		t.Errorf("cap 3 retained %v dropped %d, want [4 5 6], 4", indexes(evs), got.Dropped)
	}
	for i, e := range evs {
		if want := fmt.Sprintf(`{"n":%d}`, 4+i); string(e.Payload) != want || !e.Slot || e.Type != "step" ||
			string(e.Meta) == "" {
			t.Errorf("event %d = %+v, want payload %s", e.Index, e, want)
		}
	}
	// The start is unknown once events were dropped (the run keeps the first wall clock).
	if got.KnownStart() != (time.Time{}) {
		t.Errorf("KnownStart with dropped events = %v, want zero", got.KnownStart())
	}
	// cap 3 push 0..9 in one batch → firstRetainedIndex 7, indexes 7..9.
	mustOpenRun(t, s, newRun("acme", "cap3b", 3))
	r = mustAppend(t, s, "acme", "cap3b", plainEvents(0, 10))
	_, evs = readAll(t, s, "acme", "cap3b")
	if r.Dropped != 7 || !slices.Equal(indexes(evs), []int64{7, 8, 9}) {
		t.Errorf("cap 3 push 0..9: dropped %d, retained %v", r.Dropped, indexes(evs))
	}
	// Paging by index.
	_, page, err := s.RunEvents(t.Context(), "acme", "cap5", 1, 2)
	if err != nil || !slices.Equal(indexes(page), []int64{2, 3}) {
		t.Errorf("RunEvents(after 1, limit 2) = %v, %v", indexes(page), err)
	}
	// StartedAt from the first event's wall clock.
	got, _ = readAll(t, s, "acme", "cap5")
	if want := time.UnixMilli(1796019302000).UTC(); !got.KnownStart().Equal(want) || !got.LastWallClock.Equal(time.UnixMilli(1796019302004).UTC()) {
		t.Errorf("startedAt %v lastWall %v, want %v", got.KnownStart(), got.LastWallClock, want)
	}
}

func announcement(slot, hash, body string) runs.RunEventInput {
	return runs.RunEventInput{Type: runs.ContextInjectedType,
		Payload: json.RawMessage(fmt.Sprintf(`{"slot":%q,"contentHash":%q,"body":%q}`, slot, hash, body))}
}

func runsRepeats(t *testing.T, s app.Store) {
	mustOpenRun(t, s, newRun("acme", "rep", 2))
	a := announcement("system", "h1", "piece A")
	b := announcement("system", "h1", "piece B") // same hash, other content: not a repeat
	reordered := runs.RunEventInput{Type: runs.ContextInjectedType, Payload: json.RawMessage(`{"contentHash":"h1","slot":"system","body":"piece A"}`)}
	mustAppend(t, s, "acme", "rep", []runs.RunEventInput{a, a})
	mustAppend(t, s, "acme", "rep", []runs.RunEventInput{a, {Type: runs.ContextInjectedType, Payload: json.RawMessage(` { "slot" : "system", "contentHash":"h1" ,"body":"piece A"}`)}})
	r, evs := readAll(t, s, "acme", "rep")
	if r.Dropped != 0 || len(evs) != 4 {
		t.Fatalf("4 copies of one announcement into cap 2: dropped %d, %d retained", r.Dropped, len(evs))
	}
	for i, e := range evs {
		if e.Slot != (i == 0) {
			t.Errorf("event %d slot = %v, want %v", i, e.Slot, i == 0)
		}
	}
	// b and reordered each take a slot: with cap 2 the original announcement (index 0) is
	// evicted; its repeats (1..3) hold no slot and stay, the window still one suffix.
	r = mustAppend(t, s, "acme", "rep", []runs.RunEventInput{b})
	if r.Dropped != 0 {
		t.Errorf("after b: dropped %d, want 0", r.Dropped)
	}
	r = mustAppend(t, s, "acme", "rep", []runs.RunEventInput{reordered})
	_, evs = readAll(t, s, "acme", "rep")
	var slots []bool
	for _, e := range evs {
		slots = append(slots, e.Slot)
	}
	if r.Dropped != 1 || !slices.Equal(indexes(evs), []int64{1, 2, 3, 4, 5}) || !slices.Equal(slots, []bool{false, false, false, true, true}) {
		t.Errorf("after reordered: dropped %d, retained %v slots %v", r.Dropped, indexes(evs), slots)
	}
	// Another copy of piece A is a repeat of nothing held now: it takes a slot.
	mustAppend(t, s, "acme", "rep", []runs.RunEventInput{a})
	_, evs = readAll(t, s, "acme", "rep")
	if last := evs[len(evs)-1]; !last.Slot || last.Index != 6 {
		t.Errorf("piece A after its original was evicted: %+v", last)
	}
}

// runsRepeatsAsSent: a repeat is decided on the payload as sent, by value. Two announcements
// that differ only in their vectors are two pieces, though both are recorded as the same
// {dims, norm} summary; the same vector sent twice is a repeat; 1 and 1.0, "A" and "\u0041"
// are one value, and a repeat keeps the first spelling.
func runsRepeatsAsSent(t *testing.T, s app.Store) {
	mustOpenRun(t, s, newRun("acme", "as-sent", 10))
	vec := func(x, y float64) runs.RunEventInput {
		return runs.RunEventInput{Type: runs.ContextInjectedType,
			Payload: json.RawMessage(fmt.Sprintf(`{"slot":"rag","contentHash":"h","embedding":[%g,%g]}`, x, y))}
	}
	// Unit vectors: every one redacts to {"dims":2,"norm":1}.
	mustAppend(t, s, "acme", "as-sent", []runs.RunEventInput{vec(0.6, 0.8), vec(0.8, 0.6)})
	mustAppend(t, s, "acme", "as-sent", []runs.RunEventInput{vec(0.6, 0.8)})
	spelled := func(n, c string) runs.RunEventInput {
		return runs.RunEventInput{Type: runs.AnnouncementType, Payload: json.RawMessage(`{"slot":"system","n":` + n + `,"c":` + c + `}`)}
	}
	mustAppend(t, s, "acme", "as-sent", []runs.RunEventInput{spelled("1", `"A"`)})
	mustAppend(t, s, "acme", "as-sent", []runs.RunEventInput{spelled("1.0", `"\u0041"`), spelled("2", `"A"`)})
	r, evs := readAll(t, s, "acme", "as-sent")
	var slots []bool
	for _, e := range evs {
		slots = append(slots, e.Slot)
	}
	if want := []bool{true, true, false, true, false, true}; !slices.Equal(slots, want) {
		t.Fatalf("slots %v, want %v", slots, want)
	}
	if r.EventCount() != 6 {
		t.Errorf("count %d, want 6", r.EventCount())
	}
	for _, i := range []int{0, 1, 2} {
		if got := string(evs[i].Payload); got != `{"slot":"rag","contentHash":"h","embedding":{"dims":2,"norm":1}}` {
			t.Errorf("event %d recorded %s, want the vector summarised", i, got)
		}
	}
	if got := string(evs[4].Payload); got != `{"slot":"system","n":1,"c":"A"}` {
		t.Errorf("the repeat of another spelling recorded %s, want the held spelling", got)
	}
	// The decision survives what the store keeps: the same vectors again, after the rows
	// above were persisted (and, on Postgres, through a tail rebuilt from them by another
	// process, see pg's TestRunsTwoProcesses), are repeats; another vector is not.
	mustAppend(t, s, "acme", "as-sent", []runs.RunEventInput{vec(0.8, 0.6), vec(1, 0)})
	_, evs = readAll(t, s, "acme", "as-sent")
	if evs[6].Slot || !evs[7].Slot {
		t.Errorf("after persisting: slots %v %v, want a repeat then a new piece", evs[6].Slot, evs[7].Slot)
	}
}

// runsServerTimes: every event carries the time the server received it, the run the time of
// its newest one; the client's meta.wallClockMs stays what the client said.
func runsServerTimes(t *testing.T, s app.Store) {
	mustOpenRun(t, s, newRun("acme", "times", 10))
	at := func(d time.Duration) time.Time { return rt0.Add(d) }
	appendAt := func(recv time.Time, in []runs.RunEventInput) runs.Run {
		t.Helper()
		r, err := s.AppendEvents(t.Context(), "acme", "times", func(r runs.Run) ([]runs.RunEvent, error) {
			return runs.PrepareEvents(in, r.RecordEmbeddings, recv), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The client's clock is an hour behind the server's.
	client := func(d time.Duration) runs.RunEventInput {
		return runs.RunEventInput{Type: "step", Payload: json.RawMessage(`{}`),
			Meta: json.RawMessage(fmt.Sprintf(`{"wallClockMs":%d}`, at(d-time.Hour).UnixMilli()))}
	}
	appendAt(at(time.Second), []runs.RunEventInput{client(time.Second)})
	r := appendAt(at(2*time.Second), []runs.RunEventInput{client(2 * time.Second), {Type: "step", Payload: json.RawMessage(`{}`)}})
	if !r.LastReceivedAt.Equal(at(2*time.Second)) || !r.LastWallClock.Equal(at(2*time.Second-time.Hour)) ||
		!r.StartedAt.Equal(at(time.Second-time.Hour)) {
		t.Errorf("run after appends: received %v, client start %v end %v", r.LastReceivedAt, r.StartedAt, r.LastWallClock)
	}
	got, evs := readAll(t, s, "acme", "times")
	if !got.LastReceivedAt.Equal(at(2 * time.Second)) {
		t.Errorf("read back: last received %v", got.LastReceivedAt)
	}
	for i, want := range []time.Time{at(time.Second), at(2 * time.Second), at(2 * time.Second)} {
		if !evs[i].ReceivedAt().Equal(want) {
			t.Errorf("event %d received at %v, want %v", i, evs[i].ReceivedAt(), want)
		}
	}
	if string(evs[0].Meta) != fmt.Sprintf(`{"wallClockMs":%d}`, at(-time.Hour+time.Second).UnixMilli()) {
		t.Errorf("meta %s, want the client's as sent", evs[0].Meta)
	}
}

func runsFinish(t *testing.T, s app.Store) {
	ctx := t.Context()
	mustOpenRun(t, s, newRun("acme", "fin", 10))
	mustAppend(t, s, "acme", "fin", plainEvents(0, 3))
	r, err := finishRun(ctx, s, "acme", "fin", true, rt0.Add(time.Minute))
	if err != nil || !r.Finished || !r.Complete || !r.FinishedAt.Equal(rt0.Add(time.Minute)) {
		t.Fatalf("FinishRun = %+v, %v", r, err)
	}
	again, err := finishRun(ctx, s, "acme", "fin", true, rt0.Add(2*time.Minute))
	if err != nil || !again.FinishedAt.Equal(r.FinishedAt) {
		t.Errorf("second FinishRun(true) = %+v, %v; want unchanged", again, err)
	}
	_, err = finishRun(ctx, s, "acme", "fin", false, rt0)
	assertCode(t, err, core.CodeRunFinished, "FinishRun(false) after true")
	_, err = runs.New(runs.Deps{Store: s}).AppendEvents(ctx, "acme", "fin", plainEvents(3, 1))
	assertCode(t, err, core.CodeRunFinished, "append to finished")
	got, evs := readAll(t, s, "acme", "fin")
	if len(evs) != 3 || !got.Finished || got.EndedAt().IsZero() {
		t.Errorf("finished run: %+v with %d events", got, len(evs))
	}
	if _, err := finishRun(ctx, s, "acme", "absent", true, rt0); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("FinishRun(absent) = %v", err)
	}
}

func runsTenants(t *testing.T, s app.Store) {
	ctx := t.Context()
	mustOpenRun(t, s, newRun("tenant-a", "shared", 10))
	mustAppend(t, s, "tenant-a", "shared", plainEvents(0, 2))
	if _, err := s.GetRun(ctx, "tenant-b", "shared"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("B GetRun(A's) = %v", err)
	}
	if _, err := AppendInputs(t, s, "tenant-b", "shared", plainEvents(0, 1)); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("B append to A's = %v", err)
	}
	if _, err := finishRun(ctx, s, "tenant-b", "shared", true, rt0); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("B finish A's = %v", err)
	}
	if runs, err := s.ListRuns(ctx, runs.RunQuery{Tenant: "tenant-b", Limit: 10}); err != nil || len(runs) != 0 {
		t.Errorf("B ListRuns = %v, %v", runs, err)
	}
	mustOpenRun(t, s, newRun("tenant-b", "shared", 10))
	mustAppend(t, s, "tenant-b", "shared", plainEvents(0, 1))
	if _, evs := readAll(t, s, "tenant-a", "shared"); len(evs) != 2 {
		t.Errorf("A's run has %d events after B's append, want 2", len(evs))
	}
}

func runsList(t *testing.T, s app.Store) {
	ctx := t.Context()
	var want []string
	for i := range 5 {
		r := newRun("lister", fmt.Sprintf("run-%d", i), 10)
		r.CreatedAt = rt0.Add(time.Duration(i%3) * time.Second) // ties broken by id
		if i%2 == 0 {
			r.ConversationID = "conv-1"
			r.Namespace = core.Identity{Tenant: "lister", ConversationID: "conv-1"}.Namespace()
		}
		mustOpenRun(t, s, r)
	}
	want = []string{"run-2", "run-4", "run-1", "run-3", "run-0"} // newest first
	var got []string
	q := runs.RunQuery{Tenant: "lister", Limit: 2}
	for range 5 {
		page, err := s.ListRuns(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			got = append(got, r.ID)
		}
		last := page[len(page)-1]
		q.AfterCreated, q.AfterID = last.CreatedAt, last.ID
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged ListRuns = %v, want %v", got, want)
	}
	page, err := s.ListRuns(ctx, runs.RunQuery{Tenant: "lister", Limit: 10,
		Namespace: core.Identity{Tenant: "lister", ConversationID: "conv-1"}.Namespace()})
	got = nil
	for _, r := range page {
		got = append(got, r.ID)
	}
	if err != nil || !slices.Equal(got, []string{"run-2", "run-4", "run-0"}) {
		t.Errorf("ListRuns(conv-1) = %v, %v", got, err)
	}
}

func runsLimit(t *testing.T, s app.Store) {
	ctx := t.Context()
	for i := range 2 {
		if err := s.CreateRun(ctx, newRun("limited", fmt.Sprintf("r%d", i), 10), atMost(2), nil); err != nil {
			t.Fatal(err)
		}
	}
	err := s.CreateRun(ctx, newRun("limited", "r2", 10), atMost(2), nil)
	if !errors.Is(err, core.ErrTooManyRuns) {
		t.Fatalf("third open run = %v, want ErrTooManyRuns", err)
	}
	if err := s.CreateRun(ctx, newRun("other", "r2", 10), atMost(2), nil); err != nil {
		t.Errorf("other tenant: %v", err)
	}
	if _, err := finishRun(ctx, s, "limited", "r0", false, rt0); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(ctx, newRun("limited", "r2", 10), atMost(2), nil); err != nil {
		t.Errorf("after finishing one: %v", err)
	}
}

func runsTruncation(t *testing.T, s app.Store) {
	mustOpenRun(t, s, newRun("acme", "big", 10))
	huge := `{"blob":"` + strings.Repeat("x", runs.MaxEventPayloadBytes) + `"}`
	r := mustAppend(t, s, "acme", "big", []runs.RunEventInput{{Type: "tool.result", Payload: json.RawMessage(huge)}, plainEvents(1, 1)[0]})
	if r.TruncatedEvents != 1 {
		t.Errorf("truncatedEvents = %d, want 1", r.TruncatedEvents)
	}
	_, evs := readAll(t, s, "acme", "big")
	if len(evs) != 2 || evs[0].Truncated == nil || evs[0].Truncated.OriginalBytes != int64(len(huge)) ||
		len(evs[0].Payload) > runs.MaxEventPayloadBytes || evs[1].Truncated != nil {
		t.Fatalf("events = %d, first truncated %+v", len(evs), evs[0].Truncated)
	}
	var prefix string
	if err := json.Unmarshal(evs[0].Payload, &prefix); err != nil || !strings.HasPrefix(huge, prefix) || len(prefix) < 60000 {
		t.Errorf("truncated payload is not a prefix string: %v", err)
	}
}

// runsConcurrent: concurrent appends to one run are serialised: every event gets a distinct
// index and each batch's events stay contiguous and in order.
func runsConcurrent(t *testing.T, s app.Store) {
	mustOpenRun(t, s, newRun("acme", "conc", 10000))
	const writers, batches, per = 8, 5, 20
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				if _, err := AppendInputs(t, s, "acme", "conc", plainEvents(w*1000+b*per, per)); err != nil {
					t.Errorf("writer %d: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	r, evs := readAll(t, s, "acme", "conc")
	if r.NextIndex != writers*batches*per || len(evs) != writers*batches*per {
		t.Fatalf("next %d, %d events; want %d", r.NextIndex, len(evs), writers*batches*per)
	}
	for i := 0; i < len(evs); i += per {
		var first struct{ N int }
		_ = json.Unmarshal(evs[i].Payload, &first)
		for j := range per {
			var e struct{ N int }
			_ = json.Unmarshal(evs[i+j].Payload, &e)
			if e.N != first.N+j || evs[i+j].Index != int64(i+j) {
				t.Fatalf("batch at %d is not contiguous: event %d = %s", i, i+j, evs[i+j].Payload)
			}
		}
	}
}

func runsRetention(t *testing.T, s app.Store) {
	ctx := t.Context()
	mustOpenRun(t, s, newRun("ret", "old", 10))
	mustOpenRun(t, s, newRun("ret", "new", 10))
	mustOpenRun(t, s, newRun("ret", "open", 10))
	mustAppend(t, s, "ret", "old", plainEvents(0, 3))
	old := rt0.Add(-1000 * time.Hour) // older than anything the other subtests finish
	if _, err := finishRun(ctx, s, "ret", "old", true, old); err != nil {
		t.Fatal(err)
	}
	if _, err := finishRun(ctx, s, "ret", "new", true, old.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	n, err := s.DeleteFinishedRuns(ctx, old.Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("DeleteFinishedRuns = %d, %v; want 1", n, err)
	}
	if _, err := s.GetRun(ctx, "ret", "old"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("old run after retention: %v", err)
	}
	for _, id := range []string{"new", "open"} {
		if _, err := s.GetRun(ctx, "ret", id); err != nil {
			t.Errorf("%s run after retention: %v", id, err)
		}
	}
	// The id is free again, with an empty tail.
	mustOpenRun(t, s, newRun("ret", "old", 10))
	if r, evs := readAll(t, s, "ret", "old"); len(evs) != 0 || r.NextIndex != 0 {
		t.Errorf("re-created run: %+v, %d events", r, len(evs))
	}
	r := mustAppend(t, s, "ret", "old", plainEvents(0, 1))
	if r.NextIndex != 1 {
		t.Errorf("re-created run appended at %d", r.NextIndex-1)
	}
}
