package embedder_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"
)

// testKey and bodySecret are planted in every request and every error body;
// no error may ever contain them.
const (
	testKey    = "sk-test-0123456789abcdefSECRETKEY"
	bodySecret = "PROVIDER-BODY-SENTINEL"
)

// errorBody is what providers really send on failure, including the echo of
// a bad key that OpenAI's 401 carries.
var errorBody = `{"error":{"message":"Incorrect API key provided: ` + testKey + ` ` + bodySecret + `"}}`

// checkSafe fails the test if err's message leaks the key or the body.
func checkSafe(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := err.Error()
	for _, secret := range []string{testKey, bodySecret, "SECRETKEY", "Incorrect API key"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error message leaks %q: %s", secret, msg)
		}
	}
}

// opts are the settings tests vary, mapped onto either provider's config.
type opts struct {
	dims     int
	sendDims bool
	batch    int
	timeout  time.Duration
	retries  int
	backoff  embedder.Backoff
}

// fastOpts retries quickly so that tests of the retry path take
// milliseconds.
func fastOpts() opts {
	return opts{retries: 2, backoff: embedder.Backoff{Base: time.Millisecond, Max: 4 * time.Millisecond}}
}

// provider describes one wire format for the shared tests.
type provider struct {
	name string
	path string
	new  func(baseURL string, o opts) (core.Embedder, error)
	// ok writes a success body carrying vecs in input order.
	ok func(w http.ResponseWriter, vecs [][]float32)
	// rawOK wraps raw JSON arrays (one per input) into a success body.
	rawOK func(arrays []string) string
}

var providers = []provider{
	{
		name: "openai",
		path: "/v1/embeddings",
		new: func(baseURL string, o opts) (core.Embedder, error) {
			return embedder.NewOpenAI(embedder.OpenAIConfig{ID: "ada", BaseURL: baseURL, APIKey: testKey, Model: "m",
				Dimensions: o.dims, SendDimensions: o.sendDims, BatchSize: o.batch, Timeout: o.timeout,
				MaxRetries: o.retries, Backoff: o.backoff})
		},
		ok: func(w http.ResponseWriter, vecs [][]float32) {
			type item struct {
				Object    string    `json:"object"`
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			}
			// Reversed on purpose: the client must order by index.
			items := make([]item, 0, len(vecs))
			for i := len(vecs) - 1; i >= 0; i-- {
				items = append(items, item{"embedding", i, vecs[i]})
			}
			writeJSON(w, map[string]any{"object": "list", "data": items, "model": "m",
				"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
		},
		rawOK: func(arrays []string) string {
			items := make([]string, len(arrays))
			for i, a := range arrays {
				items[i] = fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, a)
			}
			return `{"object":"list","data":[` + strings.Join(items, ",") + `]}`
		},
	},
	{
		name: "ollama",
		path: "/api/embed",
		new: func(baseURL string, o opts) (core.Embedder, error) {
			return embedder.NewOllama(embedder.OllamaConfig{ID: "local", BaseURL: baseURL, APIKey: testKey, Model: "m",
				Dimensions: o.dims, SendDimensions: o.sendDims, BatchSize: o.batch, Timeout: o.timeout,
				MaxRetries: o.retries, Backoff: o.backoff})
		},
		ok: func(w http.ResponseWriter, vecs [][]float32) {
			writeJSON(w, map[string]any{"model": "m", "embeddings": vecs})
		},
		rawOK: func(arrays []string) string {
			return `{"model":"m","embeddings":[` + strings.Join(arrays, ",") + `]}`
		},
	},
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

type wireRequest struct {
	Model      string   `json:"model"`
	Input      []string `json:"input"`
	Dimensions *int     `json:"dimensions"`
}

// server is an in-process provider whose behaviour each test sets.
type server struct {
	*httptest.Server
	calls atomic.Int32
	mu    sync.Mutex
	reqs  []wireRequest
	auth  []string
}

// requests returns the decoded requests and their Authorization headers so
// far. The handler runs on other goroutines, hence the lock.
func (s *server) requests() ([]wireRequest, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]wireRequest(nil), s.reqs...), append([]string(nil), s.auth...)
}

