package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/mcp"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

const (
	keyAcme   = "acme-key-0123456789abcdef"
	keyGlobex = "globex-key-0123456789abcdef"
)

// syncBuffer collects the server's log lines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testServer struct {
	url string
	log *syncBuffer
}

type serverOptions struct {
	open      bool // no API keys: a single open tenant
	store     app.Store
	rateLimit float64
	rateBurst int
}

// serve starts the real handler (server.NewServer, which mounts /mcp) with two tenants' keys.
func serve(t *testing.T, o serverOptions) *testServer {
	t.Helper()
	if o.store == nil {
		o.store = memory.New()
	}
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		t.Fatal(err)
	}
	caps := core.Capabilities{Embedders: []core.EmbedderInfo{{ID: "hash", Kind: "hash", Model: "footprint-hash-v1", Dimensions: 384, Default: true, Description: "lexical"}}}
	log := &syncBuffer{}
	keys := []server.APIKey{{Tenant: "acme", Key: keyAcme}, {Tenant: "globex", Key: keyGlobex}}
	if o.open {
		keys = nil
	}
	h, err := server.NewServer(server.Deps{
		App:          app.New(o.store, caps, app.WithEmbedders(hash)),
		Logger:       slog.New(slog.NewJSONHandler(log, nil)),
		APIKeys:      keys,
		CursorSecret: []byte("test-secret-test-secret"),
		RateLimit:    o.rateLimit,
		RateBurst:    o.rateBurst,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testServer{url: srv.URL, log: log}
}

// stores are the two stores every end-to-end test runs on.
func stores(t *testing.T, f func(t *testing.T, s app.Store)) {
	t.Run("memory", func(t *testing.T) { f(t, memory.New()) })
	t.Run("postgres", func(t *testing.T) { f(t, pgtest.Open(t)) })
}

// headerTransport adds headers to every request of the MCP client.
type headerTransport struct {
	header http.Header
	base   http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	return h.base.RoundTrip(r)
}

// connect opens an MCP session with the official Go SDK's client over Streamable HTTP.
func connect(t *testing.T, ts *testServer, key string, extra ...string) *sdk.ClientSession {
	t.Helper()
	cs, err := dial(ts, key, extra...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func dial(ts *testServer, key string, extra ...string) (*sdk.ClientSession, error) {
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "footprint-test", Version: "v0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:             ts.url + "/mcp",
		HTTPClient:           &http.Client{Transport: headerTransport{header: h, base: http.DefaultTransport}},
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}, nil)
}

// call calls a tool and returns its result; a protocol error fails the test.
func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and returns its structured content.
func ok(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s refused: %s", name, text(res))
	}
	var m map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		t.Fatalf("%s: structured content is not an object: %s", name, b)
	}
	return m
}

// refused calls a tool that must be refused and returns the problem its text holds.
func refused(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res := call(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s: accepted, want a refusal: %s", name, text(res))
	}
	if res.StructuredContent != nil {
		t.Errorf("%s: a refusal carries structured content (clients check it against the output schema): %v", name, res.StructuredContent)
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(text(res)), &p); err != nil {
		t.Fatalf("%s: the refusal's text is not a problem: %v\n%s", name, err, text(res))
	}
	return p
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// rest sends one REST request and returns its status and JSON body.
func rest(t *testing.T, ts *testServer, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, ts.url+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: not JSON: %s", method, path, b)
		}
	}
	return res.StatusCode, m
}

