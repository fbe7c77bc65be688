package runs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/runs"
)

func plain(n int) runs.Event {
	return runs.Event{Type: "test.event", Payload: json.RawMessage(strconv.Itoa(n))}
}

func announce(payload string) runs.Event {
	return runs.Event{Type: runs.AnnouncementType, Payload: json.RawMessage(payload)}
}

func payloads(events []runs.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = string(e.Payload)
	}
	return out
}

func indexes(events []runs.Event) []int64 {
	out := make([]int64, len(events))
	for i, e := range events {
		out[i] = e.Index
	}
	return out
}

func sameSlice(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}

func TestEventTailKeepsEverythingUnderTheCap(t *testing.T) {
	t.Parallel()
	tail := runs.NewEventTail(5)
	for i := range 5 {
		tail.Push(plain(i))
	}
	if tail.Count() != 5 || tail.Dropped() != 0 || tail.FirstRetainedIndex() != 0 || tail.Held() != 5 {
		t.Fatalf("count %d dropped %d first %d held %d, want 5 0 0 5",
			tail.Count(), tail.Dropped(), tail.FirstRetainedIndex(), tail.Held())
	}
}

func TestEventTailEvictsOldestFirstAndCounts(t *testing.T) {
	t.Parallel()
	tail := runs.NewEventTail(3)
	for i := range 7 {
		tail.Push(plain(i))
	}
	s := tail.Snapshot()
	if got := fmt.Sprint(payloads(s.Events)); got != "[4 5 6]" {
		t.Fatalf("retained %s, want [4 5 6]", got)
	}
	if s.Dropped != 4 || tail.Dropped() != 4 || tail.Count() != 3 {
		t.Fatalf("dropped %d/%d count %d, want 4 and 3", s.Dropped, tail.Dropped(), tail.Count())
	}
}

func TestEventTailUnusableCapMeansDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []float64{0, -1, math.NaN(), math.Inf(1), math.Inf(-1), 0.5} {
		if got := runs.NewEventTail(c).Cap(); got != runs.DefaultMaxEvents {
			t.Errorf("cap %v → %d, want %d", c, got, runs.DefaultMaxEvents)
		}
	}
	if runs.DefaultMaxEvents != 10_000 || runs.RepeatAllowance != 10 {
		t.Fatalf("constants changed: %d, %d", runs.DefaultMaxEvents, runs.RepeatAllowance)
	}
	if got := runs.NewEventTail(3.9).Cap(); got != 3 {
		t.Errorf("cap 3.9 → %d, want floor 3", got)
	}
	if got := runs.NewEventTail(1e300).Cap(); got <= 0 || got > math.MaxInt/runs.RepeatAllowance {
		t.Errorf("cap 1e300 → %d, want a clamped positive cap", got)
	}
}

func TestEventTailSnapshotIsACopy(t *testing.T) {
	t.Parallel()
	tail := runs.NewEventTail(3)
	tail.Push(plain(0))
	tail.Push(plain(1))
	s := tail.Snapshot()
	for i := 2; i < 10; i++ {
		tail.Push(plain(i))
	}
	if got := fmt.Sprint(payloads(s.Events)); got != "[0 1]" || s.Dropped != 0 {
		t.Fatalf("snapshot changed behind the caller: %s dropped %d", got, s.Dropped)
	}
	// Appending to a snapshot never writes into the tail.
	grown := append(tail.Snapshot().Events, plain(99))
	tail.Push(plain(10))
	if got := tail.Snapshot().Events; string(got[len(got)-1].Payload) != "10" || string(grown[len(grown)-1].Payload) != "99" {
		t.Fatal("a snapshot and the tail share appendable storage")
	}
	if empty := runs.NewEventTail(3).Snapshot(); empty.Events == nil || len(empty.Events) != 0 {
		t.Fatalf("empty snapshot events = %#v, want empty non-nil", empty.Events)
	}
}

