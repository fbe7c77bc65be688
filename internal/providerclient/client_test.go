package providerclient

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
)

const testKey = "sk-test-SECRETKEY"

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                  0,
		"  ":                0,
		"0":                 0,
		"-5":                0,
		"7":                 7 * time.Second,
		" 2 ":               2 * time.Second,
		"99999999999999999": (1 << 20) * time.Second, // clamped, no overflow
		"soon":              0,
		now.Add(-time.Minute).Format(http.TimeFormat): 0,
		now.Add(time.Minute).Format(http.TimeFormat):  time.Minute,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	def := Backoff{Base: 100 * time.Millisecond, Max: time.Second}
	b, err := Backoff{}.withDefaults(def)
	if err != nil || b != (Backoff{Base: 100 * time.Millisecond, Max: time.Second, MaxRetryAfter: DefaultMaxRetryAfter}) {
		t.Fatalf("defaults = %+v, %v", b, err)
	}
	if b, _ := (Backoff{Base: 3 * time.Second}).withDefaults(def); b.Max != 3*time.Second {
		t.Errorf("Max below Base: %+v", b)
	}
	if _, err := (Backoff{MaxRetryAfter: -1}).withDefaults(def); err == nil {
		t.Error("negative duration accepted")
	}
	for n, nominal := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 9: time.Second} {
		for range 50 {
			if d := b.delay(n); d < nominal/2 || d > nominal {
				t.Fatalf("delay(%d) = %v, want within [%v, %v]", n, d, nominal/2, nominal)
			}
		}
	}
}

func TestDescribeJSONError(t *testing.T) {
	t.Parallel()
	var v struct{ N int8 }
	for body, want := range map[string]string{
		`{"N": SECRET}`:   "invalid JSON at byte",
		`{"N": "SECRET"}`: `field "N" has a value of the wrong type`,
		`{"N": 1000}`:     "out of range for int8",
		`{"N": 1`:         "invalid JSON",
	} {
		got := DescribeJSONError(json.Unmarshal([]byte(body), &v))
		if !strings.Contains(got, want) || strings.Contains(got, "SECRET") || strings.Contains(got, "1000") {
			t.Errorf("%s: %q, want it to contain %q and quote nothing", body, got, want)
		}
	}
}

func TestNewValidation(t *testing.T) {
	t.Parallel()
	base := Config{Label: "x", ID: "a", DefaultBaseURL: "https://example.com", Path: "/v1/things"}
	for name, mod := range map[string]func(*Config){
		"scheme":      func(c *Config) { c.BaseURL = "ftp://secret-host" },
		"no host":     func(c *Config) { c.BaseURL = "http://" },
		"credentials": func(c *Config) { c.BaseURL = "https://u:" + testKey + "@secret-host" },
		"query":       func(c *Config) { c.BaseURL = "https://secret-host/?k=" + testKey },
		"fragment":    func(c *Config) { c.BaseURL = "https://secret-host/#" + testKey },
		"key control": func(c *Config) { c.APIKey = testKey + "\r\n" },
		"timeout":     func(c *Config) { c.Timeout = -time.Second },
		"retries":     func(c *Config) { c.MaxRetries = MaxMaxRetries + 1 },
		"backoff":     func(c *Config) { c.Backoff.Base = -1 },
	} {
		cfg := base
		mod(&cfg)
		_, err := New(cfg)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "SECRETKEY") || strings.Contains(msg, "secret-host") {
			t.Errorf("%s: message leaks: %s", name, msg)
		}
	}
	for in, want := range map[string]string{
		"":                      "https://example.com/v1/things",
		"http://h:8080":         "http://h:8080/v1/things",
		"http://h:8080/":        "http://h:8080/v1/things",
		"http://h/v1":           "http://h/v1/things",
		"http://h/proxy/v1/":    "http://h/proxy/v1/things",
		"http://h/proxy":        "http://h/proxy/v1/things",
		"https://[::1]:8000/v1": "https://[::1]:8000/v1/things",
		"https://h/v10":         "https://h/v10/v1/things",
	} {
		cfg := base
		cfg.BaseURL = in
		c, err := New(cfg)
		if err != nil || c.endpoint != want {
			t.Errorf("base %q: endpoint %v (%v), want %s", in, c, err, want)
		}
	}
}

// newTestClient serves h and returns a fast-retrying client for it and a
// record of Counter calls.
func newTestClient(t *testing.T, h http.HandlerFunc, mod func(*Config)) (*Client, *[]string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	var (
		mu  sync.Mutex
		got []string
	)
	cfg := Config{Label: "thing", ID: "p1", BaseURL: srv.URL, Path: "/v1/x", APIKey: testKey,
		DefaultTimeout: 5 * time.Second, MaxRetries: 2, MaxResponseBytes: 1 << 20,
		Backoff: Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond},
		Counter: func(p, o string) { mu.Lock(); got = append(got, p+":"+o); mu.Unlock() }}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, &got
}

