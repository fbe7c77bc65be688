package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
)

// inProcess builds the real handler over a fresh in-memory store with the built-in 384-d
// embedder and returns a function that calls it in-process, with a JSON body.
func inProcess(b *testing.B) func(method, path, body string) *httptest.ResponseRecorder {
	b.Helper()
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		b.Fatal(err)
	}
	h, err := server.NewServer(server.Deps{
		App:          app.New(memory.New(), core.Capabilities{}, app.WithEmbedders(hash)),
		MaxBodyBytes: 1 << 22,
		CursorSecret: []byte("bench-secret-bench-secret"),
	})
	if err != nil {
		b.Fatal(err)
	}
	return func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
}

// BenchmarkPostTurnHandler is the HTTP layer and the service's share of a turn write: the real
// handler (validation, decoding, embedding, building the entries, the answer) over the
// in-memory store, called in-process without a network. bench/turns measures the whole path on
// Postgres; this isolates what the server itself costs per turn, allocations included.
func BenchmarkPostTurnHandler(b *testing.B) {
	do := inProcess(b)
	for _, def := range []string{
		`{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`,
		`{"id":"why","type":"causal","strategy":{"kind":"topK"}}`,
	} {
		if rec := do("POST", "/v1/memories", def); rec.Code != http.StatusCreated {
			b.Fatalf("define memory: %d %s", rec.Code, rec.Body)
		}
	}
	user := strings.Repeat("why did the deploy fail on tuesday night ", 5)[:199]
	assistant := strings.Repeat("the migration locked the orders table for ", 5)[:200]
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q},{"role":"assistant","content":%q}]}`, user, assistant)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// A conversation per 10 turns keeps the in-memory store's share (it scans a conversation
		// for its highest turn) small and flat.
		path := fmt.Sprintf("/v1/conversations/c%d/turns", i/10)
		if rec := do("POST", path, body); rec.Code != http.StatusCreated {
			b.Fatalf("post turn: %d %s", rec.Code, rec.Body)
		}
	}
}