func TestEventTailFirstRetainedIndex(t *testing.T) {
	t.Parallel()
	tail := runs.NewEventTail(3)
	for i := range 10 {
		if got := tail.Push(plain(i)); got != int64(i) {
			t.Fatalf("push %d got index %d", i, got)
		}
	}
	s := tail.Snapshot()
	if s.FirstRetainedIndex != 7 || tail.FirstRetainedIndex() != 7 {
		t.Fatalf("firstRetainedIndex %d/%d, want 7", s.FirstRetainedIndex, tail.FirstRetainedIndex())
	}
	if got := fmt.Sprint(indexes(s.Events)); got != "[7 8 9]" {
		t.Fatalf("indexes %s, want [7 8 9]", got)
	}
	if tail.NextIndex() != 10 {
		t.Fatalf("next index %d, want 10", tail.NextIndex())
	}
}

// syntheticRun fires what a long agent run fires: per iteration a handful of
// plain events and a re-announcement of all 100 context pieces.
func syntheticRun(iterations, pieces int) []runs.Event {
	var events []runs.Event
	for it := 1; it <= iterations; it++ {
		meta := json.RawMessage(fmt.Sprintf(`{"iteration":%d}`, it))
		for _, typ := range []string{"iteration.start", "llm.request", "llm.response", "tool.call",
			"tool.result", "stream.token", "stream.token", "stream.token", "stream.token",
			"stream.token", "stream.token", "decision", "llm.usage", "iteration.end"} {
			events = append(events, runs.Event{Type: typ, Meta: meta,
				Payload: json.RawMessage(fmt.Sprintf(`{"iteration":%d,"n":%d}`, it, len(events)))})
		}
		for p := range pieces {
			events = append(events, runs.Event{Type: runs.AnnouncementType, Meta: meta,
				Payload: json.RawMessage(fmt.Sprintf(
					`{"slot":"s%d","contentHash":%d,"source":"rag","rawContent":"piece %d of the context, long enough to matter"}`,
					p%4, 1000+p, p))})
		}
	}
	return events
}

func TestEventTailLongRunKeepsItsStart(t *testing.T) {
	t.Parallel()
	events := syntheticRun(100, 100)
	if len(events) != 11_400 {
		t.Fatalf("synthetic run has %d events, want 11,400", len(events))
	}
	tail := runs.NewEventTail(runs.DefaultMaxEvents)
	for _, e := range events {
		tail.Push(e)
	}
	s := tail.Snapshot()
	if s.Dropped != 0 || len(s.Events) != len(events) {
		t.Fatalf("kept %d of %d, dropped %d", len(s.Events), len(events), s.Dropped)
	}
	if string(s.Events[0].Meta) != `{"iteration":1}` || s.Events[0].Type != "iteration.start" {
		t.Fatalf("recording opens at %s %s, want iteration 1", s.Events[0].Type, s.Events[0].Meta)
	}
	if tail.Held() != 100*14+100 {
		t.Fatalf("held %d, want %d distinct events", tail.Held(), 100*14+100)
	}
	// A repeat is stored with the held announcement's bytes: one copy.
	first, last := s.Events[14], s.Events[len(s.Events)-100]
	if !first.Slot || last.Slot || !sameSlice(first.Payload, last.Payload) {
		t.Fatalf("repeat does not share the held payload (slot %v/%v)", first.Slot, last.Slot)
	}
}

func TestEventTailSameHashDifferentContentBothHeld(t *testing.T) {
	t.Parallel()
	tail := runs.NewEventTail(10)
	tail.Push(announce(`{"slot":"rag","contentHash":42,"rawContent":"alpha"}`))
	tail.Push(announce(`{"slot":"rag","contentHash":42,"rawContent":"beta"}`))
	s := tail.Snapshot()
	if tail.Held() != 2 || !s.Events[0].Slot || !s.Events[1].Slot {
		t.Fatalf("held %d, want both pieces holding a slot", tail.Held())
	}
	if string(s.Events[1].Payload) != `{"slot":"rag","contentHash":42,"rawContent":"beta"}` {
		t.Fatalf("second piece merged into the first: %s", s.Events[1].Payload)
	}
	// Each is still found by its own content.
	tail.Push(announce(`{"slot":"rag","contentHash":42,"rawContent":"beta"}`))
	tail.Push(announce(`{"slot":"rag","contentHash":42,"rawContent":"alpha"}`))
	if tail.Held() != 2 || tail.Count() != 4 {
		t.Fatalf("held %d count %d, want 2 and 4", tail.Held(), tail.Count())
	}
}

