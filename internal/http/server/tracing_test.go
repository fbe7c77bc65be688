package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/llm"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
	"github.com/footprint/footprint/internal/telemetry"
)

// The span trees of a turn, a recall and an LLM-backed summarize, recorded by the SDK's
// in-memory span recorder, over the real handler, the real stores' tracing and the real
// provider clients talking to fake providers over HTTP.

type tracedEnv struct {
	*env
	spans *tracetest.SpanRecorder
	logs  *lockedBuffer
}

// tracedSetup serves the real handler over the store made for the provider, with tracing on;
// the embedders and llms tp makes replace the default hash embedder when given.
func tracedSetup(t *testing.T, store func(trace.TracerProvider) app.Store, capture bool, tp func(trace.TracerProvider) ([]core.Embedder, []core.LLM)) *tracedEnv {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = provider.Shutdown(t.Context()) })
	hash, err := embedder.NewHash("hash", 384)
	if err != nil {
		t.Fatal(err)
	}
	embedders, llms := []core.Embedder{hash}, []core.LLM(nil)
	if tp != nil {
		embedders, llms = tp(provider)
	}
	caps := core.Capabilities{}
	for _, e := range embedders {
		caps.Embedders = append(caps.Embedders, e.Info())
	}
	for _, l := range llms {
		caps.LLMs = append(caps.LLMs, l.Info())
	}
	logs := &lockedBuffer{}
	logger := slog.New(telemetry.LogHandler(slog.NewJSONHandler(logs, nil)))
	h, err := server.NewServer(server.Deps{
		App: app.New(store(provider), caps, app.WithEmbedders(embedders...), app.WithLLMs(llms...),
			app.WithTracing(provider, capture)),
		Logger:         logger,
		CursorSecret:   []byte("test-secret-test-secret"),
		TracerProvider: provider,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(specGate(t, h))
	t.Cleanup(srv.Close)
	return &tracedEnv{env: &env{t: t, srv: srv}, spans: sr, logs: logs}
}

func (e *tracedEnv) ended() []sdktrace.ReadOnlySpan { return e.spans.Ended() }

func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func childrenOf(spans []sdktrace.ReadOnlySpan, parent sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() && s.SpanContext().TraceID() == parent.SpanContext().TraceID() {
			out = append(out, s)
		}
	}
	return out
}

// descends reports whether s is root or a descendant of root.
func descends(spans []sdktrace.ReadOnlySpan, s, root sdktrace.ReadOnlySpan) bool {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, x := range spans {
		byID[x.SpanContext().SpanID()] = x
	}
	for cur, ok := s, true; ok; cur, ok = byID[cur.Parent().SpanID()] {
		if cur.SpanContext().SpanID() == root.SpanContext().SpanID() {
			return true
		}
	}
	return false
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func attrString(t *testing.T, s sdktrace.ReadOnlySpan, key string) string {
	t.Helper()
	v, ok := attr(s, key)
	if !ok {
		t.Fatalf("span %q has no attribute %s; it has %v", s.Name(), key, s.Attributes())
	}
	return v.String()
}

// noText fails if any attribute of any span holds one of texts.
func noText(t *testing.T, spans []sdktrace.ReadOnlySpan, texts ...string) {
	t.Helper()
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			for _, text := range texts {
				if strings.Contains(kv.Value.String(), text) {
					t.Errorf("span %q attribute %s holds the text %q: content capture is off", s.Name(), kv.Key, text)
				}
			}
		}
	}
}

// tracedPG opens a Postgres store whose statements are traced.
func tracedPG(t *testing.T) func(trace.TracerProvider) app.Store {
	return func(tp trace.TracerProvider) app.Store { return pgtest.Open(t, pg.WithTracerProvider(tp)) }
}

const (
	remoteTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	remoteParent = "00f067aa0ba902b7"
)

