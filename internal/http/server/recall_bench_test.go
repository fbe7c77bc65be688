package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkRecallHandler is the server's own cost of a recall: the real handler (validation,
// embedding, the evidence and prompt, the receipt, the answer) over the in-memory store, called
// in-process. The in-memory store ranks by brute force, so the ranking's share here says
// nothing of Postgres (bench/recall measures that); the rest is what every recall pays.
func BenchmarkRecallHandler(b *testing.B) {
	sentence := func(i int) string {
		words := strings.Fields("release deploy rollback migration orders table lock index query plan cache vector")
		var sb strings.Builder
		for j := range 30 {
			sb.WriteString(words[(i*7+j*3)%len(words)])
			sb.WriteString(" ")
		}
		return sb.String()
	}
	for _, regime := range []string{"conversation", "corpus"} {
		b.Run(regime, func(b *testing.B) {
			call := inProcess(b)
			do := func(method, path string, body any) *httptest.ResponseRecorder {
				raw, _ := json.Marshal(body)
				rec := call(method, path, string(raw))
				if rec.Code >= 300 {
					b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
				}
				return rec
			}
			if regime == "conversation" {
				do("POST", "/v1/memories", json.RawMessage(`{"id":"conv","type":"semantic","strategy":{"kind":"topK","topK":10}}`))
				for i := range 50 { // 100 messages
					do("POST", "/v1/conversations/c/turns", map[string]any{"messages": []map[string]string{
						{"role": "user", "content": sentence(2 * i)}, {"role": "assistant", "content": sentence(2*i + 1)}}})
				}
			} else {
				do("POST", "/v1/memories", json.RawMessage(`{"id":"docs","type":"semantic","strategy":{"kind":"topK","topK":10},"corpus":true}`))
				var docs []map[string]any
				for i := range 100 {
					docs = append(docs, map[string]any{"id": fmt.Sprintf("d%d", i), "docUri": fmt.Sprintf("file:///doc/%d", i),
						"heading": "Section", "text": strings.Repeat(sentence(i), 4)})
				}
				do("POST", "/v1/memories/docs/documents", map[string]any{"documents": docs})
			}
			query := map[string]any{"query": sentence(3)}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if rec := do("POST", "/v1/conversations/c/recall", query); rec.Code != http.StatusOK {
					b.Fatalf("recall: %d", rec.Code)
				}
			}
		})
	}
}
