package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/llm"
)

// testKey and bodySecret are sent in every request and every error body; no
// error may ever contain them.
const (
	testKey    = "sk-test-0123456789SECRETKEY"
	bodySecret = "PROVIDER-BODY-SENTINEL"
)

var errorBody = `{"error":{"message":"Incorrect API key provided: ` + testKey + ` ` + bodySecret + `"}}`

func checkSafe(t *testing.T, err error, srvURL string) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	for _, s := range []string{testKey, "SECRETKEY", bodySecret, "Incorrect API key", srvURL, "127.0.0.1"} {
		if strings.Contains(msg, s) {
			t.Errorf("error leaks %q: %s", s, msg)
		}
	}
}

const okBody = `{"id":"x","object":"chat.completion","model":"gpt-test-2024",
"choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],
"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`

// counter records Config.Counter calls.
type counter struct {
	mu  sync.Mutex
	got []string
}

func (c *counter) add(provider, outcome string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, provider+":"+outcome)
}

func (c *counter) list() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.got, ",")
}

// newClient starts srv with handler and returns a fast-retrying client.
func newClient(t *testing.T, h http.HandlerFunc, mod func(*llm.Config)) (*llm.Client, *httptest.Server, *counter) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cnt := &counter{}
	cfg := llm.Config{ID: "p1", BaseURL: srv.URL, APIKey: testKey, Model: "m-default", MaxRetries: 2,
		Backoff: llm.Backoff{Base: time.Millisecond, Max: 4 * time.Millisecond}, Counter: cnt.add}
	if mod != nil {
		mod(&cfg)
	}
	c, err := llm.NewOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv, cnt
}

func userReq(text string) core.ChatRequest {
	return core.ChatRequest{Messages: []core.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: text}}}
}

func TestCompleteSuccess(t *testing.T) {
	t.Parallel()
	var got map[string]any
	c, _, cnt := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("got %s %s", r.Method, r.URL.Path)
		}
		if r.Header.Get("Authorization") != "Bearer "+testKey || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("headers %v", r.Header)
		}
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Error(err)
		}
		io.WriteString(w, okBody)
	}, nil)
	resp, err := c.Complete(context.Background(), userReq("hi"))
	if err != nil {
		t.Fatal(err)
	}
	want := core.ChatResponse{Content: "hello there", Model: "gpt-test-2024", InputTokens: 12, OutputTokens: 3}
	if resp != want {
		t.Errorf("got %+v, want %+v", resp, want)
	}
	// The default model is sent; unset options are omitted.
	if got["model"] != "m-default" {
		t.Errorf("model %v", got["model"])
	}
	for _, k := range []string{"max_tokens", "temperature", "response_format"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s sent though unset: %v", k, got)
		}
	}
	msgs, _ := json.Marshal(got["messages"])
	if string(msgs) != `[{"content":"be brief","role":"system"},{"content":"hi","role":"user"}]` {
		t.Errorf("messages %s", msgs)
	}
	if info := c.Info(); info != (core.LLMInfo{ID: "p1", Model: "m-default"}) {
		t.Errorf("info %+v", info)
	}
	if cnt.list() != "p1:ok" {
		t.Errorf("counter %q", cnt.list())
	}
}

func TestCompleteRequestShape(t *testing.T) {
	t.Parallel()
	var raw []byte
	c, _, _ := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		raw, _ = io.ReadAll(r.Body)
		// A server that omits usage and model still succeeds.
		io.WriteString(w, `{"choices":[{"message":{"content":"{\"facts\":[]}"}}]}`)
	}, nil)
	temp := 0.0
	req := userReq("extract")
	req.Model = "m-request"
	req.MaxTokens = 256
	req.Temperature = &temp
	req.JSONSchema = map[string]any{"type": "object", "properties": map[string]any{"facts": map[string]any{"type": "array"}},
		"required": []any{"facts"}, "additionalProperties": false}
	resp, err := c.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Model != "m-request" || resp.InputTokens != 0 || resp.Content != `{"facts":[]}` {
		t.Errorf("resp %+v", resp)
	}
	var got struct {
		Model          string   `json:"model"`
		MaxTokens      *int     `json:"max_tokens"`
		Temperature    *float64 `json:"temperature"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string         `json:"name"`
				Schema map[string]any `json:"schema"`
				Strict *bool          `json:"strict"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	rf := got.ResponseFormat
	switch {
	case got.Model != "m-request":
		t.Errorf("model %q", got.Model)
	case got.MaxTokens == nil || *got.MaxTokens != 256:
		t.Errorf("max_tokens %v", got.MaxTokens)
	case got.Temperature == nil || *got.Temperature != 0:
		t.Errorf("temperature 0 must be sent explicitly: %s", raw)
	case rf.Type != "json_schema" || rf.JSONSchema.Name != "footprint" || rf.JSONSchema.Strict == nil || !*rf.JSONSchema.Strict:
		t.Errorf("response_format %s", raw)
	case rf.JSONSchema.Schema["type"] != "object" || rf.JSONSchema.Schema["additionalProperties"] != false:
		t.Errorf("schema %v", rf.JSONSchema.Schema)
	}
}