// newServer serves p's path with handle, recording each request.
func newServer(t *testing.T, p provider, handle func(w http.ResponseWriter, r *http.Request, req wireRequest, call int)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := int(s.calls.Add(1))
		if r.Method != http.MethodPost || r.URL.Path != p.path {
			http.Error(w, "wrong route "+r.Method+" "+r.URL.Path, http.StatusTeapot)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			http.Error(w, "wrong content type "+ct, http.StatusTeapot)
			return
		}
		var req wireRequest
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, "bad body", http.StatusTeapot)
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		s.mu.Unlock()
		handle(w, r, req, call)
	}))
	t.Cleanup(s.Close)
	return s
}

// echoVecs returns, for inputs "t<k>", the vector [k+1, 1, 0]: after
// normalisation v[0]/v[1] still identifies the input.
func echoVecs(input []string) [][]float32 {
	vecs := make([][]float32, len(input))
	for i, in := range input {
		k, _ := strconv.Atoi(strings.TrimPrefix(in, "t"))
		vecs[i] = []float32{float32(k + 1), 1, 0}
	}
	return vecs
}

func inputs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "t" + strconv.Itoa(i)
	}
	return out
}

// checkEcho verifies that out holds the echo vectors of inputs(len(out)), in
// order and normalised.
func checkEcho(t *testing.T, out [][]float32) {
	t.Helper()
	for i, v := range out {
		if len(v) != 3 {
			t.Fatalf("vector %d has %d dims", i, len(v))
		}
		if n := norm(v); math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d norm %v", i, n)
		}
		if got := float64(v[0] / v[1]); math.Abs(got-float64(i+1)) > 1e-3 {
			t.Fatalf("vector %d belongs to input %v: out of order", i, got-1)
		}
	}
}

func mustNew(t *testing.T, p provider, url string, o opts) core.Embedder {
	t.Helper()
	e, err := p.new(url, o)
	if err != nil {
		t.Fatalf("new %s: %v", p.name, err)
	}
	return e
}

func providerError(t *testing.T, err error) *core.EmbedderError {
	t.Helper()
	var pe *core.EmbedderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *core.EmbedderError", err, err)
	}
	return pe
}

func TestRemoteSuccess(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, req wireRequest, _ int) {
				p.ok(w, echoVecs(req.Input))
			})
			e := mustNew(t, p, srv.URL, opts{})
			if got := e.Info().Dimensions; got != 0 {
				t.Errorf("Dimensions before the first call = %d, want 0", got)
			}
			out, err := e.Embed(context.Background(), inputs(5))
			if err != nil {
				t.Fatal(err)
			}
			checkEcho(t, out)
			if got := e.Info().Dimensions; got != 3 {
				t.Errorf("Dimensions after the first call = %d, want 3 (learned)", got)
			}
			reqs, auth := srv.requests()
			if reqs[0].Model != "m" || len(reqs[0].Input) != 5 || reqs[0].Dimensions != nil {
				t.Errorf("request = %+v", reqs[0])
			}
			if auth[0] != "Bearer "+testKey {
				t.Errorf("Authorization = %q", auth[0])
			}
			info := e.Info()
			if info.Kind != p.name || info.Model != "m" || info.Description == "" {
				t.Errorf("Info() = %+v", info)
			}
		})
	}
}

func TestRemoteLearnedDimsEnforced(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, req wireRequest, call int) {
				if call == 1 {
					p.ok(w, [][]float32{{1, 0, 0}})
					return
				}
				p.ok(w, [][]float32{{1, 0, 0, 0}})
			})
			e := mustNew(t, p, srv.URL, opts{})
			if _, err := e.Embed(context.Background(), []string{"a"}); err != nil {
				t.Fatal(err)
			}
			_, err := e.Embed(context.Background(), []string{"a"})
			checkSafe(t, err)
			if err == nil || errors.Is(err, core.ErrUnavailable) || !strings.Contains(err.Error(), "want 3") {
				t.Fatalf("err = %v, want a malformed-response error about dims", err)
			}
		})
	}
}