// TestToolList: the tools an MCP client sees, each with its description and the input and
// output schemas read from the spec.
func TestToolList(t *testing.T) {
	ts := serve(t, serverOptions{})
	cs := connect(t, ts, keyAcme)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	byName := map[string]*sdk.Tool{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		byName[tool.Name] = tool
	}
	want := []string{"list_strategies", "define_memory", "recall", "post_turn", "explain_turn", "list_entries",
		"forget_conversation", "open_run", "append_events", "finish_run"}
	if got, w := slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
		t.Fatalf("tools = %v, want %v", got, w)
	}
	if !slices.Equal(mcp.ToolNames(), want) {
		t.Errorf("mcp.ToolNames() = %v, want %v", mcp.ToolNames(), want)
	}
	for _, tool := range res.Tools {
		if len(tool.Description) < 80 {
			t.Errorf("%s: description %q does not teach when to call it", tool.Name, tool.Description)
		}
		in, _ := tool.InputSchema.(map[string]any)
		out, _ := tool.OutputSchema.(map[string]any)
		if in["type"] != "object" || in["additionalProperties"] != false {
			t.Errorf("%s: input schema %v", tool.Name, in)
		}
		if out["type"] != "object" {
			t.Errorf("%s: output schema %v", tool.Name, out)
		}
	}
	// Arguments are named as in the REST API: path and query parameters, body members, and
	// the Idempotency-Key header in lowerCamel.
	for tool, args := range map[string][]string{
		"post_turn":     {"conversationId", "principal", "messages", "evidence", "runId", "recallIds", "idempotencyKey"},
		"recall":        {"conversationId", "principal", "query", "turn", "runId"},
		"explain_turn":  {"conversationId", "turn", "depth"},
		"define_memory": {"id", "type", "strategy", "dryRun"},
		"append_events": {"runId", "events"},
	} {
		props := byName[tool].InputSchema.(map[string]any)["properties"].(map[string]any)
		for _, a := range args {
			if props[a] == nil {
				t.Errorf("%s: no argument %q (has %v)", tool, a, slices.Sorted(mapsKeys(props)))
			}
		}
	}
	required := byName["post_turn"].InputSchema.(map[string]any)["required"]
	if b, _ := json.Marshal(required); string(b) != `["conversationId","messages"]` {
		t.Errorf("post_turn requires %s", b)
	}
	// The schemas are the spec's: a conversation id keeps its pattern and bounds.
	conv := byName["recall"].InputSchema.(map[string]any)["properties"].(map[string]any)["conversationId"]
	if b, _ := json.Marshal(conv); !strings.Contains(string(b), `"$ref":"#/$defs/ConversationId"`) && !strings.Contains(string(b), `"pattern"`) {
		t.Errorf("recall's conversationId schema %s lost the spec's rules", b)
	}
	if ann := byName["forget_conversation"].Annotations; ann == nil || ann.DestructiveHint == nil || !*ann.DestructiveHint {
		t.Errorf("forget_conversation is not marked destructive: %+v", ann)
	}
	if ann := byName["list_entries"].Annotations; ann == nil || !ann.ReadOnlyHint {
		t.Errorf("list_entries is not marked read-only: %+v", ann)
	}
}

func mapsKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestAgentTurn is an agent's conversation through MCP alone, on both stores: define memories,
// post two turns with evidence, recall for the third (the text is the system prompt, the
// structured content its evidence), record the run, post turn 3 linked to both, and explain
// it back to turn 1's decision. The answers are the REST API's own.
func TestAgentTurn(t *testing.T) {
	stores(t, func(t *testing.T, store app.Store) {
		ts := serve(t, serverOptions{store: store})
		cs := connect(t, ts, keyAcme)
		conv := "support-4821"

		strategies := ok(t, cs, "list_strategies", map[string]any{"type": "causal", "offerable": true})
		if b, _ := json.Marshal(strategies["strategies"]); !strings.Contains(string(b), `"kind":"topK"`) {
			t.Errorf("list_strategies(causal) lacks topK: %s", b)
		}
		m := ok(t, cs, "define_memory", map[string]any{"id": "chat", "type": "episodic", "strategy": map[string]any{"kind": "window", "size": 20}})
		if m["id"] != "chat" || m["version"] != float64(1) {
			t.Errorf("define_memory chat = %v", m)
		}
		ok(t, cs, "define_memory", map[string]any{"id": "why", "type": "causal", "strategy": map[string]any{"kind": "topK", "topK": 2, "threshold": 0.2}})

		turn1 := ok(t, cs, "post_turn", map[string]any{
			"conversationId": conv, "idempotencyKey": "support-4821-turn-1",
			"messages": []any{
				map[string]any{"role": "user", "content": "What is the refund window for damaged items?"},
				map[string]any{"role": "assistant", "content": "Damaged items are refunded within 30 days."},
			},
			"evidence": map[string]any{"decisions": []any{map[string]any{"stageId": "policy", "chosen": "30-day window", "rule": "old handbook"}}},
		})
		if turn1["turn"] != float64(1) {
			t.Fatalf("turn 1 = %v", turn1)
		}
		// The same key and arguments replay the first answer, and the result says so.
		again := call(t, cs, "post_turn", map[string]any{
			"conversationId": conv, "idempotencyKey": "support-4821-turn-1",
			"messages": []any{
				map[string]any{"role": "user", "content": "What is the refund window for damaged items?"},
				map[string]any{"role": "assistant", "content": "Damaged items are refunded within 30 days."},
			},
			"evidence": map[string]any{"decisions": []any{map[string]any{"stageId": "policy", "chosen": "30-day window", "rule": "old handbook"}}},
		})
		if hdrs, _ := again.Meta["footprint/headers"].(map[string]any); again.IsError || hdrs["Idempotent-Replayed"] != "true" {
			t.Errorf("the retried turn 1 was not a replay: error %v, _meta %v: %s", again.IsError, again.Meta, text(again))
		}
		ok(t, cs, "post_turn", map[string]any{"conversationId": conv, "messages": []any{
			map[string]any{"role": "user", "content": "Do you ship to Norway?"},
			map[string]any{"role": "assistant", "content": "Yes, we ship to Norway."},
		}})

		run := ok(t, cs, "open_run", map[string]any{"runId": "run-3", "conversationId": conv, "turn": 3})
		if run["runId"] != "run-3" || run["finished"] != false {
			t.Errorf("open_run = %v", run)
		}
		res := call(t, cs, "recall", map[string]any{"conversationId": conv, "query": "How long do refunds for damaged items take?", "turn": 3, "runId": "run-3"})
		if res.IsError {
			t.Fatalf("recall refused: %s", text(res))
		}
		recall := res.StructuredContent.(map[string]any)
		if text(res) != recall["systemPrompt"] || !strings.Contains(text(res), "Damaged items are refunded within 30 days.") {
			t.Errorf("recall's text is not its system prompt:\n%s\n--- systemPrompt:\n%v", text(res), recall["systemPrompt"])
		}
		evidence, _ := json.Marshal(recall["memories"])
		if !strings.Contains(string(evidence), `"candidates"`) || !strings.Contains(string(evidence), `"snap-1"`) {
			t.Errorf("recall's structured content lacks the evidence: %s", evidence)
		}
		var events []any
		for _, inj := range recall["injections"].([]any) {
			id := inj.(map[string]any)["id"]
			events = append(events, map[string]any{"type": "context.injected", "payload": map[string]any{"slot": "system", "source": "memory", "sourceId": id, "iteration": 1}})
		}
		events = append(events, map[string]any{"type": "llm.request", "payload": map[string]any{"model": "m", "iteration": 1}})
		appended := ok(t, cs, "append_events", map[string]any{"runId": "run-3", "events": events})
		if appended["count"] != float64(len(events)) {
			t.Errorf("append_events = %v, want count %d", appended, len(events))
		}
		if fin := ok(t, cs, "finish_run", map[string]any{"runId": "run-3", "complete": true}); fin["finished"] != true {
			t.Errorf("finish_run = %v", fin)
		}
		ok(t, cs, "post_turn", map[string]any{"conversationId": conv, "runId": "run-3", "recallIds": []any{recall["recallId"]}, "messages": []any{
			map[string]any{"role": "user", "content": "How long do refunds for damaged items take?"},
			map[string]any{"role": "assistant", "content": "We refund damaged items within 30 days."},
		}})

		ex := ok(t, cs, "explain_turn", map[string]any{"conversationId": conv, "turn": 3, "depth": 2})
		var origin map[string]any
		for _, o := range ex["origins"].([]any) {
			if o := o.(map[string]any); o["injectionId"] == "memory:why#snap-1" {
				origin = o
			}
		}
		if origin == nil || origin["entryId"] != "snap-1" || origin["recallId"] != recall["recallId"] {
			t.Errorf("turn 3's origin memory:why#snap-1 = %v (origins %v)", origin, ex["origins"])
		}
		if ctx, _ := json.Marshal(ex["context"]); !strings.Contains(string(ctx), "memory:why#snap-1") {
			t.Errorf("the explanation does not show run-3's context: %s", ctx)
		}

		// Every answer is the REST API's: the same explanation through /v1.
		code, viaREST := rest(t, ts, "GET", "/v1/conversations/"+conv+"/turns/3/explain?depth=2", keyAcme, "")
		a, _ := json.Marshal(viaREST)
		b, _ := json.Marshal(ex)
		if code != 200 || string(a) != string(b) {
			t.Errorf("explain_turn differs from GET .../explain:\nMCP  %s\nREST %d %s", b, code, a)
		}

		entries := ok(t, cs, "list_entries", map[string]any{"conversationId": conv, "memory": "chat", "limit": 2})
		if n := len(entries["entries"].([]any)); n != 2 || entries["nextCursor"] == nil {
			t.Errorf("list_entries(limit 2) = %d entries, nextCursor %v", n, entries["nextCursor"])
		}
		next := ok(t, cs, "list_entries", map[string]any{"conversationId": conv, "memory": "chat", "limit": 2, "cursor": entries["nextCursor"]})
		if len(next["entries"].([]any)) != 2 {
			t.Errorf("the second page = %v", next)
		}
		if f := ok(t, cs, "forget_conversation", map[string]any{"conversationId": conv}); f["erased"].(float64) < 8 {
			t.Errorf("forget_conversation = %v", f)
		}
		if left := ok(t, cs, "list_entries", map[string]any{"conversationId": conv}); len(left["entries"].([]any)) != 0 {
			t.Errorf("entries left after forgetting: %v", left)
		}
	})
}