func TestRetryAfter429(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var first time.Time
	c, srv, cnt := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, errorBody)
			return
		}
		if d := time.Since(first); d < 900*time.Millisecond {
			t.Errorf("retried after %s, before Retry-After", d)
		}
		io.WriteString(w, okBody)
	}, nil)
	resp, err := c.Complete(context.Background(), userReq("hi"))
	checkSafe(t, err, srv.URL)
	if err != nil || resp.Content != "hello there" {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	if calls.Load() != 2 || cnt.list() != "p1:retry,p1:ok" {
		t.Errorf("calls %d counter %q", calls.Load(), cnt.list())
	}
}

func TestRetryAfterBeyondCap(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, srv, _ := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, errorBody)
	}, nil)
	start := time.Now()
	_, err := c.Complete(context.Background(), userReq("hi"))
	checkSafe(t, err, srv.URL)
	var perr *llm.ProviderError
	if !errors.Is(err, core.ErrUnavailable) || !errors.As(err, &perr) || perr.RetryAfter != time.Hour {
		t.Fatalf("err %v", err)
	}
	if calls.Load() != 1 || time.Since(start) > time.Second {
		t.Errorf("calls %d, took %s", calls.Load(), time.Since(start))
	}
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	t.Parallel()
	for _, status := range []int{500, 502, 503, 504} {
		var calls atomic.Int32
		c, srv, cnt := newClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(status)
			io.WriteString(w, errorBody)
		}, nil)
		_, err := c.Complete(context.Background(), userReq("hi"))
		checkSafe(t, err, srv.URL)
		var perr *llm.ProviderError
		if !errors.Is(err, core.ErrUnavailable) || !errors.As(err, &perr) || perr.StatusCode != status || perr.Attempts != 3 {
			t.Errorf("%d: err %v (%+v)", status, err, perr)
		}
		if calls.Load() != 3 { // MaxRetries 2 + 1
			t.Errorf("%d: %d attempts, want 3", status, calls.Load())
		}
		if cnt.list() != "p1:retry,p1:retry,p1:error" {
			t.Errorf("%d: counter %q", status, cnt.list())
		}
		if !strings.Contains(err.Error(), `"p1"`) || !strings.Contains(err.Error(), "HTTP") {
			t.Errorf("error should name the provider and status: %v", err)
		}
	}
}

func TestClientErrorsNotRetried(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 422} {
		var calls atomic.Int32
		c, srv, cnt := newClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.WriteHeader(status)
			io.WriteString(w, errorBody)
		}, nil)
		_, err := c.Complete(context.Background(), userReq("hi"))
		checkSafe(t, err, srv.URL)
		var perr *llm.ProviderError
		if err == nil || errors.Is(err, core.ErrUnavailable) || !errors.As(err, &perr) || perr.StatusCode != status {
			t.Errorf("%d: err %v", status, err)
		}
		if calls.Load() != 1 || cnt.list() != "p1:error" {
			t.Errorf("%d: %d attempts, counter %q", status, calls.Load(), cnt.list())
		}
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	c, srv, _ := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}, func(cfg *llm.Config) { cfg.Timeout = 50 * time.Millisecond; cfg.MaxRetries = -1 })
	start := time.Now()
	_, err := c.Complete(context.Background(), userReq("hi"))
	checkSafe(t, err, srv.URL)
	if !errors.Is(err, core.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if !strings.Contains(err.Error(), "timed out") || time.Since(start) > 2*time.Second {
		t.Errorf("err %v after %s", err, time.Since(start))
	}
}

func TestTransportErrorRetried(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // connection refused from now on
	c, err := llm.NewOpenAI(llm.Config{ID: "p1", BaseURL: url, APIKey: testKey, Model: "m", MaxRetries: 1,
		Backoff: llm.Backoff{Base: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), userReq("hi"))
	checkSafe(t, err, url)
	var perr *llm.ProviderError
	if !errors.Is(err, core.ErrUnavailable) || !errors.As(err, &perr) || perr.Attempts != 2 || perr.Cause() == nil {
		t.Fatalf("err %v", err)
	}
}

func TestMalformedResponses(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"bad JSON":      `{"choices": [` + bodySecret,
		"wrong type":    `{"choices": "` + bodySecret + `"}`,
		"no choices":    `{"choices": [], "note": "` + bodySecret + `"}`,
		"null content":  `{"choices": [{"message": {"content": null}}]}`,
		"empty content": `{"choices": [{"message": {"content": "  "}}]}`,
		"refusal":       `{"choices": [{"message": {"content": null, "refusal": "` + bodySecret + `"}}]}`,
	} {
		var calls atomic.Int32
		c, srv, cnt := newClient(t, func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			io.WriteString(w, body)
		}, nil)
		_, err := c.Complete(context.Background(), userReq("hi"))
		checkSafe(t, err, srv.URL)
		if err == nil || errors.Is(err, core.ErrUnavailable) || !strings.Contains(err.Error(), "malformed response") {
			t.Errorf("%s: err %v", name, err)
		}
		if calls.Load() != 1 || cnt.list() != "p1:error" {
			t.Errorf("%s: %d calls, counter %q", name, calls.Load(), cnt.list())
		}
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, srv, _ := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, errorBody)
	}, func(cfg *llm.Config) { cfg.Backoff = llm.Backoff{Base: 10 * time.Second, Max: 10 * time.Second} })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Complete(ctx, userReq("hi"))
	checkSafe(t, err, srv.URL)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > 2*time.Second || calls.Load() != 1 {
		t.Errorf("returned after %s and %d calls", d, calls.Load())
	}
}

