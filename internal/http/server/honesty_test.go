package server_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/api"
	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/gen"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// onBothStores runs f against a server over the in-memory store and one over Postgres. The
// store is opened with the subtest's t, so that its failures (and cleanup) are the subtest's.
func onBothStores(t *testing.T, f func(t *testing.T, store func(*options))) {
	t.Helper()
	for _, tc := range []struct {
		name string
		open func(t *testing.T) app.Store
	}{
		{"memory", func(*testing.T) app.Store { return memory.New() }},
		{"postgres", func(t *testing.T) app.Store { return pgtest.Open(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := tc.open(t)
			f(t, func(o *options) { o.store = s })
		})
	}
}

// stepClock is a clock that starts at a whole second and moves by step on every reading:
// times that fall on a whole second and times with microseconds both occur.
func stepClock(start time.Time, step time.Duration) func(*options) {
	now := start
	return func(o *options) {
		o.svc = append(o.svc, app.WithClock(func() time.Time { t := now; now = now.Add(step); return t }))
	}
}

var apiTime = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$`)

// timesIn collects every string under a key ending in "At" (createdAt, receivedAt, ...).
func timesIn(v any, key string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			timesIn(c, k, out)
		}
	case []any:
		for _, c := range x {
			timesIn(c, key, out)
		}
	case string:
		if strings.HasSuffix(key, "At") {
			*out = append(*out, key+"="+x)
		}
	}
}

// TestOneTimeFormat: every time the API writes is RFC 3339, UTC, with milliseconds, on both
// stores, whether the instant falls on a whole second (which encoding/json would print with no
// fraction) or carries microseconds (which Postgres keeps and would print).
func TestOneTimeFormat(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store func(*options)) {
		e := setup(t, store, stepClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), 1234567*time.Nanosecond))
		var bodies []response
		keep := func(r response) response { bodies = append(bodies, r); return r }
		keep(e.do("POST", "/v1/memories", "", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":5}}`))
		keep(e.do("POST", "/v1/memories", "", `{"id":"why","type":"causal","strategy":{"kind":"topK","topK":2,"threshold":0.1}}`))
		keep(e.do("GET", "/v1/memories/chat", "", ""))
		keep(e.do("GET", "/v1/memories", "", ""))
		keep(e.do("POST", "/v1/conversations/c/turns", "", `{"messages":[{"role":"user","content":"Where is my order?"},{"role":"assistant","content":"It ships today."}]}`))
		keep(e.do("GET", "/v1/conversations/c/entries", "", ""))
		keep(e.do("GET", "/v1/conversations/c/entries/msg-1-0?memory=chat", "", ""))
		rc := keep(e.do("POST", "/v1/conversations/c/recall", "", `{"query":"Where is my order?","turn":2,"runId":"r"}`))
		keep(e.do("GET", "/v1/recalls/"+rc.json(t)["recallId"].(string), "", ""))
		keep(e.do("POST", "/v1/runs", "", `{"runId":"r","conversationId":"c","turn":2,"startedAt":"2026-01-02T03:04:05+02:00"}`))
		keep(e.do("POST", "/v1/runs/r/events", "", `{"events":[{"type":"step","payload":{},"meta":{"wallClockMs":1767323045000}}]}`))
		keep(e.do("POST", "/v1/runs/r/finish", "", `{"complete":true}`))
		keep(e.do("GET", "/v1/runs/r", "", ""))
		keep(e.do("GET", "/v1/runs/r/events", "", ""))
		keep(e.do("GET", "/v1/runs", "", ""))
		keep(e.do("POST", "/v1/conversations/c/turns/1/ablations", "", `{"excluded":[],"answer":"It ships today.","flipped":false}`))
		keep(e.do("GET", "/v1/conversations/c/turns/1/explain", "", ""))
		var times []string
		for _, b := range bodies {
			if b.status >= 300 {
				t.Fatalf("status %d: %s", b.status, b.body)
			}
			timesIn(b.json(t), "", &times)
		}
		if len(times) < 20 {
			t.Fatalf("only %d times seen: %v", len(times), times)
		}
		wholeSecond := false
		for _, tm := range times {
			_, v, _ := strings.Cut(tm, "=")
			if !apiTime.MatchString(v) {
				t.Errorf("%s is not RFC 3339 UTC with milliseconds", tm)
			}
			wholeSecond = wholeSecond || strings.HasSuffix(v, ".000Z")
		}
		if !wholeSecond {
			t.Errorf("no time fell on a whole second: %v", times)
		}
	})
}

