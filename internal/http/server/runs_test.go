package server_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/runs"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// runsEnv serves the real handler over store; gated: responses are checked against the spec
// (not for streams, which the gate would buffer).
func runsEnv(t *testing.T, store app.Store, gated bool, maxOpen int) *env {
	t.Helper()
	h, err := server.NewServer(server.Deps{
		App:          app.New(store, core.Capabilities{}),
		MaxBodyBytes: 4 << 20,
		CursorSecret: []byte("test-secret-test-secret"),
		MaxOpenRuns:  maxOpen,
	})
	if err != nil {
		t.Fatal(err)
	}
	if gated {
		h = specGate(t, h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv}
}

func eachRunStore(t *testing.T, test func(t *testing.T, s app.Store)) {
	t.Helper()
	for _, s := range []struct {
		name string
		open func(t *testing.T) app.Store
	}{
		{"memory", func(*testing.T) app.Store { return memory.New() }},
		{"postgres", func(t *testing.T) app.Store { return pgtest.Open(t) }},
	} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			test(t, s.open(t))
		})
	}
}

func (e *env) append(run string, events ...string) response {
	e.t.Helper()
	r := e.do("POST", "/v1/runs/"+run+"/events", "", `{"events":[`+strings.Join(events, ",")+`]}`)
	if r.status != 200 {
		e.t.Fatalf("append to %s: %d %s", run, r.status, r.body)
	}
	return r
}

func step(i int) string {
	return fmt.Sprintf(`{"type":"step","payload":{"n":%d},"meta":{"wallClockMs":%d}}`, i, 1796019302000+i)
}

func steps(from, n int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		out = append(out, step(i))
	}
	return out
}

