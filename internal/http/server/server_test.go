package server_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
)

var update = flag.Bool("update", false, "rewrite golden files")

const (
	keyAcme   = "acme-key-0123456789abcdef"
	keyGlobex = "globex-key-0123456789abcdef"
)

type env struct {
	t   *testing.T
	srv *httptest.Server
}

type options struct {
	keys  []server.APIKey
	caps  core.Capabilities
	cors  []string
	store app.Store
	svc   []app.Option
	// maxBody is the server's body limit; 0: 4096 bytes.
	maxBody int64
}

// setup starts the real handler over an in-memory store.
func setup(t *testing.T, opts ...func(*options)) *env {
	t.Helper()
	o := options{caps: core.Capabilities{
		Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Model: "footprint-hash-v1", Dimensions: 384, Default: true, Description: "lexical"}},
	}}
	for _, f := range opts {
		f(&o)
	}
	if o.store == nil {
		o.store = memory.New()
	}
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.NewServer(server.Deps{
		App:          app.New(o.store, o.caps, append([]app.Option{app.WithEmbedders(hash)}, o.svc...)...),
		APIKeys:      o.keys,
		CORSOrigins:  o.cors,
		MaxBodyBytes: cmp.Or(o.maxBody, 4096),
		CursorSecret: []byte("test-secret-test-secret"),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(specGate(t, h))
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv}
}

func withKeys(o *options) {
	o.keys = []server.APIKey{{Tenant: "acme", Key: keyAcme}, {Tenant: "globex", Key: keyGlobex}}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

func (e *env) do(method, path, key, body string, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("X-Request-Id", "test-request")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := response{status: res.StatusCode, header: res.Header, body: b}
	if res.StatusCode >= 400 {
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
			e.t.Errorf("%s %s: status %d with Content-Type %q, want application/problem+json", method, path, res.StatusCode, ct)
		}
		p := r.json(e.t)
		for _, k := range []string{"type", "title", "status", "code"} {
			if _, ok := p[k]; !ok {
				e.t.Errorf("%s %s: problem lacks %q: %s", method, path, k, b)
			}
		}
	}
	if res.Header.Get("X-Request-Id") != "test-request" {
		e.t.Errorf("%s %s: X-Request-Id not echoed", method, path)
	}
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatalf("golden %s: not JSON: %v", name, err)
	}
	buf.WriteByte('\n')
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden file (run go test -update): %v", err)
	}
	if !bytes.Equal(want, buf.Bytes()) {
		t.Errorf("%s differs from golden:\n got: %s\nwant: %s", name, buf.Bytes(), want)
	}
}