func TestRemoteNoAuthWithoutKey(t *testing.T) {
	t.Parallel()
	p := providers[0]
	srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, req wireRequest, _ int) {
		p.ok(w, echoVecs(req.Input))
	})
	e, err := embedder.NewOpenAI(embedder.OpenAIConfig{ID: "vllm", BaseURL: srv.URL + "/v1/", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), inputs(1)); err != nil {
		t.Fatal(err) // also proves a base ending in /v1 is not doubled
	}
	if _, auth := srv.requests(); auth[0] != "" {
		t.Errorf("Authorization sent without a key: %q", auth[0])
	}
}

func TestRemoteSendDimensions(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, req wireRequest, _ int) {
				p.ok(w, echoVecs(req.Input))
			})
			e := mustNew(t, p, srv.URL, opts{dims: 3, sendDims: true})
			out, err := e.Embed(context.Background(), inputs(2))
			if err != nil {
				t.Fatal(err)
			}
			checkEcho(t, out)
			reqs, _ := srv.requests()
			if d := reqs[0].Dimensions; d == nil || *d != 3 {
				t.Errorf("dimensions in request = %v, want 3", d)
			}
		})
	}
}

func TestRemoteBatching(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, req wireRequest, _ int) {
				p.ok(w, echoVecs(req.Input))
			})
			e := mustNew(t, p, srv.URL, opts{})
			out, err := e.Embed(context.Background(), inputs(600))
			if err != nil {
				t.Fatal(err)
			}
			if len(out) != 600 {
				t.Fatalf("%d vectors", len(out))
			}
			checkEcho(t, out)
			var sizes []int
			reqs, _ := srv.requests()
			for _, r := range reqs {
				sizes = append(sizes, len(r.Input))
			}
			if fmt.Sprint(sizes) != "[256 256 88]" {
				t.Errorf("batch sizes %v, want [256 256 88]", sizes)
			}
		})
	}
}

func TestOpenAIIndexHandling(t *testing.T) {
	t.Parallel()
	p := providers[0]
	tests := []struct {
		name, body string
		wantErr    string
	}{
		{"no indexes: array order", `{"data":[{"embedding":[1,1,0]},{"embedding":[2,1,0]}]}`, ""},
		{"some indexes missing", `{"data":[{"index":1,"embedding":[2,1,0]},{"embedding":[1,1,0]}]}`, "no index"},
		{"duplicate index", `{"data":[{"index":0,"embedding":[1,1,0]},{"index":0,"embedding":[2,1,0]}]}`, "twice"},
		{"index out of range", `{"data":[{"index":0,"embedding":[1,1,0]},{"index":2,"embedding":[2,1,0]}]}`, "outside"},
		{"missing embedding", `{"data":[{"index":0,"embedding":[1,1,0]},{"index":1}]}`, "no embedding"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, _ wireRequest, _ int) {
				_, _ = io.WriteString(w, tt.body)
			})
			e := mustNew(t, p, srv.URL, fastOpts())
			out, err := e.Embed(context.Background(), inputs(2))
			checkSafe(t, err)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkEcho(t, out)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if errors.Is(err, core.ErrUnavailable) || srv.calls.Load() != 1 {
				t.Errorf("malformed response: ErrUnavailable=%v, calls=%d; want false, 1",
					errors.Is(err, core.ErrUnavailable), srv.calls.Load())
			}
		})
	}
}

