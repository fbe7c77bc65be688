package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/embedder"

	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/llm"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg"
)

// run is the whole program: it reads the configuration, opens the store,
// serves until ctx is cancelled, then drains. Tests call it directly.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	if len(args) > 1 && args[1] == "-healthcheck" {
		return healthcheck(ctx, cfg.Addr)
	}
	logger := newLogger(cfg, stderr)

	store, closeStore, err := openStore(ctx, cfg, getenv, logger)
	if err != nil {
		return err
	}
	defer closeStore()

	specs, err := embedder.ParseSpecs(cfg.Embedders)
	if err != nil {
		return err
	}
	embedders, err := embedder.Build(specs, getenv)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	providerCalls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "footprint_llm_calls_total",
		Help: "LLM provider calls by provider and outcome (ok, retry, error).",
	}, []string{"provider", "outcome"})
	folds := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "footprint_summarize_folds_total",
		Help: "Summarize fold attempts by provider and outcome (folded, refused, failed).",
	}, []string{"provider", "outcome"})
	reg.MustRegister(providerCalls, folds)

	llmSpecs, err := llm.ParseSpecs(cfg.LLMs)
	if err != nil {
		return err
	}
	llms, err := llm.BuildCounted(llmSpecs, getenv, func(provider, outcome string) {
		providerCalls.WithLabelValues(provider, outcome).Inc()
	})
	if err != nil {
		return err
	}
	caps := core.Capabilities{}
	for _, e := range embedders {
		caps.Embedders = append(caps.Embedders, e.Info())
	}
	for _, l := range llms {
		caps.LLMs = append(caps.LLMs, l.Info())
	}
	svc := app.New(store, caps, app.WithEmbedders(embedders...), app.WithLLMs(llms...),
		app.WithIdempotencyTTL(cfg.IdempotencyTTL), app.WithMemoryCacheTTL(cfg.MemoryCacheTTL),
		app.WithFoldObserver(func(provider, outcome string) {
			folds.WithLabelValues(provider, outcome).Inc()
			if outcome == "failed" {
				logger.Warn("summarize fold failed: recall stayed verbatim", "llm", provider)
			}
		}))

	var draining atomic.Bool
	handler, err := server.NewServer(server.Deps{
		App:            svc,
		Logger:         logger,
		APIKeys:        cfg.APIKeys,
		CORSOrigins:    cfg.CORSOrigins,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		RequestTimeout: cfg.RequestTimeout,
		CursorSecret:   []byte(cfg.CursorSecret),
		Draining:       draining.Load,
		MaxOpenRuns:    cfg.MaxOpenRuns,
		RateLimit:      cfg.RateLimit,
		RateBurst:      cfg.RateBurst,
		Registerer:     reg,
		Gatherer:       reg,
	})
	if err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	spares := newSpareConns()
	srv := &http.Server{
		Handler:           handler,
		ConnState:         spares.track,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      cfg.RequestTimeout + 5*time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "footprint listening on %s\n", base)
	fmt.Fprintf(stdout, "  API docs:  %s/docs/   (spec: %s/openapi.yaml)\n", base, base)
	fmt.Fprintf(stdout, "  store:     %s\n", describeStore(cfg))
	fmt.Fprintf(stdout, "  embedders: %s\n", describeEmbedders(caps.Embedders))
	if len(cfg.APIKeys) == 0 {
		fmt.Fprintf(stdout, "  auth:      OPEN — no FOOTPRINT_API_KEYS set, every request is tenant %q\n", core.DefaultTenant)
		logger.Warn("no API keys configured: running single-tenant and open", "tenant", core.DefaultTenant)
	} else {
		fmt.Fprintf(stdout, "  auth:      bearer keys for %d tenant key(s)\n", len(cfg.APIKeys))
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if sw, ok := store.(core.Sweeper); ok {
		go sweep(ctx, sw, cfg.SweepInterval, cfg.RunRetention, logger)
	}

	select {
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Drain: readiness goes 503 first so a load balancer stops routing here
	// (for DrainDelay the server still serves whatever reaches it), then
	// in-flight requests get the rest of ShutdownTimeout to finish.
	draining.Store(true)
	logger.Info("shutting down", "drainTimeout", cfg.ShutdownTimeout.String(), "drainDelay", cfg.DrainDelay.String())
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if cfg.DrainDelay > 0 {
		select {
		case <-time.After(cfg.DrainDelay):
		case <-shutdownCtx.Done():
		}
	}
	if err := shutdown(shutdownCtx, srv, spares); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(stdout, "footprint stopped")
	return nil
}

func openStore(ctx context.Context, cfg Config, getenv func(string) string, logger *slog.Logger) (app.Store, func(), error) {
	if cfg.DatabaseURL == "" {
		logger.Info("no DATABASE_URL: using the in-memory store (data is lost on exit)")
		return memory.New(), func() {}, nil
	}
	s, err := pg.Open(ctx, cfg.DatabaseURL, logger, pg.WithStatementTimeout(cfg.StatementTimeout), pg.WithLockTimeout(cfg.LockTimeout))
	if err != nil {
		return nil, nil, fmt.Errorf("open postgres store: %w", err)
	}
	logger.Info("garbage collector paced for the Postgres store", "gc", gcForPostgres(getenv))
	return s, s.Close, nil
}

func newLogger(cfg Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by loadConfig
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func describeStore(cfg Config) string {
	if cfg.DatabaseURL == "" {
		return "in-memory (embedded default; set DATABASE_URL for Postgres + pgvector)"
	}
	return "postgres + pgvector"
}

func describeEmbedders(es []core.EmbedderInfo) string {
	s := ""
	for i, e := range es {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s (%s, %d dims)", e.ID, e.Kind, e.Dimensions)
		if e.Default {
			s += " [default]"
		}
	}
	return s
}

// healthcheck probes a running server's /healthz on cfg.Addr, for container
// health checks on images that have no curl.
func healthcheck(ctx context.Context, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: status %d", res.StatusCode)
	}
	return nil
}

// sweep reclaims expired rows, and audit records older than retention, every interval until
// ctx ends. Failures are logged and retried at the next tick: reads never depend on the sweep.
func sweep(ctx context.Context, sw core.Sweeper, every, retention time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			n, err := sw.Sweep(ctx, core.NewSweepPolicy(now, retention))
			if err != nil {
				if ctx.Err() == nil {
					logger.Warn("sweep of expired rows failed", "error", err)
				}
				continue
			}
			if n > 0 {
				logger.Info("swept expired rows", "rows", n)
			}
		}
	}
}