// TestRunTimesTheServerVouchesFor: a run's and its events' times are the server's, in order;
// the agent's clock is kept as reported, under clientClock, and a run whose agent clock puts
// its events before the server opened it says that the clocks disagree. On both stores.
func TestRunTimesTheServerVouchesFor(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store func(*options)) {
		open := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		e := setup(t, store, stepClock(open, 250*time.Millisecond))
		ms := func(d time.Duration) int64 { return open.Add(d).UnixMilli() }
		must := func(r response) map[string]any {
			t.Helper()
			if r.status >= 300 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			return r.json(t)
		}
		// An agent whose clock runs 10 minutes late: its events precede the open.
		must(e.do("POST", "/v1/runs", "", `{"runId":"late"}`))
		must(e.do("POST", "/v1/runs/late/events", "", fmt.Sprintf(`{"events":[
			{"type":"step","payload":{},"meta":{"wallClockMs":%d}},
			{"type":"step","payload":{},"meta":{"wallClockMs":%d}}]}`, ms(-10*time.Minute), ms(-10*time.Minute+time.Second))))
		must(e.do("POST", "/v1/runs/late/events", "", `{"events":[{"type":"step","payload":{}}]}`))
		fin := must(e.do("POST", "/v1/runs/late/finish", "", `{"complete":true}`))
		rec := must(e.do("GET", "/v1/runs/late", "", ""))
		run := rec["run"].(map[string]any)
		if run["startedAt"] != "2026-05-01T12:00:00.000Z" {
			t.Errorf("server's start = %v", run["startedAt"])
		}
		order := []string{run["startedAt"].(string), run["lastEventAt"].(string), run["finishedAt"].(string)}
		if !slices.IsSorted(order) || run["endedAt"] != run["finishedAt"] || fin["finishedAt"] != run["finishedAt"] {
			t.Errorf("the server's times are not in order: %v (endedAt %v)", order, run["endedAt"])
		}
		clock := run["clientClock"].(map[string]any)
		if clock["startedAt"] != "2026-05-01T11:50:00.000Z" || clock["lastEventAt"] != "2026-05-01T11:50:01.000Z" {
			t.Errorf("the agent's clock, as reported: %v", clock)
		}
		if run["clocksDisagree"] != true {
			t.Errorf("an agent's run ending before the server opened it: clocksDisagree %v", run["clocksDisagree"])
		}
		evs := rec["events"].([]any)
		first, second, third := evs[0].(map[string]any), evs[1].(map[string]any), evs[2].(map[string]any)
		if first["receivedAt"] == nil || first["receivedAt"] != second["receivedAt"] || third["receivedAt"] != run["lastEventAt"] ||
			first["meta"].(map[string]any)["wallClockMs"] != float64(ms(-10*time.Minute)) {
			t.Errorf("events: %v", evs)
		}

		// An agent in step with the server: no disagreement.
		must(e.do("POST", "/v1/runs", "", `{"runId":"ok"}`))
		must(e.do("POST", "/v1/runs/ok/events", "", fmt.Sprintf(`{"events":[{"type":"step","payload":{},"meta":{"wallClockMs":%d}}]}`, ms(time.Hour))))
		if r := must(e.do("GET", "/v1/runs/ok", "", ""))["run"].(map[string]any); r["clocksDisagree"] != false {
			t.Errorf("agent after the open: clocksDisagree %v", r["clocksDisagree"])
		}
	})
}

// TestMaxEventsNullMeansTheDefault: `maxEvents: null` (JSON.stringify's Infinity and NaN) is
// the default cap, as a non-finite cap is in the seed; so are absent, 0, -1 and 0.5.
func TestMaxEventsNullMeansTheDefault(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i, v := range []string{`null`, `0`, `-1`, `0.5`, `1e308`} {
		r := e.do("POST", "/v1/runs", "", fmt.Sprintf(`{"runId":"r%d","maxEvents":%s}`, i, v))
		want := 10000.0
		if v == `1e308` {
			want = 1000000
		}
		if r.status != 201 || r.json(t)["maxEvents"] != want {
			t.Errorf("maxEvents %s: %d %s, want the cap %v", v, r.status, r.body, want)
		}
	}
	if r := e.do("POST", "/v1/runs", "", `{"runId":"r9","maxEvents":2.7}`); r.status != 201 || r.json(t)["maxEvents"] != 2.0 {
		t.Errorf("maxEvents 2.7: %d %s", r.status, r.body)
	}
}