func TestProblemGoldens(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.do("POST", "/v1/memories", "", `{"id":"taken","type":"episodic","strategy":{"kind":"window"}}`)
	tests := []struct {
		name, method, path, body string
		status                   int
		headers                  []string
	}{
		{"strategy-bare-string", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":"window"}`, 422, nil},
		{"strategy-null", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":null}`, 422, nil},
		{"strategy-empty-object", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{}}`, 422, nil},
		{"hybrid-empty", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"hybrid","strategies":[]}}`, 422, nil},
		{"hybrid-nested-bad", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"hybrid","strategies":[{"kind":"window"},42]}}`, 422, nil},
		{"topk-on-episodic", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"topK","topK":3}}`, 422, nil},
		{"summarize-no-llm", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"summarize","recent":6,"model":"m"}}`, 422, nil},
		{"summarize-in-hybrid", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"hybrid","strategies":[{"kind":"window"},{"kind":"summarize","llm":"x"}]}}`, 422, nil},
		{"window-size-zero", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":0}}`, 422, nil},
		{"unknown-kind", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"lru"}}`, 422, nil},
		{"unknown-top-level-field", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window"},"colour":"red"}`, 400, nil},
		{"missing-type", "POST", "/v1/memories", `{"id":"chat","strategy":{"kind":"window"}}`, 400, nil},
		{"wrong-type-of-id", "POST", "/v1/memories", `{"id":7,"type":"episodic","strategy":{"kind":"window"}}`, 400, nil},
		{"bad-type-enum", "POST", "/v1/memories", `{"id":"chat","type":"vector","strategy":{"kind":"window"}}`, 400, nil},
		{"malformed-json", "POST", "/v1/memories", `{"id":"chat",`, 400, nil},
		{"duplicate-id", "POST", "/v1/memories", `{"id":"taken","type":"episodic","strategy":{"kind":"window"}}`, 409, nil},
		{"unknown-strategy-404", "GET", "/v1/strategies/lru", "", 404, nil},
		{"memory-404", "GET", "/v1/memories/nope", "", 404, nil},
		{"bad-limit", "GET", "/v1/memories?limit=500", "", 400, nil},
		{"bad-cursor", "GET", "/v1/memories?cursor=abc", "", 400, nil},
		{"no-route", "GET", "/v2/nothing", "", 404, nil},
		{"unsupported-media", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`, 415, []string{"Content-Type", "text/plain"}},
		{"too-large", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window"},"description":"` + strings.Repeat("x", 5000) + `"}`, 413, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, "", tc.body, tc.headers...)
			if r.status != tc.status {
				t.Errorf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			golden(t, tc.name, r.body)
		})
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	e := setup(t, withKeys)
	for _, key := range []string{"", "wrong-key-0123456789"} {
		r := e.do("GET", "/v1/memories", key, "")
		if r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("key %q: status %d, WWW-Authenticate %q", key, r.status, r.header.Get("WWW-Authenticate"))
		}
	}
	if r := e.do("GET", "/healthz", "", ""); r.status != 200 {
		t.Errorf("healthz needs no key; got %d", r.status)
	}
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := setup(t, withKeys)
	if r := e.do("POST", "/v1/memories", keyAcme, `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":5}}`); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/memories/chat", ""},
		{"PUT", "/v1/memories/chat", `{"type":"episodic","strategy":{"kind":"window"}}`},
		{"DELETE", "/v1/memories/chat", ""},
	} {
		if r := e.do(c.method, c.path, keyGlobex, c.body); r.status != 404 {
			t.Errorf("globex %s %s: %d, want 404 (indistinguishable from absent)", c.method, c.path, r.status)
		}
	}
	if r := e.do("GET", "/v1/memories", keyGlobex, ""); len(r.json(t)["memories"].([]any)) != 0 {
		t.Errorf("globex lists acme's memories: %s", r.body)
	}
	// Globex may define the same id independently.
	if r := e.do("POST", "/v1/memories", keyGlobex, `{"id":"chat","type":"semantic","strategy":{"kind":"topK"}}`); r.status != 201 {
		t.Errorf("globex create same id: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/v1/memories/chat", keyAcme, ""); r.json(t)["type"] != "episodic" {
		t.Errorf("acme's memory changed: %s", r.body)
	}
	// A cursor issued to acme is refused for globex.
	for _, id := range []string{"a1", "a2", "a3"} {
		e.do("POST", "/v1/memories", keyAcme, `{"id":"`+id+`","type":"episodic","strategy":{"kind":"window"}}`)
	}
	page := e.do("GET", "/v1/memories?limit=1", keyAcme, "").json(t)
	cursor, _ := page["nextCursor"].(string)
	if cursor == "" {
		t.Fatalf("no nextCursor on a partial page: %v", page)
	}
	if r := e.do("GET", "/v1/memories?cursor="+cursor, keyGlobex, ""); r.status != 400 || r.json(t)["code"] != "invalid-cursor" {
		t.Errorf("acme's cursor under globex: %d %s", r.status, r.body)
	}
}

func TestPaging(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, id := range []string{"e", "a", "d", "b", "c"} {
		if r := e.do("POST", "/v1/memories", "", `{"id":"`+id+`","type":"episodic","strategy":{"kind":"window"}}`); r.status != 201 {
			t.Fatalf("create %s: %d", id, r.status)
		}
	}
	var got []string
	path := "/v1/memories?limit=2"
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("paging does not terminate")
		}
		body := e.do("GET", path, "", "").json(t)
		for _, m := range body["memories"].([]any) {
			got = append(got, m.(map[string]any)["id"].(string))
		}
		next, ok := body["nextCursor"].(string)
		if !ok {
			break
		}
		path = "/v1/memories?limit=2&cursor=" + next
	}
	if strings.Join(got, ",") != "a,b,c,d,e" {
		t.Errorf("paged ids = %v", got)
	}
	// A tampered cursor is refused.
	body := e.do("GET", "/v1/memories?limit=2", "", "").json(t)
	c := []byte(body["nextCursor"].(string))
	c[len(c)-2] ^= 1
	if r := e.do("GET", "/v1/memories?cursor="+string(c), "", ""); r.status != 400 {
		t.Errorf("tampered cursor: %d", r.status)
	}
}

