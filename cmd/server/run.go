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
	"github.com/footprint/footprint/internal/telemetry"
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

	// Telemetry (internal/telemetry): traces as the OTEL_* variables say
	// (tp is nil when off, and then nothing traces), the domain's metrics.
	tracing, err := telemetry.SetupTracing(ctx, getenv, logger)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	defer flushTraces(ctx, tracing, logger)
	tp := tracing.Provider
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := telemetry.NewMetrics(reg)

	store, closeStore, err := openStore(ctx, cfg, getenv, logger, pg.WithTracerProvider(tp), pg.WithCommitObserver(metrics.TurnCommit))
	if err != nil {
		return err
	}
	defer closeStore()

	specs, err := embedder.ParseSpecs(cfg.Embedders)
	if err != nil {
		return err
	}
	embedders, err := embedder.Build(specs, getenv, embedder.WithTracerProvider(tp), embedder.WithObserver(metrics.EmbedderCall))
	if err != nil {
		return err
	}

	llmSpecs, err := llm.ParseSpecs(cfg.LLMs)
	if err != nil {
		return err
	}
	llms, err := llm.BuildCounted(llmSpecs, getenv, metrics.LLMCall, llm.WithTracing(tp, cfg.CaptureContent))
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
		app.WithObserver(metrics), app.WithTracing(tp, cfg.CaptureContent),
		app.WithFoldObserver(func(provider, outcome string) {
			metrics.Fold(provider, outcome)
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

		TracerProvider:   tp,
		MetricsElsewhere: cfg.MetricsAddr != "",
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
	metricsURL := base + "/metrics"
	var metricsSrv *http.Server
	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("listen on %s (FOOTPRINT_METRICS_ADDR): %w", cfg.MetricsAddr, err)
		}
		metricsURL = "http://" + mln.Addr().String() + "/metrics"
		metricsSrv = newMetricsServer(reg, logger)
		go func() { _ = metricsSrv.Serve(mln) }()
		defer func() { _ = metricsSrv.Close() }()
	}
	printBanner(stdout, cfg, banner{URL: base, Store: describeStore(cfg), Embedders: caps.Embedders,
		Metrics: metricsURL, Tracing: tracing.Description})
	if len(cfg.APIKeys) == 0 {
		logger.Warn("no API keys configured: running single-tenant and open", "tenant", core.DefaultTenant)
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if sw, ok := store.(core.Sweeper); ok {
		go sweep(ctx, sw, cfg.SweepInterval, cfg.RunRetention, logger)
	}
	if bf, ok := store.(core.LexicalBackfiller); ok {
		go backfillLexical(ctx, bf, logger)
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
	printStopped(stdout, cfg)
	return nil
}

func openStore(ctx context.Context, cfg Config, getenv func(string) string, logger *slog.Logger, opts ...pg.Option) (app.Store, func(), error) {
	if cfg.DatabaseURL == "" {
		logger.Info("no DATABASE_URL: using the in-memory store (data is lost on exit)")
		return memory.New(), func() {}, nil
	}
	opts = append([]pg.Option{pg.WithStatementTimeout(cfg.StatementTimeout), pg.WithLockTimeout(cfg.LockTimeout)}, opts...)
	s, err := pg.Open(ctx, cfg.DatabaseURL, logger, opts...)
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
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(telemetry.LogHandler(h)) // trace_id and span_id when a span is active
}

func describeStore(cfg Config) string {
	if cfg.DatabaseURL == "" {
		return "in-memory (embedded default; set DATABASE_URL for Postgres + pgvector)"
	}
	return "postgres + pgvector"
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

// backfillLexical gives entries stored before lexical ranking their terms, a batch at a time,
// until none is left (a database written by this version has none: the first call finds
// nothing). Until then such entries score 0 lexically. A failure is logged and the work left
// for the next start.
func backfillLexical(ctx context.Context, bf core.LexicalBackfiller, logger *slog.Logger) {
	var total int64
	for ctx.Err() == nil {
		n, err := bf.BackfillLexical(ctx, 500)
		if err != nil {
			if ctx.Err() == nil {
				logger.Warn("lexical backfill failed; entries written before lexical ranking score 0 lexically until the next start", "error", err, "entries", total)
			}
			return
		}
		if total += n; n == 0 {
			break
		}
	}
	if total > 0 {
		logger.Info("gave entries written before lexical ranking their terms", "entries", total)
	}
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
