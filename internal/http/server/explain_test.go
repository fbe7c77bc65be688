package server_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// TestExplainWorkedExample is the README's worked example, end to end over
// HTTP against Postgres: turn 3's wrong answer is traced to the decision
// recalled from turn 1 — answer → context piece → snap-1 → turn 1's run.
func TestExplainWorkedExample(t *testing.T) {
	t.Parallel()
	e := setup(t, withKeys, func(o *options) { o.store = pgtest.Open(t) })
	must := func(r response, want int) map[string]any {
		t.Helper()
		if r.status != want {
			t.Fatalf("status %d, want %d: %s", r.status, want, r.body)
		}
		if len(r.body) == 0 {
			return nil
		}
		return r.json(t)
	}
	post := func(path, body string) response { return e.do("POST", path, keyAcme, body) }
	must(post("/v1/memories", `{"id":"why","type":"causal","strategy":{"kind":"topK","topK":2,"threshold":0.2}}`), 201)

	announce := func(iteration int, sourceID string) string {
		return fmt.Sprintf(`{"type":"context.injected","payload":{"slot":"system","source":"memory","sourceId":%q,"contentHash":%d,"iteration":%d,"summary":"recalled %s"}}`,
			sourceID, len(sourceID), iteration, sourceID)
	}
	recallFor := func(turn int, query string) string {
		body := must(post("/v1/conversations/c/recall", fmt.Sprintf(`{"query":%q,"turn":%d}`, query, turn)), 200)
		return body["recallId"].(string)
	}

	// Turn 1, recorded in run-1: the 30-day rule is decided.
	must(post("/v1/runs", `{"runId":"run-1","conversationId":"c","turn":1}`), 201)
	recallFor(1, "What is the refund window for damaged items?")
	must(post("/v1/runs/run-1/events", `{"events":[{"type":"llm.call","payload":{"iteration":1}}]}`), 200)
	must(post("/v1/runs/run-1/finish", `{"complete":true}`), 200)
	must(post("/v1/conversations/c/turns", `{"runId":"run-1","messages":[
		{"role":"user","content":"What is the refund window for damaged items?"},
		{"role":"assistant","content":"Damaged items are refunded within 30 days."}],
		"evidence":{"iterations":1,"decisions":[{"stageId":"policy","chosen":"30-day window","rule":"old handbook"}]}}`), 201)

	// Turn 2: no run recorded at all.
	recallFor(2, "Do you ship to Norway?")
	must(post("/v1/conversations/c/turns", `{"messages":[{"role":"user","content":"Do you ship to Norway?"},{"role":"assistant","content":"Yes."}]}`), 201)

	// Turn 3, recorded in run-3: the recalled snap-1 is shown to the model
	// (announced twice in one call: a repeat), and the answer repeats it.
	must(post("/v1/runs", `{"runId":"run-3","conversationId":"c","turn":3}`), 201)
	rid := recallFor(3, "How long do refunds for damaged items take?")
	must(post("/v1/runs/run-3/events", `{"events":[`+announce(1, "memory:why#snap-1")+`,`+announce(1, "memory:why#snap-1")+`]}`), 200)
	must(post("/v1/runs/run-3/finish", `{"complete":true}`), 200)
	must(post("/v1/conversations/c/turns", `{"runId":"run-3","recallIds":["`+rid+`"],"messages":[
		{"role":"user","content":"How long do refunds for damaged items take?"},
		{"role":"assistant","content":"We refund damaged items within 30 days."}],
		"evidence":{"iterations":1,"decisions":[],"toolCalls":[],"durationMs":900,"tokenUsage":{"input":300,"output":20}}}`), 201)

	ex := must(e.do("GET", "/v1/conversations/c/turns/3/explain?depth=2", keyAcme, ""), 200)
	answer := ex["answer"].(map[string]any)
	if answer["source"] != "snapshot" || answer["runId"] != "run-3" || !strings.Contains(answer["finalContent"].(string), "30 days") {
		t.Errorf("answer = %v", answer)
	}
	runs := ex["context"].(map[string]any)["runs"].([]any)
	piece := runs[0].(map[string]any)["calls"].([]any)[0].(map[string]any)["pieces"].([]any)[0].(map[string]any)
	if piece["sourceId"] != "memory:why#snap-1" || piece["repeats"].(float64) != 1 {
		t.Errorf("context piece = %v", piece)
	}
	var origin map[string]any
	for _, o := range ex["origins"].([]any) {
		if o.(map[string]any)["injectionId"] == "memory:why#snap-1" {
			origin = o.(map[string]any)
		}
	}
	if origin == nil || origin["status"] != "present" || origin["recallId"] != rid {
		t.Fatalf("origin of memory:why#snap-1 = %v in %v", origin, ex["origins"])
	}
	entry := origin["entry"].(map[string]any)
	if entry["turn"].(float64) != 1 || entry["runId"] != "run-1" || !strings.Contains(entry["finalContent"].(string), "30 days") {
		t.Errorf("origin entry = %v", entry)
	}
	earlier := ex["earlier"].([]any)
	if len(earlier) == 0 {
		t.Fatalf("depth 2 did not walk back to turn 1")
	}
	t1 := earlier[0].(map[string]any)
	t1runs := t1["context"].(map[string]any)["runs"].([]any)
	if t1["turn"].(float64) != 1 || t1["answer"].(map[string]any)["runId"] != "run-1" || len(t1runs) != 1 || t1runs[0].(map[string]any)["runId"] != "run-1" {
		t.Errorf("earlier turn = %v", t1)
	}
	suspects := ex["suspects"].([]any)
	if len(suspects) == 0 || suspects[0].(map[string]any)["injectionId"] != "memory:why#snap-1" || suspects[0].(map[string]any)["verdict"] != "untested" {
		t.Errorf("suspects = %v", suspects)
	}
	if flags := flagsOf(ex); len(flags) != 0 {
		t.Errorf("a fully linked turn raises flags: %v", flags)
	}

	// Depth bounds.
	if shallow := must(e.do("GET", "/v1/conversations/c/turns/3/explain", keyAcme, ""), 200); len(shallow["earlier"].([]any)) != 0 {
		t.Errorf("depth 1 walked back")
	}
	if r := e.do("GET", "/v1/conversations/c/turns/3/explain?depth=6", keyAcme, ""); r.status != 400 {
		t.Errorf("depth 6: %d", r.status)
	}
	if r := e.do("GET", "/v1/conversations/c/turns/9/explain", keyAcme, ""); r.status != 404 {
		t.Errorf("unknown turn: %d", r.status)
	}

	// Turn 2 had no recording.
	if flags := flagsOf(must(e.do("GET", "/v1/conversations/c/turns/2/explain", keyAcme, ""), 200)); !slices.Contains(flags, "no-recording") {
		t.Errorf("turn 2 flags = %v", flags)
	}

	// Ablations: excluding snap-1 flipped the answer in 2 of 3 reruns, with a
	// stable baseline → confirmed.
	for _, flipped := range []bool{true, false, true} {
		must(post("/v1/conversations/c/turns/3/ablations", fmt.Sprintf(`{"excluded":["memory:why#snap-1"],"answer":"…","flipped":%t}`, flipped)), 201)
	}
	must(post("/v1/conversations/c/turns/3/ablations", `{"excluded":[],"answer":"We refund within 30 days.","flipped":false}`), 201)
	for _, s := range must(e.do("GET", "/v1/conversations/c/turns/3/explain", keyAcme, ""), 200)["suspects"].([]any) {
		s := s.(map[string]any)
		if s["injectionId"] == "memory:why#snap-1" && (s["verdict"] != "confirmed" || s["reruns"].(float64) != 3 || s["flips"].(float64) != 2) {
			t.Errorf("suspect after ablations = %v", s)
		}
	}
	// The exclusion itself: recall answers as if snap-1 did not exist.
	abl := must(post("/v1/conversations/c/recall", `{"query":"How long do refunds for damaged items take?","exclude":["memory:why#snap-1"]}`), 200)
	for _, c := range abl["memories"].([]any)[0].(map[string]any)["evidence"].(map[string]any)["candidates"].([]any) {
		c := c.(map[string]any)
		if c["id"] == "snap-1" && (c["admitted"] == true || c["reason"] != "excluded") {
			t.Errorf("excluded candidate = %v", c)
		}
	}

	// Tenant isolation: globex cannot read acme's run, nor link it.
	if r := e.do("GET", "/v1/runs/run-1", keyGlobex, ""); r.status != 404 {
		t.Errorf("globex reads acme's run: %d", r.status)
	}
	e.do("POST", "/v1/memories", keyGlobex, `{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
	if r := e.do("POST", "/v1/conversations/c/turns", keyGlobex, `{"runId":"run-1","recallIds":["`+rid+`"],"messages":[{"role":"user","content":"hi"}]}`); r.status != 201 {
		t.Fatalf("globex turn: %d %s", r.status, r.body)
	}
	gx := must(e.do("GET", "/v1/conversations/c/turns/1/explain", keyGlobex, ""), 200)
	if len(gx["context"].(map[string]any)["runs"].([]any)) != 0 || len(gx["context"].(map[string]any)["recalls"].([]any)) != 0 {
		t.Errorf("globex's explanation shows acme's run or receipt: %v", gx["context"])
	}

	// Forgetting the conversation: the receipts remain as audit records, and
	// the origin is reported as forgotten.
	must(e.do("DELETE", "/v1/conversations/c", keyAcme, ""), 200)
	after := must(e.do("GET", "/v1/conversations/c/turns/3/explain", keyAcme, ""), 200)
	flags := flagsOf(after)
	if !slices.Contains(flags, "no-answer") || !slices.Contains(flags, "entry-missing") {
		t.Errorf("flags after forget = %v", flags)
	}
	for _, o := range after["origins"].([]any) {
		if o := o.(map[string]any); o["injectionId"] == "memory:why#snap-1" && o["status"] != "forgotten" {
			t.Errorf("origin after forget = %v", o)
		}
	}
}

// TestExplainHonestyFlags produces each remaining flag from the situation
// that should produce it: a truncated and an incomplete recording, no
// recall linked, and an origin entry that expired.
func TestExplainHonestyFlags(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK","threshold":0.2},"ttlMs":1500}`)
		e.turn("c", `{"messages":[{"role":"user","content":"What is the refund window?"},{"role":"assistant","content":"30 days."}]}`)
		if r := e.do("POST", "/v1/runs", "", `{"runId":"run-2","conversationId":"c","turn":2,"maxEvents":1}`); r.status != 201 {
			t.Fatalf("open run: %d %s", r.status, r.body)
		}
		e.do("POST", "/v1/runs/run-2/events", "", `{"events":[{"type":"a","payload":1},{"type":"b","payload":2},{"type":"c","payload":3}]}`)
		_, rb := e.recall("c", `{"query":"What is the refund window for returns?","turn":2}`)
		if rb.Memories[0].Evidence.AdmittedCount != 1 {
			t.Fatalf("recall did not admit snap-1: %+v", rb.Memories[0].Evidence)
		}
		e.turn("c", `{"runId":"run-2","messages":[{"role":"user","content":"What is the refund window for returns?"},{"role":"assistant","content":"30 days."}]}`)
		time.Sleep(1600 * time.Millisecond) // snap-1's ttl passes
		ex := e.do("GET", "/v1/conversations/c/turns/2/explain", "", "")
		if ex.status != 200 {
			t.Fatalf("explain: %d %s", ex.status, ex.body)
		}
		flags := flagsOf(ex.json(t))
		for _, want := range []string{"recording-truncated", "recording-incomplete", "entry-missing"} {
			if !slices.Contains(flags, want) {
				t.Errorf("flags %v lack %s", flags, want)
			}
		}
		var body struct {
			Origins []struct{ InjectionID, Status string }
			Honesty []struct {
				Flag          string
				DroppedEvents int64
			}
		}
		_ = json.Unmarshal(ex.body, &body)
		for _, o := range body.Origins {
			if o.InjectionID == "memory:why#snap-1" && o.Status != "expired" {
				t.Errorf("origin status = %q, want expired", o.Status)
			}
		}
		for _, h := range body.Honesty {
			if h.Flag == "recording-truncated" && h.DroppedEvents != 2 {
				t.Errorf("droppedEvents = %d, want 2", h.DroppedEvents)
			}
		}
		// A turn with no recall linked.
		e.turn("d", `{"messages":[{"role":"user","content":"hello"}]}`)
		if flags := flagsOf(e.do("GET", "/v1/conversations/d/turns/1/explain", "", "").json(t)); !slices.Contains(flags, "no-recall-linked") {
			t.Errorf("flags = %v", flags)
		}
	})
}

func flagsOf(ex map[string]any) []string {
	var out []string
	for _, h := range ex["honesty"].([]any) {
		out = append(out, h.(map[string]any)["flag"].(string))
	}
	return out
}
