package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
)

// rateGate passes every response through specGate except a 429: the spec
// does not (yet) declare 429 on every operation, and this is the one test
// that provokes it. Everything else it answers is still checked.
func rateGate(t *testing.T, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		replay := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
		})
		r.Body = io.NopCloser(bytes.NewReader(body))
		if rec.Code == http.StatusTooManyRequests {
			replay.ServeHTTP(w, r)
			return
		}
		specGate(t, replay).ServeHTTP(w, r)
	})
}

var (
	rateLimitHeader = regexp.MustCompile(`^"tenant";r=(\d+);t=(\d+)$`)
	rateLimitPolicy = regexp.MustCompile(`^"tenant";q=(\d+);w=(\d+)$`)
)

func TestRateLimitPerTenant(t *testing.T) {
	t.Parallel()
	const burst = 5
	h, err := server.NewServer(server.Deps{
		App: app.New(memory.New(), core.Capabilities{
			Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Dimensions: 384, Default: true}},
		}),
		APIKeys:   []server.APIKey{{Tenant: "acme", Key: keyAcme}, {Tenant: "globex", Key: keyGlobex}},
		RateLimit: 0.5, // one token every 2 s: nothing refills during the test
		RateBurst: burst,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rateGate(t, h))
	t.Cleanup(srv.Close)
	e := &env{t: t, srv: srv}

	for i := range burst {
		r := e.do("GET", "/v1/memories", keyAcme, "")
		if r.status != 200 {
			t.Fatalf("request %d within the burst: %d %s", i+1, r.status, r.body)
		}
		if p := r.header.Get("RateLimit-Policy"); !rateLimitPolicy.MatchString(p) || p != `"tenant";q=5;w=10` {
			t.Errorf("RateLimit-Policy = %q, want \"tenant\";q=5;w=10", p)
		}
		m := rateLimitHeader.FindStringSubmatch(r.header.Get("RateLimit"))
		if m == nil {
			t.Fatalf("RateLimit = %q", r.header.Get("RateLimit"))
		}
		if left, _ := strconv.Atoi(m[1]); left != burst-1-i {
			t.Errorf("request %d: remaining %d, want %d", i+1, left, burst-1-i)
		}
	}
	// The burst is spent: every further request, valid or not, is 429.
	for _, req := range []struct{ method, path, body string }{
		{"GET", "/v1/memories", ""},
		{"POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`},
		{"POST", "/v1/memories", `{"not":"valid"}`}, // limited before validation
	} {
		r := e.do(req.method, req.path, keyAcme, req.body)
		if r.status != 429 || r.json(t)["code"] != "rate-limited" {
			t.Fatalf("%s %s beyond the burst: %d %s", req.method, req.path, r.status, r.body)
		}
		if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 || ra > 2 {
			t.Errorf("Retry-After = %q, want 1..2 s", r.header.Get("Retry-After"))
		}
		if m := rateLimitHeader.FindStringSubmatch(r.header.Get("RateLimit")); m == nil || m[1] != "0" {
			t.Errorf("429 RateLimit = %q, want r=0", r.header.Get("RateLimit"))
		}
		if r.header.Get("RateLimit-Policy") == "" {
			t.Error("429 without RateLimit-Policy")
		}
	}
	// Nothing of the refused create was stored.
	if r := e.do("GET", "/v1/memories/chat", keyGlobex, ""); r.status != 404 {
		t.Errorf("globex reads a memory: %d", r.status)
	}
	// Another tenant has its own bucket (the 404 above took one token).
	for i := range burst - 1 {
		if r := e.do("GET", "/v1/memories", keyGlobex, ""); r.status != 200 {
			t.Fatalf("globex request %d while acme is limited: %d %s", i+1, r.status, r.body)
		}
	}
	// Unauthenticated requests are refused before the limiter: 401, not 429.
	if r := e.do("GET", "/v1/memories", "", ""); r.status != 401 {
		t.Errorf("no key: %d", r.status)
	}
	// Health and metrics sit outside /v1 and are never limited.
	for range 3 {
		if r := e.do("GET", "/healthz", "", ""); r.status != 200 || r.header.Get("RateLimit") != "" {
			t.Errorf("healthz: %d RateLimit %q", r.status, r.header.Get("RateLimit"))
		}
	}
}

func TestRateLimitOffByDefault(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 50 {
		if r := e.do("GET", "/v1/memories", "", ""); r.status != 200 || r.header.Get("RateLimit") != "" {
			t.Fatalf("without a limit: %d RateLimit %q", r.status, r.header.Get("RateLimit"))
		}
	}
}
