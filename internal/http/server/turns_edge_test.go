package server_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestTurnWriteEdges: what the audit of the write side found, through the real handler on both
// stores.
func TestTurnWriteEdges(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		t.Run("no memory writes", func(t *testing.T) {
			// No memory defined yet: nothing can be written, and no turn number is claimed.
			r, tr := e.turn("empty", `{"messages":[{"role":"user","content":"hello there"}]}`)
			if r.status != 200 || tr.Noop == nil || tr.Noop.Reason != "no-writing-memory" || tr.Turn != 0 {
				t.Errorf("a tenant without memories: %d %s", r.status, r.body)
			}
		})

		e.define(`{"id":"story","type":"narrative","strategy":{"kind":"extract"}}`)
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
		e.define(`{"id":"docs","type":"semantic","strategy":{"kind":"topK"},"corpus":true}`)

		t.Run("narrative-only turns number on", func(t *testing.T) {
			for want := 1; want <= 3; want++ {
				r, tr := e.turn("story-conv", `{"memories":["story"],"messages":[{"role":"user","content":"I decided to move to Lisbon."},{"role":"assistant","content":"Then we will plan the move together."}]}`)
				if r.status != 201 || tr.Turn != want {
					t.Fatalf("narrative turn %d: %d %s", want, r.status, r.body)
				}
			}
			// A full turn afterwards numbers after the beats too.
			r, tr := e.turn("story-conv", `{"messages":[{"role":"user","content":"What did I decide?"},{"role":"assistant","content":"To move to Lisbon."}]}`)
			if r.status != 201 || tr.Turn != 4 {
				t.Errorf("full turn after three narrative ones: %d %s", r.status, r.body)
			}
		})

		t.Run("a wordless question skips only the snapshot", func(t *testing.T) {
			for _, q := range []string{"👍", "?", "   "} {
				conv := fmt.Sprintf("emoji-%d", len(q))
				r, tr := e.turn(conv, `{"messages":[{"role":"user","content":"`+q+`"},{"role":"assistant","content":"Glad it helped."}]}`)
				if r.status != 201 || tr.Turn != 1 {
					t.Fatalf("%q: %d %s", q, r.status, r.body)
				}
				var wrote, skippedWhy bool
				for _, w := range tr.Written {
					if w.MemoryID == "chat" && len(w.IDs) == 2 {
						wrote = true
					}
					if w.MemoryID == "why" {
						t.Errorf("%q: a snapshot was written: %v", q, w.IDs)
					}
				}
				for _, s := range tr.Skipped {
					if s.MemoryID == "why" && s.Reason == "query-without-words" {
						skippedWhy = true
					}
				}
				if !wrote || !skippedWhy {
					t.Errorf("%q: messages written %v, snapshot skipped with its reason %v: %s", q, wrote, skippedWhy, r.body)
				}
			}
		})

		t.Run("memories named but none writes", func(t *testing.T) {
			r, tr := e.turn("docs-only", `{"memories":["docs"],"messages":[{"role":"user","content":"index this"}]}`)
			if r.status != 200 || tr.Noop == nil || tr.Noop.Reason != "no-writing-memory" {
				t.Fatalf("only a corpus named: %d %s", r.status, r.body)
			}
			if len(tr.Skipped) == 0 || !strings.Contains(string(r.body), `"corpus"`) {
				t.Errorf("the noop does not say why each memory was skipped: %s", r.body)
			}
			if r, _ := e.turn("docs-only", `{"messages":[{"role":"user","content":"now a real turn"}]}`); r.status != 201 || !strings.Contains(string(r.body), `"turn":1`) {
				t.Errorf("the noop used a turn number: %d %s", r.status, r.body)
			}
		})

		t.Run("NUL inside free-form JSON", func(t *testing.T) {
			for _, tc := range []struct{ body, path string }{
				{`{"messages":[{"role":"user","content":"q"}],"evidence":{"toolCalls":[{"name":"t","args":{"q":"a\u0000b"}}]}}`, "evidence.toolCalls[0].args"},
				{`{"messages":[{"role":"user","content":"q"}],"evidence":{"decisions":[{"stageId":"s","chosen":"c","evidence":{"k\u0000":1}}]}}`, "evidence.decisions[0].evidence"},
			} {
				r := e.do("POST", "/v1/conversations/nul/turns", "", tc.body)
				if p := r.json(t); r.status != 422 || p["path"] != tc.path {
					t.Errorf("%s: %d %s", tc.path, r.status, r.body)
				}
			}
			if r := e.do("GET", "/v1/conversations/nul/entries", "", ""); !strings.Contains(string(r.body), `"entries":[]`) {
				t.Errorf("something was written: %s", r.body)
			}
			r := e.do("POST", "/v1/memories/docs/documents", "", `{"documents":[{"id":"m","text":"Returns take 30 days.","metadata":{"source":"x\u0000y"}}]}`)
			if p := r.json(t); r.status != 422 || p["path"] != "documents[0].metadata" {
				t.Errorf("document metadata: %d %s", r.status, r.body)
			}
			for _, def := range []string{
				`{"id":"nul1","type":"episodic","strategy":{"kind":"window"},"description":"a\u0000b"}`,
				`{"id":"nul2","type":"semantic","strategy":{"kind":"topK","embedder":"ha\u0000sh"}}`,
			} {
				if r := e.do("POST", "/v1/memories", "", def); r.status/100 != 4 {
					t.Errorf("memory definition with NUL: %d %s", r.status, r.body)
				}
			}
		})
	})
}