// TestNothingInvented: a turn posted without evidence (or with part of it) is stored as not
// reported, and every read of its snapshot says so instead of showing zeros: the entry, the
// explanation (with its honesty flag) and a recalled causal block. On both stores.
func TestNothingInvented(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store func(*options)) {
		e := setup(t, store)
		must := func(r response) map[string]any {
			t.Helper()
			if r.status >= 300 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			return r.json(t)
		}
		must(e.do("POST", "/v1/memories", "", `{"id":"why","type":"causal","projection":"full","strategy":{"kind":"topK","topK":3,"threshold":-1}}`))
		must(e.do("POST", "/v1/conversations/c/turns", "", `{"messages":[{"role":"user","content":"What is the refund window?"},{"role":"assistant","content":"30 days."}]}`))
		must(e.do("POST", "/v1/conversations/c/turns", "", `{"messages":[{"role":"user","content":"What about damaged items?"},{"role":"assistant","content":"14 days."}],
			"evidence":{"iterations":0,"decisions":[]}}`))

		none := must(e.do("GET", "/v1/conversations/c/entries/snap-1?memory=why", "", ""))["value"].(map[string]any)
		for _, k := range []string{"iterations", "decisions", "toolCalls", "durationMs", "tokenUsage"} {
			if _, ok := none[k]; ok {
				t.Errorf("snap-1, posted without evidence, shows %s: %v", k, none[k])
			}
		}
		if fmt.Sprint(none["unreported"]) != "[iterations decisions toolCalls durationMs tokenUsage]" {
			t.Errorf("snap-1 unreported = %v", none["unreported"])
		}
		part := must(e.do("GET", "/v1/conversations/c/entries/snap-2?memory=why", "", ""))["value"].(map[string]any)
		if part["iterations"] != 0.0 || fmt.Sprint(part["decisions"]) != "[]" || fmt.Sprint(part["unreported"]) != "[toolCalls durationMs tokenUsage]" {
			t.Errorf("snap-2 (iterations 0 and no decisions, reported): %v", part)
		}
		if _, ok := part["tokenUsage"]; ok {
			t.Errorf("snap-2 shows tokenUsage it never reported: %v", part)
		}

		ex := must(e.do("GET", "/v1/conversations/c/turns/1/explain", "", ""))
		answer := ex["answer"].(map[string]any)
		for _, k := range []string{"iterations", "decisions", "toolCalls", "durationMs", "tokenUsage"} {
			if _, ok := answer[k]; ok {
				t.Errorf("explained answer of turn 1 shows %s: %v", k, answer[k])
			}
		}
		if len(answer["unreported"].([]any)) != 5 || !slices.Contains(flagsOf(ex), "evidence-not-reported") {
			t.Errorf("turn 1: unreported %v, flags %v", answer["unreported"], flagsOf(ex))
		}
		ex2 := must(e.do("GET", "/v1/conversations/c/turns/2/explain", "", ""))
		if a := ex2["answer"].(map[string]any); a["iterations"] != 0.0 || a["tokenUsage"] != nil || !slices.Contains(flagsOf(ex2), "evidence-not-reported") {
			t.Errorf("turn 2 answer %v flags %v", a, flagsOf(ex2))
		}

		rc := must(e.do("POST", "/v1/conversations/c/recall", "", `{"query":"refund window for damaged items"}`))
		prompt := rc["systemPrompt"].(string)
		if strings.Contains(prompt, "tokens: 0 in") || strings.Contains(prompt, "duration: 0ms") ||
			!strings.Contains(prompt, "Iterations: not reported; duration: not reported; tokens: not reported") ||
			!strings.Contains(prompt, "Iterations: 0; duration: not reported; tokens: not reported") {
			t.Errorf("recalled causal blocks invent figures:\n%s", prompt)
		}
	})
}

// TestReceiptsSayWhoseTheyAre: a recall receipt names its conversation, principal, turn and
// time; a turn or entry that exists only under another principal is a 404 that says
// conversations are scoped by principal, in the same words as for one that exists nowhere.
func TestReceiptsSayWhoseTheyAre(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store func(*options)) {
		e := setup(t, store)
		e.do("POST", "/v1/memories", "", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":5}}`)
		if r := e.do("POST", "/v1/conversations/c/turns?principal=ada", "", `{"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"hi"}]}`); r.status != 201 {
			t.Fatalf("turn: %d %s", r.status, r.body)
		}
		rc := e.do("POST", "/v1/conversations/c/recall?principal=ada", "", `{"query":"hello","turn":2}`).json(t)
		got := e.do("GET", "/v1/recalls/"+rc["recallId"].(string), "", "").json(t)
		for _, body := range []map[string]any{rc, got} {
			if body["conversationId"] != "c" || body["principal"] != "ada" || body["turn"] != 2.0 || !apiTime.MatchString(fmt.Sprint(body["createdAt"])) {
				t.Errorf("receipt: conversationId %v principal %v turn %v createdAt %v", body["conversationId"], body["principal"], body["turn"], body["createdAt"])
			}
		}
		noPrincipal := e.do("POST", "/v1/conversations/c/recall", "", `{"query":"hello"}`).json(t)
		if _, ok := noPrincipal["principal"]; ok || noPrincipal["conversationId"] != "c" {
			t.Errorf("receipt without a principal: %v", noPrincipal)
		}

		// Turn 1 exists under ada only. Without a principal, or under bob, it is a 404 that
		// says where it looked, worded as for turn 9, which exists under nobody.
		for _, q := range []string{"", "?principal=bob"} {
			elsewhere := e.do("GET", "/v1/conversations/c/turns/1/explain"+q, "", "")
			nowhere := e.do("GET", "/v1/conversations/c/turns/9/explain"+q, "", "")
			d1, d9 := fmt.Sprint(elsewhere.json(t)["detail"]), fmt.Sprint(nowhere.json(t)["detail"])
			if elsewhere.status != 404 || !strings.Contains(d1, "scoped by `principal`") ||
				strings.ReplaceAll(d1, `"1"`, `"9"`) != d9 {
				t.Errorf("turn under another principal (%q): %d %q; nowhere: %q", q, elsewhere.status, d1, d9)
			}
			entry := e.do("GET", "/v1/conversations/c/entries/msg-1-0?memory=chat"+strings.Replace(q, "?", "&", 1), "", "")
			if entry.status != 404 || !strings.Contains(fmt.Sprint(entry.json(t)["detail"]), "scoped by `principal`") {
				t.Errorf("entry under another principal (%q): %d %s", q, entry.status, entry.body)
			}
		}
		if r := e.do("GET", "/v1/conversations/c/turns/1/explain?principal=ada", "", ""); r.status != 200 {
			t.Errorf("turn under its own principal: %d", r.status)
		}
	})
}

