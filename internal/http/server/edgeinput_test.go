package server_test

import (
	"strings"
	"testing"
)

// TestEdgeInputNeverFails sends values at and past every limit — numbers too big for any
// integer, negative sizes, over-long ids and path parameters, broken cursors, a 200k-character
// query — to the endpoints that take them, on both stores. None may answer 5xx, and every
// answer must match the spec (the test server checks each response against it, which is how
// operations whose 400 answers the spec did not declare were found).
func TestEdgeInputNeverFails(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`)
		e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`)
		e.define(`{"id":"docs","type":"semantic","strategy":{"kind":"topK","topK":3},"corpus":true}`)
		e.define(`{"id":"bud","type":"episodic","strategy":{"kind":"budget"}}`)
		if r, _ := e.turn("c1", `{`+qa+`}`); r.status != 201 {
			t.Fatalf("first turn: %d %s", r.status, r.body)
		}
		big := strings.Repeat("9", 40)
		reqs := [][3]string{
			{"POST", "/v1/conversations/c1/recall", `{"query":"x","contextTokensRemaining":` + big + `}`},
			{"POST", "/v1/conversations/c1/recall", `{"query":"x","contextTokensRemaining":1e308}`},
			{"POST", "/v1/conversations/c1/recall", `{"query":"x","turn":` + big + `}`},
			{"POST", "/v1/conversations/c1/recall", `{"query":"x","turn":-1}`},
			{"POST", "/v1/conversations/c1/recall", `{"query":"` + strings.Repeat("a", 200000) + `"}`},
			{"GET", "/v1/conversations/c1/entries?limit=" + big, ""},
			{"GET", "/v1/conversations/c1/entries?limit=-1", ""},
			{"GET", "/v1/conversations/c1/entries?cursor=%00%ff", ""},
			{"GET", "/v1/conversations/c1/turns/" + big + "/explain", ""},
			{"GET", "/v1/conversations/c1/turns/0/explain", ""},
			{"GET", "/v1/conversations/c1/turns/2147483648/explain", ""},
			{"POST", "/v1/conversations/c1/turns/2147483647/ablations", `{}`},
			{"POST", "/v1/memories/docs/documents", `{"documents":[{"id":"d","text":"hello world","page":` + big + `}]}`},
			{"POST", "/v1/memories/docs/documents", `{"documents":[{"id":"d","text":"hello world","page":-5}]}`},
			{"POST", "/v1/memories/docs/documents", `{"documents":[{"id":"` + strings.Repeat("x", 5000) + `","text":"hello"}]}`},
			{"GET", "/v1/conversations/c1/entries/msg-1-0?memory=chat&include=embedding", ""},
			{"GET", "/v1/recalls/" + strings.Repeat("z", 3000), ""},
			{"GET", "/v1/strategies/" + strings.Repeat("z", 3000), ""},
			{"GET", "/v1/strategies/bad%20kind", ""},
			{"GET", "/v1/memories/" + strings.Repeat("z", 3000), ""},
			{"GET", "/v1/memories/bad%20id", ""},
			{"DELETE", "/v1/memories/bad%20id", ""},
			{"DELETE", "/v1/conversations/bad%20id", ""},
			{"DELETE", "/v1/conversations/c1?principal=" + strings.Repeat("p", 3000), ""},
			{"GET", "/v1/runs/bad%20id", ""},
			{"GET", "/v1/runs/" + strings.Repeat("r", 3000) + "/context", ""},
			{"GET", "/v1/capabilities?x=1", ""},
			{"POST", "/v1/runs", `{"runId":"r1","conversationId":"c1","turn":` + big + `}`},
			{"POST", "/v1/runs", `{"conversationId":"c1","turn":2147483648}`},
			{"POST", "/v1/conversations/c1/turns", `{"messages":[{"role":"user","content":"x"}],"evidence":{"iterations":` + big + `,"durationMs":1e300,"tokenUsage":{"input":-1,"output":1e300}}}`},
			{"POST", "/v1/conversations/c1/turns", `{"messages":[{"role":"user","content":"x"}],"runId":"` + strings.Repeat("r", 1000) + `"}`},
			{"POST", "/v1/memories", `{"id":"w2","type":"episodic","strategy":{"kind":"window","size":` + big + `}}`},
			{"POST", "/v1/memories", `{"id":"w3","type":"episodic","strategy":{"kind":"decay","halfLifeMs":1e308}}`},
			{"POST", "/v1/memories", `{"id":"w4","type":"causal","strategy":{"kind":"topK"},"ttlMs":1e308}`},
			// Numbers past float64 (1e999), past float32 in a vector, and text escaping half a
			// surrogate pair, on every kind of body that carries them.
			{"POST", "/v1/conversations/c1/turns", `{"turnNumber":1e999,"messages":[{"role":"user","content":"x"}]}`},
			{"POST", "/v1/conversations/c1/turns", `{"messages":[{"role":"user","content":"x"}],"embeddings":{"embeddingModel":"m","query":[1e39]}}`},
			{"POST", "/v1/conversations/c1/turns", `{"messages":[{"role":"user","content":"x"}],"evidence":{"durationMs":1e999,"tokenUsage":{"input":1e999,"output":1}}}`},
			{"POST", "/v1/conversations/c1/turns", `{"messages":[{"role":"user","content":"x"}],"evidence":{"tokenUsage":{"input":1,"output":1e300}}}`},
			{"POST", "/v1/conversations/c1/turns", `{"messages":[{"role":"user","content":"x"}],"evidence":{"decisions":[{"stageId":"s","chosen":"c","evidence":{"k":"\udfff"}}]}}`},
			{"POST", "/v1/conversations/c1/recall", `{"query":"x","contextTokensRemaining":1e999}`},
			{"POST", "/v1/conversations/c1/recall", `{"query":"\ud800"}`},
			{"POST", "/v1/memories/docs/documents", `{"documents":[{"id":"d","text":"hello \udc00 world"}]}`},
			{"POST", "/v1/memories", `{"id":"w5","type":"episodic","strategy":{"kind":"window"},"description":"\ud800"}`},
			{"POST", "/v1/memories", `{"id":"w6","type":"episodic","strategy":{"kind":"window","size":1e999}}`},
			{"POST", "/v1/runs", `{"conversationId":"c1","turn":1e999}`},
		}
		for _, rq := range reqs {
			r := e.do(rq[0], rq[1], "", rq[2])
			// 401 or 405 would mean the request never reached what it probes.
			if r.status >= 500 || r.status == 401 || r.status == 405 {
				t.Errorf("%s %.80s %.80s → %d %s", rq[0], rq[1], rq[2], r.status, r.body)
			}
			if r.status >= 400 {
				detail, _ := r.json(t)["detail"].(string)
				for _, lib := range libraryText {
					if strings.Contains(strings.ToLower(detail), strings.ToLower(lib)) {
						t.Errorf("%s %.80s %.80s: library text %q in the detail: %s", rq[0], rq[1], rq[2], lib, detail)
					}
				}
			}
			// Half a surrogate pair is refused wherever it is, as invalid UTF-8 is, never stored.
			if strings.Contains(rq[2], `\ud`) {
				if r.status != 400 || r.json(t)["code"] != "invalid-json" {
					t.Errorf("%s %s %s: %d %s, want 400 invalid-json", rq[0], rq[1], rq[2], r.status, r.body)
				}
			}
		}
		// Memories defined with extreme parameters still take turns and recall.
		if r, _ := e.turn("c2", `{`+qa+`}`); r.status >= 500 {
			t.Errorf("turn after odd memories: %d %s", r.status, r.body)
		}
		if r := e.do("POST", "/v1/conversations/c2/recall", "", `{"query":"x"}`); r.status >= 500 {
			t.Errorf("recall after odd memories: %d %s", r.status, r.body)
		}
	})
}