func TestRunEnvelope(t *testing.T) {
	eachRunStore(t, func(t *testing.T, s app.Store) {
		e := runsEnv(t, s, true, 3)
		r := e.do("POST", "/v1/runs", "", `{"runId":"run-1","conversationId":"support-4821","principal":"user-7c3e","turn":4,"maxEvents":5000}`)
		if r.status != 201 || r.header.Get("Location") != "/v1/runs/run-1" {
			t.Fatalf("open: %d %s", r.status, r.body)
		}
		run := r.json(t)
		for _, k := range []string{"endedAt", "finishedAt", "lastEventAt", "clientClock"} {
			if _, ok := run[k]; ok {
				t.Errorf("fresh run has %q", k)
			}
		}
		if run["startedAt"] == nil || run["clocksDisagree"] != false {
			t.Errorf("fresh run: no server start, or clocks disagree: %s", r.body)
		}
		if r := e.do("POST", "/v1/runs", "", `{"runId":"run-1"}`); r.status != 409 || r.json(t)["code"] != "run-exists" {
			t.Errorf("duplicate open: %d %s", r.status, r.body)
		}
		e.append("run-1", steps(0, 3)...)
		got := e.do("GET", "/v1/runs/run-1", "", "")
		rec := got.json(t)
		if rec["format"] != "footprint.recording.v1" || len(rec["events"].([]any)) != 3 {
			t.Fatalf("recording: %s", got.body)
		}
		rr := rec["run"].(map[string]any)
		clock, _ := rr["clientClock"].(map[string]any)
		if clock["startedAt"] != "2026-11-30T06:15:02.000Z" || clock["lastEventAt"] != "2026-11-30T06:15:02.002Z" ||
			rr["endedAt"] != nil || rr["eventCount"] != 3.0 || rr["lastEventAt"] == nil {
			t.Errorf("open run: %v", rr)
		}
		// The agent's clock says 2026-11-30, before the server opened the run: flagged.
		if rr["clocksDisagree"] != true {
			t.Errorf("agent's events before the server's open: clocksDisagree = %v", rr["clocksDisagree"])
		}
		// finish: endedAt is when the server finished it; idempotent; the other value is 409.
		f := e.do("POST", "/v1/runs/run-1/finish", "", `{"complete":true}`)
		if fin := f.json(t); f.status != 200 || fin["endedAt"] == nil || fin["endedAt"] != fin["finishedAt"] {
			t.Fatalf("finish: %d %s", f.status, f.body)
		}
		if again := e.do("POST", "/v1/runs/run-1/finish", "", `{"complete":true}`); again.status != 200 || string(again.body) != string(f.body) {
			t.Errorf("finish again: %d %s", again.status, again.body)
		}
		if other := e.do("POST", "/v1/runs/run-1/finish", "", `{"complete":false}`); other.status != 409 || other.json(t)["code"] != "run-finished" {
			t.Errorf("finish other: %d %s", other.status, other.body)
		}
		if late := e.do("POST", "/v1/runs/run-1/events", "", `{"events":[`+step(9)+`]}`); late.status != 409 || late.json(t)["code"] != "run-finished" {
			t.Errorf("append after finish: %d %s", late.status, late.body)
		}

		// A run that dropped events states no start; an abandoned run no end; absent
		// optional fields are absent keys.
		e.do("POST", "/v1/runs", "", `{"runId":"run-2","maxEvents":2,"startedAt":"2026-11-30T06:00:00Z"}`)
		e.append("run-2", steps(0, 5)...)
		f = e.do("POST", "/v1/runs/run-2/finish", "", `{"complete":false}`)
		fr := f.json(t)
		for _, k := range []string{"endedAt", "conversationId", "principal", "turn"} {
			if _, ok := fr[k]; ok {
				t.Errorf("abandoned run with drops has %q: %s", k, f.body)
			}
		}
		if clock := fr["clientClock"].(map[string]any); clock["startedAt"] != nil || fr["finishedAt"] == nil {
			t.Errorf("abandoned run with drops: %s", f.body)
		}
		if fr["droppedEvents"] != 3.0 || fr["firstRetainedEventIndex"] != 3.0 || fr["eventCount"] != 2.0 {
			t.Errorf("counters: %s", f.body)
		}
		// The caller's startedAt wins over the first event's.
		e.do("POST", "/v1/runs", "", `{"runId":"run-3","startedAt":"2026-11-30T06:00:00Z"}`)
		e.append("run-3", steps(0, 1)...)
		if g := e.do("GET", "/v1/runs/run-3", "", "").json(t)["run"].(map[string]any); g["clientClock"].(map[string]any)["startedAt"] != "2026-11-30T06:00:00.000Z" {
			t.Errorf("caller's startedAt: %v", g["clientClock"])
		}

		// Limits: 3 open runs at most (run-3 and two more), the 4th is 429.
		e.do("POST", "/v1/runs", "", `{}`)
		e.do("POST", "/v1/runs", "", `{}`)
		if r := e.do("POST", "/v1/runs", "", `{}`); r.status != 429 || r.json(t)["code"] != "rate-limited" {
			t.Errorf("4th open run: %d %s", r.status, r.body)
		}
		if r := e.do("POST", "/v1/runs/run-3/events", "", `{"events":[{"type":"9bad","payload":1}]}`); r.status != 400 {
			t.Errorf("bad type: %d %s", r.status, r.body)
		}
		if r := e.do("GET", "/v1/runs/absent", "", ""); r.status != 404 {
			t.Errorf("absent run: %d", r.status)
		}
		// Listing, newest first, with a cursor.
		l := e.do("GET", "/v1/runs?limit=2", "", "").json(t)
		if len(l["runs"].([]any)) != 2 || l["nextCursor"] == nil {
			t.Errorf("list page: %v", l)
		}
		l = e.do("GET", "/v1/runs?conversationId=support-4821&principal=user-7c3e", "", "").json(t)
		if runs := l["runs"].([]any); len(runs) != 1 || runs[0].(map[string]any)["runId"] != "run-1" {
			t.Errorf("list by conversation: %v", l)
		}
	})
}

func TestRunEmbeddingsAndTruncation(t *testing.T) {
	eachRunStore(t, func(t *testing.T, s app.Store) {
		e := runsEnv(t, s, true, 0)
		ev := `{"type":"retrieval.query","payload":{"q":"x","embedding":[3,4],"deep":{"embeddings":[[1,0],[0,2]],"k":1}}}`
		e.do("POST", "/v1/runs", "", `{"runId":"redact"}`)
		e.append("redact", ev)
		e.do("POST", "/v1/runs", "", `{"runId":"keep","recordEmbeddings":true}`)
		e.append("keep", ev)
		payload := func(run string) string {
			var rec struct {
				Events []struct{ Payload json.RawMessage }
			}
			_ = json.Unmarshal(e.do("GET", "/v1/runs/"+run, "", "").body, &rec)
			return string(rec.Events[0].Payload)
		}
		if got, want := payload("redact"), `{"q":"x","embedding":{"dims":2,"norm":5},"deep":{"embeddings":[{"dims":2,"norm":1},{"dims":2,"norm":2}],"k":1}}`; got != want {
			t.Errorf("redacted payload = %s, want %s", got, want)
		}
		if got, want := payload("keep"), `{"q":"x","embedding":[3,4],"deep":{"embeddings":[[1,0],[0,2]],"k":1}}`; got != want {
			t.Errorf("recorded payload = %s, want %s", got, want)
		}

		big := `{"rows":"` + strings.Repeat("é<", 40000) + `"}`
		e.do("POST", "/v1/runs", "", `{"runId":"big"}`)
		res := e.append("big", `{"type":"tool.result","payload":`+big+`}`, step(1)).json(t)
		if res["truncatedEvents"] != 1.0 || res["count"] != 2.0 {
			t.Errorf("append result: %v", res)
		}
		var rec struct {
			Run    struct{ TruncatedEvents int }
			Events []struct {
				Payload   json.RawMessage
				Truncated *struct {
					OriginalBytes int
					Sha256        string
				}
			}
		}
		if err := json.Unmarshal(e.do("GET", "/v1/runs/big", "", "").body, &rec); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(big))
		tr := rec.Events[0].Truncated
		if tr == nil || tr.OriginalBytes != len(big) || tr.Sha256 != hex.EncodeToString(sum[:]) || rec.Run.TruncatedEvents != 1 || rec.Events[1].Truncated != nil {
			t.Fatalf("truncation: %+v", tr)
		}
		var prefix string
		if err := json.Unmarshal(rec.Events[0].Payload, &prefix); err != nil || !strings.HasPrefix(big, prefix) || len(prefix) > runs.MaxEventPayloadBytes || len(prefix) < 60000 {
			t.Errorf("truncated payload is not a ≤64 KiB string prefix (%d bytes): %v", len(rec.Events[0].Payload), err)
		}
	})
}