// TestExplainShownIsNotOffered: recall offers what a run may not show. Explain says, per
// origin, which pieces the model was shown (and in which calls) and which were only offered;
// suspects are drawn from what was shown. A rerun of the turn (turn + exclude) made after the
// turn was posted sees only what earlier turns wrote, and is never taken for the turn's
// context. On both stores.
func TestExplainShownIsNotOffered(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store func(*options)) {
		e := setup(t, store)
		must := func(r response) map[string]any {
			t.Helper()
			if r.status >= 300 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			return r.json(t)
		}
		must(e.do("POST", "/v1/memories", "", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":10}}`))
		must(e.do("POST", "/v1/memories", "", `{"id":"why","type":"causal","strategy":{"kind":"topK","topK":3,"threshold":-1}}`))
		ev := `"evidence":{"iterations":1,"decisions":[],"toolCalls":[],"durationMs":10,"tokenUsage":{"input":1,"output":1}}`
		must(e.do("POST", "/v1/conversations/c/turns", "", `{"messages":[{"role":"user","content":"What is the refund window for damaged items?"},
			{"role":"assistant","content":"Damaged items are refunded within 30 days."}],`+ev+`}`))
		must(e.do("POST", "/v1/conversations/c/turns", "", `{"messages":[{"role":"user","content":"Do you ship to Norway?"},
			{"role":"assistant","content":"Yes, we ship to Norway."}],`+ev+`}`))
		must(e.do("POST", "/v1/runs", "", `{"runId":"run-3","conversationId":"c","turn":3}`))
		rc := must(e.do("POST", "/v1/conversations/c/recall", "", `{"query":"How long do refunds for damaged items take?","turn":3,"runId":"run-3"}`))
		if n := len(rc["injections"].([]any)); n < 5 {
			t.Fatalf("recall offered %d injections, want the 4 messages and 2 snapshots", n)
		}
		// The agent showed its model one of them, in two calls.
		must(e.do("POST", "/v1/runs/run-3/events", "", `{"events":[
			{"type":"context.injected","payload":{"slot":"system","source":"memory","sourceId":"memory:why#snap-1","iteration":1}},
			{"type":"context.injected","payload":{"slot":"system","source":"memory","sourceId":"memory:why#snap-1","iteration":2}}]}`))
		must(e.do("POST", "/v1/runs/run-3/finish", "", `{"complete":true}`))
		must(e.do("POST", "/v1/conversations/c/turns", "", `{"runId":"run-3","recallIds":["`+rc["recallId"].(string)+`"],"messages":[
			{"role":"user","content":"How long do refunds for damaged items take?"},
			{"role":"assistant","content":"We refund damaged items within 30 days."}],`+ev+`}`))

		ex := must(e.do("GET", "/v1/conversations/c/turns/3/explain", "", ""))
		exposure := map[string]string{}
		for _, o := range ex["origins"].([]any) {
			o := o.(map[string]any)
			exposure[o["injectionId"].(string)] = o["exposure"].(string)
			if o["injectionId"] == "memory:why#snap-1" {
				if calls := fmt.Sprint(o["shownIn"]); calls != "[map[iteration:1 runId:run-3] map[iteration:2 runId:run-3]]" {
					t.Errorf("snap-1 shown in %s", calls)
				}
			} else if len(o["shownIn"].([]any)) != 0 {
				t.Errorf("%s, never announced, shown in %v", o["injectionId"], o["shownIn"])
			}
		}
		if exposure["memory:why#snap-1"] != "shown" || exposure["memory:why#snap-2"] != "offered" || exposure["memory:chat#msg-1-1"] != "offered" || len(exposure) != 6 {
			t.Errorf("exposures = %v", exposure)
		}
		for _, s := range ex["suspects"].([]any) {
			if s := s.(map[string]any); s["injectionId"] != "memory:why#snap-1" || s["exposure"] != "shown" {
				t.Errorf("a suspect the model never saw: %v", s)
			}
		}
		if len(ex["suspects"].([]any)) == 0 {
			t.Error("no suspects: snap-1 was shown")
		}

		// The rerun, after turn 3 was posted: turn 3's own snapshot is not recalled.
		rerun := must(e.do("POST", "/v1/conversations/c/recall", "", `{"query":"How long do refunds for damaged items take?","turn":3,
			"memories":["why"],"exclude":["memory:why#snap-1"]}`))
		why := rerun["memories"].([]any)[0].(map[string]any)["evidence"].(map[string]any)
		reasons := map[string]any{}
		for _, c := range why["candidates"].([]any) {
			c := c.(map[string]any)
			reasons[c["id"].(string)] = c["reason"]
			if c["id"] == "snap-3" && c["admitted"] == true {
				t.Errorf("the rerun of turn 3 recalled turn 3's own answer: %v", c)
			}
		}
		if reasons["snap-3"] != "later-turn" || reasons["snap-1"] != "excluded" || reasons["snap-2"] != nil || why["beforeTurn"] != 3.0 {
			t.Errorf("rerun candidates %v, beforeTurn %v", reasons, why["beforeTurn"])
		}
		if rerun["rerun"] != true || fmt.Sprint(rerun["exclude"]) != "[memory:why#snap-1]" {
			t.Errorf("rerun receipt: rerun %v exclude %v", rerun["rerun"], rerun["exclude"])
		}
		// A baseline rerun (exclude: []) is a rerun too.
		if base := must(e.do("POST", "/v1/conversations/c/recall", "", `{"query":"refunds","turn":3,"exclude":[]}`)); base["rerun"] != true {
			t.Errorf("baseline rerun: %v", base["rerun"])
		}
		again := must(e.do("GET", "/v1/conversations/c/turns/3/explain", "", ""))
		if recalls := again["context"].(map[string]any)["recalls"].([]any); len(recalls) != 1 || recalls[0].(map[string]any)["recallId"] != rc["recallId"] {
			t.Errorf("explain takes a rerun for turn 3's context: %d receipts", len(recalls))
		}
	})
}