func TestTraceOfATurn(t *testing.T) {
	t.Parallel()
	e := tracedSetup(t, tracedPG(t), false, nil)
	e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":20}}`)
	e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK","topK":2,"threshold":0.2}}`)
	const question = "What is the refund window for damaged items?"
	body := `{"messages":[{"role":"user","content":"` + question + `"},{"role":"assistant","content":"Thirty days."}],
		"evidence":{"decisions":[{"stageId":"policy","chosen":"30-day window","rule":"old handbook"}]}}`
	for n := range 2 { // the first is written the long way, the second predicted
		r, tr := e.turn("conv-1", body, "traceparent", fmt.Sprintf("00-%s-%s-01", remoteTrace, remoteParent))
		if r.status != 201 || tr.Turn != n+1 {
			t.Fatalf("turn %d: %d %s", n+1, r.status, r.body)
		}
	}
	spans := e.ended()
	roots := named(spans, "POST /v1/conversations/{conversationId}/turns")
	if len(roots) != 2 {
		t.Fatalf("turn spans: %d of %d spans, want 2 (named by route template): %v", len(roots), len(spans), spanNames(spans))
	}
	for _, root := range roots {
		if got := root.SpanContext().TraceID().String(); got != remoteTrace {
			t.Errorf("turn span trace %s, want the caller's %s", got, remoteTrace)
		}
		if got := root.Parent().SpanID().String(); got != remoteParent || !root.Parent().IsRemote() {
			t.Errorf("turn span parent %s (remote %v), want the caller's %s", got, root.Parent().IsRemote(), remoteParent)
		}
		if root.SpanKind() != trace.SpanKindServer || attrString(t, root, "http.route") != "/v1/conversations/{conversationId}/turns" ||
			attrString(t, root, "footprint.request_id") != "test-request" {
			t.Errorf("turn span: kind %v, attributes %v", root.SpanKind(), root.Attributes())
		}
		statements := statementsUnder(spans, root)
		if !slices.Contains(statements, "INSERT entries") || !slices.Contains(statements, "SELECT pg_advisory_xact_lock") {
			t.Errorf("turn %s: statements %v under it, want the turn's lock and inserts, named by operation and table", root.SpanContext().SpanID(), statements)
		}
	}
	// The second turn, predicted, went through the shared commit (turncommit.go) alone: its
	// statements are under its own request all the same (checked above), and a commit of one
	// write makes no span of its own (commit spans of several: pg's TestCommitSpan).
	if c := named(spans, "commit turns"); len(c) != 0 {
		t.Errorf("commit spans for single writes: %d", len(c))
	}
	noText(t, spans, question, "Thirty days", "old handbook")

	// The access log lines carry the request's trace and span.
	var logged int
	for _, line := range strings.Split(strings.TrimSpace(e.logs.String()), "\n") {
		var l struct{ Msg, Route, TraceID, SpanID string }
		if json.Unmarshal([]byte(strings.NewReplacer(`"trace_id"`, `"traceid"`, `"span_id"`, `"spanid"`).Replace(line)), &l) == nil &&
			l.Msg == "request" && l.Route == "/v1/conversations/{conversationId}/turns" {
			logged++
			if l.TraceID != remoteTrace || !slices.ContainsFunc(roots, func(s sdktrace.ReadOnlySpan) bool { return s.SpanContext().SpanID().String() == l.SpanID }) {
				t.Errorf("access log %s: want trace_id %s and a turn span's span_id", line, remoteTrace)
			}
		}
	}
	if logged != 2 {
		t.Errorf("%d access log lines for turns, want 2:\n%s", logged, e.logs.String())
	}
}

// statementsUnder lists the Postgres statements traced under root: the client spans of
// statements, and the events of pipelined batches' spans ("BATCH").
func statementsUnder(spans []sdktrace.ReadOnlySpan, root sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		if v, _ := attr(s, "db.system.name"); v.AsString() != "postgresql" || s.SpanKind() != trace.SpanKindClient || !descends(spans, s, root) {
			continue
		}
		if s.Name() != "BATCH" {
			out = append(out, s.Name())
			continue
		}
		for _, e := range s.Events() {
			out = append(out, e.Name)
		}
	}
	return out
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

