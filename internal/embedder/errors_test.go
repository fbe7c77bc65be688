package embedder_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// TestProviderErrorDescribesTheFailure checks what a *core.EmbedderError
// tells its caller (the HTTP layer maps it to 502 or 503 from these
// fields), through core's wrapping, for each way a provider can fail.
func TestProviderErrorDescribesTheFailure(t *testing.T) {
	t.Parallel()
	status := func(code int) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.WriteHeader(code)
			_, _ = io.WriteString(w, errorBody)
		}
	}
	tests := []struct {
		name      string
		respond   func(w http.ResponseWriter) // nil: nothing listens
		dims      int
		timeout   time.Duration
		want      core.EmbedderError // the exported fields checked
		reasonHas string
	}{
		{"401", status(401), 0, 0, core.EmbedderError{StatusCode: 401, Attempts: 1}, "HTTP 401 Unauthorized"},
		{"404", status(404), 0, 0, core.EmbedderError{StatusCode: 404, Attempts: 1}, "HTTP 404 Not Found"},
		{"503", status(503), 0, 0, core.EmbedderError{StatusCode: 503, Attempts: 3, Temporary: true}, "HTTP 503 Service Unavailable"},
		{"not JSON", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "{"+bodySecret) }, 0, 0,
			core.EmbedderError{StatusCode: 200, Attempts: 1, Malformed: true}, "invalid JSON"},
		{"wrong dims", func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{"data":[{"embedding":[1,2,3]}],"embeddings":[[1,2,3]]}`)
		}, 4, 0,
			core.EmbedderError{StatusCode: 200, Attempts: 1, Malformed: true}, "vector 0 has 3 dimensions, want 4"},
		{"connection refused", nil, 0, 0, core.EmbedderError{Attempts: 3, Temporary: true}, "connection refused"},
		{"attempt timeout", func(http.ResponseWriter) { time.Sleep(300 * time.Millisecond) }, 0, 50 * time.Millisecond,
			core.EmbedderError{Attempts: 3, Temporary: true}, "timed out"},
	}
	for _, p := range providers {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					tt.respond(w)
				}))
				t.Cleanup(srv.Close)
				if tt.respond == nil {
					srv.Close()
				}
				o := fastOpts()
				o.dims, o.timeout = tt.dims, tt.timeout
				e := mustNew(t, p, srv.URL, o)
				_, err := e.Embed(context.Background(), inputs(1))
				checkSafe(t, err)
				err = fmt.Errorf("embed with %q: %w", e.Info().ID, err) // as core wraps it
				pe := providerError(t, err)
				wantEndpoint := map[string]string{"openai": "/v1/embeddings", "ollama": "/api/embed"}[p.name]
				if pe.Embedder != e.Info().ID || !strings.Contains(pe.Endpoint, wantEndpoint) {
					t.Errorf("Embedder, Endpoint = %q, %q; want %q, one naming %s", pe.Embedder, pe.Endpoint, e.Info().ID, wantEndpoint)
				}
				if pe.StatusCode != tt.want.StatusCode || pe.Attempts != tt.want.Attempts ||
					pe.Temporary != tt.want.Temporary || pe.Malformed != tt.want.Malformed {
					t.Errorf("got StatusCode %d, Attempts %d, Temporary %v, Malformed %v; want %d, %d, %v, %v",
						pe.StatusCode, pe.Attempts, pe.Temporary, pe.Malformed,
						tt.want.StatusCode, tt.want.Attempts, tt.want.Temporary, tt.want.Malformed)
				}
				if !strings.Contains(pe.Reason, tt.reasonHas) {
					t.Errorf("Reason %q lacks %q", pe.Reason, tt.reasonHas)
				}
				checkSafe(t, errors.New(pe.Reason))
				if strings.Contains(pe.Reason, "127.0.0.1") || strings.Contains(pe.Error(), "127.0.0.1") {
					t.Errorf("Reason %q or message %q names the provider's address", pe.Reason, pe.Error())
				}
				if errors.Is(err, core.ErrUnavailable) != tt.want.Temporary {
					t.Errorf("errors.Is(ErrUnavailable) = %v, want %v", !tt.want.Temporary, tt.want.Temporary)
				}
				if errors.Is(err, context.DeadlineExceeded) {
					t.Error("an attempt's failure must not pass for the caller's deadline")
				}
			})
		}
	}
}

// TestProviderErrorCallerDeadline: when the caller's deadline passes while
// the provider is still answering, the failure is the provider's (a
// temporary *ProviderError), and still unwraps to the deadline.
func TestProviderErrorCallerDeadline(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, hang)
			e := mustNew(t, p, srv.URL, fastOpts()) // attempt timeout: the default 30s
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err := e.Embed(ctx, inputs(1))
			checkSafe(t, err)
			pe := providerError(t, err)
			if !pe.Temporary || pe.StatusCode != 0 || pe.Attempts != 1 || !strings.Contains(pe.Reason, "deadline") {
				t.Errorf("ProviderError = %+v", pe)
			}
			if !errors.Is(err, core.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v; want it to be ErrUnavailable and DeadlineExceeded", err)
			}
			if !strings.Contains(err.Error(), `embedder "`+e.Info().ID+`"`) {
				t.Errorf("message %q does not name the embedder", err)
			}
		})
	}
}

// TestCancelIsNotAProviderError: a caller that went away gets its own
// context.Canceled back, not a provider failure to report.
func TestCancelIsNotAProviderError(t *testing.T) {
	t.Parallel()
	p := providers[0]
	srv := newServer(t, p, func(w http.ResponseWriter, r *http.Request, _ wireRequest, _ int) {
		<-r.Context().Done()
	})
	e := mustNew(t, p, srv.URL, fastOpts())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := e.Embed(ctx, inputs(1))
	var pe *core.EmbedderError
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want a plain context.Canceled", err, err)
	}
}
