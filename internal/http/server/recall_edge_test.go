package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRecallEdges: what the audit of the read side asked for, through the real handler on both
// stores.
func TestRecallEdges(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"docs","type":"semantic","strategy":{"kind":"topK","topK":1},"corpus":true}`)
		e.define(`{"id":"mix","type":"semantic","strategy":{"kind":"hybrid","strategies":[{"kind":"topK","topK":1,"rejectWindow":0},{"kind":"topK","topK":5}]}}`)
		var docs []string
		for i := range 30 {
			docs = append(docs, fmt.Sprintf(`{"id":"d%02d","text":"Thanks for your order, it ships today."}`, i))
		}
		if r := e.do("POST", "/v1/memories/docs/documents", "", `{"documents":[`+strings.Join(docs, ",")+`]}`); r.status != 200 {
			t.Fatalf("index: %d %s", r.status, r.body)
		}
		for i := range 8 {
			if r, _ := e.turn("c", fmt.Sprintf(`{"messages":[{"role":"user","content":"tea note number %d about green tea"}]}`, i)); r.status != 201 {
				t.Fatalf("turn: %d %s", r.status, r.body)
			}
		}

		t.Run("query without words", func(t *testing.T) {
			r, rb := e.recall("c", `{"query":"??? !!!","memories":["docs"]}`)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			var raw struct {
				Memories []struct {
					Evidence map[string]any `json:"evidence"`
				} `json:"memories"`
			}
			_ = json.Unmarshal(r.body, &raw)
			ev := raw.Memories[0].Evidence
			if ev["corpusEmpty"] != false || ev["candidatesComplete"] != false || !strings.Contains(fmt.Sprint(ev["note"]), "no words") {
				t.Errorf("a 30-document corpus read with a wordless query: %v", ev)
			}
			if rb.SystemPrompt != "" {
				t.Errorf("something was injected: %q", rb.SystemPrompt)
			}
		})

		t.Run("ties admit the same chunk in both stores", func(t *testing.T) {
			_, rb := e.recall("c", `{"query":"thanks for your order","memories":["docs"]}`)
			if len(rb.Injections) != 1 || rb.Injections[0].ID != "memory:docs#d29#0" {
				t.Errorf("30 identical chunks, topK 1: injected %+v, want d29#0 (ties go by id, descending)", rb.Injections)
			}
		})

		t.Run("each topK part of a hybrid ranks for itself", func(t *testing.T) {
			r, _ := e.recall("c", `{"query":"green tea note","memories":["mix"]}`)
			var raw struct {
				Memories []struct {
					Evidence struct {
						AdmittedCount int `json:"admittedCount"`
						Parts         []struct {
							ConsideredCount int `json:"consideredCount"`
							AdmittedCount   int `json:"admittedCount"`
						} `json:"parts"`
					} `json:"evidence"`
				} `json:"memories"`
			}
			if err := json.Unmarshal(r.body, &raw); err != nil || r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			ev := raw.Memories[0].Evidence
			if len(ev.Parts) != 2 || ev.Parts[0].AdmittedCount != 1 || ev.Parts[1].ConsideredCount != 8 || ev.Parts[1].AdmittedCount != 5 || ev.AdmittedCount != 6 {
				t.Errorf("hybrid of topK 1 and topK 5 over 8 messages: %+v", ev)
			}
		})

		t.Run("a document without words", func(t *testing.T) {
			r := e.do("POST", "/v1/memories/docs/documents", "", `{"documents":[{"id":"ok","text":"Returns take 30 days."},{"id":"stars","text":"* * * --- ***"}]}`)
			p := r.json(t)
			if r.status != 422 || p["path"] != "documents[1].text" || !strings.Contains(fmt.Sprint(p["detail"]), `"stars"`) {
				t.Errorf("wordless document: %d %s", r.status, r.body)
			}
			if _, rb := e.recall("c", `{"query":"returns take 30 days","memories":["docs"]}`); strings.Contains(rb.SystemPrompt, "Returns take 30 days") {
				t.Errorf("a refused batch was partly indexed")
			}
			// Paragraphs of 999 characters leave the separator a chunk of its own.
			long := strings.TrimSpace(strings.Repeat("Returns are fine. ", 56)[:999])
			r = e.do("POST", "/v1/memories/docs/documents", "", `{"documents":[{"id":"sep","text":"`+long+`\n\n* * *\n\n`+long+`"}]}`)
			if r.status != 200 {
				t.Fatalf("a document with a wordless separator: %d %s", r.status, r.body)
			}
			if chunks := r.json(t)["chunks"].(float64); chunks != 2 {
				t.Errorf("chunks = %v, want 2 (the separator is left out)", chunks)
			}
		})
	})
}

// TestRecallReportsEmbedderMismatch: a memory whose vectors came from another embedder (here a
// client's 3-d vectors) is not scored against the server's query vector; the evidence lists
// its entries as embedder-mismatch and says why.
func TestRecallReportsEmbedderMismatch(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, e *env) {
		e.define(`{"id":"sem","type":"semantic","strategy":{"kind":"topK","topK":2}}`)
		r := e.do("POST", "/v1/conversations/mm/turns", "", `{"messages":[{"role":"user","content":"where is my parcel"},{"role":"assistant","content":"on its way"}],
			"embeddings":{"embeddingModel":"client-3d","messages":[[0.6,0.8,0],[0,0.6,0.8]]}}`)
		if r.status != 201 {
			t.Fatalf("turn with client vectors: %d %s", r.status, r.body)
		}
		r, rb := e.recall("mm", `{"query":"parcel","memories":["sem"]}`)
		if r.status != 200 || len(rb.Memories) != 1 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		ev := rb.Memories[0].Evidence
		if ev.AdmittedCount != 0 || len(ev.Candidates) != 2 || rb.SystemPrompt != "" {
			t.Fatalf("evidence %+v", ev)
		}
		for _, c := range ev.Candidates {
			if c.Admitted || c.Reason != "embedder-mismatch" || c.Score != nil {
				t.Errorf("candidate %+v, want unscored embedder-mismatch", c)
			}
		}
		if !strings.Contains(string(r.body), "client-3d@3") {
			t.Errorf("the note does not name the stored vectors' embedder: %s", r.body)
		}
	})
}