func TestEventTailRepeatIdentity(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		a, b   string
		typ    string
		repeat bool
	}{
		{"identical", `{"slot":"s","contentHash":1,"x":[1,2]}`, `{"slot":"s","contentHash":1,"x":[1,2]}`, runs.AnnouncementType, true},
		{"own type", `{"slot":"s","contentHash":1}`, `{"slot":"s","contentHash":1}`, runs.ContextInjectedType, true},
		{"keys in another order", `{"slot":"s","contentHash":1,"a":1,"b":2}`, `{"slot":"s","contentHash":1,"b":2,"a":1}`, runs.AnnouncementType, false},
		{"whitespace is insignificant", `{"slot":"s","contentHash":1,"a":[1,2]}`, "{ \"slot\": \"s\",\n \"contentHash\" : 1, \"a\": [ 1 , 2 ] }", runs.AnnouncementType, true},
		{"whitespace in strings is content", `{"slot":"s","c":"a b"}`, `{"slot":"s","c":"ab"}`, runs.AnnouncementType, false},
		// Values, not spellings, as JSON.parse and === decide them in the seed.
		{"1 is 1.0", `{"slot":"s","contentHash":1}`, `{"slot":"s","contentHash":1.0}`, runs.AnnouncementType, true},
		{"1 is 1e0 and 10e-1", `{"slot":"s","n":[1,1]}`, `{"slot":"s","n":[1e0,10e-1]}`, runs.AnnouncementType, true},
		{"-0 is 0", `{"slot":"s","n":0}`, `{"slot":"s","n":-0.0}`, runs.AnnouncementType, true},
		{"doubles beyond 2^53", `{"n":9007199254740993}`, `{"n":9007199254740992}`, runs.AnnouncementType, true},
		{"1 is not 1.5", `{"slot":"s","n":1}`, `{"slot":"s","n":1.5}`, runs.AnnouncementType, false},
		{"1 is not \"1\"", `{"slot":"s","n":1}`, `{"slot":"s","n":"1"}`, runs.AnnouncementType, false},
		{"true is not \"true\"", `{"slot":"s","n":true}`, `{"slot":"s","n":"true"}`, runs.AnnouncementType, false},
		{"A is \\u0041", `{"slot":"s","c":"A"}`, `{"slot":"s","c":"\u0041"}`, runs.AnnouncementType, true},
		{"an escaped slot is the slot", `{"slot":"s","c":"x"}`, `{"\u0073lot":"\u0073","c":"x"}`, runs.AnnouncementType, true},
		{"escapes of every kind", `{"c":"a\"\\/\b\f\n\r\t"}`, `{"c":"a\u0022\u005c\/\u0008\u000c\u000a\u000d\u0009"}`, runs.AnnouncementType, true},
		{"é and \\u00e9", `{"c":"caf\u00e9"}`, `{"c":"café"}`, runs.AnnouncementType, true},
		{"a surrogate pair is its character", `{"c":"\ud83d\ude00"}`, `{"c":"😀"}`, runs.AnnouncementType, true},
		{"A is not a", `{"slot":"s","c":"A"}`, `{"slot":"s","c":"\u0061"}`, runs.AnnouncementType, false},
		{"no slot or hash", `{"rawContent":"x"}`, `{"rawContent":"x"}`, runs.AnnouncementType, true},
		{"absent is not null", `{"slot":null,"c":1}`, `{"c":1}`, runs.AnnouncementType, false},
		{"not an object", `"piece"`, `"piece"`, runs.AnnouncementType, true},
		{"tokens never merge", `[1 2]`, `[12]`, runs.AnnouncementType, false},
		{"other types never repeat", `{"slot":"s"}`, `{"slot":"s"}`, "llm.request", false},
		{"different content", `{"slot":"s","contentHash":1,"c":1}`, `{"slot":"s","contentHash":1,"c":2}`, runs.AnnouncementType, false},
		{"nested differs", `{"slot":"s","c":{"d":[1,{"e":true}]}}`, `{"slot":"s","c":{"d":[1,{"e":false}]}}`, runs.AnnouncementType, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tail := runs.NewEventTail(10)
			tail.Push(runs.Event{Type: tc.typ, Payload: json.RawMessage(tc.a)})
			tail.Push(runs.Event{Type: tc.typ, Payload: json.RawMessage(tc.b)})
			s := tail.Snapshot()
			if got := !s.Events[1].Slot; got != tc.repeat {
				t.Fatalf("repeat = %v, want %v", got, tc.repeat)
			}
			wantHeld := 2
			if tc.repeat {
				wantHeld = 1
				if !sameSlice(s.Events[0].Payload, s.Events[1].Payload) {
					t.Fatal("repeat does not share the held payload's bytes")
				}
			} else if string(s.Events[1].Payload) != tc.b {
				t.Fatalf("payload %s, want %s", s.Events[1].Payload, tc.b)
			}
			if tail.Held() != wantHeld || tail.Count() != 2 {
				t.Fatalf("held %d count %d, want %d and 2", tail.Held(), tail.Count(), wantHeld)
			}
		})
	}
}