func TestDeadlineShorterThanBackoff(t *testing.T) {
	t.Parallel()
	c, srv, _ := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}, func(cfg *llm.Config) { cfg.Backoff = llm.Backoff{Base: 10 * time.Second, Max: 10 * time.Second} })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Complete(ctx, userReq("hi"))
	checkSafe(t, err, srv.URL)
	if !errors.Is(err, core.ErrUnavailable) || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

func TestInvalidRequests(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, _, cnt := newClient(t, func(w http.ResponseWriter, r *http.Request) { calls.Add(1) },
		func(cfg *llm.Config) { cfg.Model = "" })
	hot := 2.5
	for name, req := range map[string]core.ChatRequest{
		"no model":    userReq("hi"),
		"no messages": {Model: "m"},
		"negative":    {Model: "m", Messages: userReq("hi").Messages, MaxTokens: -1},
		"too hot":     {Model: "m", Messages: userReq("hi").Messages, Temperature: &hot},
		"bad schema":  {Model: "m", Messages: userReq("hi").Messages, JSONSchema: map[string]any{"f": func() {}}},
	} {
		if _, err := c.Complete(context.Background(), req); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if calls.Load() != 0 || cnt.list() != "" {
		t.Errorf("%d calls, counter %q", calls.Load(), cnt.list())
	}
}

func TestNewOpenAIConfig(t *testing.T) {
	t.Parallel()
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		if r.Header.Get("Authorization") != "" {
			t.Error("Authorization sent without a key")
		}
		io.WriteString(w, okBody)
	}))
	defer srv.Close()
	for _, base := range []string{srv.URL + "/v1", srv.URL + "/v1/", srv.URL + "/"} {
		c, err := llm.NewOpenAI(llm.Config{ID: "local", BaseURL: base})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(context.Background(), core.ChatRequest{Model: "llama", Messages: userReq("x").Messages}); err != nil {
			t.Fatal(err)
		}
		if path != "/v1/chat/completions" {
			t.Errorf("base %s: path %s", base, path)
		}
	}
	for name, cfg := range map[string]llm.Config{
		"bad id":      {ID: "-x"},
		"scheme":      {ID: "a", BaseURL: "ftp://secret-host.example"},
		"no host":     {ID: "a", BaseURL: "http://"},
		"credentials": {ID: "a", BaseURL: "https://user:" + testKey + "@secret-host.example"},
		"query":       {ID: "a", BaseURL: "https://secret-host.example/?key=" + testKey},
		"key control": {ID: "a", APIKey: testKey + "\n"},
		"timeout":     {ID: "a", Timeout: -time.Second},
		"retries":     {ID: "a", MaxRetries: 11},
		"backoff":     {ID: "a", Backoff: llm.Backoff{Base: -1}},
	} {
		_, err := llm.NewOpenAI(cfg)
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
		checkSafe(t, err, "secret-host")
	}
}

func TestScripted(t *testing.T) {
	t.Parallel()
	p := llm.NewScripted("fake", "m0", func(req core.ChatRequest) (core.ChatResponse, error) {
		if req.Model == "boom" {
			return core.ChatResponse{}, core.ErrUnavailable
		}
		return core.ChatResponse{Content: "summary of " + req.Messages[0].Content, InputTokens: 7, OutputTokens: 2}, nil
	})
	if p.Info() != (core.LLMInfo{ID: "fake", Model: "m0"}) {
		t.Errorf("info %+v", p.Info())
	}
	resp, err := p.Complete(context.Background(), userReq("x"))
	if err != nil || resp != (core.ChatResponse{Content: "summary of be brief", Model: "m0", InputTokens: 7, OutputTokens: 2}) {
		t.Errorf("resp %+v err %v", resp, err)
	}
	if _, err := p.Complete(context.Background(), core.ChatRequest{Model: "boom"}); !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("err %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Complete(ctx, userReq("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
	echo := llm.NewScripted("echo", "", nil)
	if resp, _ := echo.Complete(context.Background(), core.ChatRequest{Model: "m", Messages: userReq("last").Messages}); resp.Content != "last" || resp.Model != "m" {
		t.Errorf("echo %+v", resp)
	}
}
