// Package httpapi is footprint's HTTP transport (directory internal/http):
// the generated strict server from api/openapi.yaml fronting core.Service,
// with our own error hooks so that every error is an RFC 9457 problem and no
// internal text ever reaches a client.
//
// Request path, outermost first: tracing (when on) → request id → panic
// recovery → access log and metrics → CORS → (for /v1 only) per-request deadline → body limit and
// media type → authentication → per-tenant rate limit → OpenAPI request
// validation → handler.
// Health, readiness, metrics, the spec and the docs sit outside /v1 and
// skip auth and validation.
//
// /mcp (package mcp) is the same API as Model Context Protocol tools: it
// sits behind the same body limit, authentication and per-tenant rate limit
// as /v1, and serves each tool call through the /v1 operation it stands for,
// past those (validation → handler), so both speak with one implementation.
package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/cors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/swaggest/swgui/v5emb"
	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/api"
	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/explorer"
	"github.com/footprint/footprint/internal/http/gen"
	"github.com/footprint/footprint/internal/http/mcp"
)

// Deps is everything NewServer wires together.
type Deps struct {
	App            *app.App
	Logger         *slog.Logger
	APIKeys        []APIKey
	CORSOrigins    []string
	MaxBodyBytes   int64
	RequestTimeout time.Duration
	// CursorSecret signs paging cursors; nil: a random per-process secret
	// (cursors then do not survive a restart or cross replicas).
	CursorSecret []byte
	// Draining, when it returns true, makes /readyz answer 503 so a load
	// balancer stops sending traffic before shutdown.
	Draining func() bool
	// Registerer receives the HTTP metrics; nil: a private registry.
	Registerer prometheus.Registerer
	// Gatherer serves /metrics; nil: the same private registry.
	Gatherer prometheus.Gatherer
	// MaxOpenRuns caps each tenant's unfinished run recordings (429 beyond);
	// 0: core.DefaultMaxOpenRuns.
	MaxOpenRuns int
	// RateLimit is each tenant's sustained request rate per second on /v1
	// (a token bucket of RateBurst; 429 beyond); 0 disables limiting.
	RateLimit float64
	// RateBurst is the bucket size; 0: twice RateLimit.
	RateBurst int
	// TracerProvider, when set, traces every request but the probes and
	// /metrics (tracing.go), continuing the caller's W3C trace context;
	// nil: no tracing.
	TracerProvider trace.TracerProvider
	// MetricsElsewhere leaves /metrics off this handler, for a deployment
	// that serves it on a listener of its own (MetricsHandler).
	MetricsElsewhere bool
}

// NewServer returns the service's one http.Handler.
func NewServer(d Deps) (http.Handler, error) {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = 1 << 20
	}
	if d.RequestTimeout <= 0 {
		d.RequestTimeout = 30 * time.Second
	}
	if len(d.CursorSecret) == 0 {
		d.CursorSecret = make([]byte, 32)
		_, _ = rand.Read(d.CursorSecret)
	}
	if d.Registerer == nil {
		reg := prometheus.NewRegistry()
		d.Registerer, d.Gatherer = reg, reg
	}
	if d.Draining == nil {
		d.Draining = func() bool { return false }
	}
	validate, err := newRequestValidator(d.Logger)
	if err != nil {
		return nil, err
	}
	h := &handlers{
		svc:      d.App,
		logger:   d.Logger,
		cursors:  cursors{secret: d.CursorSecret},
		draining: d.Draining,
		limits:   core.Limits{MaxBodyBytes: d.MaxBodyBytes, DefaultPageSize: defaultPageSize, MaxPageSize: maxPageSize},

		maxOpenRuns: d.MaxOpenRuns,
	}
	keys := newKeyring(d.APIKeys)
	limiter := newTenantLimiter(d.RateLimit, d.RateBurst)
	m := newMetrics(d.Registerer)
	h.followers = m.followers

	r := chi.NewRouter()
	r.Use(withRequestID, recoverer(d.Logger), m.observe(d.Logger))
	if len(d.CORSOrigins) > 0 {
		r.Use(cors.Handler(cors.Options{
			AllowedOrigins:   d.CORSOrigins,
			AllowedMethods:   []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodOptions},
			AllowedHeaders:   []string{"Authorization", "Content-Type", "If-None-Match", "If-Match", "Idempotency-Key", "X-Request-Id", "Last-Event-ID", "Mcp-Protocol-Version", "Mcp-Session-Id"},
			ExposedHeaders:   []string{"ETag", "Location", "Retry-After", "X-Request-Id", "Idempotent-Replayed", "RateLimit", "RateLimit-Policy", "Mcp-Session-Id"},
			AllowCredentials: false,
			MaxAge:           600,
		}))
	}
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, newProblem(http.StatusNotFound, "not-found", "No such endpoint. The API is described at /openapi.yaml and browsable at /docs/."))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, newProblem(http.StatusMethodNotAllowed, "method-not-allowed", r.Method+" is not supported on this path."))
	})

	v1 := func(next http.Handler) http.Handler {
		inner := withDeadline(d.RequestTimeout)(limitBody(d.MaxBodyBytes)(keys.authenticate(limiter.middleware(validate(next)))))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1/") {
				inner.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	strict := gen.NewStrictHandlerWithOptions(h, []gen.StrictMiddlewareFunc{withRunsRequest}, gen.StrictHTTPServerOptions{
		RequestErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			// An event batch is checked as it is decoded (eventio).
			if p := eventsProblem(err); p != nil {
				writeProblem(w, r, p)
				return
			}
			// The body passed schema validation but did not decode into
			// the generated types: still the caller's input, never a 500.
			writeProblem(w, r, newProblem(http.StatusBadRequest, "invalid-json", "The request body is not valid JSON for this operation."))
		},
		ResponseErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeError(w, r, d.Logger, err)
		},
	})
	gen.HandlerWithOptions(strict, gen.ChiServerOptions{
		BaseRouter:  r,
		Middlewares: []gen.MiddlewareFunc{v1},
		ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeProblem(w, r, paramProblem(err))
		},
	})

	mcpHandler, err := newMCP(d, strict, validate)
	if err != nil {
		return nil, err
	}
	r.With(limitBody(d.MaxBodyBytes), keys.authenticate, limiter.middleware).Handle("/mcp", mcpHandler)

	r.Get("/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(api.YAML)
	})
	// The docs' asset server and the Prometheus handler are not ours: their errors (an
	// unknown asset) are made problems, and they serve GET and HEAD only, so another method
	// is chi's 405 problem.
	docs := ProblemsOnError(v5emb.New("footprint API", "/openapi.yaml", "/docs/"))
	r.Get("/docs", http.RedirectHandler("/docs/", http.StatusMovedPermanently).ServeHTTP)
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		r.Method(method, "/docs/*", docs)
		if !d.MetricsElsewhere {
			r.Method(method, "/metrics", MetricsHandler(d.Gatherer))
		}
	}
	// The explorer: static files over the public API, nothing it calls is private to it.
	r.Get("/", http.RedirectHandler(explorer.Prefix, http.StatusFound).ServeHTTP)
	r.Get("/explorer", http.RedirectHandler(explorer.Prefix, http.StatusMovedPermanently).ServeHTTP)
	r.Handle(explorer.Prefix+"*", explorer.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, newProblem(http.StatusNotFound, "not-found", "No such file of the explorer; it starts at "+explorer.Prefix+"."))
	})))
	// Problem types resolve: each is a page saying what it means and how to fix it.
	r.Get("/problems", http.RedirectHandler("/problems/", http.StatusMovedPermanently).ServeHTTP)
	r.Get("/problems/", serveProblemIndex)
	r.Get("/problems/{code}", serveProblemPage)
	return traced(r, d.TracerProvider), nil
}