func TestRunEventPagesAndGaps(t *testing.T) {
	eachRunStore(t, func(t *testing.T, s app.Store) {
		e := runsEnv(t, s, true, 0)
		e.do("POST", "/v1/runs", "", `{"runId":"pg","maxEvents":3}`)
		e.append("pg", steps(0, 10)...)
		page := func(q string) (idx []int, gap map[string]any, next any) {
			m := e.do("GET", "/v1/runs/pg/events"+q, "", "").json(t)
			for _, ev := range m["events"].([]any) {
				idx = append(idx, int(ev.(map[string]any)["index"].(float64)))
			}
			g, _ := m["gap"].(map[string]any)
			return idx, g, m["nextAfter"]
		}
		if idx, gap, next := page(""); !slices.Equal(idx, []int{7, 8, 9}) || gap != nil || next != nil {
			t.Errorf("default page: %v %v %v", idx, gap, next)
		}
		if idx, gap, _ := page("?after=2"); !slices.Equal(idx, []int{7, 8, 9}) || gap["from"] != 3.0 || gap["to"] != 6.0 {
			t.Errorf("after=2: %v gap %v", idx, gap)
		}
		if idx, gap, next := page("?after=6&limit=2"); !slices.Equal(idx, []int{7, 8}) || gap != nil || next != 8.0 {
			t.Errorf("after=6 limit=2: %v %v %v", idx, gap, next)
		}
	})
}

// sseEvent is one Server-Sent Event.
type sseEvent struct{ id, event, data string }

// follow opens an event stream and sends its events on a channel until it ends.
func follow(t *testing.T, ctx context.Context, url, lastID string) <-chan sseEvent {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 100)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.event != "" {
					out <- cur
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.data = line[6:]
			}
		}
	}()
	return out
}

func receive(t *testing.T, ch <-chan sseEvent, n int) []sseEvent {
	t.Helper()
	var got []sseEvent
	timeout := time.After(10 * time.Second)
	for len(got) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended after %d events, want %d: %v", len(got), n, got)
			}
			got = append(got, ev)
		case <-timeout:
			t.Fatalf("timed out after %d events, want %d: %v", len(got), n, got)
		}
	}
	return got
}

func ids(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.id)
	}
	return out
}

