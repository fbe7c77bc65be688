package httpapi_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// eachStore runs a test against the in-memory store and real Postgres.
func eachStore(t *testing.T, test func(t *testing.T, e *env)) {
	t.Helper()
	stores := []struct {
		name string
		open func(t *testing.T) core.Store
	}{
		{"memory", func(*testing.T) core.Store { return memory.New() }},
		{"postgres", func(t *testing.T) core.Store { return pgtest.Open(t) }},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, func(o *options) { o.store = s.open(t) })
			test(t, e)
		})
	}
}

func (e *env) define(body string) {
	e.t.Helper()
	if r := e.do("POST", "/v1/memories", "", body); r.status != 201 {
		e.t.Fatalf("define %s: %d %s", body, r.status, r.body)
	}
}

type turnResult struct {
	Turn    int `json:"turn"`
	Written []struct {
		MemoryID string   `json:"memoryId"`
		IDs      []string `json:"ids"`
	} `json:"written"`
	Skipped []struct {
		MemoryID string `json:"memoryId"`
		Reason   string `json:"reason"`
	} `json:"skipped"`
	Noop *struct {
		Reason string `json:"reason"`
	} `json:"noop"`
}

func (e *env) turn(conv, body string, headers ...string) (response, turnResult) {
	e.t.Helper()
	r := e.do("POST", "/v1/conversations/"+conv+"/turns", "", body, headers...)
	var tr turnResult
	if r.status < 300 {
		if err := json.Unmarshal(r.body, &tr); err != nil {
			e.t.Fatalf("turn result: %v %s", err, r.body)
		}
	}
	return r, tr
}

const qa = `"messages":[{"role":"user","content":"My name is Ada and I live in Paris. What is the refund policy?"},{"role":"assistant","content":"Refunds are issued within 14 days."}]`

