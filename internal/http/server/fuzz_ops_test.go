package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/gen"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
)

// The fuzz targets below post arbitrary bytes, as tenant acme, to every
// operation that takes a JSON body, through the full handler over the
// in-memory store. For every input:
//
//   - the status is one the spec declares for the operation, and never 5xx;
//   - the response matches the spec (status, headers, body schema);
//   - every non-2xx body is problem+json with a `code`;
//   - tenant globex, which never writes anything, still sees nothing:
//     no memories, no entries, no runs, and a 404 for whatever acme created.
//
// `go test -fuzz '^FuzzPostTurn$'` explores one; plain `go test` runs the
// seeds (the spec's request examples for the operation plus hostile shapes).

// fuzzRig is one server with two tenants and acme's fixtures: memories of
// every kind, a document corpus, an open run and a stored turn 1 of
// conversation c1.
type fuzzRig struct {
	h      http.Handler
	router routers.Router
	spec   *openapi3.T
}

const (
	fuzzConv = "c1"
	fuzzRun  = "run-fuzz"
)

func newFuzzRig(tb testing.TB) *fuzzRig {
	tb.Helper()
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := server.NewServer(server.Deps{
		App: app.New(memory.New(), core.Capabilities{
			Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Model: "footprint-hash-v1", Dimensions: 384, Default: true}},
		}, app.WithEmbedders(hash)),
		APIKeys:      []server.APIKey{{Tenant: "acme", Key: keyAcme}, {Tenant: "globex", Key: keyGlobex}},
		MaxBodyBytes: 1 << 16,
		CursorSecret: []byte("fuzz-secret-fuzz-secret"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	spec, err := gen.GetSpec()
	if err != nil {
		tb.Fatal(err)
	}
	spec.Servers = nil
	router, err := gorillamux.NewRouter(spec)
	if err != nil {
		tb.Fatal(err)
	}
	rig := &fuzzRig{h: h, router: router, spec: spec}
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":20}}`},
		{"POST", "/v1/memories", `{"id":"why","type":"causal","strategy":{"kind":"topK"}}`},
		{"POST", "/v1/memories", `{"id":"facts","type":"semantic","strategy":{"kind":"extract"}}`},
		{"POST", "/v1/memories", `{"id":"search","type":"semantic","strategy":{"kind":"topK"}}`},
		{"POST", "/v1/memories", `{"id":"story","type":"narrative","strategy":{"kind":"window"}}`},
		{"POST", "/v1/memories", `{"id":"docs","type":"semantic","strategy":{"kind":"topK"},"corpus":true}`},
		{"POST", "/v1/conversations/" + fuzzConv + "/turns", `{"messages":[{"role":"user","content":"My name is Ada. Where is order A-1043?"},{"role":"assistant","content":"It ships tomorrow."}]}`},
		{"POST", "/v1/runs", `{"runId":"` + fuzzRun + `","conversationId":"` + fuzzConv + `","turn":1}`},
	} {
		if rec := rig.do(s.method, s.path, keyAcme, []byte(s.body)); rec.Code != 201 {
			tb.Fatalf("fixture %s %s: %d %s", s.method, s.path, rec.Code, rec.Body)
		}
	}
	return rig
}

func (rig *fuzzRig) do(method, path, key string, body []byte) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	rig.h.ServeHTTP(rec, req)
	return rec
}

// check holds the response to method path (with body) to the spec and the
// problem contract.
func (rig *fuzzRig) check(t *testing.T, method, path string, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	route, params, err := rig.router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s: no route in the spec: %v", method, path, err)
	}
	if rec.Code >= 500 {
		t.Fatalf("%s %s with %q: status %d: %s", method, path, body, rec.Code, rec.Body)
	}
	if route.Operation.Responses.Value(strconv.Itoa(rec.Code)) == nil {
		t.Fatalf("%s %s with %q: status %d is not declared for %s: %s", method, path, body, rec.Code, route.Operation.OperationID, rec.Body)
	}
	if rec.Code >= 300 {
		if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("%s %s: status %d with Content-Type %q", method, path, rec.Code, ct)
		}
		var p map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("%s %s: status %d body is not JSON: %q", method, path, rec.Code, rec.Body)
		}
		if c, _ := p["code"].(string); c == "" {
			t.Fatalf("%s %s: status %d problem without a code: %q", method, path, rec.Code, rec.Body)
		}
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 rec.Code,
		Header:                 rec.Header(),
		Body:                   io.NopCloser(bytes.NewReader(rec.Body.Bytes())),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Fatalf("%s %s with %q: response does not match the spec (status %d): %v\nbody: %s",
			method, path, body, rec.Code, err, truncateForLog(rec.Body.String()))
	}
}

