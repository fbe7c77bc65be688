package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
)

// Planted in the provider's key and its error bodies: no response and no
// log line may carry them.
const (
	upstreamKey    = "sk-upstream-0123456789SECRETKEY"
	upstreamSecret = "UPSTREAM-BODY-SENTINEL"
)

var upstreamErrorBody = `{"error":{"message":"Incorrect API key provided: ` + upstreamKey + ` ` + upstreamSecret + `"}}`

// fakeProvider stands in for a remote embedder: one wire format, and a
// handler each test sets.
type fakeProvider struct {
	kind, id, path string
	// ok writes a success body holding vecs.
	ok func(w http.ResponseWriter, vecs [][]float32)
}

var fakeProviders = []fakeProvider{
	{kind: "openai", id: "ada", path: "/v1/embeddings", ok: func(w http.ResponseWriter, vecs [][]float32) {
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		items := make([]item, len(vecs))
		for i, v := range vecs {
			items[i] = item{i, v}
		}
		writeUpstreamJSON(w, map[string]any{"object": "list", "data": items})
	}},
	{kind: "ollama", id: "local", path: "/api/embed", ok: func(w http.ResponseWriter, vecs [][]float32) {
		writeUpstreamJSON(w, map[string]any{"embeddings": vecs})
	}},
}

func writeUpstreamJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// embedderEnv serves the real handler with one remote embedder, configured
// as cmd/server does it (a FOOTPRINT_EMBEDDERS spec through ParseSpecs and
// Build), pointed at url. It returns the env and the server's log.
func embedderEnv(t *testing.T, p fakeProvider, url, extra string, requestTimeout time.Duration) (*env, *lockedBuffer) {
	t.Helper()
	spec := fmt.Sprintf("%s=%s:model=m:url=%s:key_env=UPSTREAM_KEY:retries=2%s", p.id, p.kind, url, extra)
	specs, err := embedder.ParseSpecs(spec)
	if err != nil {
		t.Fatal(err)
	}
	embedders, err := embedder.Build(specs, func(name string) string {
		if name == "UPSTREAM_KEY" {
			return upstreamKey
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	caps := core.Capabilities{}
	for _, e := range embedders {
		caps.Embedders = append(caps.Embedders, e.Info())
	}
	logs := &lockedBuffer{}
	h, err := server.NewServer(server.Deps{
		App:            app.New(memory.New(), caps, app.WithEmbedders(embedders...)),
		Logger:         slog.New(slog.NewJSONHandler(logs, nil)),
		MaxBodyBytes:   4096,
		CursorSecret:   []byte("test-secret-test-secret"),
		RequestTimeout: requestTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(specGate(t, h))
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv}, logs
}

// TestEmbedderFailureProblems makes a stand-in provider fail in each way
// it can and checks what a client of the API gets from a turn and a recall
// that need it: the status and code that tell a client whether to retry,
// a detail that names the embedder and the upstream status, and nothing of
// the key, the provider's URL or its body.
func TestEmbedderFailureProblems(t *testing.T) {
	t.Parallel()
	fail := func(status int, retryAfter string) func(w http.ResponseWriter, _ [][]float32, _ fakeProvider) {
		return func(w http.ResponseWriter, _ [][]float32, _ fakeProvider) {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, upstreamErrorBody)
		}
	}
	tests := []struct {
		name string
		// respond answers a request whose inputs would embed to vecs;
		// nil: the provider is not listening at all.
		respond        func(w http.ResponseWriter, vecs [][]float32, p fakeProvider)
		extra          string        // more spec options
		requestTimeout time.Duration // 0: the server's default
		status         int
		code           string
		calls          int32 // requests the provider should see per API call; 0: don't check
		retryAfter     string
		detail         []string // fragments the detail must hold
	}{
		{name: "401 bad key", respond: fail(401, ""), status: 502, code: "embedder-failed", calls: 1,
			detail: []string{"HTTP 401 Unauthorized", "API key"}},
		{name: "403 forbidden", respond: fail(403, ""), status: 502, code: "embedder-failed", calls: 1,
			detail: []string{"HTTP 403 Forbidden", "API key"}},
		{name: "400 refused", respond: fail(400, ""), status: 502, code: "embedder-failed", calls: 1,
			detail: []string{"HTTP 400 Bad Request", "model name"}},
		{name: "404 unknown model", respond: fail(404, ""), status: 502, code: "embedder-failed", calls: 1,
			detail: []string{"HTTP 404 Not Found", "model name and base URL"}},
		{name: "malformed JSON", status: 502, code: "embedder-failed", calls: 1,
			respond: func(w http.ResponseWriter, _ [][]float32, _ fakeProvider) {
				_, _ = io.WriteString(w, `{"data": [`+upstreamSecret+upstreamKey)
			},
			detail: []string{"cannot use", "HTTP 200", "invalid JSON", "base URL"}},
		{name: "wrong dimensions", extra: ":dims=4", status: 502, code: "embedder-failed", calls: 1,
			respond: func(w http.ResponseWriter, vecs [][]float32, p fakeProvider) { p.ok(w, vecs) },
			detail:  []string{"cannot use", "3 dimensions, want 4", "dimensions"}},
		{name: "connection refused", status: 503, code: "embedder-unavailable", retryAfter: "5",
			detail: []string{"did not answer", "connection refused after 3 attempts", "base URL", "retry"}},
		{name: "503 repeated", respond: fail(503, ""), status: 503, code: "embedder-unavailable", calls: 3, retryAfter: "5",
			detail: []string{"upstream HTTP 503 Service Unavailable after 3 attempts", "retry"}},
		{name: "429 asking for a minute", respond: fail(429, "60"), status: 503, code: "embedder-unavailable", calls: 1, retryAfter: "60",
			detail: []string{"rate-limited", "HTTP 429 Too Many Requests"}},
		{name: "too slow for the request deadline", requestTimeout: 300 * time.Millisecond,
			status: 503, code: "embedder-unavailable", calls: 1, retryAfter: "5",
			respond: func(w http.ResponseWriter, vecs [][]float32, p fakeProvider) {
				time.Sleep(time.Second)
				p.ok(w, vecs)
			},
			detail: []string{"did not answer", "deadline passed"}},
	}
	for _, p := range fakeProviders {
		for _, tt := range tests {
			t.Run(p.kind+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				var calls atomic.Int32
				upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					calls.Add(1)
					var req struct{ Input []string }
					if r.URL.Path != p.path || json.NewDecoder(r.Body).Decode(&req) != nil {
						http.Error(w, "wrong request", http.StatusTeapot)
						return
					}
					vecs := make([][]float32, len(req.Input))
					for i := range vecs {
						vecs[i] = []float32{1, float32(i), 0}
					}
					tt.respond(w, vecs, p)
				}))
				t.Cleanup(upstream.Close)
				if tt.respond == nil {
					upstream.Close() // nothing listens on its port any more
				}
				e, logs := embedderEnv(t, p, upstream.URL, tt.extra, tt.requestTimeout)
				e.define(`{"id":"search","type":"semantic","strategy":{"kind":"topK"}}`)
				e.define(`{"id":"docs","type":"semantic","strategy":{"kind":"topK"},"corpus":true}`)

				check := func(what string, r response) {
					t.Helper()
					if r.status != tt.status {
						t.Fatalf("%s: status %d, want %d: %s", what, r.status, tt.status, r.body)
					}
					pr := r.json(t)
					if pr["code"] != tt.code || pr["type"] != "/problems/"+tt.code || pr["status"] != float64(tt.status) || pr["title"] == "" {
						t.Errorf("%s: problem %s, want code %s", what, r.body, tt.code)
					}
					detail, _ := pr["detail"].(string)
					for _, want := range append([]string{`embedder "` + p.id + `"`}, tt.detail...) {
						if !strings.Contains(detail, want) {
							t.Errorf("%s: detail %q lacks %q", what, detail, want)
						}
					}
					if pr["embedder"] != p.id {
						t.Errorf("%s: embedder member = %v, want %q", what, pr["embedder"], p.id)
					}
					if pr["requestId"] != "test-request" {
						t.Errorf("%s: requestId = %v", what, pr["requestId"])
					}
					if got := r.header.Get("Retry-After"); got != tt.retryAfter {
						t.Errorf("%s: Retry-After %q, want %q", what, got, tt.retryAfter)
					}
					host := strings.TrimPrefix(upstream.URL, "http://")
					for _, leak := range []string{upstreamKey, "SECRETKEY", upstreamSecret, "Incorrect API key", host, "127.0.0.1",
						"store", "context deadline", "provider returned", "dial tcp"} {
						if strings.Contains(string(r.body), leak) {
							t.Errorf("%s: response leaks %q: %s", what, leak, r.body)
						}
					}
				}
				before := calls.Load()
				r, _ := e.turn("c", `{`+qa+`}`)
				check("turn", r)
				if n := calls.Load() - before; tt.calls > 0 && n != tt.calls {
					t.Errorf("turn: the provider saw %d requests, want %d", n, tt.calls)
				}
				r, _ = e.recall("c", `{"query":"refund policy","memories":["search"]}`)
				check("recall", r)
				r = e.do("POST", "/v1/memories/docs/documents", "", `{"documents":[{"id":"refunds","text":"Refunds are issued within 14 days."}]}`)
				check("index documents", r)

				// The operator's log has the embedder's own (log-safe)
				// message with the request id, and no secret either.
				log := logs.String()
				if !strings.Contains(log, `"requestId":"test-request"`) || !strings.Contains(log, `embedder \"`+p.id+`\"`) {
					t.Errorf("log lacks the request id or the embedder's error:\n%s", log)
				}
				for _, leak := range []string{upstreamKey, upstreamSecret} {
					if strings.Contains(log, leak) {
						t.Errorf("log leaks %q", leak)
					}
				}
			})
		}
	}
}

