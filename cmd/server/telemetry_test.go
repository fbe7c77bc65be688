package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/store/pg/pgtest"
	"github.com/footprint/footprint/internal/telemetry/telemetrytest"
)

// TestTelemetry runs the real program with the real OTLP/HTTP exporter against an in-process
// receiver, JSON logs, and /metrics on a listener of its own, through a scripted workload on
// Postgres; then it reads what was exported, logged and counted. The OpenTelemetry SDK reads
// its variables from the process environment, so this test sets them there (not parallel).
func TestTelemetry(t *testing.T) {
	rcv, err := telemetrytest.Start(true)
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	env := map[string]string{
		"FOOTPRINT_ADDR":              "127.0.0.1:0",
		"FOOTPRINT_METRICS_ADDR":      "127.0.0.1:0",
		"FOOTPRINT_LOG_FORMAT":        "json",
		"DATABASE_URL":                pgtest.DSN(t),
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT": rcv.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
		"OTEL_TRACES_SAMPLER":         "always_on",
		"OTEL_BSP_SCHEDULE_DELAY":     "50",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"footprint"}, os.Getenv, stdout, stderr) }()

	// The banner is one JSON object, like the log lines.
	var b struct {
		Msg, URL, Metrics, Tracing, Store string
		Auth                              struct{ Mode, Tenant string }
		Embedders                         []struct {
			ID         string
			Dimensions int
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for b.URL == "" {
		if line, _, ok := strings.Cut(stdout.String(), "\n"); ok {
			if err := json.Unmarshal([]byte(line), &b); err != nil {
				t.Fatalf("banner is not JSON with FOOTPRINT_LOG_FORMAT=json: %v\n%s", err, stdout.String())
			}
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run: %v\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no banner")
		}
	}
	wantTracing := "otlp http/protobuf to " + rcv.URL + "/v1/traces (service footprint, sampler always_on)"
	if b.Msg != "footprint listening" || b.Auth.Mode != "open" || b.Tracing != wantTracing || !strings.HasSuffix(b.Metrics, "/metrics") ||
		b.Metrics == b.URL+"/metrics" || len(b.Embedders) != 1 || b.Embedders[0].Dimensions != 384 || b.Store != "postgres + pgvector" {
		t.Fatalf("banner %+v\nwant tracing %q and metrics on a listener of its own", b, wantTracing)
	}
	base := b.URL

	// The workload, a scripted one: every figure below follows from it.
	post := func(path, body string, headers ...string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(out)
	}
	for _, def := range []string{`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":20}}`,
		`{"id":"why","type":"causal","strategy":{"kind":"topK","topK":2,"threshold":0.2}}`} {
		if code, _, body := post("/v1/memories", def); code != 201 {
			t.Fatalf("define: %d %s", code, body)
		}
	}
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	turn := `{"messages":[{"role":"user","content":"Where is my parcel?"},{"role":"assistant","content":"On its way."}]}`
	// k-1 twice: one replay; then two turns without a key, the second of which is
	// predicted and goes through a shared (group) commit.
	for i, key := range []string{"k-1", "k-1", "", ""} {
		headers := []string{"traceparent", fmt.Sprintf("00-%s-%s-01", traceID, parentID)}
		if key != "" {
			headers = append(headers, "Idempotency-Key", key)
		}
		code, h, body := post("/v1/conversations/c-1/turns", turn, headers...)
		if code != 201 && code != 200 || (i == 1) != (h.Get("Idempotent-Replayed") == "true") {
			t.Fatalf("turn %d: %d %s %v", i, code, body, h)
		}
	}
	if code, _, body := post("/v1/conversations/c-1/turns", `{"messages":[{"role":"assistant","content":"Hello."}]}`,
		"traceparent", fmt.Sprintf("00-%s-%s-01", traceID, parentID)); code != 200 || !strings.Contains(body, "no-user-message") {
		t.Fatalf("noop turn: %d %s", code, body)
	}
	if code, _, body := post("/v1/conversations/c-1/recall", `{"query":"where is the parcel"}`); code != 200 {
		t.Fatalf("recall: %d %s", code, body)
	}
	if code, _, body := post("/v1/runs", `{"runId":"run-1","conversationId":"c-1","maxEvents":10}`); code != 201 {
		t.Fatalf("open run: %d %s", code, body)
	}
	// Follow the run while it is written: the followers gauge counts the open stream.
	req, _ := http.NewRequest("GET", base+"/v1/runs/run-1/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("follow: %v %v", err, stream)
	}
	defer stream.Body.Close()
	scrape := func() string {
		t.Helper()
		res, err := http.Get(b.Metrics)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		out, _ := io.ReadAll(res.Body)
		return string(out)
	}
	waitFor(t, func() bool { return metric(scrape(), "footprint_run_followers") == 1 }, "footprint_run_followers 1 while a stream is open")
	// A repeat and a truncated payload, then ten more events: the oldest go.
	ann := `{"type":"context.injected","payload":{"slot":"memory","contentHash":"h1"}}`
	if code, _, body := post("/v1/runs/run-1/events", `{"events":[`+ann+`,`+ann+`,{"type":"step","payload":"`+strings.Repeat("x", 70<<10)+`"}]}`); code != 200 {
		t.Fatalf("append: %d %s", code, body)
	}
	code, _, body := post("/v1/runs/run-1/events", `{"events":[`+strings.Repeat(`{"type":"step","payload":null},`, 9)+`{"type":"step","payload":null}]}`)
	var appended struct{ Dropped float64 }
	if code != 200 || json.Unmarshal([]byte(body), &appended) != nil || appended.Dropped == 0 {
		t.Fatalf("append: %d %s", code, body)
	}
	if code, _, body := post("/v1/runs/run-1/finish", `{"complete":true}`); code != 200 {
		t.Fatalf("finish: %d %s", code, body)
	}
	_, _ = io.Copy(io.Discard, bufio.NewReader(stream.Body)) // the stream ends with the finished run
	waitFor(t, func() bool { return metric(scrape(), "footprint_run_followers") == 0 }, "footprint_run_followers 0 once the stream ended")

	m := scrape()
	for series, want := range map[string]float64{
		"footprint_turns_written_total":                                                      3, // k-1, k-2, k-3
		"footprint_turn_entries_written_total":                                               9, // 2 messages + 1 snapshot each
		"footprint_idempotent_replays_total":                                                 1,
		`footprint_turn_noops_total{reason="no-user-message"}`:                               1,
		`footprint_recall_receipts_total{outcome="written"}`:                                 1,
		`footprint_recall_read_duration_seconds_count{search_mode="none",strategy="window"}`: 1,
		`footprint_recall_read_duration_seconds_count{search_mode="exact",strategy="topK"}`:  1,
		`footprint_recall_candidates_admitted_sum{strategy="window"}`:                        6,
		`footprint_recall_candidates_considered_sum{strategy="topK"}`:                        3,
		"footprint_run_events_appended_total":                                                13,
		"footprint_run_events_repeated_total":                                                1,
		"footprint_run_events_dropped_total":                                                 appended.Dropped,
		"footprint_run_events_truncated_total":                                               1,
		"footprint_run_followers":                                                            0,
		`footprint_embedder_call_duration_seconds_count{embedder="hash"}`:                    5, // each turn's query (the replay's too: it embeds before the store replays), the recall's
	} {
		if got := metric(m, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if n := metric(m, "footprint_pg_turn_commit_writes_count"); n < 1 || metric(m, "footprint_pg_turn_commit_writes_sum") < n {
		t.Errorf("group commit: %v shared transactions for %v writes, want the predicted turns", n, metric(m, "footprint_pg_turn_commit_writes_sum"))
	}
	if res, err := http.Get(base + "/metrics"); err != nil || res.StatusCode != 404 {
		t.Errorf("/metrics on the API listener with FOOTPRINT_METRICS_ADDR set: %v %v, want 404", err, res.Status)
	} else {
		res.Body.Close()
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	// Shutdown flushed the spans to the receiver.
	spans := rcv.Spans()
	var turns, retrievals int
	for _, s := range spans {
		if s.Service != "footprint" {
			t.Errorf("span %q from service %q", s.Name, s.Service)
		}
		switch s.Name {
		case "POST /v1/conversations/{conversationId}/turns":
			turns++
			if fmt.Sprintf("%x", s.TraceId) != traceID || fmt.Sprintf("%x", s.ParentSpanId) != parentID {
				t.Errorf("turn span: trace %x parent %x, want the caller's %s %s", s.TraceId, s.ParentSpanId, traceID, parentID)
			}
		case "retrieval why":
			retrievals++
			if s.Attr("gen_ai.data_source.id") != "why" || !strings.HasPrefix(s.Attr("gen_ai.retrieval.documents"), `[{"id":"snap-`) {
				t.Errorf("retrieval span: %v", s.Attributes)
			}
		}
	}
	if turns != 5 || retrievals != 1 {
		t.Errorf("received %d spans: %d turn spans (want 5), %d retrieval spans (want 1)", len(spans), turns, retrievals)
	}
	// Log lines are JSON, and those of a traced request carry its trace and span ids.
	var traced int
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if l["msg"] == "request" && l["route"] == "/v1/conversations/{conversationId}/turns" {
			traced++
			if l["trace_id"] != traceID || len(fmt.Sprint(l["span_id"])) != 16 {
				t.Errorf("turn log line without its trace: %s", line)
			}
		}
	}
	if traced != 5 || !strings.Contains(stdout.String(), `"msg":"footprint stopped"`) {
		t.Errorf("%d turn log lines, want 5; stdout:\n%s", traced, stdout.String())
	}
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metric returns the value of one series (name and labels exactly as exposed) in a
// Prometheus text exposition, -1 when absent.
func metric(exposition, series string) float64 {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
	m := re.FindStringSubmatch(exposition)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return v
}