// TestRefusalsAreTheRESTProblems: a refused call is a tool error whose text is the problem the
// REST API sends for the same request, member for member but the request id.
func TestRefusalsAreTheRESTProblems(t *testing.T) {
	ts := serve(t, serverOptions{})
	cs := connect(t, ts, keyAcme)
	ok(t, cs, "define_memory", map[string]any{"id": "chat", "type": "episodic", "strategy": map[string]any{"kind": "window", "size": 20}})
	cases := []struct {
		name, tool string
		args       map[string]any
		method     string
		path, body string
		code       string
	}{
		{"teaching strategy", "define_memory", map[string]any{"id": "notes", "type": "episodic", "strategy": "window"},
			"POST", "/v1/memories", `{"id":"notes","type":"episodic","strategy":"window"}`, "invalid-strategy"},
		{"strategy not for type", "define_memory", map[string]any{"id": "notes", "type": "causal", "strategy": map[string]any{"kind": "window"}},
			"POST", "/v1/memories", `{"id":"notes","type":"causal","strategy":{"kind":"window"}}`, "strategy-not-for-type"},
		{"memory exists", "define_memory", map[string]any{"id": "chat", "type": "episodic", "strategy": map[string]any{"kind": "window", "size": 20}},
			"POST", "/v1/memories", `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":20}}`, "memory-exists"},
		{"unknown body member", "post_turn", map[string]any{"conversationId": "c1", "messages": []any{}, "mesages": []any{}},
			"POST", "/v1/conversations/c1/turns", `{"messages":[],"mesages":[]}`, "unknown-field"},
		{"missing body member", "post_turn", map[string]any{"conversationId": "c1"},
			"POST", "/v1/conversations/c1/turns", `{}`, "invalid-request"},
		{"bad message role", "post_turn", map[string]any{"conversationId": "c1", "messages": []any{map[string]any{"role": "robot", "content": "hi"}}},
			"POST", "/v1/conversations/c1/turns", `{"messages":[{"role":"robot","content":"hi"}]}`, "invalid-request"},
		{"bad path parameter", "recall", map[string]any{"conversationId": "no spaces please", "query": "q"},
			"POST", "/v1/conversations/no%20spaces%20please/recall", `{"query":"q"}`, "invalid-parameter"},
		{"bad query parameter", "explain_turn", map[string]any{"conversationId": "c1", "turn": 1, "depth": 9},
			"GET", "/v1/conversations/c1/turns/1/explain?depth=9", ``, "invalid-parameter"},
		{"recall without a query", "recall", map[string]any{"conversationId": "c1"},
			"POST", "/v1/conversations/c1/recall", `{}`, "invalid-field"},
		{"unknown memory", "recall", map[string]any{"conversationId": "c1", "query": "q", "memories": []any{"nope"}},
			"POST", "/v1/conversations/c1/recall", `{"query":"q","memories":["nope"]}`, "not-found"},
		{"finish an unknown run", "finish_run", map[string]any{"runId": "nope", "complete": true},
			"POST", "/v1/runs/nope/finish", `{"complete":true}`, "not-found"},
		{"bad event type", "append_events", map[string]any{"runId": "nope", "events": []any{map[string]any{"type": "1bad"}}},
			"POST", "/v1/runs/nope/events", `{"events":[{"type":"1bad"}]}`, "invalid-request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			viaMCP := refused(t, cs, c.tool, c.args)
			status, viaREST := rest(t, ts, c.method, c.path, keyAcme, c.body)
			if viaMCP["code"] != c.code || viaREST["code"] != c.code {
				t.Fatalf("codes: MCP %v, REST %v (%d), want %s\nMCP  %v\nREST %v", viaMCP["code"], viaREST["code"], status, c.code, viaMCP, viaREST)
			}
			if viaMCP["requestId"] == nil || viaMCP["requestId"] == "" {
				t.Errorf("the MCP problem carries no request id: %v", viaMCP)
			}
			delete(viaMCP, "requestId")
			delete(viaREST, "requestId")
			a, _ := json.Marshal(viaMCP)
			b, _ := json.Marshal(viaREST)
			if string(a) != string(b) {
				t.Errorf("the problems differ:\nMCP  %s\nREST %s", a, b)
			}
		})
	}
	// Calls that cannot be put as a REST request at all are refused in the REST API's words.
	for _, c := range []struct {
		tool string
		args map[string]any
		code string
		path string
	}{
		{"recall", map[string]any{"query": "q"}, "invalid-parameter", "conversationId"},
		{"recall", map[string]any{"conversationId": "", "query": "q"}, "invalid-parameter", "conversationId"},
		{"list_entries", map[string]any{"conversationId": "c1", "limits": 3}, "unknown-field", "limits"},
	} {
		p := refused(t, cs, c.tool, c.args)
		if p["code"] != c.code || p["path"] != c.path || p["status"] != float64(400) || p["detail"] == "" {
			t.Errorf("%s %v: problem %v, want %s at %s", c.tool, c.args, p, c.code, c.path)
		}
	}
}

