package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// syncBuffer is a goroutine-safe writer for run's output.
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

var listening = regexp.MustCompile(`listening on (http://[^\s]+)`)

// start runs the real program through run() and waits for /healthz.
func start(t *testing.T, env map[string]string) (base string, stdout *syncBuffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	getenv := func(k string) string { return env[k] }
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"footprint"}, getenv, stdout, stderr) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := listening.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
			if res, err := http.Get(base + "/healthz"); err == nil {
				res.Body.Close()
				if res.StatusCode == 200 {
					break
				}
			}
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("run exited early: %v\nstderr: %s", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("server did not become healthy\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var once sync.Once
	var stopErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case stopErr = <-done:
			case <-time.After(20 * time.Second):
				t.Error("run did not return after cancel")
			}
		})
		return stopErr
	}
	t.Cleanup(func() {
		_ = stop()
		if t.Failed() {
			t.Logf("server log (stderr):\n%s", stderr.String())
		}
	})
	return base, stdout, stop
}

func call(t *testing.T, method, url, key, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
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
	var m map[string]any
	b, _ := io.ReadAll(res.Body)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: non-JSON body %q", method, url, b)
		}
	}
	return res.StatusCode, m
}

func TestEndToEnd(t *testing.T) {
	stores := map[string]func(t *testing.T) string{
		"memory":   func(*testing.T) string { return "" },
		"postgres": pgtest.DSN,
	}
	for name, dsn := range stores {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{
				"FOOTPRINT_ADDR":     "127.0.0.1:0",
				"DATABASE_URL":       dsn(t),
				"FOOTPRINT_API_KEYS": "acme:acme-key-0123456789abcdef,globex:globex-key-0123456789abcdef",
			}
			base, stdout, stop := start(t, env)
			if !strings.Contains(stdout.String(), "/docs/") {
				t.Errorf("start-up does not say where the docs are:\n%s", stdout.String())
			}
			const acme, globex = "acme-key-0123456789abcdef", "globex-key-0123456789abcdef"
			if code, body := call(t, "POST", base+"/v1/memories", acme, `{"id":"chat","type":"episodic","strategy":"window"}`); code != 422 || body["code"] != "invalid-strategy" {
				t.Errorf("bare string strategy: %d %v", code, body)
			}
			if code, body := call(t, "POST", base+"/v1/memories", acme, `{"id":"chat","type":"episodic","strategy":{"kind":"window","size":10}}`); code != 201 {
				t.Fatalf("create: %d %v", code, body)
			}
			if code, _ := call(t, "POST", base+"/v1/memories", acme, `{"id":"chat","type":"episodic","strategy":{"kind":"window"}}`); code != 409 {
				t.Errorf("duplicate: %d", code)
			}
			if code, body := call(t, "GET", base+"/v1/memories/chat", acme, ""); code != 200 || body["version"].(float64) != 1 {
				t.Errorf("get: %d %v", code, body)
			}
			if code, _ := call(t, "GET", base+"/v1/memories/chat", globex, ""); code != 404 {
				t.Errorf("other tenant reads acme's memory: %d", code)
			}
			if code, body := call(t, "GET", base+"/v1/capabilities", acme, ""); code != 200 || body["store"].(map[string]any)["kind"] != map[string]string{"memory": "memory", "postgres": "postgres"}[name] {
				t.Errorf("capabilities: %d %v", code, body)
			}
			turn := `{"messages":[{"role":"user","content":"My name is Ada. Why was order A-1 refunded?"},{"role":"assistant","content":"It arrived damaged."}]}`
			if code, body := call(t, "POST", base+"/v1/memories", acme, `{"id":"why","type":"causal","strategy":{"kind":"topK"}}`); code != 201 {
				t.Fatalf("define causal: %d %v", code, body)
			}
			for want := 1; want <= 2; want++ {
				code, body := call(t, "POST", base+"/v1/conversations/t-1/turns?principal=u-9", acme, turn)
				if code != 201 || body["turn"].(float64) != float64(want) {
					t.Fatalf("turn %d: %d %v", want, code, body)
				}
			}
			if code, body := call(t, "GET", base+"/v1/conversations/t-1/entries?principal=u-9&memory=why", acme, ""); code != 200 || len(body["entries"].([]any)) != 2 {
				t.Errorf("entries: %d %v", code, body)
			}
			if code, body := call(t, "GET", base+"/v1/conversations/t-1/entries?principal=u-9", globex, ""); code != 200 || len(body["entries"].([]any)) != 0 {
				t.Errorf("globex sees acme's entries: %d %v", code, body)
			}
			if code, body := call(t, "GET", base+"/readyz", "", ""); code != 200 {
				t.Errorf("readyz: %d %v", code, body)
			}
			if err := stop(); err != nil {
				t.Errorf("run returned %v on shutdown", err)
			}
			if !strings.Contains(stdout.String(), "footprint stopped") {
				t.Errorf("no clean stop message:\n%s", stdout.String())
			}
		})
	}
}

func TestStartsOpenOnDefaults(t *testing.T) {
	_, stdout, _ := start(t, map[string]string{"FOOTPRINT_ADDR": "127.0.0.1:0"})
	out := stdout.String()
	for _, want := range []string{"in-memory", "hash (hash, 384 dims) [default]", "OPEN", "/metrics\n",
		"tracing:   off (OTEL_TRACES_EXPORTER unset)"} {
		if !strings.Contains(out, want) {
			t.Errorf("start-up output lacks %q:\n%s", want, out)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"bad addr", map[string]string{"FOOTPRINT_ADDR": "nope"}, "FOOTPRINT_ADDR"},
		{"short key", map[string]string{"FOOTPRINT_API_KEYS": "acme:short"}, "at least 16"},
		{"not a pair", map[string]string{"FOOTPRINT_API_KEYS": "justakey0123456789"}, "tenant:key"},
		{"bad origin", map[string]string{"FOOTPRINT_CORS_ORIGINS": "example.com"}, "FOOTPRINT_CORS_ORIGINS"},
		{"bad duration", map[string]string{"FOOTPRINT_REQUEST_TIMEOUT": "soon"}, "FOOTPRINT_REQUEST_TIMEOUT"},
		{"bad embedder", map[string]string{"FOOTPRINT_EMBEDDERS": "x=magic"}, "FOOTPRINT_EMBEDDERS"},
		{"bad metrics addr", map[string]string{"FOOTPRINT_METRICS_ADDR": "9090"}, "FOOTPRINT_METRICS_ADDR"},
		{"metrics on the API's address", map[string]string{"FOOTPRINT_ADDR": "127.0.0.1:8080", "FOOTPRINT_METRICS_ADDR": "127.0.0.1:8080"}, "FOOTPRINT_METRICS_ADDR"},
		{"bad capture", map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "sometimes"}, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"},
		{"bad exporter", map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, "OTEL_TRACES_EXPORTER"},
		{"bad sampler", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "sometimes"}, "OTEL_TRACES_SAMPLER"},
		{"bad ratio", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "OTEL_TRACES_SAMPLER_ARG"},
		{"bad protocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "http/protobuf or grpc"},
		{"bad sdk switch", map[string]string{"OTEL_SDK_DISABLED": "maybe"}, "OTEL_SDK_DISABLED"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), []string{"footprint"}, func(k string) string { return tc.env[k] }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want mention of %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "0123456789") {
				t.Errorf("error leaks the key: %v", err)
			}
		})
	}
}
