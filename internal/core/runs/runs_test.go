package runs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestRedactEmbeddings(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"z":1, "embedding": [3, 4], "a":"embedding"}`, `{"z":1,"embedding":{"dims":2,"norm":5},"a":"embedding"}`},
		{`[{"x":{"embeddings":[[1,0],[0,2]]}}]`, `[{"x":{"embeddings":[{"dims":2,"norm":1},{"dims":2,"norm":2}]}}]`},
		{`{"embedding":"text"}`, `{"embedding":"text"}`},
		{`{"embedding":[1,"a"]}`, `{"embedding":[1,"a"]}`},
		{`{"embedding":[]}`, `{"embedding":[]}`},
		{`{"embeddings":[0.6,0.8]}`, `{"embeddings":{"dims":2,"norm":1}}`},
	} {
		if got := string(RedactEmbeddings(json.RawMessage(c.in))); got != c.want {
			t.Errorf("RedactEmbeddings(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestTruncatePayload(t *testing.T) {
	p := []byte(`{"s":"` + strings.Repeat(`"é\`, 30000) + `"}`)
	got, tr := TruncatePayload(p, MaxEventPayloadBytes)
	sum := sha256.Sum256(p)
	if len(got) > MaxEventPayloadBytes || tr.OriginalBytes != int64(len(p)) || tr.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("len %d, %+v", len(got), tr)
	}
	var s string
	if err := json.Unmarshal(got, &s); err != nil || !strings.HasPrefix(string(p), s) || len(got) < MaxEventPayloadBytes/2 {
		t.Errorf("not a prefix string of at least half the limit: %v (len %d)", err, len(got))
	}
}

func TestPrepareAndApplyAppend(t *testing.T) {
	in := []RunEventInput{
		{Type: "a", Payload: json.RawMessage(`{"embedding":[1]}`), Meta: json.RawMessage(`{"wallClockMs":1000}`)},
		{Type: "b", Meta: json.RawMessage(`{"wallClockMs":3000}`)},
		{Type: "c", Payload: json.RawMessage(`"` + strings.Repeat("x", MaxEventPayloadBytes) + `"`)},
	}
	evs := PrepareEvents(in, false, time.Time{})
	if string(evs[0].Payload) != `{"embedding":{"dims":1,"norm":1}}` || string(evs[1].Payload) != "null" || evs[2].Truncated == nil {
		t.Fatalf("prepared: %+v", evs)
	}
	r := Run{MaxEvents: 2}
	tail := NewEventTail(2)
	ApplyAppend(&r, tail, evs)
	if r.NextIndex != 3 || r.Dropped != 1 || r.TruncatedEvents != 1 || r.StartedAt.UnixMilli() != 1000 ||
		!r.KnownStart().IsZero() || r.LastWallClock.UnixMilli() != 3000 || r.EventCount() != 2 {
		t.Errorf("run after append: %+v", r)
	}
	if !r.EndedAt().IsZero() {
		t.Error("endedAt for an unfinished run")
	}
	r.Complete, r.Finished, r.FinishedAt = true, true, time.UnixMilli(5000)
	if r.EndedAt().UnixMilli() != 5000 {
		t.Error("endedAt of a complete run is not when the server finished it")
	}
}

func TestClocksDisagree(t *testing.T) {
	at := func(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
	for _, tc := range []struct {
		name string
		r    Run
		want bool
	}{
		{"no client times", Run{CreatedAt: at(1000)}, false},
		{"client after the open", Run{CreatedAt: at(1000), StartedAt: at(900), LastWallClock: at(2000)}, false},
		{"client's last event before the open", Run{CreatedAt: at(1000), StartedAt: at(100), LastWallClock: at(500)}, true},
		{"client ends before it starts", Run{CreatedAt: at(1000), StartedAt: at(3000), LastWallClock: at(2000)}, true},
		{"client starts after the finish", Run{CreatedAt: at(1000), StartedAt: at(9000), FinishedAt: at(5000)}, true},
		{"a start not stated after drops", Run{CreatedAt: at(1000), StartedAt: at(9000), LastWallClock: at(2000), Dropped: 1}, false},
	} {
		if got := tc.r.ClocksDisagree(); got != tc.want {
			t.Errorf("%s: ClocksDisagree = %v, want %v", tc.name, got, tc.want)
		}
	}
}