// TestTenancyAndKeys: /mcp takes the same keys as /v1, and each key sees its own tenant.
func TestTenancyAndKeys(t *testing.T) {
	stores(t, func(t *testing.T, store app.Store) {
		ts := serve(t, serverOptions{store: store})
		acme, globex := connect(t, ts, keyAcme), connect(t, ts, keyGlobex)
		ok(t, acme, "define_memory", map[string]any{"id": "chat", "type": "episodic", "strategy": map[string]any{"kind": "window", "size": 20}})
		ok(t, acme, "post_turn", map[string]any{"conversationId": "c1", "messages": []any{map[string]any{"role": "user", "content": "acme's secret"}}})
		if got := ok(t, globex, "list_entries", map[string]any{"conversationId": "c1"}); len(got["entries"].([]any)) != 0 {
			t.Errorf("globex sees acme's entries: %v", got)
		}
		if p := refused(t, globex, "recall", map[string]any{"conversationId": "c1", "query": "secret", "memories": []any{"chat"}}); p["code"] != "not-found" {
			t.Errorf("globex recalled from acme's memory: %v", p)
		}
		// Through REST, acme's turn is there; globex's view is empty.
		if _, got := rest(t, ts, "GET", "/v1/conversations/c1/entries", keyAcme, ""); len(got["entries"].([]any)) != 1 {
			t.Errorf("acme's entries through REST: %v", got)
		}
		for _, key := range []string{"", "not-a-key-0123456789"} {
			if _, err := dial(ts, key); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
				t.Errorf("connecting with key %q: %v, want a 401", key, err)
			}
			req, _ := http.NewRequest("POST", ts.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != 401 || res.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(string(b), `"code":"unauthorized"`) {
				t.Errorf("POST /mcp with key %q: %d %s %s", key, res.StatusCode, res.Header.Get("Content-Type"), b)
			}
		}
	})
}