func TestPostSuccessAndHeaders(t *testing.T) {
	t.Parallel()
	c, counts := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/v1/x" || string(body) != `{"a":1}` ||
			r.Header.Get("Authorization") != "Bearer "+testKey || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", http.StatusTeapot)
			return
		}
		io.WriteString(w, `{"ok":true}`)
	}, nil)
	data, attempts, err := c.Post(context.Background(), []byte(`{"a":1}`))
	if err != nil || attempts != 1 || string(data) != `{"ok":true}` {
		t.Fatalf("Post = %s, %d, %v", data, attempts, err)
	}
	c.Count(OutcomeOK)
	if strings.Join(*counts, ",") != "p1:ok" {
		t.Errorf("counter %v", *counts)
	}
}

func TestPostRetriesAndErrors(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]struct {
		calls     int32
		temporary bool
	}{
		429: {3, true}, 500: {3, true}, 502: {3, true}, 503: {3, true}, 504: {3, true},
		501: {1, false}, 505: {1, false}, 400: {1, false}, 401: {1, false}, 404: {1, false},
	} {
		var calls atomic.Int32
		c, counts := newTestClient(t, func(w http.ResponseWriter, _ *http.Request) {
			calls.Add(1)
			w.WriteHeader(status)
			io.WriteString(w, "echo "+testKey)
		}, nil)
		_, attempts, err := c.Post(context.Background(), []byte(`{}`))
		var perr *Error
		if !errors.As(err, &perr) || perr.StatusCode != status || perr.Attempts != int(want.calls) || attempts != int(want.calls) {
			t.Fatalf("%d: err %v (%+v)", status, err, perr)
		}
		if calls.Load() != want.calls || errors.Is(err, core.ErrUnavailable) != want.temporary || perr.Temporary != want.temporary {
			t.Errorf("%d: %d calls, unavailable %v", status, calls.Load(), errors.Is(err, core.ErrUnavailable))
		}
		if msg := err.Error(); !strings.HasPrefix(msg, `thing "p1": provider returned HTTP`) || strings.Contains(msg, "SECRETKEY") {
			t.Errorf("%d: message %q", status, msg)
		}
		if retries := strings.Count(strings.Join(*counts, ","), "p1:retry"); retries != int(want.calls)-1 {
			t.Errorf("%d: counter %v", status, *counts)
		}
	}
}

func TestPostRetryAfter(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	c, _ := newTestClient(t, func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
	}, nil)
	start := time.Now()
	_, _, err := c.Post(context.Background(), []byte(`{}`))
	var perr *Error
	if !errors.As(err, &perr) || perr.RetryAfter != time.Minute || !errors.Is(err, core.ErrUnavailable) {
		t.Fatalf("err %v", err)
	}
	if calls.Load() != 1 || time.Since(start) > time.Second || !strings.Contains(err.Error(), "asked to wait") {
		t.Errorf("%d calls in %v: %v", calls.Load(), time.Since(start), err)
	}
}

func TestPostTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}, func(cfg *Config) { cfg.Timeout, cfg.MaxRetries = 50*time.Millisecond, -1 })
	_, _, err := c.Post(context.Background(), []byte(`{}`))
	var perr *Error
	if !errors.As(err, &perr) || !errors.Is(err, core.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "timed out") || perr.Cause() == nil {
		t.Fatalf("err %v", err)
	}

	c, _ = newTestClient(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) },
		func(cfg *Config) { cfg.Backoff = Backoff{Base: 30 * time.Second} })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if _, _, err := c.Post(ctx, []byte(`{}`)); !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start = time.Now()
	if _, _, err := c.Post(ctx, []byte(`{}`)); !errors.Is(err, core.ErrUnavailable) || time.Since(start) > time.Second ||
		!strings.Contains(err.Error(), "no time left") {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestPostOversizedAndMalformed(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, strings.Repeat("x", 2<<20))
	}, nil)
	_, _, err := c.Post(context.Background(), []byte(`{}`))
	if err == nil || errors.Is(err, core.ErrUnavailable) || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Fatalf("err %v", err)
	}
	m := c.Malformed(2, "no choices")
	if m.Error() != `thing "p1": malformed response: no choices (after 2 attempts)` || m.StatusCode != 200 || errors.Is(m, core.ErrUnavailable) {
		t.Errorf("Malformed = %v (%+v)", m, m)
	}
}