func TestRunEventStream(t *testing.T) {
	eachRunStore(t, func(t *testing.T, s app.Store) {
		e := runsEnv(t, s, false, 0)
		url := e.srv.URL + "/v1/runs/live/events"
		e.do("POST", "/v1/runs", "", `{"runId":"live","maxEvents":4}`)
		e.append("live", steps(0, 2)...)

		ctx, cancel := context.WithCancel(t.Context())
		ch := follow(t, ctx, url, "")
		got := receive(t, ch, 2)
		e.append("live", steps(2, 2)...) // followed live
		got = append(got, receive(t, ch, 2)...)
		if !slices.Equal(ids(got), []string{"0", "1", "2", "3"}) || got[0].event != "step" ||
			!strings.HasPrefix(got[3].data, `{"index":3,"meta":{"wallClockMs":1796019302003},"payload":{"n":3},"receivedAt":"`) ||
			!strings.HasSuffix(got[3].data, `Z","type":"step"}`) {
			t.Fatalf("live events: %+v", got)
		}
		cancel() // the client goes away
		for range ch {
		}

		e.append("live", steps(4, 3)...) // missed while disconnected
		ctx, cancel = context.WithCancel(t.Context())
		defer cancel()
		ch = follow(t, ctx, url, "3")
		got = receive(t, ch, 3)
		if !slices.Equal(ids(got), []string{"4", "5", "6"}) {
			t.Fatalf("resumed events: %v", ids(got))
		}
		select { // exactly the missed events: nothing more arrives
		case ev := <-ch:
			t.Fatalf("extra event after resume: %+v", ev)
		case <-time.After(400 * time.Millisecond):
		}
		e.do("POST", "/v1/runs/live/finish", "", `{"complete":true}`)
		select { // the stream ends with the run
		case ev, ok := <-ch:
			if ok {
				t.Fatalf("event after finish: %+v", ev)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("stream did not end after finish")
		}

		// A resume point that was evicted is reported as a gap, never skipped.
		ch = follow(t, t.Context(), url, "0")
		got = receive(t, ch, 5)
		if got[0].event != "gap" || got[0].id != "" || got[0].data != `{"from":1,"to":2}` ||
			!slices.Equal(ids(got[1:]), []string{"3", "4", "5", "6"}) {
			t.Errorf("gap resume: %+v", got)
		}
		for range ch {
		}
	})
}

// TestRunAppendFormats: a batch may be JSON or NDJSON, with the same events and the same
// field-naming problems either way; nothing is appended from a refused batch.
func TestRunAppendFormats(t *testing.T) {
	eachRunStore(t, func(t *testing.T, s app.Store) {
		e := runsEnv(t, s, true, 0)
		e.do("POST", "/v1/runs", "", `{"runId":"fmt"}`)
		nd := func(body string) response {
			return e.do("POST", "/v1/runs/fmt/events", "", body, "Content-Type", "application/x-ndjson")
		}
		e.append("fmt", step(0))
		if r := nd(step(1) + "\n\n" + step(2) + "\n"); r.status != 200 || r.json(t)["count"] != 3.0 {
			t.Fatalf("ndjson append: %d %s", r.status, r.body)
		}
		page := e.do("GET", "/v1/runs/fmt/events", "", "").json(t)
		evs := page["events"].([]any)
		if len(evs) != 3 || evs[2].(map[string]any)["payload"].(map[string]any)["n"] != 2.0 {
			t.Fatalf("events: %v", page)
		}
		for _, tc := range []struct {
			name, ct, body, code, path string
			status                     int
		}{
			{"json bad type", "application/json", `{"events":[` + step(3) + `,{"type":"3d","payload":1}]}`, "invalid-request", "events[1].type", 400},
			{"json unknown field", "application/json", `{"events":[{"type":"a","payload":1,"extra":1}]}`, "unknown-field", "events[0].extra", 400},
			{"json missing payload", "application/json", `{"events":[{"type":"a"}]}`, "invalid-request", "events[0].payload", 400},
			{"json not json", "application/json", `{"events":[{"type":"a","payload":}]}`, "invalid-json", "", 400},
			{"ndjson bad line", "application/x-ndjson", step(3) + "\n" + `{"type":"a","payload":1,"meta":3}`, "invalid-request", "events[1].meta", 400},
			{"ndjson two per line", "application/x-ndjson", step(3) + " " + step(4), "invalid-json", "events[0]", 400},
			{"plain text", "text/plain", step(3), "unsupported-media-type", "", 415},
		} {
			r := e.do("POST", "/v1/runs/fmt/events", "", tc.body, "Content-Type", tc.ct)
			p := r.json(t)
			if r.status != tc.status || p["code"] != tc.code || (tc.path != "" && p["path"] != tc.path) {
				t.Errorf("%s: %d %s", tc.name, r.status, r.body)
			}
		}
		if r := e.do("POST", "/v1/runs", "", `{"runId":"other"}`, "Content-Type", "application/x-ndjson"); r.status != 415 {
			t.Errorf("ndjson elsewhere: %d %s", r.status, r.body)
		}
		if r := e.do("POST", "/v1/runs/"+strings.Repeat("x", 300)+"/events", "", `{"events":[]}`); r.status != 400 || r.json(t)["path"] != "runId" {
			t.Errorf("run id still checked: %d %s", r.status, r.body)
		}
		if n := e.do("GET", "/v1/runs/fmt", "", "").json(t)["run"].(map[string]any)["eventCount"]; n != 3.0 {
			t.Errorf("a refused batch appended something: eventCount %v", n)
		}
	})
}