func TestEventTailRepeatBoundEvictsAndReports(t *testing.T) {
	t.Parallel()
	const c = 2
	tail := runs.NewEventTail(c)
	piece := `{"slot":"s","contentHash":7,"rawContent":"x"}`
	bound := c * runs.RepeatAllowance
	for range bound + 1 {
		tail.Push(announce(piece))
	}
	if tail.Count() != bound || tail.Dropped() != 1 || tail.FirstRetainedIndex() != 1 {
		t.Fatalf("count %d dropped %d first %d, want %d and 1", tail.Count(), tail.Dropped(), tail.FirstRetainedIndex(), bound)
	}
	// The held announcement went first; its repeats hold no slot.
	if tail.Held() != 0 {
		t.Fatalf("held %d, want 0", tail.Held())
	}
	// So the next identical announcement holds a slot again, and the bound
	// keeps evicting the oldest.
	tail.Push(announce(piece))
	s := tail.Snapshot()
	if last := s.Events[len(s.Events)-1]; !last.Slot || tail.Held() != 1 {
		t.Fatalf("re-announcement after eviction: slot %v held %d", last.Slot, tail.Held())
	}
	if s.Dropped != 2 || s.Events[0].Index != 2 || len(s.Events) != bound {
		t.Fatalf("dropped %d first index %d count %d, want 2, 2, %d", s.Dropped, s.Events[0].Index, len(s.Events), bound)
	}
	for range 100 {
		tail.Push(announce(piece))
	}
	if tail.Count() != bound || tail.Dropped() != int64(bound+2+100-bound) {
		t.Fatalf("count %d dropped %d", tail.Count(), tail.Dropped())
	}
}

func TestEventTailSince(t *testing.T) {
	t.Parallel()
	tail := runs.NewEventTail(5)
	for i := range 4 {
		tail.Push(plain(i))
	}
	events, gap := tail.Since(1, 2)
	if gap || fmt.Sprint(indexes(events)) != "[1 2]" {
		t.Fatalf("since 1 limit 2: %v gap %v", indexes(events), gap)
	}
	events, gap = tail.Since(0, 0)
	if gap || fmt.Sprint(indexes(events)) != "[0 1 2 3]" {
		t.Fatalf("since 0 no limit: %v gap %v", indexes(events), gap)
	}
	for i := 4; i < 9; i++ {
		tail.Push(plain(i))
	}
	events, gap = tail.Since(2, 0)
	if !gap || fmt.Sprint(indexes(events)) != "[4 5 6 7 8]" {
		t.Fatalf("since evicted 2: %v gap %v, want [4..8] and a gap", indexes(events), gap)
	}
	events, gap = tail.Since(4, 10)
	if gap || len(events) != 5 {
		t.Fatalf("since first retained: %v gap %v", indexes(events), gap)
	}
	events, gap = tail.Since(9, 10)
	if gap || len(events) != 0 || events == nil {
		t.Fatalf("since next index: %v gap %v", events, gap)
	}
}