// TestRemoteRetries covers which statuses are retried and how often.
func TestRemoteRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status      int
		wantCalls   int32 // with MaxRetries 2
		unavailable bool
	}{
		{http.StatusTooManyRequests, 3, true},
		{http.StatusInternalServerError, 3, true},
		{http.StatusBadGateway, 3, true},
		{http.StatusServiceUnavailable, 3, true},
		{http.StatusGatewayTimeout, 3, true},
		{http.StatusNotImplemented, 1, false}, // a 5xx, but retrying will not help: 502 embedder-failed
		{http.StatusBadRequest, 1, false},
		{http.StatusUnauthorized, 1, false},
		{http.StatusForbidden, 1, false},
		{http.StatusNotFound, 1, false},
	}
	for _, p := range providers {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%d", p.name, tt.status), func(t *testing.T) {
				t.Parallel()
				srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, _ wireRequest, _ int) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tt.status)
					_, _ = io.WriteString(w, errorBody)
				})
				e := mustNew(t, p, srv.URL, fastOpts())
				_, err := e.Embed(context.Background(), inputs(1))
				checkSafe(t, err)
				if got := srv.calls.Load(); got != tt.wantCalls {
					t.Errorf("%d calls, want %d", got, tt.wantCalls)
				}
				if errors.Is(err, core.ErrUnavailable) != tt.unavailable {
					t.Errorf("errors.Is(ErrUnavailable) = %v, want %v: %v", !tt.unavailable, tt.unavailable, err)
				}
				pe := providerError(t, err)
				if pe.StatusCode != tt.status || pe.Attempts != int(tt.wantCalls) {
					t.Errorf("ProviderError = %+v", pe)
				}
				if !strings.Contains(err.Error(), strconv.Itoa(tt.status)) {
					t.Errorf("message %q does not give the status", err)
				}
			})
		}
	}
}

func TestRemoteRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			var (
				mu                sync.Mutex
				firstAt, secondAt time.Time
			)
			srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, req wireRequest, call int) {
				mu.Lock()
				defer mu.Unlock()
				if call == 1 {
					firstAt = time.Now()
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = io.WriteString(w, errorBody)
					return
				}
				secondAt = time.Now()
				p.ok(w, echoVecs(req.Input))
			})
			e := mustNew(t, p, srv.URL, fastOpts()) // backoff alone would wait ~1ms
			out, err := e.Embed(context.Background(), inputs(2))
			if err != nil {
				t.Fatal(err)
			}
			checkEcho(t, out)
			if got := srv.calls.Load(); got != 2 {
				t.Errorf("%d calls, want 2", got)
			}
			mu.Lock()
			gap := secondAt.Sub(firstAt)
			mu.Unlock()
			if gap < 900*time.Millisecond {
				t.Errorf("retried after %v, before Retry-After: 1", gap)
			}
		})
	}
}

func TestRemoteRetryAfterOverCapFailsFast(t *testing.T) {
	t.Parallel()
	headers := map[string]string{"seconds": "60", "date": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}
	for form, header := range headers {
		for _, p := range providers {
			t.Run(p.name+"/"+form, func(t *testing.T) {
				t.Parallel()
				srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, _ wireRequest, _ int) {
					w.Header().Set("Retry-After", header)
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = io.WriteString(w, errorBody)
				})
				e := mustNew(t, p, srv.URL, fastOpts())
				start := time.Now()
				_, err := e.Embed(context.Background(), inputs(1))
				checkSafe(t, err)
				if !errors.Is(err, core.ErrUnavailable) || srv.calls.Load() != 1 || time.Since(start) > time.Second {
					t.Fatalf("err = %v after %d calls in %v; want ErrUnavailable, 1 call, at once", err, srv.calls.Load(), time.Since(start))
				}
				if pe := providerError(t, err); pe.RetryAfter < 59*time.Second {
					t.Errorf("RetryAfter = %v, want the provider's value", pe.RetryAfter)
				}
			})
		}
	}
}

func TestRemoteMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body func(p provider) string
		dims int
		want string
	}{
		{"not JSON", func(provider) string { return "{not json " + testKey + bodySecret }, 0, "invalid JSON"},
		{"truncated", func(p provider) string { return p.rawOK([]string{"[1,2,3]"})[:20] }, 0, "invalid JSON"},
		{"wrong type", func(p provider) string { return p.rawOK([]string{`"` + bodySecret + `"`}) }, 0, "wrong type"},
		{"overflow", func(p provider) string { return p.rawOK([]string{"[1e400,1,0]"}) }, 0, "out of range"},
		{"float32 overflow", func(p provider) string { return p.rawOK([]string{"[1e39,1,0]"}) }, 0, "out of range"},
		{"zero vector", func(p provider) string { return p.rawOK([]string{"[0,0,0]"}) }, 0, "zero"},
		{"empty vector", func(p provider) string { return p.rawOK([]string{"[]"}) }, 0, "0 dimensions"},
		{"wrong dims", func(p provider) string { return p.rawOK([]string{"[1,2,3]"}) }, 4, "3 dimensions, want 4"},
		{"too few vectors", func(p provider) string { return p.rawOK(nil) }, 0, "0 vectors for 1 inputs"},
		{"too many vectors", func(p provider) string { return p.rawOK([]string{"[1]", "[1]"}) }, 0, "2 vectors for 1 inputs"},
	}
	for _, p := range providers {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, _ wireRequest, _ int) {
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, tt.body(p))
				})
				o := fastOpts()
				o.dims = tt.dims
				e := mustNew(t, p, srv.URL, o)
				_, err := e.Embed(context.Background(), inputs(1))
				checkSafe(t, err)
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.want)
				}
				if errors.Is(err, core.ErrUnavailable) {
					t.Errorf("a malformed response is an internal error, not ErrUnavailable")
				}
				if strings.Contains(err.Error(), "1e400") || strings.Contains(err.Error(), "not json") {
					t.Errorf("message quotes the body: %v", err)
				}
				if got := srv.calls.Load(); got != 1 {
					t.Errorf("%d calls; malformed responses must not be retried", got)
				}
			})
		}
	}
}

// hang is a provider that never answers: it holds the request until the client gives up (or
// 5 s pass, so a broken test cannot hang the suite).
func hang(_ http.ResponseWriter, r *http.Request, _ wireRequest, _ int) {
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

func TestRemoteTimeout(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, hang)
			o := fastOpts()
			o.timeout, o.retries = 100*time.Millisecond, 1
			e := mustNew(t, p, srv.URL, o)
			start := time.Now()
			_, err := e.Embed(context.Background(), inputs(1))
			checkSafe(t, err)
			if !errors.Is(err, core.ErrUnavailable) || !strings.Contains(err.Error(), "timed out") {
				t.Fatalf("err = %v, want ErrUnavailable with a timeout", err)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Error("an attempt timeout must not look like the caller's deadline")
			}
			if got := srv.calls.Load(); got != 2 {
				t.Errorf("%d calls, want 2 (timeouts are retried)", got)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestRemoteCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, _ wireRequest, _ int) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, errorBody)
			})
			o := fastOpts()
			o.backoff = embedder.Backoff{Base: 30 * time.Second, Max: 30 * time.Second}
			e := mustNew(t, p, srv.URL, o)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			_, err := e.Embed(ctx, inputs(1))
			checkSafe(t, err)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("returned after %v, not promptly", d)
			}
			if got := srv.calls.Load(); got != 1 {
				t.Errorf("%d calls, want 1", got)
			}
		})
	}
}

func TestRemoteDeadlineShorterThanBackoff(t *testing.T) {
	t.Parallel()
	p := providers[0]
	srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, _ wireRequest, _ int) {
		w.WriteHeader(http.StatusBadGateway)
	})
	o := fastOpts()
	o.backoff = embedder.Backoff{Base: 30 * time.Second, Max: 30 * time.Second}
	e := mustNew(t, p, srv.URL, o)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := e.Embed(ctx, inputs(1))
	if !errors.Is(err, core.ErrUnavailable) || time.Since(start) > time.Second {
		t.Fatalf("err = %v after %v; want ErrUnavailable at once", err, time.Since(start))
	}
}