// MetricsHandler serves g's metrics in the Prometheus text format; its errors are problems.
func MetricsHandler(g prometheus.Gatherer) http.Handler {
	return ProblemsOnError(promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
}

// newMCP returns the /mcp endpoint. Its tools are served by a router of the
// /v1 operations behind only what comes after authentication and rate
// limiting on /v1 (panic recovery, the body checks, request validation):
// the /mcp request already went through those, and its context carries the
// tenant and the request id into every call.
func newMCP(d Deps, strict gen.ServerInterface, validate func(http.Handler) http.Handler) (http.Handler, error) {
	ops := chi.NewRouter()
	ops.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, newProblem(http.StatusNotFound, "not-found", "No such operation."))
	})
	gen.HandlerWithOptions(strict, gen.ChiServerOptions{
		BaseRouter: ops,
		Middlewares: []gen.MiddlewareFunc{func(next http.Handler) http.Handler {
			return recoverer(d.Logger)(limitBody(d.MaxBodyBytes)(validate(next)))
		}},
		ErrorHandlerFunc: func(w http.ResponseWriter, r *http.Request, err error) {
			writeProblem(w, r, paramProblem(err))
		},
	})
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The call's context holds the /mcp route's; chi would take it for a mount point.
		ops.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, (*chi.Context)(nil))))
	})
	spec, err := gen.GetSpec()
	if err != nil {
		return nil, fmt.Errorf("load embedded spec: %w", err)
	}
	return mcp.New(mcp.Options{
		Spec: spec, Backend: backend, RequestID: requestIDFrom, Logger: d.Logger,
		Timeout: d.RequestTimeout, MaxBodyBytes: d.MaxBodyBytes, Registerer: d.Registerer,
		KeysRequired: len(d.APIKeys) > 0,
	})
}

// withDeadline bounds every /v1 request, so a stuck dependency cannot hold a
// connection forever; the store sees the deadline through the context. A
// Server-Sent Events stream (runs_handlers.go) is exempt: it lasts as long as
// the run it follows, and ends when the client goes away.
func withDeadline(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if isEventStream(r) {
				next.ServeHTTP(w, r)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// recoverer turns a panic into a 500 problem (logged with its value, never
// sent) instead of a dropped connection.
func recoverer(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
						panic(v) // net/http's own signal to abort the response
					}
					logger.LogAttrs(r.Context(), slog.LevelError, "panic serving request",
						slog.String("requestId", requestIDFrom(r.Context())), slog.Any("panic", v))
					writeProblem(w, r, newProblem(http.StatusInternalServerError, "internal", ""))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}