type recallEvidence struct {
	Memories []struct {
		MemoryID string `json:"memoryId"`
		Evidence struct {
			AdmittedCount   int      `json:"admittedCount"`
			RejectedCount   int      `json:"rejectedCount"`
			ConsideredCount int      `json:"consideredCount"`
			SearchMode      string   `json:"searchMode"`
			Threshold       *float64 `json:"threshold"`
			K               int      `json:"k"`
			NearestMiss     *float64 `json:"nearestMiss"`
			Candidates      []struct {
				ID       string   `json:"id"`
				Score    *float64 `json:"score"`
				Rank     int      `json:"rank"`
				Admitted bool     `json:"admitted"`
			} `json:"candidates"`
		} `json:"evidence"`
	} `json:"memories"`
}

type spanDoc struct {
	ID    string   `json:"id"`
	Score *float64 `json:"score"`
}

func (d spanDoc) String() string {
	if d.Score == nil {
		return d.ID
	}
	return fmt.Sprintf("%s:%v", d.ID, *d.Score)
}

func TestTraceOfARecall(t *testing.T) {
	t.Parallel()
	const query = "how long is the refund window for damaged items"
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprintf("capture=%v", capture), func(t *testing.T) {
			t.Parallel()
			e := tracedSetup(t, tracedPG(t), capture, nil)
			e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":3}}`)
			e.define(`{"id":"why","type":"causal","strategy":{"kind":"topK","topK":2,"threshold":0.2}}`)
			for _, q := range []string{"What is the refund window for damaged items?", "Do you ship to Norway?",
				"Is the refund window different for damaged electronics?", "What colours does the kettle come in?"} {
				if r, _ := e.turn("conv-r", `{"messages":[{"role":"user","content":"`+q+`"},{"role":"assistant","content":"An answer."}],
					"evidence":{"decisions":[{"stageId":"s","chosen":"c"}]}}`); r.status != 201 {
					t.Fatalf("turn: %d %s", r.status, r.body)
				}
			}
			r := e.do("POST", "/v1/conversations/conv-r/recall", "", `{"query":"`+query+`"}`)
			if r.status != 200 {
				t.Fatalf("recall: %d %s", r.status, r.body)
			}
			var ev recallEvidence
			if err := json.Unmarshal(r.body, &ev); err != nil {
				t.Fatal(err)
			}
			spans := e.ended()
			roots := named(spans, "POST /v1/conversations/{conversationId}/recall")
			if len(roots) != 1 {
				t.Fatalf("recall spans: %v", spanNames(spans))
			}
			var retrievals []sdktrace.ReadOnlySpan
			for _, s := range childrenOf(spans, roots[0]) {
				if v, _ := attr(s, "gen_ai.operation.name"); v.AsString() == "retrieval" {
					retrievals = append(retrievals, s)
				}
			}
			if len(retrievals) != len(ev.Memories) || len(ev.Memories) != 2 {
				t.Fatalf("%d retrieval spans under the recall span for %d memories: %v", len(retrievals), len(ev.Memories), spanNames(spans))
			}
			for _, m := range ev.Memories {
				i := slices.IndexFunc(retrievals, func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "retrieval "+m.MemoryID })
				if i < 0 {
					t.Fatalf("no span \"retrieval %s\"", m.MemoryID)
				}
				s, x := retrievals[i], m.Evidence
				if attrString(t, s, "gen_ai.data_source.id") != m.MemoryID || s.SpanKind() != trace.SpanKindInternal {
					t.Errorf("%s: data source %s, kind %v", s.Name(), attrString(t, s, "gen_ai.data_source.id"), s.SpanKind())
				}
				for key, want := range map[string]int{"footprint.recall.admitted": x.AdmittedCount,
					"footprint.recall.rejected": x.RejectedCount, "footprint.recall.considered": x.ConsideredCount} {
					if got := attrString(t, s, key); got != fmt.Sprint(want) {
						t.Errorf("%s: %s = %s, evidence says %d", s.Name(), key, got, want)
					}
				}
				var docs []spanDoc
				if err := json.Unmarshal([]byte(attrString(t, s, "gen_ai.retrieval.documents")), &docs); err != nil {
					t.Fatalf("%s: documents: %v", s.Name(), err)
				}
				var want []spanDoc
				for _, c := range x.Candidates {
					if c.Admitted || (x.K > 0 && c.Rank <= x.K) {
						want = append(want, spanDoc{ID: c.ID, Score: c.Score})
					}
				}
				if fmt.Sprint(docs) != fmt.Sprint(want) || len(want) == 0 {
					t.Errorf("%s: documents %v, want %v (from the evidence)", s.Name(), docs, want)
				}
				if m.MemoryID == "why" {
					if attrString(t, s, "gen_ai.retrieval.top_k") != "2" || attrString(t, s, "footprint.recall.threshold") != "0.2" ||
						attrString(t, s, "footprint.recall.search_mode") != x.SearchMode || x.SearchMode != "exact" {
						t.Errorf("why: attributes %v", s.Attributes())
					}
					for _, d := range docs {
						if d.Score == nil {
							t.Errorf("why: document %s has no score", d.ID)
						}
					}
					if x.NearestMiss != nil && attrString(t, s, "footprint.recall.nearest_miss") != fmt.Sprint(*x.NearestMiss) {
						t.Errorf("why: nearest miss %s, evidence %v", attrString(t, s, "footprint.recall.nearest_miss"), *x.NearestMiss)
					}
				}
				// The store's statements for this memory are under the retrieval span (a
				// pipelined batch's statements under the batch's span).
				if !slices.ContainsFunc(statementsUnder(spans, s), func(n string) bool { return strings.HasSuffix(n, " entries") }) {
					t.Errorf("%s: no statement span under it", s.Name())
				}
				qt, ok := attr(s, "gen_ai.retrieval.query.text")
				if capture != ok || (capture && qt.AsString() != query) {
					t.Errorf("%s: query text %q (present %v) with capture %v", s.Name(), qt.AsString(), ok, capture)
				}
			}
			if !capture {
				noText(t, spans, query, "refund window", "Norway")
			}
		})
	}
}