func TestTurnWritesEveryMemoryOnOneTurn(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":20}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"},"ttlMs":86400000,"tier":"hot"}`)
		e.define(`{"id":"facts","type":"semantic","strategy":{"kind":"extract"}}`)
		e.define(`{"id":"search","type":"semantic","strategy":{"kind":"topK"}}`)
		e.define(`{"id":"story","type":"narrative","strategy":{"kind":"window"}}`)
		e.define(`{"id":"ro","type":"episodic","strategy":{"kind":"window"},"readOnly":true}`)
		e.define(`{"id":"docs","type":"semantic","strategy":{"kind":"topK"},"corpus":true}`)
		r, tr := e.turn("c1", `{"runId":"run-1",`+qa+`,"evidence":{"iterations":2,"decisions":[{"stageId":"route","chosen":"refunds","rule":"topic"}],"toolCalls":[{"name":"lookup","args":{"q":"refund"},"resultPreview":"14 days","errored":false}],"durationMs":812,"tokenUsage":{"input":120,"output":30}}}`)
		if r.status != 201 || tr.Turn != 1 {
			t.Fatalf("turn: %d %s", r.status, r.body)
		}
		written := map[string][]string{}
		for _, w := range tr.Written {
			written[w.MemoryID] = w.IDs
		}
		want := map[string][]string{
			"chat":   {"msg-1-0", "msg-1-1"},
			"why":    {"snap-1"},
			"facts":  {"fact:name", "fact:location"},
			"search": {"msg-1-0", "msg-1-1"},
			"story":  {"beat-1-0", "beat-1-1"},
		}
		for mem, ids := range want {
			if !slices.Equal(written[mem], ids) {
				t.Errorf("%s wrote %v, want %v", mem, written[mem], ids)
			}
		}
		skipped := map[string]string{}
		for _, s := range tr.Skipped {
			skipped[s.MemoryID] = s.Reason
		}
		if skipped["ro"] != "read-only" || skipped["docs"] != "corpus" {
			t.Errorf("skipped = %v", skipped)
		}
		snap := e.do("GET", "/v1/conversations/c1/entries/snap-1?memory=why", "", "").json(t)
		v := snap["value"].(map[string]any)
		if v["query"] != "My name is Ada and I live in Paris. What is the refund policy?" || v["finalContent"] != "Refunds are issued within 14 days." || v["iterations"].(float64) != 2 {
			t.Errorf("snapshot value = %v", v)
		}
		if snap["embeddingDims"].(float64) != 384 || snap["embeddingModel"] != "footprint-hash-v1" || snap["tier"] != "hot" || snap["expiresAt"] == nil {
			t.Errorf("snapshot entry = %v", snap)
		}
		if src := snap["source"].(map[string]any); src["turn"].(float64) != 1 || src["runId"] != "run-1" {
			t.Errorf("source = %v", src)
		}
		for key, want := range map[string]string{"name": "Ada", "location": "Paris"} {
			fact := e.do("GET", "/v1/conversations/c1/entries/fact:"+key+"?memory=facts", "", "").json(t)
			if got := fact["value"].(map[string]any)["value"]; got != want {
				t.Errorf("fact:%s = %v, want %s", key, got, want)
			}
		}
		msg := e.do("GET", "/v1/conversations/c1/entries/msg-1-0?memory=search&include=embedding", "", "").json(t)
		if len(msg["embedding"].([]any)) != 384 {
			t.Errorf("message embedding missing")
		}
		if _, ok := e.do("GET", "/v1/conversations/c1/entries/msg-1-0?memory=search", "", "").json(t)["embedding"]; ok {
			t.Errorf("embedding returned without include=embedding")
		}
	})
}

func TestTurnNumbering(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
		turnOf := func(conv, host string) int {
			t.Helper()
			body := `{` + qa + `}`
			if host != "" {
				body = `{"turnNumber":` + host + `,` + qa + `}`
			}
			r, tr := e.turn(conv, body)
			if r.status != 201 {
				t.Fatalf("turn %s: %d %s", host, r.status, r.body)
			}
			return tr.Turn
		}
		// Empty turns consume nothing and say why.
		r, tr := e.turn("empty", `{"messages":[]}`)
		if r.status != 200 || tr.Noop == nil || tr.Noop.Reason != "no-messages" || tr.Turn != 0 {
			t.Errorf("empty turn: %d %s", r.status, r.body)
		}
		r, tr = e.turn("empty", `{"messages":[{"role":"assistant","content":"hi"}]}`)
		if r.status != 200 || tr.Noop == nil || tr.Noop.Reason != "no-user-message" {
			t.Errorf("no user message: %d %s", r.status, r.body)
		}
		if got := turnOf("empty", ""); got != 1 {
			t.Errorf("first real turn after empty ones = %d, want 1", got)
		}
		if a, b := turnOf("gaps", "5"), turnOf("gaps", "7"); a != 5 || b != 7 {
			t.Errorf("host 5, 7 → %d, %d", a, b)
		}
		if a, b, c := turnOf("stale", "1"), turnOf("stale", "3"), turnOf("stale", "1"); a != 1 || b != 3 || c != 4 {
			t.Errorf("host 1, 3, 1 → %d, %d, %d", a, b, c)
		}
		if a, b := turnOf("odd", ""), turnOf("odd", "-3.5"); a != 1 || b != 2 {
			t.Errorf("missing then negative → %d, %d", a, b)
		}
		// The highest turn there is (turns are 32-bit) can be written once; a turn after it is
		// refused, naming the field, never a 500 and never a wrapped-around number.
		if a, b := turnOf("last", "1e30"), turnOf("last", ""); a != math.MaxInt32-1 || b != math.MaxInt32 {
			t.Errorf("huge host turn, then one more → %d, %d", a, b)
		}
		if r, _ := e.turn("last", `{`+qa+`}`); r.status != 422 || r.json(t)["code"] != "invalid-field" || r.json(t)["path"] != "turnNumber" {
			t.Errorf("a turn past the highest: %d %s", r.status, r.body)
		}
		// Newest first by turn, not lexically (msg-10 sorts before msg-2 as text).
		for _, host := range []string{"2", "9", "10"} {
			turnOf("order", host)
		}
		page := e.do("GET", "/v1/conversations/order/entries?memory=why", "", "").json(t)
		var ids []string
		for _, en := range page["entries"].([]any) {
			ids = append(ids, en.(map[string]any)["id"].(string))
		}
		if strings.Join(ids, ",") != "snap-10,snap-9,snap-2" {
			t.Errorf("entries order = %v", ids)
		}
	})
}

func TestTurnNamedMemoriesAndBadInput(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
		r, tr := e.turn("c", `{"memories":["chat"],`+qa+`}`)
		if r.status != 201 || len(tr.Written) != 1 || tr.Skipped[0].Reason != "not-named" {
			t.Errorf("named: %d %s", r.status, r.body)
		}
		if r, _ := e.turn("c", `{"memories":["nope"],`+qa+`}`); r.status != 404 {
			t.Errorf("unknown named memory: %d %s", r.status, r.body)
		}
		bad := []struct {
			name, body string
			status     int
			code       string
		}{
			{"NUL", `{"messages":[{"role":"user","content":"a\u0000b"}]}`, 422, "invalid-field"},
			{"invalid UTF-8", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\xffb\"}]}", 400, "invalid-json"},
			{"bad role", `{"messages":[{"role":"robot","content":"x"}]}`, 400, "invalid-request"},
			{"no messages field", `{}`, 400, "invalid-request"},
			{"wrong type", `{"messages":"hello"}`, 400, "invalid-request"},
			{"zero vector", `{` + qa + `,"embeddings":{"embeddingModel":"m","query":[0,0,0]}}`, 422, "invalid-vector"},
			{"causal without client query", `{` + qa + `,"embeddings":{"embeddingModel":"m","messages":[[1,0],[0,1]]}}`, 422, "invalid-vector"},
			{"ragged vectors", `{` + qa + `,"embeddings":{"embeddingModel":"m","query":[1,0],"messages":[[1,0,0]]}}`, 422, "invalid-vector"},
		}
		for _, b := range bad {
			r, _ := e.turn("bad", b.body)
			if r.status != b.status || r.json(t)["code"] != b.code {
				t.Errorf("%s: %d %s, want %d %s", b.name, r.status, r.body, b.status, b.code)
			}
		}
		if n := len(e.do("GET", "/v1/conversations/bad/entries", "", "").json(t)["entries"].([]any)); n != 0 {
			t.Errorf("bad input wrote %d entries", n)
		}
		// Invalid UTF-8 is refused, not replaced by U+FFFD, and the problem names where it is.
		if r, _ := e.turn("bad", "{\"messages\":[{\"role\":\"user\",\"content\":\"ok\"},{\"role\":\"assistant\",\"content\":\"\xc3(\"}]}"); r.json(t)["path"] != "messages[1].content" {
			t.Errorf("invalid UTF-8: %d %s, want the path messages[1].content", r.status, r.body)
		}
		// Client vectors set the memory's fingerprint; the server's 384-d
		// embedder is then a mismatch in this conversation.
		if r, _ := e.turn("fp", `{`+qa+`,"embeddings":{"embeddingModel":"client-3d","query":[1,2,3]}}`); r.status != 201 {
			t.Fatalf("client vectors: %d %s", r.status, r.body)
		}
		if r, _ := e.turn("fp", `{`+qa+`}`); r.status != 422 || r.json(t)["code"] != "embedder-mismatch" {
			t.Errorf("mismatch: %d %s", r.status, r.body)
		}
		if r, _ := e.turn("fp", `{`+qa+`,"embeddings":{"embeddingModel":"client-3d","query":[3,2,1]}}`); r.status != 201 {
			t.Errorf("same client model again: %d %s", r.status, r.body)
		}
	})
}

func TestTurnIdempotency(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
		body := `{` + qa + `}`
		first, _ := e.turn("c", body, "Idempotency-Key", "k-1")
		again, _ := e.turn("c", body, "Idempotency-Key", "k-1")
		if first.status != 201 || again.status != 201 || string(first.body) != string(again.body) || again.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("replay: %d %s / %d %s %v", first.status, first.body, again.status, again.body, again.header)
		}
		if r, _ := e.turn("c", `{"turnNumber":9,`+qa+`}`, "Idempotency-Key", "k-1"); r.status != 422 || r.json(t)["code"] != "idempotency-key-reused" {
			t.Errorf("reused key: %d %s", r.status, r.body)
		}
		// 50 concurrent posts with one key: one write, 50 identical bodies.
		var wg sync.WaitGroup
		bodies := make([]string, 50)
		for i := range bodies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, _ := e.turn("burst", body, "Idempotency-Key", "burst-key")
				bodies[i] = fmt.Sprintf("%d %s", r.status, r.body)
			}()
		}
		wg.Wait()
		for _, b := range bodies {
			if b != bodies[0] {
				t.Fatalf("bodies differ:\n%s\n%s", bodies[0], b)
			}
		}
		if n := len(e.do("GET", "/v1/conversations/burst/entries", "", "").json(t)["entries"].([]any)); n != 1 {
			t.Errorf("burst wrote %d entries, want 1", n)
		}
	})
}

func TestEntriesReadAndForget(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		for range 3 {
			e.turn("c", `{`+qa+`}`)
		}
		e.turn("other", `{`+qa+`}`)
		e.turn("c", `{`+qa+`}`, "X-Ignored", "1")
		// Paging through 8 entries 3 at a time, newest first.
		var ids []string
		path := "/v1/conversations/c/entries?limit=3"
		for range 5 {
			page := e.do("GET", path, "", "").json(t)
			for _, en := range page["entries"].([]any) {
				ids = append(ids, en.(map[string]any)["id"].(string))
			}
			next, ok := page["nextCursor"].(string)
			if !ok {
				break
			}
			path = "/v1/conversations/c/entries?limit=3&cursor=" + next
		}
		if strings.Join(ids, ",") != "msg-4-1,msg-4-0,msg-3-1,msg-3-0,msg-2-1,msg-2-0,msg-1-1,msg-1-0" {
			t.Errorf("paged = %v", ids)
		}
		if r := e.do("GET", "/v1/conversations/c/entries?cursor="+strings.TrimPrefix(path, "/v1/conversations/c/entries?limit=3&cursor=")+"&kind=snap", "", ""); r.status != 400 && !strings.HasSuffix(path, "limit=3") {
			t.Errorf("a cursor reused with other filters: %d", r.status)
		}
		first := e.do("GET", "/v1/conversations/c/entries/msg-1-0?memory=chat", "", "").json(t)
		second := e.do("GET", "/v1/conversations/c/entries/msg-1-0?memory=chat", "", "").json(t)
		if first["accessCount"].(float64) != 1 || second["accessCount"].(float64) != 2 {
			t.Errorf("access counts %v, %v", first["accessCount"], second["accessCount"])
		}
		if r := e.do("GET", "/v1/conversations/c/entries/msg-9-0?memory=chat", "", ""); r.status != 404 {
			t.Errorf("missing entry: %d", r.status)
		}
		if r := e.do("GET", "/v1/conversations/c/entries/msg-1-0?memory=chat&principal=someone", "", ""); r.status != 404 {
			t.Errorf("another principal sees the entry: %d", r.status)
		}
		forget := e.do("DELETE", "/v1/conversations/c", "", "").json(t)
		if forget["erased"].(float64) != 8 {
			t.Errorf("erased = %v", forget["erased"])
		}
		if n := len(e.do("GET", "/v1/conversations/c/entries", "", "").json(t)["entries"].([]any)); n != 0 {
			t.Errorf("%d entries left after forget", n)
		}
		if n := len(e.do("GET", "/v1/conversations/other/entries", "", "").json(t)["entries"].([]any)); n != 2 {
			t.Errorf("forget touched another conversation: %d entries", n)
		}
		if _, tr := e.turn("c", `{`+qa+`}`); tr.Turn != 1 {
			t.Errorf("turn after forget = %d, want 1", tr.Turn)
		}
	})
}

func TestTurnsConcurrentOnOneConversation(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
		const n = 64
		turns := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, tr := e.turn("busy", `{`+qa+`}`)
				if r.status != 201 {
					t.Errorf("status %d %s", r.status, r.body)
				}
				turns[i] = tr.Turn
			}()
		}
		wg.Wait()
		slices.Sort(turns)
		for i, got := range turns {
			if got != i+1 {
				t.Fatalf("turns = %v, want exactly 1..%d", turns, n)
			}
		}
	})
}