// TestRerunRanksPastLaterTurns: when the entries written by the rerun turn and later ones
// fill the ranking's window, the rerun asks the store for more until it has the window's
// length of earlier ones, so it admits what the original recall did.
func TestRerunRanksPastLaterTurns(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store func(*options)) {
		e := setup(t, store)
		e.do("POST", "/v1/memories", "", `{"id":"why","type":"causal","strategy":{"kind":"topK","topK":1,"rejectWindow":0,"threshold":0.05}}`)
		for _, q := range []string{"refunds for damaged items", "refunds for damaged items and shipping",
			"refunds for damaged items take how long", "how long do refunds for damaged items take"} {
			if r := e.do("POST", "/v1/conversations/c/turns", "", `{"messages":[{"role":"user","content":"`+q+`"},{"role":"assistant","content":"ok"}]}`); r.status != 201 {
				t.Fatalf("turn: %d %s", r.status, r.body)
			}
		}
		// Turns 2 to 4 resemble the query more than turn 1 does; a rerun of turn 2 sees only turn 1.
		r := e.do("POST", "/v1/conversations/c/recall", "", `{"query":"how long do refunds for damaged items take","turn":2,"exclude":[]}`).json(t)
		ev := r["memories"].([]any)[0].(map[string]any)["evidence"].(map[string]any)
		var admitted []string
		for _, c := range ev["candidates"].([]any) {
			if c := c.(map[string]any); c["admitted"] == true {
				admitted = append(admitted, c["id"].(string))
			}
		}
		if fmt.Sprint(admitted) != "[snap-1]" {
			t.Errorf("rerun of turn 2 admitted %v, want [snap-1]: %v", admitted, ev["candidates"])
		}
	})
}

