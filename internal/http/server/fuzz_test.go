package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
)

// FuzzMemoryWrites posts arbitrary bytes to the memory-writing operations
// through the full handler: no input may produce a 5xx, and every refusal
// must be a problem document. `go test -fuzz FuzzMemoryWrites` explores;
// plain `go test` runs the seeds.
func FuzzMemoryWrites(f *testing.F) {
	seeds := []string{
		`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":20}}`,
		`{"id":"chat","type":"episodic","strategy":"window"}`,
		`{"id":"chat","type":"episodic","strategy":null}`,
		`{"id":"chat","type":"episodic","strategy":{"kind":"hybrid","strategies":[{"kind":"window"},{"kind":"hybrid","strategies":[{"kind":"hybrid","strategies":[{"kind":"hybrid","strategies":[{}]}]}]}]}}`,
		`{"id":"chat","type":"semantic","strategy":{"kind":"topK","topK":1e308,"threshold":-1e-308}}`,
		`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":18446744073709551616}}`,
		`{"id":"chat","type":"episodic","strategy":{"kind":"decay","halfLifeMs":1e999}}`,
		`{"id":"chat","type":"causal","strategy":{"kind":"topK"},"projection":"full","ttlMs":9223372036854775807}`,
		`{"id":"chat","type":"episodic","strategy":{"kind":"window","\u0000":1}}`,
		"{\"id\":\"chat\",\"type\":\"episodic\",\"strategy\":{\"kind\":\"\xff\xfe\"}}",
		`[]`, `null`, `"x"`, `{}`, `{"id":`, ``,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	h, err := server.NewServer(server.Deps{
		App: app.New(memory.New(), core.Capabilities{
			Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Dimensions: 384, Default: true}},
		}),
		MaxBodyBytes: 1 << 16,
	})
	if err != nil {
		f.Fatal(err)
	}
	allowed := map[int]bool{200: true, 201: true, 400: true, 404: true, 409: true, 413: true, 415: true, 422: true}
	f.Fuzz(func(t *testing.T, body string) {
		for _, target := range []struct{ method, path string }{
			{"POST", "/v1/memories"},
			{"POST", "/v1/memories?dryRun=true"},
			{"PUT", "/v1/memories/chat"},
		} {
			req := httptest.NewRequest(target.method, target.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if !allowed[rec.Code] {
				t.Fatalf("%s %s with %q: status %d: %s", target.method, target.path, body, rec.Code, rec.Body)
			}
			if rec.Code >= 400 {
				if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
					t.Fatalf("status %d with Content-Type %q", rec.Code, ct)
				}
				var p map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || p["code"] == nil {
					t.Fatalf("status %d body is not a problem: %q", rec.Code, rec.Body)
				}
			}
			if rec.Code == http.StatusCreated {
				// Whatever was accepted must read back, identical.
				loc := rec.Header().Get("Location")
				get := httptest.NewRecorder()
				h.ServeHTTP(get, httptest.NewRequest("GET", loc, nil))
				if get.Code != 200 || get.Body.String() != rec.Body.String() {
					t.Fatalf("created memory does not read back from %q: %d %q, created %q", loc, get.Code, get.Body, rec.Body)
				}
				del := httptest.NewRecorder()
				h.ServeHTTP(del, httptest.NewRequest("DELETE", loc, nil))
			}
		}
	})
}