// tracedProviders answers OpenAI-style chat completions and embeddings, and
// keeps the traceparent each request carried.
type tracedProviders struct {
	mu           sync.Mutex
	traceparents map[string][]string // by path
}

func (f *tracedProviders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.traceparents[r.URL.Path] = append(f.traceparents[r.URL.Path], r.Header.Get("traceparent"))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/chat/completions":
		_, _ = io.WriteString(w, `{"model":"tiny-2","choices":[{"message":{"content":"A short summary."}}],"usage":{"prompt_tokens":100,"completion_tokens":10}}`)
	case "/v1/embeddings":
		var req struct{ Input []string }
		_ = json.Unmarshal(body, &req)
		var data []string
		for i, in := range req.Input {
			data = append(data, fmt.Sprintf(`{"index":%d,"embedding":[%d,1,0,0,0,0,0,1]}`, i, len(in)%7+1))
		}
		_, _ = io.WriteString(w, `{"data":[`+strings.Join(data, ",")+`]}`)
	default:
		http.NotFound(w, r)
	}
}

func (f *tracedProviders) seen(path string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.traceparents[path])
}

func TestTraceOfASummarize(t *testing.T) {
	t.Parallel()
	fake := &tracedProviders{traceparents: map[string][]string{}}
	providers := httptest.NewServer(fake)
	t.Cleanup(providers.Close)
	e := tracedSetup(t, func(trace.TracerProvider) app.Store { return memory.New() }, false, func(tp trace.TracerProvider) ([]core.Embedder, []core.LLM) {
		emb, err := embedder.NewOpenAI(embedder.OpenAIConfig{ID: "remote", BaseURL: providers.URL, Model: "emb-1", Dimensions: 8, TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		chat, err := llm.NewOpenAI(llm.Config{ID: "fake", BaseURL: providers.URL, Model: "tiny", TracerProvider: tp})
		if err != nil {
			t.Fatal(err)
		}
		return []core.Embedder{emb}, []core.LLM{chat}
	})
	e.define(`{"id":"chat","type":"episodic","strategy":{"kind":"summarize","recent":3,"size":5,"llm":"fake","model":"tiny"}}`)
	e.define(`{"id":"near","type":"semantic","strategy":{"kind":"topK","topK":2}}`)
	for n := 1; n <= 8; n++ {
		if r, _ := e.turn("c", fmt.Sprintf(`{"messages":[{"role":"user","content":"secret message number %d, worth summarising"}]}`, n)); r.status != 201 {
			t.Fatalf("turn %d: %d %s", n, r.status, r.body)
		}
	}
	e.spans.Reset()
	if r := e.do("POST", "/v1/conversations/c/recall", "", `{"query":"what happened to the parcel?"}`); r.status != 200 {
		t.Fatalf("recall: %d %s", r.status, r.body)
	}
	spans := e.ended()
	root := named(spans, "POST /v1/conversations/{conversationId}/recall")
	if len(root) != 1 {
		t.Fatalf("spans: %v", spanNames(spans))
	}
	retrieval := named(childrenOf(spans, root[0]), "retrieval chat")
	if len(retrieval) != 1 {
		t.Fatalf("recall's children: %v", spanNames(childrenOf(spans, root[0])))
	}
	// The fold's model call is the retrieval's child; under it, its HTTP request, which
	// carried the trace to the provider.
	chat := named(childrenOf(spans, retrieval[0]), "chat tiny")
	if len(chat) != 1 {
		t.Fatalf("retrieval chat's children: %v", spanNames(childrenOf(spans, retrieval[0])))
	}
	c := chat[0]
	for key, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
		"gen_ai.request.model": "tiny", "gen_ai.response.model": "tiny-2", "gen_ai.usage.input_tokens": "100",
		"gen_ai.usage.output_tokens": "10", "server.address": "127.0.0.1", "footprint.provider.id": "fake"} {
		if got := attrString(t, c, key); got != want {
			t.Errorf("chat span %s = %q, want %q", key, got, want)
		}
	}
	if c.SpanKind() != trace.SpanKindClient {
		t.Errorf("chat span kind %v", c.SpanKind())
	}
	if v, _ := attr(retrieval[0], "footprint.recall.fold"); v.AsString() != "folded" {
		t.Errorf("retrieval chat: fold %q, want folded", v.AsString())
	}
	checkPropagated(t, spans, c, fake.seen("/v1/chat/completions"))

	// The query's embedding: an embeddings span (model, dimensions, one input, never the
	// text), its HTTP request carrying the trace to the embedder.
	emb := named(spans, "embeddings emb-1")
	if len(emb) != 1 || !descends(spans, emb[0], root[0]) {
		t.Fatalf("embeddings spans: %d (%v)", len(emb), spanNames(spans))
	}
	for key, want := range map[string]string{"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "emb-1",
		"gen_ai.embeddings.dimension.count": "8", "footprint.embedder.inputs": "1"} {
		if got := attrString(t, emb[0], key); got != want {
			t.Errorf("embeddings span %s = %q, want %q", key, got, want)
		}
	}
	checkPropagated(t, spans, emb[0], fake.seen("/v1/embeddings"))
	noText(t, spans, "secret message", "what happened", "A short summary")
}

// checkPropagated checks that the last request a provider received carried, as its
// traceparent, the HTTP client span under call.
func checkPropagated(t *testing.T, spans []sdktrace.ReadOnlySpan, call sdktrace.ReadOnlySpan, seen []string) {
	t.Helper()
	kids := childrenOf(spans, call)
	if len(kids) != 1 || kids[0].SpanKind() != trace.SpanKindClient || len(seen) == 0 {
		t.Fatalf("%s: children %v, provider saw %v", call.Name(), spanNames(kids), seen)
	}
	sc := kids[0].SpanContext()
	if want := fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()); seen[len(seen)-1] != want {
		t.Errorf("%s: provider got traceparent %q, want %q (its HTTP client span)", call.Name(), seen[len(seen)-1], want)
	}
}