// TestRateLimitIsShared: /mcp draws on the tenant's one token bucket with /v1; beyond it the
// MCP request is the same 429 rate-limited problem, with Retry-After.
func TestRateLimitIsShared(t *testing.T) {
	ts := serve(t, serverOptions{rateLimit: 0.01, rateBurst: 4})
	cs := connect(t, ts, keyAcme)
	ok(t, cs, "list_strategies", nil)
	// REST spends what is left of the burst (at 0.01 token/s nothing comes back meanwhile).
	for i := 0; ; i++ {
		code, _ := rest(t, ts, "GET", "/v1/strategies", keyAcme, "")
		if code == 429 {
			break
		}
		if i == 4 {
			t.Fatalf("no 429 after the burst of 4 was spent")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_strategies", Arguments: map[string]any{}}); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("a tool call past the tenant's burst: %v, want a 429\n%s", err, ts.log.String())
	}
	req, _ := http.NewRequest("POST", ts.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+keyAcme)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" || !strings.Contains(string(b), `"code":"rate-limited"`) {
		t.Errorf("POST /mcp past the limit: %d Retry-After %q %s", res.StatusCode, res.Header.Get("Retry-After"), b)
	}
	// Another tenant has its own bucket.
	ok(t, connect(t, ts, keyGlobex), "list_strategies", nil)
}

// TestRequestIDsInLogs: a tool call is logged with the request id of the HTTP request that
// carried it (the client's X-Request-Id when it sends one), and its problem names the same id.
func TestRequestIDsInLogs(t *testing.T) {
	ts := serve(t, serverOptions{})
	cs := connect(t, ts, keyAcme, "X-Request-Id", "agent-req-42")
	p := refused(t, cs, "define_memory", map[string]any{"id": "notes", "type": "episodic", "strategy": "window"})
	if p["requestId"] != "agent-req-42" {
		t.Errorf("the problem's request id = %v", p["requestId"])
	}
	var toolLine, accessLine bool
	for _, line := range strings.Split(ts.log.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["requestId"] != "agent-req-42" {
			continue
		}
		switch {
		case m["msg"] == "mcp tool call" && m["tool"] == "define_memory" && m["outcome"] == "invalid-strategy" && m["status"] == float64(422):
			toolLine = true
		case m["msg"] == "request" && m["route"] == "/mcp":
			accessLine = true
		}
	}
	if !toolLine || !accessLine {
		t.Errorf("the log lacks the tool call (%v) or the access line (%v) under the request id:\n%s", toolLine, accessLine, ts.log.String())
	}
}

// TestHostCheck: an open server (no keys) refuses a request that reached its loopback address
// under another host name, as a DNS-rebinding web page would send it; with keys such a page
// cannot authenticate, so a reverse proxy on the same host may forward its own name.
func TestHostCheck(t *testing.T) {
	list := func(ts *testServer, key string) int {
		req, _ := http.NewRequest("POST", ts.url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Host = "memory.example.com"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := list(serve(t, serverOptions{open: true}), ""); code != http.StatusForbidden {
		t.Errorf("open server, foreign Host: %d, want 403", code)
	}
	if code := list(serve(t, serverOptions{}), keyAcme); code != http.StatusOK {
		t.Errorf("server with keys, foreign Host, a valid key: %d, want 200", code)
	}
	// The open server still serves its own name.
	ok(t, connect(t, serve(t, serverOptions{open: true}), ""), "list_strategies", nil)
}
