// Package api_test checks the public contract, api/openapi.yaml: that it is a
// valid OpenAPI 3.0 document whose examples match their schemas, that it keeps
// the house rules a client relies on (bounded strings and arrays, problem+json
// errors, examples everywhere), and that the generated code embeds this very
// file.
package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/footprint/footprint/internal/http/gen"
)

const specFile = "openapi.yaml"

// load reads the spec from disk and fails the test if it cannot be parsed.
func load(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(specFile)
	if err != nil {
		t.Fatalf("load %s: %v", specFile, err)
	}
	return doc
}

// operation is one method on one path, named for messages.
type operation struct {
	name   string // e.g. "POST /v1/memories"
	path   string
	method string
	op     *openapi3.Operation
}

// operations lists every operation in a stable order.
func operations(doc *openapi3.T) []operation {
	var out []operation
	for _, path := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(path)
		for method, op := range item.Operations() {
			out = append(out, operation{name: method + " " + path, path: path, method: method, op: op})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func TestSpecIsValid(t *testing.T) {
	t.Parallel()
	doc := load(t)
	err := doc.Validate(context.Background(),
		openapi3.EnableExamplesValidation(),
		openapi3.EnableSchemaFormatValidation(),
		openapi3.EnableSchemaDefaultsValidation(),
		openapi3.EnableSchemaPatternValidation(),
		openapi3.EnableMultiError(),
	)
	if err != nil {
		t.Fatalf("%s does not validate:\n%v", specFile, err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
}

// TestFirstServerIsRelative: clients take the first server by default, and the /docs/ page
// (Swagger UI, served by the binary) resolves a relative one against the address it was
// loaded from, so "Try it out" reaches the server that served the page on any host and port.
// An absolute first server would send it to that one address instead.
func TestFirstServerIsRelative(t *testing.T) {
	t.Parallel()
	doc := load(t)
	if len(doc.Servers) == 0 || doc.Servers[0].URL != "/" {
		t.Fatalf("servers[0] = %v, want the relative URL /", doc.Servers)
	}
}

// TestEmbeddedSpecIsCurrent catches a spec edited without regenerating: the
// spec embedded in gen.go must be this file.
func TestEmbeddedSpecIsCurrent(t *testing.T) {
	t.Parallel()
	embedded, err := gen.GetSpec()
	if err != nil {
		t.Fatalf("decode embedded spec: %v", err)
	}
	want, err := json.Marshal(load(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(embedded)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("internal/http/gen/gen.go embeds a different spec than %s; run `go generate ./internal/http/gen/`", specFile)
	}
}

var verbNoun = regexp.MustCompile(`^(get|list|create|replace|update|delete|post|append|finish|explain|recall|forget|index|open|record)[A-Z][A-Za-z]*$`)

// bareVerbs are the operations whose noun is the path itself: `recall` on
// /v1/conversations/{conversationId}/recall reads better than a made-up
// noun. Each is pinned to its one operation, so the exception cannot spread.
var bareVerbs = map[string]string{
	"recall": "POST /v1/conversations/{conversationId}/recall",
}

func TestOperationsAreDocumented(t *testing.T) {
	t.Parallel()
	doc := load(t)
	seen := map[string]string{}
	for _, o := range operations(doc) {
		op := o.op
		if !verbNoun.MatchString(op.OperationID) && bareVerbs[op.OperationID] != o.name {
			t.Errorf("%s: operationId %q is not verbNoun", o.name, op.OperationID)
		}
		if prev, dup := seen[op.OperationID]; dup {
			t.Errorf("%s: operationId %q already used by %s", o.name, op.OperationID, prev)
		}
		seen[op.OperationID] = o.name
		if strings.TrimSpace(op.Summary) == "" {
			t.Errorf("%s: no summary", o.name)
		}
		if strings.TrimSpace(op.Description) == "" {
			t.Errorf("%s: no description", o.name)
		}
		if len(op.Tags) == 0 {
			t.Errorf("%s: no tags", o.name)
		}
	}
}

func TestSecurity(t *testing.T) {
	t.Parallel()
	doc := load(t)
	if len(doc.Security) != 1 || doc.Security[0]["bearerAuth"] == nil {
		t.Fatalf("global security = %v, want bearerAuth", doc.Security)
	}
	open := []string{"/healthz", "/readyz"}
	for _, o := range operations(doc) {
		public := slices.Contains(open, o.path)
		switch {
		case public && (o.op.Security == nil || len(*o.op.Security) != 0):
			t.Errorf("%s: want `security: []`", o.name)
		case !public && o.op.Security != nil:
			t.Errorf("%s: overrides the global bearerAuth", o.name)
		case !public && o.op.Responses.Status(http.StatusUnauthorized) == nil:
			t.Errorf("%s: authenticated but declares no 401", o.name)
		}
	}
}

// TestExamplesEverywhere: Postman imports examples, so every request body and
// every response with a body has at least one.
func TestExamplesEverywhere(t *testing.T) {
	t.Parallel()
	doc := load(t)
	for _, o := range operations(doc) {
		if rb := o.op.RequestBody; rb != nil {
			for ct, mt := range rb.Value.Content {
				if mt.Example == nil && len(mt.Examples) == 0 {
					t.Errorf("%s: request body %s has no example", o.name, ct)
				}
			}
		}
		for status, resp := range o.op.Responses.Map() {
			for ct, mt := range resp.Value.Content {
				if mt.Example == nil && len(mt.Examples) == 0 {
					t.Errorf("%s: %s response %s has no example", o.name, status, ct)
				}
			}
		}
	}
}

// TestErrorsAreProblems: every 4xx and 5xx is application/problem+json with
// the Problem schema, and its examples agree with the status they document.
func TestErrorsAreProblems(t *testing.T) {
	t.Parallel()
	doc := load(t)
	problem := doc.Components.Schemas["Problem"]
	for _, o := range operations(doc) {
		for status, resp := range o.op.Responses.Map() {
			if status[0] != '4' && status[0] != '5' {
				continue
			}
			where := fmt.Sprintf("%s %s", o.name, status)
			content := resp.Value.Content
			mt := content.Get("application/problem+json")
			if len(content) != 1 || mt == nil {
				t.Errorf("%s: content types %v, want only application/problem+json", where, keys(content))
				continue
			}
			if mt.Schema == nil || mt.Schema.Value != problem.Value {
				t.Errorf("%s: schema is not #/components/schemas/Problem", where)
			}
			for name, value := range exampleValues(mt) {
				p, ok := value.(map[string]any)
				if !ok {
					t.Errorf("%s: example %q is not an object", where, name)
					continue
				}
				if got := fmt.Sprint(p["status"]); got != status {
					t.Errorf("%s: example %q has status %s", where, name, got)
				}
				if got, want := p["type"], "/problems/"+fmt.Sprint(p["code"]); got != want {
					t.Errorf("%s: example %q has type %v, want %s", where, name, got, want)
				}
			}
		}
	}
}

// TestEveryResponseNamesTheRequestId: X-Request-Id is on every response.
func TestEveryResponseNamesTheRequestId(t *testing.T) {
	t.Parallel()
	doc := load(t)
	for _, o := range operations(doc) {
		for status, resp := range o.op.Responses.Map() {
			if resp.Value.Headers["X-Request-Id"] == nil {
				t.Errorf("%s %s: no X-Request-Id header", o.name, status)
			}
		}
	}
}

// TestBounds walks every schema reachable from the document: strings need a
// maxLength (or an enum), arrays a maxItems, and objects that are request
// bodies refuse unknown members.
func TestBounds(t *testing.T) {
	t.Parallel()
	doc := load(t)
	w := &walker{t: t, seen: map[*openapi3.Schema]bool{}}
	for name, s := range doc.Components.Schemas {
		w.walk("#/components/schemas/"+name, s)
	}
	for name, p := range doc.Components.Parameters {
		w.walk("#/components/parameters/"+name, p.Value.Schema)
	}
	for name, h := range doc.Components.Headers {
		w.walk("#/components/headers/"+name, h.Value.Schema)
	}
	for _, o := range operations(doc) {
		for _, p := range o.op.Parameters {
			w.walk(o.name+" parameter "+p.Value.Name, p.Value.Schema)
		}
		if rb := o.op.RequestBody; rb != nil {
			for ct, mt := range rb.Value.Content {
				where := o.name + " request " + ct
				w.walk(where, mt.Schema)
				if s := mt.Schema.Value; s.Type.Is(openapi3.TypeObject) &&
					(s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has) {
					t.Errorf("%s: request object does not set additionalProperties: false", where)
				}
			}
		}
		for status, resp := range o.op.Responses.Map() {
			for ct, mt := range resp.Value.Content {
				w.walk(o.name+" "+status+" "+ct, mt.Schema)
			}
		}
	}
}

type walker struct {
	t    *testing.T
	seen map[*openapi3.Schema]bool
}

func (w *walker) walk(where string, ref *openapi3.SchemaRef) {
	if ref == nil || ref.Value == nil || w.seen[ref.Value] {
		return
	}
	s := ref.Value
	w.seen[s] = true
	switch {
	case s.Type.Is(openapi3.TypeString):
		if s.MaxLength == nil {
			w.t.Errorf("%s: string without maxLength", where)
		}
	case s.Type.Is(openapi3.TypeArray):
		if s.MaxItems == nil {
			w.t.Errorf("%s: array without maxItems", where)
		}
		w.walk(where+"[]", s.Items)
	}
	for name, p := range s.Properties {
		w.walk(where+"."+name, p)
	}
	w.walk(where+"{}", s.AdditionalProperties.Schema)
	for _, group := range []openapi3.SchemaRefs{s.AllOf, s.AnyOf, s.OneOf} {
		for i, sub := range group {
			w.walk(fmt.Sprintf("%s#%d", where, i), sub)
		}
	}
}

// TestAnyJSONValueFields: the six fields that take any JSON value, null included, were a bare
// `nullable: true`, which OpenAPI 3.0.3 gives no effect without a `type` beside it (Redocly
// refuses it). Spelled now as an anyOf of "any value but null" and "null", each must take and
// refuse exactly what the bare `nullable: true` did, and refuse alike: the problem the server
// writes is made from the error (validate.go), so a refusal must keep its field and its cause.
// The values are what the request validator sees: JSON decoded with json.Number for numbers.
func TestAnyJSONValueFields(t *testing.T) {
	t.Parallel()
	s := load(t).Components.Schemas
	fields := map[string]*openapi3.SchemaRef{
		"StrategyInput":         s["StrategyInput"],
		"Decision.evidence":     s["Decision"].Value.Properties["evidence"],
		"ToolCall.args":         s["ToolCall"].Value.Properties["args"],
		"Entry.value":           s["Entry"].Value.Properties["value"],
		"EventInput.payload":    s["EventInput"].Value.Properties["payload"],
		"RecordedEvent.payload": s["RecordedEvent"].Value.Properties["payload"],
	}
	before := &openapi3.Schema{Nullable: true}
	values := []struct {
		json string
		ok   bool
	}{
		{`null`, true}, {`true`, true}, {`false`, true}, {`0`, true}, {`-1.5e300`, true},
		{`""`, true}, {`"text"`, true}, {`[]`, true}, {`[null,1,"a",{}]`, true}, {`{}`, true},
		{`{"kind":"window","size":20}`, true},
		// Past float64 inside the value: the validator does not look there (the handler's
		// binding refuses it, bindProblem); at the top it refuses it itself.
		{`{"a":null,"b":[1e999]}`, true},
		{`1e999`, false}, {`-1e400`, false}, {strings.Repeat("9", 400), false},
	}
	for name, ref := range fields {
		for _, v := range values {
			dec := json.NewDecoder(strings.NewReader(v.json))
			dec.UseNumber()
			var value any
			if err := dec.Decode(&value); err != nil {
				t.Fatalf("%s: %v", v.json, err)
			}
			got := ref.Value.VisitJSON(value, openapi3.VisitAsRequest())
			want := before.VisitJSON(value, openapi3.VisitAsRequest())
			if (got == nil) != v.ok || (want == nil) != v.ok {
				t.Errorf("%s %s: got %v, before %v; want accepted = %v", name, v.json, got, want, v.ok)
				continue
			}
			if got == nil {
				continue
			}
			var gse, wse *openapi3.SchemaError
			if !errors.As(got, &gse) || !errors.As(want, &wse) ||
				gse.SchemaField != wse.SchemaField || !errors.Is(gse.Origin, strconv.ErrRange) || !errors.Is(wse.Origin, strconv.ErrRange) {
				t.Errorf("%s %s: refused with %v, before with %v", name, v.json, got, want)
			}
		}
	}
}

// TestValidatorLetsTheServerTeach runs real requests through kin-openapi's
// request validator (what the server puts in front of the handlers): the
// strategy must reach the handler whatever its shape, so that the server's
// own validator can answer with a teaching 422, while the rest of the body is
// held to the schema.
func TestValidatorLetsTheServerTeach(t *testing.T) {
	t.Parallel()
	doc := load(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		method string
		target string
		body   string
		ok     bool
	}{
		{"bare kind name", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":"window"}`, true},
		{"null strategy", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":null}`, true},
		{"hybrid without parts", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"hybrid"}}`, true},
		{"valid", "POST", "/v1/memories?dryRun=true", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":20}}`, true},
		{"no strategy", "POST", "/v1/memories", `{"id":"chat","type":"episodic"}`, false},
		{"unknown field", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window"},"strateg":1}`, false},
		{"bad id", "POST", "/v1/memories", `{"id":"-chat","type":"episodic","strategy":{"kind":"window"}}`, false},
		{"unknown type", "POST", "/v1/memories", `{"id":"chat","type":"working","strategy":{"kind":"window"}}`, false},
		{"ttl zero", "POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window"},"ttlMs":0}`, false},
		{"replace, GET body round trip", "PUT", "/v1/memories/chat",
			`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":20},"readOnly":false,"corpus":false,` +
				`"flavor":"memory","version":1,"createdAt":"2026-11-30T06:05:39.123Z","updatedAt":"2026-11-30T06:05:39.123Z"}`, true},
		{"replace, version zero", "PUT", "/v1/memories/chat", `{"type":"episodic","strategy":{"kind":"window"},"version":0}`, false},
		{"limit too big", "GET", "/v1/memories?limit=201", ``, false},
		{"unknown kind reaches the handler", "GET", "/v1/strategies/windw", ``, true},
		{"bad type filter", "GET", "/v1/strategies?type=working", ``, false},
		{"bad memory id", "GET", "/v1/memories/%2Fetc", ``, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkValidation(t, router, tt.method, tt.target, tt.body, nil, tt.ok)
		})
	}
}

// TestValidatorConversations holds the conversation operations to the
// schema the same way: ids and principals by pattern, the Idempotency-Key
// header, turn bodies (strict messages, free-form evidence, nullable
// client vectors) and the entry filters.
func TestValidatorConversations(t *testing.T) {
	t.Parallel()
	doc := load(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	key := map[string]string{"Idempotency-Key": "3f0c9b9e-6a53-4a8e-9d55-2f1b7c0e4d21"}
	tests := []struct {
		name   string
		method string
		target string
		body   string
		header map[string]string
		ok     bool
	}{
		{"turn", "POST", "/v1/conversations/support-4821/turns?principal=ana%40example.com",
			`{"turnNumber":0,"messages":[{"role":"user","content":"hi"}],` +
				`"evidence":{"decisions":[{"stageId":"s","chosen":"c","evidence":[1,"x",null]}],"toolCalls":[{"name":"t","args":null}]},` +
				`"embeddings":{"embeddingModel":"m","query":[0.1,0.2],"messages":[[0.1,0.2],null]}}`, key, true},
		{"turn with null and scalar evidence and arguments", "POST", "/v1/conversations/c1/turns",
			`{"messages":[],"evidence":{"decisions":[{"stageId":"s","chosen":"c","evidence":null},{"stageId":"s","chosen":"c","evidence":"x"}],` +
				`"toolCalls":[{"name":"t","args":true},{"name":"t","args":{}}]}}`, nil, true},
		{"tool arguments past float64", "POST", "/v1/conversations/c1/turns",
			`{"messages":[],"evidence":{"toolCalls":[{"name":"t","args":1e999}]}}`, nil, false},
		{"turn number below 1 reaches the handler", "POST", "/v1/conversations/c1/turns", `{"turnNumber":-3.5,"messages":[]}`, nil, true},
		{"empty turn reaches the handler", "POST", "/v1/conversations/c1/turns", `{"messages":[]}`, nil, true},
		{"turn without messages", "POST", "/v1/conversations/c1/turns", `{"turnNumber":2}`, nil, false},
		{"turn with unknown field", "POST", "/v1/conversations/c1/turns", `{"messages":[],"turn":2}`, nil, false},
		{"message with unknown field", "POST", "/v1/conversations/c1/turns",
			`{"messages":[{"role":"user","content":"hi","name":"ana"}]}`, nil, false},
		{"message with unknown role", "POST", "/v1/conversations/c1/turns", `{"messages":[{"role":"bot","content":"hi"}]}`, nil, false},
		{"bad run id", "POST", "/v1/conversations/c1/turns", `{"messages":[],"runId":"run 1"}`, nil, false},
		{"turn linked to its recalls", "POST", "/v1/conversations/c1/turns",
			`{"messages":[],"runId":"run-3","recallIds":["rcl_01JDR7M2Q9XK4T6B","rcl_01JDQ80B3V6N9Q2W"]}`, nil, true},
		{"turn with no recalls linked", "POST", "/v1/conversations/c1/turns", `{"messages":[],"recallIds":[]}`, nil, true},
		{"turn with 17 recall ids", "POST", "/v1/conversations/c1/turns",
			`{"messages":[],"recallIds":[` + strings.TrimSuffix(strings.Repeat(`"rcl_01JDR7M2Q9XK4T6B",`, 17), ",") + `]}`, nil, false},
		{"turn with a run id as a recall id", "POST", "/v1/conversations/c1/turns", `{"messages":[],"recallIds":["run-3"]}`, nil, false},
		{"turn with recall ids not an array", "POST", "/v1/conversations/c1/turns", `{"messages":[],"recallIds":"rcl_01JDR7M2Q9XK4T6B"}`, nil, false},
		{"bad memory name", "POST", "/v1/conversations/c1/turns", `{"messages":[],"memories":["-chat"]}`, nil, false},
		{"embeddings without model", "POST", "/v1/conversations/c1/turns", `{"messages":[],"embeddings":{"query":[0.1]}}`, nil, false},
		{"idempotency key with a space", "POST", "/v1/conversations/c1/turns", `{"messages":[]}`,
			map[string]string{"Idempotency-Key": "a b"}, false},
		{"bad conversation id", "POST", "/v1/conversations/a%20b/turns", `{"messages":[]}`, nil, false},
		{"bad principal", "GET", "/v1/conversations/c1/entries?principal=a%2Fb", ``, nil, false},
		{"entries filtered", "GET", "/v1/conversations/c1/entries?memory=chat&kind=snap&tier=hot&include=embedding&limit=10", ``, nil, true},
		{"entries, unknown kind", "GET", "/v1/conversations/c1/entries?kind=message", ``, nil, false},
		{"entries, unknown include", "GET", "/v1/conversations/c1/entries?include=vector", ``, nil, false},
		{"entry", "GET", "/v1/conversations/c1/entries/fact:order_id?memory=profile", ``, nil, true},
		{"entry without memory", "GET", "/v1/conversations/c1/entries/msg-3-0", ``, nil, false},
		{"forget", "DELETE", "/v1/conversations/c1?principal=user-7c3e", ``, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkValidation(t, router, tt.method, tt.target, tt.body, tt.header, tt.ok)
		})
	}
}

// TestValidatorRecallAndRuns holds recall, document indexing and run
// recordings to the schema: a recall with nothing to recall for must reach
// the handler (which answers the teaching 422), any-number caps and
// any-JSON payloads pass, while ids, event types, bounds and unknown fields
// are refused before a handler runs.
func TestValidatorRecallAndRuns(t *testing.T) {
	t.Parallel()
	doc := load(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	many := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	tests := []struct {
		name   string
		method string
		target string
		body   string
		header map[string]string
		ok     bool
	}{
		// recall
		{"recall, query", "POST", "/v1/conversations/support-4821/recall?principal=user-7c3e",
			`{"query":"what did we decide?","turn":4,"runId":"run-01JDQ9C2XR","contextTokensRemaining":6000,"memories":["decisions","chat"]}`, nil, true},
		{"recall, messages only", "POST", "/v1/conversations/c1/recall",
			`{"messages":[{"role":"user","content":"hi"},{"role":"user","content":""}]}`, nil, true},
		{"recall with nothing to recall for reaches the handler", "POST", "/v1/conversations/c1/recall", `{}`, nil, true},
		{"recall, no remaining context", "POST", "/v1/conversations/c1/recall", `{"query":"q","contextTokensRemaining":0}`, nil, true},
		{"recall, unknown field", "POST", "/v1/conversations/c1/recall", `{"query":"q","k":3}`, nil, false},
		{"recall, negative remaining context", "POST", "/v1/conversations/c1/recall", `{"query":"q","contextTokensRemaining":-1}`, nil, false},
		{"recall, remaining context too big", "POST", "/v1/conversations/c1/recall", `{"query":"q","contextTokensRemaining":10000001}`, nil, false},
		{"recall, turn 0", "POST", "/v1/conversations/c1/recall", `{"query":"q","turn":0}`, nil, false},
		{"recall, bad run id", "POST", "/v1/conversations/c1/recall", `{"query":"q","runId":"run 1"}`, nil, false},
		{"recall, bad memory name", "POST", "/v1/conversations/c1/recall", `{"query":"q","memories":["-chat"]}`, nil, false},
		{"recall, 65 memories", "POST", "/v1/conversations/c1/recall", `{"query":"q","memories":` + many(65, `"m"`) + `}`, nil, false},
		{"recall, message with unknown role", "POST", "/v1/conversations/c1/recall", `{"messages":[{"role":"bot","content":"hi"}]}`, nil, false},
		{"recall, query too long", "POST", "/v1/conversations/c1/recall", `{"query":"` + strings.Repeat("a", 100001) + `"}`, nil, false},
		{"recall, bad principal", "POST", "/v1/conversations/c1/recall?principal=a%2Fb", `{"query":"q"}`, nil, false},
		{"recall, ablation", "POST", "/v1/conversations/c1/recall",
			`{"query":"q","exclude":["memory:why#snap-1","memory:handbook#returns-policy#0","memory:chat#msg-3-0"]}`, nil, true},
		{"recall, nothing excluded", "POST", "/v1/conversations/c1/recall", `{"query":"q","exclude":[]}`, nil, true},
		{"recall, exclude a whole memory", "POST", "/v1/conversations/c1/recall", `{"query":"q","exclude":["memory:why"]}`, nil, false},
		{"recall, exclude without memory:", "POST", "/v1/conversations/c1/recall", `{"query":"q","exclude":["why#snap-1"]}`, nil, false},
		{"recall, exclude with a bad memory id", "POST", "/v1/conversations/c1/recall", `{"query":"q","exclude":["memory:-why#snap-1"]}`, nil, false},
		{"recall, exclude with an empty entry id", "POST", "/v1/conversations/c1/recall", `{"query":"q","exclude":["memory:why#"]}`, nil, false},
		{"recall, exclude with a newline", "POST", "/v1/conversations/c1/recall", `{"query":"q","exclude":["memory:why#snap\n1"]}`, nil, false},
		{"recall, exclude entry id too long", "POST", "/v1/conversations/c1/recall",
			`{"query":"q","exclude":["memory:why#` + strings.Repeat("a", 301) + `"]}`, nil, false},
		{"recall, exclude entry id at the limit", "POST", "/v1/conversations/c1/recall",
			`{"query":"q","exclude":["memory:` + strings.Repeat("m", 64) + `#` + strings.Repeat("a", 300) + `"]}`, nil, true},
		{"recall, exclude 100", "POST", "/v1/conversations/c1/recall", `{"query":"q","exclude":` + many(100, `"memory:why#snap-1"`) + `}`, nil, true},
		{"recall, exclude 101", "POST", "/v1/conversations/c1/recall", `{"query":"q","exclude":` + many(101, `"memory:why#snap-1"`) + `}`, nil, false},
		{"receipt", "GET", "/v1/recalls/rcl_01JDQ9C4M7ZK2W8T", ``, nil, true},
		{"receipt, bad id", "GET", "/v1/recalls/rcl_short", ``, nil, false},
		{"receipt, not a recall id", "GET", "/v1/recalls/run-01JDQ9C2XR", ``, nil, false},
		// documents
		{"index", "POST", "/v1/memories/handbook/documents",
			`{"documents":[{"id":"handbook/returns.md","text":"a\n\nb","docUri":"https://example.com/r.pdf","page":2,"heading":"Damaged items",` +
				`"metadata":{"locale":"en","tags":["a",1,null]}},{"id":"x","text":""}]}`, nil, true},
		{"index, no documents field", "POST", "/v1/memories/handbook/documents", `{}`, nil, false},
		{"index, document without text", "POST", "/v1/memories/handbook/documents", `{"documents":[{"id":"a"}]}`, nil, false},
		{"index, bad document id", "POST", "/v1/memories/handbook/documents", `{"documents":[{"id":"a b","text":"x"}]}`, nil, false},
		{"index, document id with #", "POST", "/v1/memories/handbook/documents", `{"documents":[{"id":"a#1","text":"x"}]}`, nil, false},
		{"index, unknown document field", "POST", "/v1/memories/handbook/documents", `{"documents":[{"id":"a","text":"x","title":"t"}]}`, nil, false},
		{"index, page 0", "POST", "/v1/memories/handbook/documents", `{"documents":[{"id":"a","text":"x","page":0}]}`, nil, false},
		{"index, 101 documents", "POST", "/v1/memories/handbook/documents", `{"documents":` + many(101, `{"id":"a","text":"x"}`) + `}`, nil, false},
		{"index, bad memory id", "POST", "/v1/memories/-handbook/documents", `{"documents":[]}`, nil, false},
		// runs
		{"open, everything", "POST", "/v1/runs",
			`{"runId":"run-01JDQ9C2XR","conversationId":"support-4821","principal":"ana@example.com","turn":4,"maxEvents":5000,` +
				`"recordEmbeddings":true,"startedAt":"2026-11-30T06:15:02.417Z"}`, nil, true},
		{"open, nothing", "POST", "/v1/runs", `{}`, nil, true},
		{"open, negative cap reaches the handler", "POST", "/v1/runs", `{"maxEvents":-1}`, nil, true},
		{"open, fractional cap reaches the handler", "POST", "/v1/runs", `{"maxEvents":2.5}`, nil, true},
		{"open, huge cap reaches the handler", "POST", "/v1/runs", `{"maxEvents":1e308}`, nil, true},
		{"open, cap as a string", "POST", "/v1/runs", `{"maxEvents":"NaN"}`, nil, false},
		{"open, unknown field", "POST", "/v1/runs", `{"run":"r1"}`, nil, false},
		{"open, turn 0", "POST", "/v1/runs", `{"turn":0}`, nil, false},
		{"open, bad run id", "POST", "/v1/runs", `{"runId":"run 1"}`, nil, false},
		{"open, bad conversation id", "POST", "/v1/runs", `{"conversationId":"a b"}`, nil, false},
		{"open, bad start", "POST", "/v1/runs", `{"startedAt":"yesterday"}`, nil, false},
		{"append", "POST", "/v1/runs/run-1/events",
			`{"events":[{"type":"context.injected","payload":{"slot":"system","contentHash":"h"},"meta":{"wallClockMs":1}},` +
				`{"type":"agentfootprint.context.injected","payload":null},{"type":"x","payload":[1,"a"]},{"type":"n","payload":3}]}`, nil, true},
		{"append, empty batch", "POST", "/v1/runs/run-1/events", `{"events":[]}`, nil, true},
		{"append, event without payload", "POST", "/v1/runs/run-1/events", `{"events":[{"type":"x"}]}`, nil, false},
		{"append, type starting with a digit", "POST", "/v1/runs/run-1/events", `{"events":[{"type":"1x","payload":1}]}`, nil, false},
		{"append, type with a space", "POST", "/v1/runs/run-1/events", `{"events":[{"type":"a b","payload":1}]}`, nil, false},
		{"append, type too long", "POST", "/v1/runs/run-1/events", `{"events":[{"type":"a` + strings.Repeat("b", 128) + `","payload":1}]}`, nil, false},
		{"append, meta not an object", "POST", "/v1/runs/run-1/events", `{"events":[{"type":"x","payload":1,"meta":[1]}]}`, nil, false},
		{"append, unknown event field", "POST", "/v1/runs/run-1/events", `{"events":[{"type":"x","payload":1,"index":3}]}`, nil, false},
		{"append, bare array", "POST", "/v1/runs/run-1/events", `[{"type":"x","payload":1}]`, nil, false},
		{"append, 1001 events", "POST", "/v1/runs/run-1/events", `{"events":` + many(1001, `{"type":"x","payload":1}`) + `}`, nil, false},
		{"append, 1000 events", "POST", "/v1/runs/run-1/events", `{"events":` + many(1000, `{"type":"x","payload":1}`) + `}`, nil, true},
		{"finish", "POST", "/v1/runs/run-1/finish", `{"complete":false}`, nil, true},
		{"finish, no complete", "POST", "/v1/runs/run-1/finish", `{}`, nil, false},
		{"finish, complete not a boolean", "POST", "/v1/runs/run-1/finish", `{"complete":"yes"}`, nil, false},
		{"recording", "GET", "/v1/runs/run-1", ``, nil, true},
		{"recording, bad run id", "GET", "/v1/runs/run%201", ``, nil, false},
		{"events, default", "GET", "/v1/runs/run-1/events", ``, nil, true},
		{"events, after and limit", "GET", "/v1/runs/run-1/events?after=-1&limit=200", ``, nil, true},
		{"events, after below -1", "GET", "/v1/runs/run-1/events?after=-2", ``, nil, false},
		{"events, limit too big", "GET", "/v1/runs/run-1/events?limit=201", ``, nil, false},
		{"events, Last-Event-ID", "GET", "/v1/runs/run-1/events", ``, map[string]string{"Last-Event-ID": "120"}, true},
		{"events, bad Last-Event-ID", "GET", "/v1/runs/run-1/events", ``, map[string]string{"Last-Event-ID": "abc"}, false},
		{"runs", "GET", "/v1/runs?conversationId=support-4821&principal=user-7c3e&limit=10", ``, nil, true},
		{"runs, bad conversation id", "GET", "/v1/runs?conversationId=a%20b", ``, nil, false},
		{"runs, bad cursor", "GET", "/v1/runs?cursor=", ``, nil, false},
		{"run context", "GET", "/v1/runs/run-3/context", ``, nil, true},
		{"run context, bad run id", "GET", "/v1/runs/run%203/context", ``, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkValidation(t, router, tt.method, tt.target, tt.body, tt.header, tt.ok)
		})
	}
}

// TestValidatorExplain holds the explain operations to the schema: the turn
// and depth bounds, the influence catalogue's conditional GET, and ablation
// records (a baseline excludes nothing; ids, bounds and unknown fields are
// refused before a handler runs).
func TestValidatorExplain(t *testing.T) {
	t.Parallel()
	doc := load(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	many := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	tests := []struct {
		name   string
		method string
		target string
		body   string
		header map[string]string
		ok     bool
	}{
		// explain
		{"explain", "GET", "/v1/conversations/support-7731/turns/3/explain?principal=user-7c3e&depth=2", ``, nil, true},
		{"explain, default depth", "GET", "/v1/conversations/c1/turns/1/explain", ``, nil, true},
		{"explain, depth 5", "GET", "/v1/conversations/c1/turns/1/explain?depth=5", ``, nil, true},
		{"explain, depth 0", "GET", "/v1/conversations/c1/turns/3/explain?depth=0", ``, nil, false},
		{"explain, depth 6", "GET", "/v1/conversations/c1/turns/3/explain?depth=6", ``, nil, false},
		{"explain, depth not a number", "GET", "/v1/conversations/c1/turns/3/explain?depth=all", ``, nil, false},
		{"explain, turn 0", "GET", "/v1/conversations/c1/turns/0/explain", ``, nil, false},
		{"explain, negative turn", "GET", "/v1/conversations/c1/turns/-1/explain", ``, nil, false},
		{"explain, turn not a number", "GET", "/v1/conversations/c1/turns/last/explain", ``, nil, false},
		{"explain, turn too big", "GET", "/v1/conversations/c1/turns/2147483648/explain", ``, nil, false},
		{"explain, bad conversation id", "GET", "/v1/conversations/a%20b/turns/3/explain", ``, nil, false},
		{"explain, bad principal", "GET", "/v1/conversations/c1/turns/3/explain?principal=a%2Fb", ``, nil, false},
		// influence strategies
		{"influence strategies", "GET", "/v1/influence-strategies", ``, nil, true},
		{"influence strategies, conditional", "GET", "/v1/influence-strategies", ``,
			map[string]string{"If-None-Match": `"7c1d5b0e9a3f4d21"`}, true},
		// ablations
		{"ablation", "POST", "/v1/conversations/support-7731/turns/3/ablations?principal=user-7c3e",
			`{"excluded":["memory:why#snap-1","memory:handbook#returns-policy#0"],"answer":"14 days.","flipped":true}`, nil, true},
		{"ablation, baseline", "POST", "/v1/conversations/c1/turns/3/ablations", `{"excluded":[],"answer":"","flipped":false}`, nil, true},
		{"ablation, 100 excluded", "POST", "/v1/conversations/c1/turns/3/ablations",
			`{"excluded":` + many(100, `"memory:why#snap-1"`) + `,"answer":"a","flipped":true}`, nil, true},
		{"ablation, 101 excluded", "POST", "/v1/conversations/c1/turns/3/ablations",
			`{"excluded":` + many(101, `"memory:why#snap-1"`) + `,"answer":"a","flipped":true}`, nil, false},
		{"ablation, no excluded", "POST", "/v1/conversations/c1/turns/3/ablations", `{"answer":"a","flipped":true}`, nil, false},
		{"ablation, no answer", "POST", "/v1/conversations/c1/turns/3/ablations", `{"excluded":[],"flipped":true}`, nil, false},
		{"ablation, no flipped", "POST", "/v1/conversations/c1/turns/3/ablations", `{"excluded":[],"answer":"a"}`, nil, false},
		{"ablation, flipped not a boolean", "POST", "/v1/conversations/c1/turns/3/ablations",
			`{"excluded":[],"answer":"a","flipped":"yes"}`, nil, false},
		{"ablation, answer too long", "POST", "/v1/conversations/c1/turns/3/ablations",
			`{"excluded":[],"answer":"` + strings.Repeat("a", 100001) + `","flipped":true}`, nil, false},
		{"ablation, excluded a whole memory", "POST", "/v1/conversations/c1/turns/3/ablations",
			`{"excluded":["memory:why"],"answer":"a","flipped":true}`, nil, false},
		{"ablation, excluded an entry id alone", "POST", "/v1/conversations/c1/turns/3/ablations",
			`{"excluded":["snap-1"],"answer":"a","flipped":true}`, nil, false},
		{"ablation, unknown field", "POST", "/v1/conversations/c1/turns/3/ablations",
			`{"excluded":[],"answer":"a","flipped":true,"verdict":"confirmed"}`, nil, false},
		{"ablation, turn 0", "POST", "/v1/conversations/c1/turns/0/ablations", `{"excluded":[],"answer":"a","flipped":false}`, nil, false},
		{"ablation, bad principal", "POST", "/v1/conversations/c1/turns/3/ablations?principal=a%2Fb",
			`{"excluded":[],"answer":"a","flipped":false}`, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkValidation(t, router, tt.method, tt.target, tt.body, tt.header, tt.ok)
		})
	}
}

// TestExplanationExampleIsAChain: the worked example must show what it
// claims, link by link: the answer's run carries a context piece that is an
// origin; the origin was offered by a linked receipt at the score, rank and
// threshold it reports; its entry was written by an earlier turn, whose
// explanation is in `earlier` with that run; every suspect is an origin, and
// its verdict follows the documented rule from its counts.
func TestExplanationExampleIsAChain(t *testing.T) {
	t.Parallel()
	doc := load(t)
	ex := doc.Components.Examples["WrongRefundExplanation"]
	if ex == nil {
		t.Fatal("no example WrongRefundExplanation")
	}
	raw, err := json.Marshal(ex.Value.Value)
	if err != nil {
		t.Fatal(err)
	}
	type piece struct {
		SourceID string `json:"sourceId"`
	}
	type runContext struct {
		RunID string `json:"runId"`
		Calls []struct {
			Pieces []piece `json:"pieces"`
		} `json:"calls"`
	}
	type explanation struct {
		Turn   int `json:"turn"`
		Answer struct {
			RunID string `json:"runId"`
		} `json:"answer"`
		Context struct {
			Runs    []runContext `json:"runs"`
			Recalls []struct {
				RecallID   string `json:"recallId"`
				Injections []struct {
					ID        string `json:"id"`
					Retrieval *struct {
						Score     float64  `json:"score"`
						Rank      int      `json:"rank"`
						Threshold *float64 `json:"threshold"`
					} `json:"retrieval"`
				} `json:"injections"`
			} `json:"recalls"`
		} `json:"context"`
		Origins []struct {
			InjectionID string   `json:"injectionId"`
			RecallID    string   `json:"recallId"`
			Score       *float64 `json:"score"`
			Rank        *int     `json:"rank"`
			Threshold   *float64 `json:"threshold"`
			Entry       *struct {
				Turn  int    `json:"turn"`
				RunID string `json:"runId"`
			} `json:"entry"`
		} `json:"origins"`
		Suspects []struct {
			InjectionID string `json:"injectionId"`
			Verdict     string `json:"verdict"`
			Reruns      int    `json:"reruns"`
			Flips       int    `json:"flips"`
		} `json:"suspects"`
		Earlier []json.RawMessage `json:"earlier"`
	}
	var e explanation
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	// answer → the run that produced it → a context piece that is an origin
	shown := map[string]bool{}
	for _, r := range e.Context.Runs {
		if r.RunID != e.Answer.RunID {
			continue
		}
		for _, c := range r.Calls {
			for _, p := range c.Pieces {
				shown[p.SourceID] = true
			}
		}
	}
	if len(e.Origins) == 0 {
		t.Fatal("the example has no origin")
	}
	origins := map[string]bool{}
	for _, o := range e.Origins {
		origins[o.InjectionID] = true
		if !shown[o.InjectionID] {
			t.Errorf("origin %s is no context piece of the answer's run %s", o.InjectionID, e.Answer.RunID)
		}
		// → the receipt that offered it, at the reported score, rank and threshold
		offered := false
		for _, rc := range e.Context.Recalls {
			for _, inj := range rc.Injections {
				if rc.RecallID != o.RecallID || inj.ID != o.InjectionID || inj.Retrieval == nil {
					continue
				}
				offered = o.Score != nil && *o.Score == inj.Retrieval.Score &&
					o.Rank != nil && *o.Rank == inj.Retrieval.Rank &&
					(o.Threshold == nil) == (inj.Retrieval.Threshold == nil) &&
					(o.Threshold == nil || *o.Threshold == *inj.Retrieval.Threshold)
			}
		}
		if !offered {
			t.Errorf("origin %s: no linked receipt %s offered it at score %v, rank %v", o.InjectionID, o.RecallID, o.Score, o.Rank)
		}
		// → the earlier turn that wrote the entry, explained with its run
		if o.Entry == nil {
			t.Errorf("origin %s: no entry", o.InjectionID)
			continue
		}
		found := false
		for _, rawEarlier := range e.Earlier {
			var earlier explanation
			if err := json.Unmarshal(rawEarlier, &earlier); err != nil {
				t.Fatal(err)
			}
			if earlier.Turn != o.Entry.Turn {
				continue
			}
			found = earlier.Answer.RunID == o.Entry.RunID &&
				len(earlier.Context.Runs) > 0 && earlier.Context.Runs[0].RunID == o.Entry.RunID
		}
		if o.Entry.Turn >= e.Turn || !found {
			t.Errorf("origin %s: entry of turn %d, run %s is not explained in earlier", o.InjectionID, o.Entry.Turn, o.Entry.RunID)
		}
	}
	for _, s := range e.Suspects {
		if !origins[s.InjectionID] {
			t.Errorf("suspect %s is not an origin", s.InjectionID)
		}
		// The example's baseline did not flip, so the rule reduces to the counts.
		want := "untested"
		switch {
		case s.Reruns == 0:
		case s.Reruns >= 2 && 2*s.Flips > s.Reruns:
			want = "confirmed"
		case s.Flips == 0:
			want = "not-confirmed"
		default:
			want = "inconclusive"
		}
		if s.Verdict != want {
			t.Errorf("suspect %s: verdict %s with %d of %d reruns flipped, want %s", s.InjectionID, s.Verdict, s.Flips, s.Reruns, want)
		}
	}
}

// TestRecallExamplesAreByteIdentical: the recall examples show the
// byte-identity rule and the spans, so they must obey them. systemPrompt is
// the only copy of the text; the memories' spans, in order, tile it with
// "\n\n" between them; per memory, the admitted candidates' spans, in
// promptPosition order, tile the memory's; and each per-chunk injection
// names its candidate's span, the injections' spans tiling systemPrompt.
func TestRecallExamplesAreByteIdentical(t *testing.T) {
	t.Parallel()
	doc := load(t)
	for _, name := range []string{"CausalAndChatRecall", "RagRecall", "AblationRecall"} {
		ex := doc.Components.Examples[name]
		if ex == nil {
			t.Fatalf("no example %s", name)
		}
		raw, err := json.Marshal(ex.Value.Value)
		if err != nil {
			t.Fatal(err)
		}
		var r gen.RecallResult
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		text := func(s *gen.PromptSpan) string {
			if s == nil || s.StartByte < 0 || s.StartByte > s.EndByte || s.EndByte > len(r.SystemPrompt) {
				t.Fatalf("%s: span %+v outside systemPrompt (%d bytes)", name, s, len(r.SystemPrompt))
			}
			return r.SystemPrompt[s.StartByte:s.EndByte]
		}
		// tiles reports whether spans, in order, cover [from, to) with "\n\n" between them.
		tiles := func(spans []*gen.PromptSpan, from, to int) bool {
			at := from
			for i, s := range spans {
				if i > 0 {
					if text(&gen.PromptSpan{StartByte: at, EndByte: min(at+2, len(r.SystemPrompt))}) != "\n\n" {
						return false
					}
					at += 2
				}
				if text(s); s.StartByte != at {
					return false
				}
				at = s.EndByte
			}
			return at == to
		}
		var memories []*gen.PromptSpan
		chunks := map[string]*gen.PromptSpan{}
		for _, m := range r.Memories {
			if m.SystemSpan == nil {
				continue
			}
			memories = append(memories, m.SystemSpan)
			var admitted []gen.Candidate
			for _, c := range m.Evidence.Candidates {
				if c.Admitted && c.SystemSpan != nil {
					admitted = append(admitted, c)
					chunks["memory:"+m.MemoryID+"#"+c.ID] = c.SystemSpan
				}
			}
			sort.Slice(admitted, func(i, j int) bool { return *admitted[i].PromptPosition < *admitted[j].PromptPosition })
			var spans []*gen.PromptSpan
			for _, c := range admitted {
				spans = append(spans, c.SystemSpan)
			}
			if !tiles(spans, m.SystemSpan.StartByte, m.SystemSpan.EndByte) {
				t.Errorf("%s: memory %s: its candidates' spans do not rebuild its text", name, m.MemoryID)
			}
		}
		if !tiles(memories, 0, len(r.SystemPrompt)) {
			t.Errorf("%s: the memories' spans do not rebuild systemPrompt", name)
		}
		var injected []*gen.PromptSpan
		for _, inj := range r.Injections {
			if s := inj.Inject.SystemSpan; s != nil {
				injected = append(injected, s)
				if c := chunks[inj.ID]; c == nil || *c != *s {
					t.Errorf("%s: injection %s spans %+v, its candidate %+v", name, inj.ID, s, c)
				}
			}
		}
		if !tiles(injected, 0, len(r.SystemPrompt)) {
			t.Errorf("%s: the injections' spans do not rebuild systemPrompt", name)
		}
	}
}

// checkValidation routes one request and runs it through the request
// validator, failing when the verdict is not ok.
func checkValidation(t *testing.T, router routers.Router, method, target, body string, header map[string]string, ok bool) {
	t.Helper()
	req := httptest.NewRequest(method, "http://127.0.0.1:8080"+target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		if ok {
			t.Fatalf("no route: %v", err)
		}
		return // refusing to route is a refusal too
	}
	err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      route,
		Options:    &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
	if ok && err != nil {
		t.Errorf("refused, want accepted: %v", err)
	}
	if !ok && err == nil {
		t.Errorf("accepted, want refused")
	}
}

func exampleValues(mt *openapi3.MediaType) map[string]any {
	out := map[string]any{}
	if mt.Example != nil {
		out["example"] = mt.Example
	}
	for name, ex := range mt.Examples {
		out[name] = ex.Value.Value
	}
	return out
}

func keys(c openapi3.Content) []string {
	var out []string
	for k := range c {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