func TestMemoryLifecycle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// Dry run validates and stores nothing.
	r := e.do("POST", "/v1/memories?dryRun=true", "", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":5}}`)
	if r.status != 200 {
		t.Fatalf("dry run: %d %s", r.status, r.body)
	}
	// Nothing was stored, so nothing claims a version or a time.
	draft := r.json(t)
	for _, k := range []string{"version", "createdAt", "updatedAt"} {
		if v, ok := draft[k]; ok {
			t.Errorf("dry run answered %s %v for a memory it did not store", k, v)
		}
	}
	if draft["id"] != "chat" || draft["flavor"] != "memory" {
		t.Errorf("dry run = %v, want the normalised definition", draft)
	}
	if r := e.do("GET", "/v1/memories/chat", "", ""); r.status != 404 {
		t.Fatalf("dry run stored the memory")
	}
	r = e.do("POST", "/v1/memories", "", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":5},"description":"recent turns"}`)
	if r.status != 201 || r.header.Get("Location") != "/v1/memories/chat" {
		t.Fatalf("create: %d %s %v", r.status, r.body, r.header)
	}
	created := r.json(t)
	if created["version"].(float64) != 1 || created["flavor"] != "memory" {
		t.Errorf("created = %v", created)
	}
	if strategy, _ := json.Marshal(created["strategy"]); string(strategy) != `{"kind":"window","size":5}` {
		t.Errorf("strategy = %s", strategy)
	}
	// Dry run now reports the id as taken.
	if r := e.do("POST", "/v1/memories?dryRun=true", "", `{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`); r.status != 409 {
		t.Errorf("dry run on a taken id: %d", r.status)
	}
	// A GET body can be PUT back with a change.
	got := e.do("GET", "/v1/memories/chat", "", "").json(t)
	got["strategy"] = map[string]any{"kind": "budget", "maxEntries": 3}
	body, _ := json.Marshal(got)
	r = e.do("PUT", "/v1/memories/chat", "", string(body))
	if r.status != 200 || r.json(t)["version"].(float64) != 2 {
		t.Fatalf("replace: %d %s", r.status, r.body)
	}
	// The stale version is now refused.
	if r := e.do("PUT", "/v1/memories/chat", "", string(body)); r.status != 409 || r.json(t)["code"] != "version-conflict" {
		t.Errorf("stale version: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/v1/memories/chat", "", `{"type":"semantic","strategy":{"kind":"window"}}`); r.status != 422 || r.json(t)["path"] != "type" {
		t.Errorf("type change: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", "/v1/memories/chat", "", `{"id":"other","type":"episodic","strategy":{"kind":"window"}}`); r.status != 422 || r.json(t)["path"] != "id" {
		t.Errorf("rename: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", "/v1/memories/chat?purge=true", "", ""); r.status != 204 {
		t.Errorf("delete: %d", r.status)
	}
	if r := e.do("DELETE", "/v1/memories/chat", "", ""); r.status != 404 {
		t.Errorf("second delete: %d", r.status)
	}
}

func TestCatalogue(t *testing.T) {
	t.Parallel()
	e := setup(t)
	r := e.do("GET", "/v1/strategies", "", "")
	var list struct {
		Strategies []struct {
			Kind      string   `json:"kind"`
			Offerable bool     `json:"offerable"`
			Missing   []string `json:"missing"`
			Example   map[string]any
			Params    map[string]any
		} `json:"strategies"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, s := range list.Strategies {
		kinds = append(kinds, s.Kind)
		if s.Kind == "summarize" && (s.Offerable || strings.Join(s.Missing, ",") != "llm") {
			t.Errorf("summarize without an LLM: offerable %v missing %v", s.Offerable, s.Missing)
		}
		if s.Example["kind"] != s.Kind || s.Params["type"] != "object" {
			t.Errorf("%s: example %v params %v", s.Kind, s.Example, s.Params)
		}
	}
	if strings.Join(kinds, ",") != "window,budget,summarize,topK,extract,decay,hybrid" {
		t.Errorf("order = %v", kinds)
	}
	tag := r.header.Get("ETag")
	if tag == "" {
		t.Fatal("no ETag")
	}
	if r := e.do("GET", "/v1/strategies", "", "", "If-None-Match", tag); r.status != 304 || len(r.body) != 0 {
		t.Errorf("matching If-None-Match: %d %q", r.status, r.body)
	}
	if r := e.do("GET", "/v1/strategies", "", "", "If-None-Match", `"other"`); r.status != 200 {
		t.Errorf("non-matching If-None-Match: %d", r.status)
	}
	filtered := e.do("GET", "/v1/strategies?type=causal", "", "").json(t)["strategies"].([]any)
	if len(filtered) != 1 || filtered[0].(map[string]any)["kind"] != "topK" {
		t.Errorf("type=causal: %v", filtered)
	}
	offerable := e.do("GET", "/v1/strategies?offerable=true", "", "").json(t)["strategies"].([]any)
	if len(offerable) != 6 {
		t.Errorf("offerable=true: %d entries, want 6 (all but summarize)", len(offerable))
	}
	one := e.do("GET", "/v1/strategies/topK", "", "")
	if one.status != 200 || one.json(t)["kind"] != "topK" || one.header.Get("ETag") == "" {
		t.Errorf("GET topK: %d %s", one.status, one.body)
	}
	caps := e.do("GET", "/v1/capabilities", "", "")
	if caps.status != 200 || caps.header.Get("ETag") == "" {
		t.Fatalf("capabilities: %d", caps.status)
	}
	if r := e.do("GET", "/v1/capabilities", "", "", "If-None-Match", caps.header.Get("ETag")); r.status != 304 {
		t.Errorf("capabilities 304: %d", r.status)
	}
}

func TestCatalogueWithLLM(t *testing.T) {
	t.Parallel()
	e := setup(t, func(o *options) { o.caps.LLMs = []core.LLMInfo{{ID: "openai", Model: "gpt-4o-mini"}} })
	s := e.do("GET", "/v1/strategies/summarize", "", "").json(t)
	if s["offerable"] != true || len(s["missing"].([]any)) != 0 {
		t.Errorf("summarize with an LLM: %v", s)
	}
	ex, _ := json.Marshal(s["example"])
	if r := e.do("POST", "/v1/memories", "", `{"id":"sum","type":"episodic","strategy":`+string(ex)+`}`); r.status != 201 {
		t.Errorf("the example does not define: %d %s", r.status, r.body)
	}
}

func TestCORS(t *testing.T) {
	t.Parallel()
	e := setup(t, func(o *options) { o.cors = []string{"https://app.example.com"} })
	pre := func(origin string) response {
		return e.do("OPTIONS", "/v1/strategies", "", "", "Origin", origin, "Access-Control-Request-Method", "GET")
	}
	if r := pre("https://app.example.com"); r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("allowed origin not allowed: %v", r.header)
	}
	if r := pre("https://evil.example.com"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("other origin allowed: %v", r.header)
	}
	r := e.do("GET", "/v1/strategies", "", "", "Origin", "https://app.example.com")
	if r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "Etag") && !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "ETag") {
		t.Errorf("simple request CORS headers: %v", r.header)
	}
}

func TestOpsEndpoints(t *testing.T) {
	t.Parallel()
	e := setup(t)
	if r := e.do("GET", "/readyz", "", ""); r.status != 200 {
		t.Errorf("readyz: %d", r.status)
	}
	if r := e.do("GET", "/openapi.yaml", "", ""); r.status != 200 || !bytes.HasPrefix(r.body, []byte("openapi: 3.0")) {
		t.Errorf("openapi.yaml: %d %.40s", r.status, r.body)
	}
	if r := e.do("GET", "/docs/", "", ""); r.status != 200 || !bytes.Contains(r.body, []byte("/openapi.yaml")) {
		t.Errorf("docs: %d", r.status)
	}
	e.do("GET", "/v1/strategies", "", "")
	if r := e.do("GET", "/metrics", "", ""); r.status != 200 || !bytes.Contains(r.body, []byte(`footprint_http_requests_total{method="GET",route="/v1/strategies",status="200"}`)) {
		t.Errorf("metrics: %d\n%s", r.status, r.body)
	}
}