// TestHybridTopKPartsUseTheDefaultEmbedder: a hybrid's topK part that names no embedder uses the
// deployment's default and agrees with one that names it; one naming another is refused.
func TestHybridTopKPartsUseTheDefaultEmbedder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do("POST", "/v1/memories", "", `{"id":"mix","type":"semantic","strategy":{"kind":"hybrid","strategies":[
		{"kind":"topK","embedder":"hash","topK":2},{"kind":"topK","topK":5}]}}`)
	if r.status != 201 {
		t.Fatalf("parts naming the default and none: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/conversations/c/turns", "", `{"messages":[{"role":"user","content":"refunds for damaged items"},{"role":"assistant","content":"30 days"}]}`); r.status != 201 {
		t.Fatalf("turn: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/v1/conversations/c/recall", "", `{"query":"refunds"}`); r.status != 200 {
		t.Errorf("recall: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/v1/memories?dryRun=true", "", `{"id":"bad","type":"semantic","embedder":"hash","strategy":{"kind":"hybrid","strategies":[
		{"kind":"topK","embedder":"other"},{"kind":"topK"}]}}`)
	if r.status != 422 || r.json(t)["path"] != "strategy.strategies" && r.json(t)["path"] != "strategy.strategies[0].embedder" {
		t.Errorf("parts of two embedders: %d %s", r.status, r.body)
	}
}

// TestIdempotencyKeyOnEveryCreate: memories, runs, documents and ablations take an
// Idempotency-Key with the replay semantics of turns: the same request replays the first answer
// (its status and body, Idempotent-Replayed: true) and creates nothing again; the key with
// another request is 422 idempotency-key-reused. On both stores.
func TestIdempotencyKeyOnEveryCreate(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store func(*options)) {
		e := setup(t, store)
		e.do("POST", "/v1/memories", "", `{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
		if r := e.do("POST", "/v1/conversations/c/turns", "", `{"messages":[{"role":"user","content":"refunds?"},{"role":"assistant","content":"30 days"}]}`); r.status != 201 {
			t.Fatalf("turn: %d %s", r.status, r.body)
		}
		e.do("POST", "/v1/memories", "", `{"id":"handbook","type":"semantic","corpus":true,"strategy":{"kind":"topK"}}`)
		for _, tc := range []struct {
			name, path, body, other string
			status                  int
			count                   func() int
		}{
			{"memory", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":5}}`,
				`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":6}}`, 201,
				func() int { return len(e.do("GET", "/v1/memories", "", "").json(t)["memories"].([]any)) }},
			{"run with an id", "/v1/runs", `{"runId":"run-1","conversationId":"c"}`, `{"runId":"run-1"}`, 201,
				func() int { return len(e.do("GET", "/v1/runs", "", "").json(t)["runs"].([]any)) }},
			{"run without an id", "/v1/runs", `{"conversationId":"c","turn":2}`, `{"conversationId":"c","turn":3}`, 201,
				func() int { return len(e.do("GET", "/v1/runs", "", "").json(t)["runs"].([]any)) }},
			{"documents", "/v1/memories/handbook/documents", `{"documents":[{"id":"returns","text":"Refunds within 14 days."}]}`,
				`{"documents":[{"id":"returns","text":"Refunds within 30 days."}]}`, 200, nil},
			{"ablation", "/v1/conversations/c/turns/1/ablations", `{"excluded":[],"answer":"30 days","flipped":false}`,
				`{"excluded":[],"answer":"14 days","flipped":true}`, 201, nil},
		} {
			key := "key-" + strings.ReplaceAll(tc.name, " ", "-")
			if tc.count == nil {
				tc.count = func() int { return 0 }
			}
			before := tc.count()
			first := e.do("POST", tc.path, "", tc.body, "Idempotency-Key", key)
			if first.status != tc.status || first.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("%s: first: %d %s (replayed %q)", tc.name, first.status, first.body, first.header.Get("Idempotent-Replayed"))
			}
			afterFirst := tc.count()
			again := e.do("POST", tc.path, "", tc.body, "Idempotency-Key", key)
			if again.status != tc.status || again.header.Get("Idempotent-Replayed") != "true" || string(again.body) != string(first.body) ||
				again.header.Get("Location") != first.header.Get("Location") {
				t.Errorf("%s: retry: %d %s (replayed %q), want the first answer replayed: %s", tc.name, again.status, again.body,
					again.header.Get("Idempotent-Replayed"), first.body)
			}
			if tc.status == 201 && tc.name != "ablation" && (afterFirst != before+1 || tc.count() != afterFirst) {
				t.Errorf("%s: %d → %d → %d created, want one", tc.name, before, afterFirst, tc.count())
			}
			other := e.do("POST", tc.path, "", tc.other, "Idempotency-Key", key)
			if other.status != 422 || other.json(t)["code"] != "idempotency-key-reused" || other.json(t)["path"] != "Idempotency-Key" {
				t.Errorf("%s: the key with another body: %d %s", tc.name, other.status, other.body)
			}
		}
		// Without a key, a retried memory create is the conflict it always was.
		if r := e.do("POST", "/v1/memories", "", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":5}}`); r.status != 409 {
			t.Errorf("a create retried without a key: %d, want 409", r.status)
		}
		// A dry run claims no key.
		if r := e.do("POST", "/v1/memories?dryRun=true", "", `{"id":"notes","type":"episodic","strategy":{"kind":"window"}}`, "Idempotency-Key", "dry"); r.status != 200 {
			t.Errorf("dry run with a key: %d %s", r.status, r.body)
		}
		if r := e.do("POST", "/v1/memories", "", `{"id":"notes","type":"episodic","strategy":{"kind":"window"}}`, "Idempotency-Key", "dry"); r.status != 201 || r.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("the dry run's key on the real create: %d %s", r.status, r.body)
		}
	})
}