// isolated asserts that globex, which never wrote anything, sees nothing of
// acme's: its lists are empty and what acme just created is a 404.
func (rig *fuzzRig) isolated(t *testing.T, created string) {
	t.Helper()
	lists := []struct{ path, field string }{
		{"/v1/memories", "memories"},
		{"/v1/conversations/" + fuzzConv + "/entries", "entries"},
		{"/v1/runs", "runs"},
	}
	for _, l := range lists {
		rec := rig.do("GET", l.path, keyGlobex, nil)
		if rec.Code != 200 {
			t.Fatalf("globex GET %s: %d %s", l.path, rec.Code, rec.Body)
		}
		var page map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatalf("globex GET %s: %v", l.path, err)
		}
		if items, _ := page[l.field].([]any); len(items) != 0 {
			t.Fatalf("globex sees acme's %s: %s", l.field, truncateForLog(rec.Body.String()))
		}
	}
	for _, path := range []string{"/v1/memories/chat", "/v1/runs/" + fuzzRun, "/v1/conversations/" + fuzzConv + "/turns/1/explain"} {
		if rec := rig.do("GET", path, keyGlobex, nil); rec.Code != 404 {
			t.Fatalf("globex GET %s: %d, want 404: %s", path, rec.Code, truncateForLog(rec.Body.String()))
		}
	}
	if created != "" && !strings.Contains(created, "?") {
		if rec := rig.do("GET", created, keyGlobex, nil); rec.Code != 404 {
			t.Fatalf("globex GET %s (created by acme): %d, want 404", created, rec.Code)
		}
	}
}

// specExamples returns the JSON request examples the spec gives for
// method path (a path template as written in the spec).
func specExamples(tb testing.TB, method, template string) [][]byte {
	tb.Helper()
	spec, err := gen.GetSpec()
	if err != nil {
		tb.Fatal(err)
	}
	item := spec.Paths.Value(template)
	if item == nil {
		tb.Fatalf("spec has no path %s", template)
	}
	op := item.GetOperation(method)
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		tb.Fatalf("spec has no %s %s with a request body", method, template)
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil {
		tb.Fatalf("%s %s: no application/json body", method, template)
	}
	var out [][]byte
	add := func(v any) {
		if b, err := json.Marshal(v); err == nil {
			out = append(out, b)
		}
	}
	if mt.Example != nil {
		add(mt.Example)
	}
	for _, ex := range mt.Examples {
		if ex != nil && ex.Value != nil {
			add(ex.Value.Value)
		}
	}
	if len(out) == 0 {
		tb.Fatalf("%s %s: the spec gives no request example", method, template)
	}
	return out
}

// hostileSeeds are shapes every body parser should survive.
var hostileSeeds = []string{
	``, `null`, `[]`, `{}`, `"x"`, `0`, `{"a":`, `{"messages":null}`,
	`{"messages":[{"role":"user","content":"` + "\x00\xff\xfe" + `"}]}`,
	`{"turnNumber":1e999}`, `{"turnNumber":-9223372036854775809}`,
	`{"query":{"text":""},"limit":1e308}`,
	`{"events":[{"type":"x","payload":{"embedding":[1e308,-1e308,0]}}]}`,
	`{"documents":[{"id":"\u0000","text":"` + strings.Repeat("a", 300) + `"}]}`,
	`{"excluded":[null],"answer":"\ud800","flipped":"yes"}`,
	`{"__proto__":{"x":1},"constructor":{}}`,
	strings.Repeat(`[`, 2000) + strings.Repeat(`]`, 2000),
	`{"a":` + strings.Repeat(`{"a":`, 500) + `1` + strings.Repeat(`}`, 501),
}

// fuzzOp is one fuzz target: post each input to path (also the template it
// matches in the spec) as acme, then check the response and isolation.
func fuzzOp(f *testing.F, method, template, path string) {
	for _, ex := range specExamples(f, method, template) {
		f.Add(ex)
	}
	for _, s := range hostileSeeds {
		f.Add([]byte(s))
	}
	rig := newFuzzRig(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := rig.do(method, path, keyAcme, body)
		rig.check(t, method, path, body, rec)
		rig.isolated(t, rec.Header().Get("Location"))
	})
}

func FuzzPostTurn(f *testing.F) {
	fuzzOp(f, "POST", "/v1/conversations/{conversationId}/turns", "/v1/conversations/"+fuzzConv+"/turns?principal=p1")
}

func FuzzRecall(f *testing.F) {
	fuzzOp(f, "POST", "/v1/conversations/{conversationId}/recall", "/v1/conversations/"+fuzzConv+"/recall")
}

func FuzzIndexDocuments(f *testing.F) {
	fuzzOp(f, "POST", "/v1/memories/{memoryId}/documents", "/v1/memories/docs/documents")
}

func FuzzOpenRun(f *testing.F) {
	fuzzOp(f, "POST", "/v1/runs", "/v1/runs")
}

func FuzzAppendEvents(f *testing.F) {
	fuzzOp(f, "POST", "/v1/runs/{runId}/events", "/v1/runs/"+fuzzRun+"/events")
}

func FuzzFinishRun(f *testing.F) {
	fuzzOp(f, "POST", "/v1/runs/{runId}/finish", "/v1/runs/"+fuzzRun+"/finish")
}

func FuzzRecordAblation(f *testing.F) {
	fuzzOp(f, "POST", "/v1/conversations/{conversationId}/turns/{turn}/ablations", "/v1/conversations/"+fuzzConv+"/turns/1/ablations")
}

func FuzzReplaceMemory(f *testing.F) {
	fuzzOp(f, "PUT", "/v1/memories/{memoryId}", "/v1/memories/chat")
}