// Views (Snapshot, Since) never change, however long the tail keeps going:
// through eviction of held announcements, repeats and buffer compaction.
func TestEventTailViewsStayDetached(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	tail := runs.NewEventTail(40)
	type taken struct{ view, copy []runs.Event }
	var all []taken
	for i, e := range mixedStream(r, 6000) {
		tail.Push(e)
		if i%37 == 0 {
			v := tail.Snapshot().Events
			all = append(all, taken{v, slices.Clone(v)})
		}
		if i%53 == 0 {
			v, _ := tail.Since(int64(i-10), 5)
			all = append(all, taken{v, slices.Clone(v)})
		}
	}
	for k, tk := range all {
		if !slices.EqualFunc(tk.view, tk.copy, func(a, b runs.Event) bool {
			return a.Type == b.Type && a.Index == b.Index && a.Slot == b.Slot && bytes.Equal(a.Payload, b.Payload)
		}) {
			t.Fatalf("view %d changed behind the caller", k)
		}
	}
	if tail.Dropped() < 4000 {
		t.Fatalf("dropped only %d: the stream did not exercise compaction", tail.Dropped())
	}
}

// mixedStream is a deterministic stream of announcements, repeats and other
// events for the restore and property tests.
func mixedStream(r *rand.Rand, n int) []runs.Event {
	var anns []string
	events := make([]runs.Event, 0, n)
	for i := range n {
		switch k := r.IntN(10); {
		case k < 3:
			events = append(events, runs.Event{Type: "tool.call", Payload: json.RawMessage(strconv.Itoa(i))})
		case k < 4 && len(anns) > 0:
			// An identical payload under a type that cannot repeat.
			events = append(events, runs.Event{Type: "llm.request", Payload: json.RawMessage(anns[r.IntN(len(anns))])})
		case k < 8 && len(anns) > 0:
			p := anns[r.IntN(len(anns))]
			switch r.IntN(6) {
			case 0:
				var buf bytes.Buffer
				_ = json.Indent(&buf, []byte(p), "", " ")
				p = buf.String()
			case 1:
				p = respell(p)
			}
			events = append(events, runs.Event{Type: announceType(r), Payload: json.RawMessage(p)})
		default:
			p := randomPiece(r)
			anns = append(anns, p)
			events = append(events, runs.Event{Type: announceType(r), Payload: json.RawMessage(p)})
		}
	}
	return events
}

// respell writes the same value another way: numbers with a fraction,
// letters of strings as \u escapes.
func respell(p string) string {
	var b strings.Builder
	inString := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '"':
			inString = !inString
			b.WriteByte(c)
		case inString && c >= 'a' && c <= 'z':
			fmt.Fprintf(&b, `\u%04x`, c)
		case !inString && c >= '0' && c <= '9' && (i+1 == len(p) || p[i+1] < '0' || p[i+1] > '9'):
			b.WriteString(string(c) + ".0")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func announceType(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return runs.AnnouncementType
	}
	return runs.ContextInjectedType
}

// randomPiece draws from a small space so that equal pieces, equal hashes
// with different content, and reordered keys all happen often.
func randomPiece(r *rand.Rand) string {
	slot := fmt.Sprintf(`"slot":"s%d"`, r.IntN(2))
	hash := fmt.Sprintf(`"contentHash":%d`, r.IntN(3))
	content := fmt.Sprintf(`"rawContent":"c%d"`, r.IntN(3))
	parts := []string{slot, hash, content}
	switch r.IntN(6) {
	case 0:
		parts = []string{content, slot, hash}
	case 1:
		parts = []string{slot, content}
	case 2:
		parts = []string{content}
	}
	return "{" + join(parts) + "}"
}

func join(parts []string) string {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p)
	}
	return b.String()
}

func TestEventTailRestoreRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	events := mixedStream(r, 400)
	for _, c := range []float64{3, 7, 50, 1000} {
		orig := runs.NewEventTail(c)
		for _, e := range events[:200] {
			orig.Push(e)
		}
		s := orig.Snapshot()
		restored, err := runs.RestoreEventTail(c, s.Events, s.Dropped)
		if err != nil {
			t.Fatalf("cap %v: restore: %v", c, err)
		}
		assertSameTail(t, orig, restored)
		for _, e := range events[200:] {
			if a, b := orig.Push(e), restored.Push(e); a != b {
				t.Fatalf("cap %v: indexes diverged: %d vs %d", c, a, b)
			}
			assertSameTail(t, orig, restored)
		}
	}
}

func assertSameTail(t *testing.T, a, b *runs.EventTail) {
	t.Helper()
	if a.Count() != b.Count() || a.Dropped() != b.Dropped() || a.Held() != b.Held() || a.Cap() != b.Cap() {
		t.Fatalf("count %d/%d dropped %d/%d held %d/%d", a.Count(), b.Count(), a.Dropped(), b.Dropped(), a.Held(), b.Held())
	}
	sa, sb := a.Snapshot(), b.Snapshot()
	for i := range sa.Events {
		x, y := sa.Events[i], sb.Events[i]
		if x.Type != y.Type || x.Index != y.Index || x.Slot != y.Slot || !bytes.Equal(x.Payload, y.Payload) {
			t.Fatalf("event %d differs: %+v vs %+v", i, x, y)
		}
	}
}