// TestEmbedderRecovers checks that embedder failures are per request: once
// the provider answers again, so does the API.
func TestEmbedderRecovers(t *testing.T) {
	t.Parallel()
	p := fakeProviders[0]
	var down atomic.Bool
	down.Store(true)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var req struct{ Input []string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		vecs := make([][]float32, len(req.Input))
		for i := range vecs {
			vecs[i] = []float32{1, float32(i), 0}
		}
		p.ok(w, vecs)
	}))
	t.Cleanup(upstream.Close)
	e, _ := embedderEnv(t, p, upstream.URL, "", 0)
	e.define(`{"id":"search","type":"semantic","strategy":{"kind":"topK"}}`)
	if r, _ := e.turn("c", `{`+qa+`}`); r.status != 502 {
		t.Fatalf("turn while refused: %d %s", r.status, r.body)
	}
	down.Store(false)
	if r, tr := e.turn("c", `{`+qa+`}`); r.status != 201 || tr.Turn != 1 {
		t.Fatalf("turn after recovery: %d %s", r.status, r.body)
	}
	if r, _ := e.recall("c", `{"query":"refund policy","memories":["search"]}`); r.status != 200 {
		t.Fatalf("recall after recovery: %d %s", r.status, r.body)
	}
}

// downStore is an in-memory store whose backend has gone away.
type downStore struct{ app.Store }

func (downStore) ListMemories(context.Context, string, string, int) ([]core.Memory, error) {
	return nil, fmt.Errorf("list memories: connection lost: %w", core.ErrUnavailable)
}

// TestStoreUnavailableStillNamesTheStore guards the other 503: an
// unreachable store keeps its own code, detail and Retry-After.
func TestStoreUnavailableStillNamesTheStore(t *testing.T) {
	t.Parallel()
	e := setup(t, func(o *options) { o.store = downStore{memory.New()} })
	r := e.do("GET", "/v1/memories", "", "")
	pr := r.json(t)
	if r.status != 503 || pr["code"] != "unavailable" || r.header.Get("Retry-After") != "1" {
		t.Fatalf("store down: %d Retry-After %q: %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if detail, _ := pr["detail"].(string); !strings.Contains(detail, "store") || strings.Contains(detail, "embedder") {
		t.Errorf("detail %q should name the store", detail)
	}
	if strings.Contains(string(r.body), "connection lost") {
		t.Errorf("503 leaks the wrapped error: %s", r.body)
	}
}