// TestETagsAndPreconditions: memories, runs and receipts carry an ETag (their GETs answer
// If-None-Match with 304); a PUT with a stale If-Match is 412 and changes nothing; every 201
// names its resource in Location. On both stores.
func TestETagsAndPreconditions(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, store func(*options)) {
		e := setup(t, store)
		created := e.do("POST", "/v1/memories", "", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":5}}`)
		tag := created.header.Get("ETag")
		if created.status != 201 || tag == "" || created.header.Get("Location") != "/v1/memories/chat" {
			t.Fatalf("create: %d ETag %q Location %q", created.status, tag, created.header.Get("Location"))
		}
		if got := e.do("GET", "/v1/memories/chat", "", ""); got.status != 200 || got.header.Get("ETag") != tag {
			t.Errorf("GET: %d ETag %q, want the create's %q", got.status, got.header.Get("ETag"), tag)
		}
		if r := e.do("GET", "/v1/memories/chat", "", "", "If-None-Match", tag); r.status != 304 || len(r.body) != 0 {
			t.Errorf("GET If-None-Match: %d %s", r.status, r.body)
		}
		put := func(size int, headers ...string) response {
			return e.do("PUT", "/v1/memories/chat", "", fmt.Sprintf(`{"type":"episodic","strategy":{"kind":"window","size":%d}}`, size), headers...)
		}
		ok := put(6, "If-Match", tag)
		newTag := ok.header.Get("ETag")
		if ok.status != 200 || newTag == "" || newTag == tag {
			t.Fatalf("PUT with the current If-Match: %d ETag %q", ok.status, newTag)
		}
		for _, stale := range []string{tag, `W/` + newTag, `"nope"`} {
			r := put(7, "If-Match", stale)
			if r.status != 412 || r.json(t)["code"] != "precondition-failed" {
				t.Errorf("PUT If-Match %s: %d %s, want 412", stale, r.status, r.body)
			}
		}
		if got := e.do("GET", "/v1/memories/chat", "", "").json(t); got["version"] != 2.0 || got["strategy"].(map[string]any)["size"] != 6.0 {
			t.Errorf("after refused PUTs: %v", got)
		}
		if r := put(8, "If-Match", `"nope", `+newTag); r.status != 200 {
			t.Errorf("PUT with a list holding the current tag: %d %s", r.status, r.body)
		}
		if r := put(9, "If-Match", "*"); r.status != 200 {
			t.Errorf("PUT If-Match *: %d %s", r.status, r.body)
		}
		if r := put(10); r.status != 200 {
			t.Errorf("PUT without If-Match: %d %s", r.status, r.body)
		}
		if r := e.do("PUT", "/v1/memories/none", "", `{"type":"episodic","strategy":{"kind":"window"}}`, "If-Match", "*"); r.status != 404 {
			t.Errorf("PUT If-Match on a missing memory: %d, want 404", r.status)
		}

		// A run's ETag follows its recording.
		opened := e.do("POST", "/v1/runs", "", `{"runId":"r1"}`)
		runTag := opened.header.Get("ETag")
		if opened.status != 201 || runTag == "" || opened.header.Get("Location") != "/v1/runs/r1" {
			t.Fatalf("open: %d ETag %q Location %q", opened.status, runTag, opened.header.Get("Location"))
		}
		if r := e.do("GET", "/v1/runs/r1", "", "", "If-None-Match", runTag); r.status != 304 {
			t.Errorf("GET run If-None-Match before any event: %d", r.status)
		}
		e.do("POST", "/v1/runs/r1/events", "", `{"events":[{"type":"step","payload":{}}]}`)
		r := e.do("GET", "/v1/runs/r1", "", "", "If-None-Match", runTag)
		appended := r.header.Get("ETag")
		if r.status != 200 || appended == runTag {
			t.Errorf("GET run after an append: %d ETag %q (was %q)", r.status, appended, runTag)
		}
		fin := e.do("POST", "/v1/runs/r1/finish", "", `{"complete":true}`)
		if got := e.do("GET", "/v1/runs/r1", "", ""); fin.header.Get("ETag") == appended || got.header.Get("ETag") != fin.header.Get("ETag") {
			t.Errorf("finish ETag %q, GET %q, before %q", fin.header.Get("ETag"), got.header.Get("ETag"), appended)
		}

		// A receipt's ETag never changes.
		rc := e.do("POST", "/v1/conversations/c/recall", "", `{"query":"hello"}`)
		id := rc.json(t)["recallId"].(string)
		got := e.do("GET", "/v1/recalls/"+id, "", "")
		if rc.header.Get("ETag") == "" || got.header.Get("ETag") != rc.header.Get("ETag") {
			t.Errorf("receipt ETags: recall %q, GET %q", rc.header.Get("ETag"), got.header.Get("ETag"))
		}
		if r := e.do("GET", "/v1/recalls/"+id, "", "", "If-None-Match", got.header.Get("ETag")); r.status != 304 {
			t.Errorf("GET receipt If-None-Match: %d", r.status)
		}

		// Every 201's Location names what was created.
		for _, loc := range []string{created.header.Get("Location"), opened.header.Get("Location")} {
			if r := e.do("GET", loc, "", ""); r.status != 200 {
				t.Errorf("GET %s (a 201's Location): %d", loc, r.status)
			}
		}
	})
}