func TestRemoteConnectionRefused(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.NotFoundHandler())
			url := srv.URL
			srv.Close()
			e := mustNew(t, p, url, fastOpts())
			_, err := e.Embed(context.Background(), inputs(1))
			checkSafe(t, err)
			if !errors.Is(err, core.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if pe := providerError(t, err); pe.Attempts != 3 || pe.StatusCode != 0 {
				t.Errorf("ProviderError = %+v, want 3 attempts, no status", pe)
			}
			if strings.Contains(err.Error(), url) || strings.Contains(err.Error(), "127.0.0.1") {
				t.Errorf("message quotes the URL: %v", err)
			}
		})
	}
}

func TestRemoteRefusesEmptyText(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, req wireRequest, _ int) {
				p.ok(w, echoVecs(req.Input))
			})
			e := mustNew(t, p, srv.URL, opts{})
			if _, err := e.Embed(context.Background(), []string{"ok", "  "}); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
			if out, err := e.Embed(context.Background(), nil); err != nil || len(out) != 0 {
				t.Errorf("Embed(nil) = %v, %v", out, err)
			}
			if got := srv.calls.Load(); got != 0 {
				t.Errorf("%d calls, want none", got)
			}
		})
	}
}

func TestRemoteConfigValidation(t *testing.T) {
	t.Parallel()
	const password = "hunter2-PASSWORD"
	tests := []struct {
		name string
		cfg  embedder.OpenAIConfig
	}{
		{"bad id", embedder.OpenAIConfig{ID: "no spaces", Model: "m"}},
		{"no model", embedder.OpenAIConfig{ID: "a"}},
		{"bad scheme", embedder.OpenAIConfig{ID: "a", Model: "m", BaseURL: "ftp://host"}},
		{"no host", embedder.OpenAIConfig{ID: "a", Model: "m", BaseURL: "http://"}},
		{"credentials in URL", embedder.OpenAIConfig{ID: "a", Model: "m", BaseURL: "https://user:" + password + "@host"}},
		{"query in URL", embedder.OpenAIConfig{ID: "a", Model: "m", BaseURL: "https://host/?key=" + password}},
		{"negative dims", embedder.OpenAIConfig{ID: "a", Model: "m", Dimensions: -1}},
		{"send dims without dims", embedder.OpenAIConfig{ID: "a", Model: "m", SendDimensions: true}},
		{"batch too big", embedder.OpenAIConfig{ID: "a", Model: "m", BatchSize: embedder.MaxBatchSize + 1}},
		{"too many retries", embedder.OpenAIConfig{ID: "a", Model: "m", MaxRetries: embedder.MaxMaxRetries + 1}},
		{"negative timeout", embedder.OpenAIConfig{ID: "a", Model: "m", Timeout: -time.Second}},
		{"key with newline", embedder.OpenAIConfig{ID: "a", Model: "m", APIKey: testKey + "\nX: y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := embedder.NewOpenAI(tt.cfg)
			if err == nil {
				t.Fatal("accepted")
			}
			checkSafe(t, err)
			if strings.Contains(err.Error(), password) {
				t.Errorf("message leaks the URL's secret: %v", err)
			}
			_, err = embedder.NewOllama(embedder.OllamaConfig(tt.cfg))
			if err == nil {
				t.Fatal("ollama accepted")
			}
		})
	}
}

// TestConcurrentEmbed runs every embedder from many goroutines; with -race
// it checks the "safe for concurrent use" promise, including dims learning.
func TestConcurrentEmbed(t *testing.T) {
	t.Parallel()
	es := []core.Embedder{newHash(t, 64)}
	for _, p := range providers {
		srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, req wireRequest, _ int) {
			p.ok(w, echoVecs(req.Input))
		})
		es = append(es, mustNew(t, p, srv.URL, opts{batch: 3}))
	}
	for _, e := range es {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Go(func() {
				out, err := e.Embed(context.Background(), inputs(10))
				if err == nil && len(out) != 10 {
					err = fmt.Errorf("%d vectors", len(out))
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("%s: %v", e.Info().ID, err)
			}
		}
	}
}