// TestTurnsConcurrentManyConversations: 16 conversations written by 8 concurrent clients each
// (128 POSTs at once): every conversation holds turns 1..8 exactly once, and every write's
// entries are stored (no lost writes).
func TestTurnsConcurrentManyConversations(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
		const convs, per = 16, 8
		var mu sync.Mutex
		turns := map[string][]int{}
		var wg sync.WaitGroup
		for c := range convs {
			for range per {
				wg.Add(1)
				go func() {
					defer wg.Done()
					conv := fmt.Sprintf("par-%02d", c)
					r, tr := e.turn(conv, `{"messages":[{"role":"user","content":"where is my parcel"},{"role":"assistant","content":"on its way"}]}`)
					if r.status != 201 {
						t.Errorf("%s: %d %s", conv, r.status, r.body)
						return
					}
					mu.Lock()
					turns[conv] = append(turns[conv], tr.Turn)
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		for c := range convs {
			conv := fmt.Sprintf("par-%02d", c)
			got := turns[conv]
			slices.Sort(got)
			if !slices.Equal(got, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
				t.Errorf("%s: turns %v, want 1..8 once each", conv, got)
			}
			entries := e.do("GET", "/v1/conversations/"+conv+"/entries?limit=100", "", "").json(t)["entries"].([]any)
			if len(entries) != per*3 { // msg-N-0, msg-N-1, snap-N
				t.Errorf("%s: %d entries stored, want %d", conv, len(entries), per*3)
			}
		}
	})
}

// Client vectors must cover what the turn's memories rank: a semantic memory's messages.
func TestClientVectorsCoverMessages(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"sem","type":"semantic","strategy":{"kind":"topK"}}`)
		r := e.do("POST", "/v1/conversations/cv/turns", "", `{"messages":[{"role":"user","content":"hello"}],"embeddings":{"embeddingModel":"my-model","query":[0.6,0.8]}}`)
		if p := r.json(t); r.status != 422 || p["path"] != "embeddings.messages" {
			t.Errorf("client query vector without message vectors: %d %s", r.status, r.body)
		}
		if n := len(e.do("GET", "/v1/conversations/cv/entries", "", "").json(t)["entries"].([]any)); n != 0 {
			t.Errorf("%d entries written", n)
		}
	})
}

// An Idempotency-Key keeps its promise on a turn that writes nothing: the same request again
// replays the answer, and the key with another request is refused.
func TestIdempotencyKeyOnANoop(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		const empty = `{"messages":[{"role":"assistant","content":"anything else?"}]}`
		first := e.do("POST", "/v1/conversations/idem/turns", "", empty, "Idempotency-Key", "k-noop")
		again := e.do("POST", "/v1/conversations/idem/turns", "", empty, "Idempotency-Key", "k-noop")
		if first.status != 200 || again.status != 200 || string(first.body) != string(again.body) ||
			again.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("noop then its retry: %d %s / %d %s %v", first.status, first.body, again.status, again.body, again.header)
		}
		other := e.do("POST", "/v1/conversations/idem/turns", "", `{"messages":[{"role":"user","content":"hello"}]}`, "Idempotency-Key", "k-noop")
		if p := other.json(t); other.status != 422 || p["code"] != "idempotency-key-reused" {
			t.Errorf("the noop's key with another request: %d %s", other.status, other.body)
		}
		if n := len(e.do("GET", "/v1/conversations/idem/entries", "", "").json(t)["entries"].([]any)); n != 0 {
			t.Errorf("%d entries written", n)
		}
		// A real turn afterwards, with a new key, is turn 1: the noop used no turn number.
		if r, tr := e.turn("idem", `{"messages":[{"role":"user","content":"hello"}]}`); r.status != 201 || tr.Turn != 1 {
			t.Errorf("first real turn: %d %s", r.status, r.body)
		}
	})
}