func TestEventTailRestoreRefusesImpossibleState(t *testing.T) {
	t.Parallel()
	ann := func(i int64, slot bool) runs.Event {
		return runs.Event{Type: runs.AnnouncementType, Payload: json.RawMessage(`{"slot":"s"}`), Index: i, Slot: slot}
	}
	cases := map[string]struct {
		events  []runs.Event
		dropped int64
	}{
		"negative dropped":       {[]runs.Event{ann(0, true)}, -1},
		"gap in indexes":         {[]runs.Event{ann(3, true), {Type: "x", Index: 5, Slot: true}}, 3},
		"index not at dropped":   {[]runs.Event{ann(2, true)}, 3},
		"plain without a slot":   {[]runs.Event{{Type: "x", Index: 0}}, 0},
		"more held than the cap": {[]runs.Event{{Type: "x", Index: 0, Slot: true}, {Type: "y", Index: 1, Slot: true}, {Type: "z", Index: 2, Slot: true}}, 0},
		"more than the whole cap": {func() []runs.Event {
			e := []runs.Event{ann(0, true)}
			for i := 1; i <= 20; i++ {
				e = append(e, ann(int64(i), false))
			}
			return e
		}(), 0},
	}
	for name, tc := range cases {
		if _, err := runs.RestoreEventTail(2, tc.events, tc.dropped); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	// Two held announcements that are one value: a tail recorded while identity was
	// decided by spelling. Accepted, and a new announcement repeats the older one.
	spelled := func(i int64, n string) runs.Event {
		return runs.Event{Type: runs.AnnouncementType, Payload: json.RawMessage(`{"slot":"s","n":` + n + `}`), Index: i, Slot: true}
	}
	legacy, err := runs.RestoreEventTail(3, []runs.Event{spelled(0, "1"), spelled(1, "1.0")}, 0)
	if err != nil {
		t.Fatalf("two held spellings of one value: %v", err)
	}
	legacy.Push(spelled(0, "1e0"))
	if s := legacy.Snapshot(); s.Events[2].Slot || string(s.Events[2].Payload) != `{"slot":"s","n":1}` || legacy.Held() != 2 {
		t.Errorf("a new spelling: slot %v payload %s held %d, want a repeat of the oldest", s.Events[2].Slot, s.Events[2].Payload, legacy.Held())
	}
	// A repeat whose held original was evicted is a legal state.
	if _, err := runs.RestoreEventTail(2, []runs.Event{ann(5, false), ann(6, true)}, 5); err != nil {
		t.Errorf("repeat without its original: %v", err)
	}
}

// ── property test: the tail against a reference model ─────────────────────

// model is the tail written the obvious way: every event ever pushed, its
// slot flag, and the window start; which announcements are held is
// recomputed from scratch on every push.
type model struct {
	cap      int
	all      []runs.Event
	slot     []bool
	original []int    // for a repeat, the stream index of the held announcement it repeats
	canon    []string // payload values (valueOf)
	start    int
}

// valueOf is a payload's value as the seed's JSON.parse sees it, written the
// obvious way: encoding/json's tokens in order (object keys in the order
// sent, strings decoded, numbers as float64), -0 as 0.
func valueOf(p []byte) string {
	dec := json.NewDecoder(bytes.NewReader(p))
	var b strings.Builder
	for {
		tok, err := dec.Token()
		if err != nil {
			return b.String()
		}
		if f, ok := tok.(float64); ok && f == 0 {
			tok = 0.0
		}
		fmt.Fprintf(&b, "%T:%#v;", tok, tok)
	}
}

func (m *model) push(e runs.Event) {
	orig := -1
	c := valueOf(e.Payload)
	if e.Type == runs.AnnouncementType || e.Type == runs.ContextInjectedType {
		for i := m.start; i < len(m.all); i++ {
			h := m.all[i]
			if m.slot[i] && (h.Type == runs.AnnouncementType || h.Type == runs.ContextInjectedType) && m.canon[i] == c {
				orig = i
			}
		}
	}
	m.all = append(m.all, e)
	m.canon = append(m.canon, c)
	m.slot = append(m.slot, orig < 0)
	m.original = append(m.original, orig)
	for m.held() > m.cap || len(m.all)-m.start > m.cap*runs.RepeatAllowance {
		m.start++
	}
}

func (m *model) held() int {
	n := 0
	for i := m.start; i < len(m.all); i++ {
		if m.slot[i] {
			n++
		}
	}
	return n
}

func TestEventTailMatchesReferenceModel(t *testing.T) {
	t.Parallel()
	var repeats, heldEvicted int
	for seed := range uint64(220) {
		r := rand.New(rand.NewPCG(seed, 99))
		c := 1 + r.IntN(20)
		n := 50 + r.IntN(400)
		if seed >= 200 {
			n = 3000 // long enough for the tail to compact its buffer
		}
		tail := runs.NewEventTail(float64(c))
		m := &model{cap: c}
		for step, e := range mixedStream(r, n) {
			tail.Push(e)
			before := m.start
			m.push(e)
			if !m.slot[len(m.slot)-1] {
				repeats++
			}
			for i := before; i < m.start; i++ {
				if m.slot[i] && m.original[i] < 0 && (m.all[i].Type == runs.AnnouncementType || m.all[i].Type == runs.ContextInjectedType) {
					heldEvicted++
				}
			}
			s := tail.Snapshot()
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d cap %d step %d: %s", seed, c, step, fmt.Sprintf(format, args...))
			}
			if s.Dropped != int64(m.start) || tail.Dropped() != int64(m.start) || s.FirstRetainedIndex != int64(m.start) {
				fail("dropped %d, model %d", s.Dropped, m.start)
			}
			if len(s.Events) != len(m.all)-m.start || tail.Count() != len(s.Events) {
				fail("count %d, model %d", len(s.Events), len(m.all)-m.start)
			}
			if tail.Held() != m.held() {
				fail("held %d, model %d", tail.Held(), m.held())
			}
			for i, got := range s.Events {
				k := m.start + i
				want := m.all[k]
				if got.Index != int64(k) || got.Type != want.Type || got.Slot != m.slot[k] ||
					valueOf(got.Payload) != valueOf(want.Payload) {
					fail("event %d: got %+v slot %v, model %s %s slot %v", k, got, got.Slot, want.Type, want.Payload, m.slot[k])
				}
				if o := m.original[k]; o >= m.start && !sameSlice(got.Payload, s.Events[o-m.start].Payload) {
					fail("repeat %d does not share the bytes of held %d", k, o)
				}
			}
		}
	}
	// The streams exercise what they are meant to.
	if repeats < 1000 || heldEvicted < 1000 {
		t.Fatalf("weak streams: %d repeats, %d held announcements evicted", repeats, heldEvicted)
	}
	t.Logf("%d repeats, %d held announcements evicted", repeats, heldEvicted)
}
