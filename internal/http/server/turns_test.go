package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core/turns"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// eachStore runs a test against the in-memory store and real Postgres.
func eachStore(t *testing.T, test func(t *testing.T, e *env), opts ...func(*options)) {
	t.Helper()
	stores := []struct {
		name string
		open func(t *testing.T) app.Store
	}{
		{"memory", func(*testing.T) app.Store { return memory.New() }},
		{"postgres", func(t *testing.T) app.Store { return pgtest.Open(t) }},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, append(opts, func(o *options) { o.store = s.open(t) })...)
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
		if a, b := turnOf("last", "2147483646"), turnOf("last", ""); a != math.MaxInt32-1 || b != math.MaxInt32 {
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

func TestTurnNamedMemoriesAndClientVectors(t *testing.T) {
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

// turnBodyLimit is the body limit of the servers TestTurnBadInputWritesNothing runs: room for
// a message of 100,000 characters (the most a message may hold) and for 500 messages (the most
// a turn may hold), so that those limits, not the body limit, are what answers one more; and
// small enough that the server still reads all of an over-limit body before answering 413.
const turnBodyLimit = 160 << 10

// eachStoreWithBodyLimit is eachStore with the server given a body limit of maxBody bytes
// (setup's is 4096, below a message's limit).
func eachStoreWithBodyLimit(t *testing.T, maxBody int64, test func(t *testing.T, e *env)) {
	t.Helper()
	eachStore(t, test, func(o *options) { o.maxBody = maxBody })
}

// messagesOf is a turn's "messages" member with n one-word user messages.
func messagesOf(n int) string {
	return `"messages":[` + strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"hi"},`, n), ",") + `]`
}

// libraryText are phrases in which the libraries under the HTTP layer (kin-openapi,
// encoding/json, strconv, jsontext) describe their own workings; a problem must never show
// them to a client.
var libraryText = []string{"json.Number", "cannot convert", "not nullable", "doesn't match the format", "json:", "jsontext", "strconv", "unmarshal", "float64"}

// TestTurnBadInputWritesNothing posts, on both stores, each kind of bad turn body to a
// conversation of its own: each is answered with the status and code the API documents and a
// `path` naming the field, in the API's own words, and leaves the conversation empty. The
// bodies the rules accept (at the limits, or what looks like a mistake but is not) are
// written, as the turn and text they carry.
func TestTurnBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	eachStoreWithBodyLimit(t, turnBodyLimit, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
		user := func(content string) string { return `{"messages":[{"role":"user","content":"` + content + `"}]}` }
		vectors := func(v string) string { return `{` + qa + `,"embeddings":{"embeddingModel":"m",` + v + `}}` }
		bad := []struct {
			name, body string
			status     int
			code, path string
		}{
			{"NUL", user(`a\u0000b`), 422, "invalid-field", "messages[0].content"},
			{"invalid UTF-8", user("a\xffb"), 400, "invalid-json", "messages[0].content"},
			// Invalid UTF-8 is refused, not replaced by U+FFFD, and the problem names where it is.
			{"invalid UTF-8 in a later message", "{\"messages\":[{\"role\":\"user\",\"content\":\"ok\"},{\"role\":\"assistant\",\"content\":\"\xc3(\"}]}", 400, "invalid-json", "messages[1].content"},
			{"bad role", `{"messages":[{"role":"robot","content":"x"}]}`, 400, "invalid-request", "messages[0].role"},
			{"no messages field", `{}`, 400, "invalid-request", "messages"},
			{"wrong type", `{"messages":"hello"}`, 400, "invalid-request", "messages"},
			{"zero vector", vectors(`"query":[0,0,0]`), 422, "invalid-vector", "embeddings.query"},
			{"causal without client query", vectors(`"messages":[[1,0],[0,1]]`), 422, "invalid-vector", "embeddings.query"},
			{"ragged vectors", vectors(`"query":[1,0],"messages":[[1,0,0]]`), 422, "invalid-vector", "embeddings.messages[0]"},
			// Limits: a message's characters, a turn's messages, the body's bytes.
			{"content over 100,000 characters", user(strings.Repeat("a", turns.MaxContentChars+1)), 400, "invalid-request", "messages[0].content"},
			{"more than 500 messages", `{` + messagesOf(turns.MaxMessages+1) + `}`, 400, "invalid-request", "messages"},
			{"body over the limit", user(strings.Repeat("a", turnBodyLimit+1000)), 413, "body-too-large", ""},
			// Numbers no Go type here can hold, and turns past the highest.
			{"turnNumber 1e999", `{"turnNumber":1e999,` + qa + `}`, 400, "invalid-request", "turnNumber"},
			{"turnNumber -1e999", `{"turnNumber":-1e999,` + qa + `}`, 400, "invalid-request", "turnNumber"},
			{"turnNumber of 400 digits", `{"turnNumber":` + strings.Repeat("9", 400) + `,` + qa + `}`, 400, "invalid-request", "turnNumber"},
			{"turnNumber 1e30", `{"turnNumber":1e30,` + qa + `}`, 400, "invalid-request", "turnNumber"},
			{"turnNumber one past the highest host turn", `{"turnNumber":2147483647,` + qa + `}`, 400, "invalid-request", "turnNumber"},
			{"turnNumber as a string", `{"turnNumber":"3",` + qa + `}`, 400, "invalid-request", "turnNumber"},
			{"float32 overflow in query", vectors(`"query":[1e39,1,1]`), 400, "invalid-request", "embeddings.query[0]"},
			{"negative float32 overflow in a message vector", vectors(`"query":[1,1],"messages":[null,[1,-3.5e38]]`), 400, "invalid-request", "embeddings.messages[1][1]"},
			{"float64 overflow in a vector", vectors(`"query":[1,1,1e999]`), 400, "invalid-request", "embeddings.query[2]"},
			{"float64 overflow in decision evidence", `{"evidence":{"decisions":[{"stageId":"s","chosen":"c","evidence":{"k":[1,-1e999]}}]},` + qa + `}`, 400, "invalid-request", "evidence.decisions[0].evidence.k[1]"},
			{"float64 overflow in tool arguments", `{"evidence":{"toolCalls":[{"name":"n"},{"name":"n","args":1e400}]},` + qa + `}`, 400, "invalid-request", "evidence.toolCalls[1].args"},
			{"float64 overflow for text", `{"messages":[{"role":"user","content":1e999}]}`, 400, "invalid-request", "messages[0].content"},
			// Escapes of half a surrogate pair: no character, so no UTF-8; refused like invalid UTF-8.
			{"lone high surrogate", user(`a\ud800b`), 400, "invalid-json", "messages[0].content"},
			{"lone low surrogate", user(`a\uDC00`), 400, "invalid-json", "messages[0].content"},
			{"high surrogate then another escape", user(`\ud83d\u0041`), 400, "invalid-json", "messages[0].content"},
			{"low surrogate before its high", user(`\ude00\ud83d`), 400, "invalid-json", "messages[0].content"},
			{"lone surrogate in a later message", `{"messages":[{"role":"user","content":"ok"},{"role":"assistant","content":"\udbff"}]}`, 400, "invalid-json", "messages[1].content"},
			{"lone surrogate in runId", `{"runId":"r\ud800",` + qa + `}`, 400, "invalid-json", "runId"},
		}
		for i, b := range bad {
			conv := fmt.Sprintf("bad-%d", i)
			r, _ := e.turn(conv, b.body)
			if r.status != b.status {
				t.Errorf("%s: %d %.300s, want %d %s", b.name, r.status, r.body, b.status, b.code)
				continue
			}
			p := r.json(t)
			if p["code"] != b.code || (b.path != "" && p["path"] != b.path) {
				t.Errorf("%s: code %v path %v, want %s %s: %.300s", b.name, p["code"], p["path"], b.code, b.path, r.body)
			}
			detail, _ := p["detail"].(string)
			if b.path != "" && !strings.Contains(detail, "`"+b.path+"`") && b.status == 400 {
				t.Errorf("%s: the detail does not name `%s`: %s", b.name, b.path, detail)
			}
			for _, lib := range libraryText {
				if strings.Contains(strings.ToLower(detail), strings.ToLower(lib)) {
					t.Errorf("%s: library text %q in the detail: %s", b.name, lib, detail)
				}
			}
			if n := len(e.do("GET", "/v1/conversations/"+conv+"/entries", "", "").json(t)["entries"].([]any)); n != 0 {
				t.Errorf("%s wrote %d entries", b.name, n)
			}
		}

		good := []struct {
			name, body string
			turn       int
			content    string // msg-{turn}-0 as stored, when not ""
		}{
			// JSON.stringify({turnNumber: NaN}) sends null: no host turn, so 1 (the seed's rule).
			{"turnNumber null", `{"turnNumber":null,` + qa + `}`, 1, ""},
			{"turnNumber below 1", `{"turnNumber":-1e300,` + qa + `}`, 1, ""},
			{"the highest host turn", `{"turnNumber":2147483646,` + qa + `}`, math.MaxInt32 - 1, ""},
			{"content of exactly 100,000 characters", user(strings.Repeat("é", turns.MaxContentChars/2) + strings.Repeat("a", turns.MaxContentChars/2)), 1, ""},
			{"exactly 500 messages", `{` + messagesOf(turns.MaxMessages) + `}`, 1, ""},
			{"the largest float32", vectors(`"query":[3.4028234e38,-3.4028234e38,1e-50]`), 1, ""},
			{"a surrogate pair", user(`a\ud83d\ude00b`), 1, "a😀b"},
			{"an escaped backslash before u", user(`\\ud800 \\\\\ud83d\ude00`), 1, `\ud800 \\😀`},
		}
		for i, g := range good {
			conv := fmt.Sprintf("good-%d", i)
			r, tr := e.turn(conv, g.body)
			if r.status != 201 || tr.Turn != g.turn {
				t.Errorf("%s: %d %.300s, want 201 with turn %d", g.name, r.status, r.body, g.turn)
				continue
			}
			if g.content != "" {
				msg := e.do("GET", fmt.Sprintf("/v1/conversations/%s/entries/msg-%d-0?memory=chat", conv, g.turn), "", "").json(t)
				if got := msg["value"].(map[string]any)["content"]; got != g.content {
					t.Errorf("%s: stored %q, want %q", g.name, got, g.content)
				}
			}
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