// TestProblemTypesResolve: every problem type the spec names is a page saying what it means
// and how to fix it; every error outside /v1 (an unknown docs asset, a wrong method on
// /metrics, an unknown problem page) is a problem too.
func TestProblemTypesResolve(t *testing.T) {
	t.Parallel()
	e := setup(t)
	spec, err := gen.GetSpec()
	if err != nil {
		t.Fatal(err)
	}
	codes := spec.Components.Schemas["ProblemCode"].Value.Enum
	if len(codes) < 25 {
		t.Fatalf("the spec names %d problem codes", len(codes))
	}
	for _, c := range codes {
		code := c.(string)
		r := e.do("GET", "/problems/"+code, "", "")
		body := string(r.body)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
			!strings.Contains(body, "<code>"+code+"</code>") || !strings.Contains(body, "How to fix it") {
			t.Errorf("/problems/%s: %d %s", code, r.status, r.header.Get("Content-Type"))
		}
	}
	index := e.do("GET", "/problems/", "", "")
	for _, c := range codes {
		if !strings.Contains(string(index.body), `href="/problems/`+c.(string)+`"`) {
			t.Errorf("/problems/ does not list %s", c)
		}
	}
	isProblem := func(r response, status int, what string) {
		t.Helper()
		if r.status != status || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s %s", what, r.status, r.header.Get("Content-Type"), r.body)
			return
		}
		p := r.json(t)
		if typ, _ := p["type"].(string); p["status"] != float64(status) || e.do("GET", typ, "", "").status != 200 {
			t.Errorf("%s: problem %v, its type does not resolve", what, p)
		}
	}
	isProblem(e.do("GET", "/problems/no-such-problem", "", ""), 404, "an unknown problem page")
	isProblem(e.do("GET", "/docs/no-such-asset.js", "", ""), 404, "an unknown docs asset")
	isProblem(e.do("POST", "/metrics", "", ""), 405, "POST /metrics")
	isProblem(e.do("DELETE", "/docs/", "", ""), 405, "DELETE /docs/")
	isProblem(e.do("POST", "/openapi.yaml", "", ""), 405, "POST /openapi.yaml")
	isProblem(e.do("GET", "/no/such/route", "", ""), 404, "an unknown route")
	if r := e.do("GET", "/metrics", "", ""); r.status != 200 || !strings.Contains(string(r.body), "# HELP") {
		t.Errorf("GET /metrics: %d", r.status)
	}
	if r := e.do("GET", "/docs/", "", ""); r.status != 200 || !strings.Contains(r.header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /docs/: %d %s", r.status, r.header.Get("Content-Type"))
	}
}

// TestDocumentedAdaptations: each deliberate difference from the seed's JavaScript behaves as
// the spec says, and the spec says it.
func TestDocumentedAdaptations(t *testing.T) {
	t.Parallel()
	e := setup(t, func(o *options) {
		o.caps.LLMs = []core.LLMInfo{{ID: "cheap", Model: "m"}}
	})
	spec := strings.Join(strings.Fields(string(api.YAML)), " ")
	says := func(phrase string) bool { return strings.Contains(spec, strings.Join(strings.Fields(phrase), " ")) }
	for _, tc := range []struct {
		name, body string
		status     int
		path       string
		says       string // a phrase of the spec that documents it
	}{
		{"duplicate member names", `{"id":"a","id":"b","type":"episodic","strategy":{"kind":"window"}}`, 400, "",
			"a member name that appears twice in one object is refused"},
		{"null strategy field is absent", `{"id":"n","type":"episodic","strategy":{"kind":"window","size":null}}`, 201, "",
			"A field sent as `null` counts as absent"},
		{"null elsewhere is refused", `{"id":"d","type":"episodic","description":null,"strategy":{"kind":"window"}}`, 400, "description",
			"optional member sent as `null` is refused"},
		{"9 hybrid parts", `{"id":"h","type":"episodic","strategy":{"kind":"hybrid","strategies":[` +
			strings.Repeat(`{"kind":"window"},`, 8) + `{"kind":"window"}]}}`, 422, "strategy.strategies", "at most 8 strategies"},
		{"hybrids 4 deep", `{"id":"h4","type":"episodic","strategy":{"kind":"hybrid","strategies":[{"kind":"hybrid","strategies":[{"kind":"hybrid","strategies":[{"kind":"hybrid","strategies":[{"kind":"window"}]}]}]}]}}`,
			422, "", "nests at most 3 deep"},
		{"extractor llm without a model", `{"id":"x","type":"semantic","strategy":{"kind":"extract","extractor":"llm","llm":"cheap"}}`, 422, "strategy.model",
			"`extractor: \"llm\"` needs an `llm` AND a `model`"},
	} {
		r := e.do("POST", "/v1/memories", "", tc.body)
		if r.status != tc.status || (tc.path != "" && r.json(t)["path"] != tc.path) {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
		if !says(tc.says) {
			t.Errorf("%s: the spec does not say %q", tc.name, tc.says)
		}
	}
	if got := e.do("GET", "/v1/memories/n", "", "").json(t)["strategy"].(map[string]any)["size"]; got != 20.0 {
		t.Errorf("size null: stored size %v, want the default 20", got)
	}
	for _, phrase := range []string{"a fractional `maxEvents` is rounded down", "Identity is by VALUE", "payload AS SENT"} {
		if !says(phrase) {
			t.Errorf("the spec does not say %q", phrase)
		}
	}
}
