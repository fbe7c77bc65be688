package runs_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/footprint/footprint/internal/core/runs"
)

// Targets (issue 8): ≥ 5M events/s plain, ≥ 1M events/s announcement-heavy
// (repeat check included), a Snapshot of 1,024 events in ≤ 5 µs. Each
// benchmark reports its events/s and its ratio to the target
// (x-target ≥ 1 meets it).
//
//	go test -run '^$' -bench EventTail -benchmem ./internal/core/

func reportRate(b *testing.B, target float64) {
	b.Helper()
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "events/s")
	b.ReportMetric(rate/target, "x-target")
}

// BenchmarkEventTailPushPlain: plain events into the default cap, long
// enough that eviction and compaction are part of the steady state.
func BenchmarkEventTailPushPlain(b *testing.B) {
	events := make([]runs.Event, 4096)
	for i := range events {
		events[i] = runs.Event{Type: "llm.token", Payload: json.RawMessage(fmt.Sprintf(`{"token":"t%d","i":%d}`, i, i)),
			Meta: json.RawMessage(`{"wallClockMs":1700000000000}`)}
	}
	tail := runs.NewEventTail(runs.DefaultMaxEvents)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		tail.Push(events[i&4095])
	}
	reportRate(b, 5e6)
}

// BenchmarkEventTailPushAnnouncements: the synthetic agent run (per
// iteration 14 plain events and 100 re-announced context pieces, ~88% of
// them repeats), replayed into the default cap so that eviction of held
// announcements happens too.
func BenchmarkEventTailPushAnnouncements(b *testing.B) {
	events := syntheticRun(100, 100)
	tail := runs.NewEventTail(runs.DefaultMaxEvents)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		tail.Push(events[i%len(events)])
	}
	reportRate(b, 1e6)
}

// BenchmarkEventTailPushDistinctAnnouncements: every announcement new (the
// repeat lookup always misses and every event holds a slot): the worst case.
func BenchmarkEventTailPushDistinctAnnouncements(b *testing.B) {
	events := make([]runs.Event, 1<<16)
	for i := range events {
		events[i] = runs.Event{Type: runs.AnnouncementType, Payload: json.RawMessage(fmt.Sprintf(
			`{"slot":"s%d","contentHash":%d,"source":"rag","rawContent":"piece %d of the context"}`, i%4, i, i))}
	}
	tail := runs.NewEventTail(runs.DefaultMaxEvents)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		tail.Push(events[i&(1<<16-1)])
	}
	reportRate(b, 1e6)
}

// BenchmarkEventTailSnapshot1024: a detached copy of 1,024 retained events.
func BenchmarkEventTailSnapshot1024(b *testing.B) {
	tail := runs.NewEventTail(1024)
	for i := range 5000 {
		tail.Push(runs.Event{Type: "llm.token", Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
	}
	if tail.Count() != 1024 {
		b.Fatalf("count %d", tail.Count())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s := tail.Snapshot()
		if len(s.Events) != 1024 {
			b.Fatal(len(s.Events))
		}
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(5000/ns, "x-target")
}
