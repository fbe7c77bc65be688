package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/server"
	"github.com/footprint/footprint/internal/telemetry"
)

// banner is what start-up tells on stdout: where the server listens, what it
// runs on, how it is reached and observed.
type banner struct {
	URL       string // http://host:port
	Store     string
	Embedders []core.EmbedderInfo
	Metrics   string // where /metrics is served
	Tracing   string // telemetry.Tracing.Description
}

// printBanner writes b as lines for a person, or, with FOOTPRINT_LOG_FORMAT
// json, as one JSON object like the log lines (time, level, msg and a field
// per item), so that a log pipeline reading stdout never meets free text.
func printBanner(w io.Writer, cfg Config, b banner) {
	open := len(cfg.APIKeys) == 0
	if cfg.LogFormat == "json" {
		auth := slog.Group("auth", slog.String("mode", "bearer"), slog.Int("keys", len(cfg.APIKeys)))
		if open {
			auth = slog.Group("auth", slog.String("mode", "open"), slog.String("tenant", core.DefaultTenant))
		}
		embedders := make([]any, len(b.Embedders))
		for i, e := range b.Embedders {
			embedders[i] = map[string]any{"id": e.ID, "kind": e.Kind, "dimensions": e.Dimensions, "default": e.Default}
		}
		slog.New(slog.NewJSONHandler(w, nil)).LogAttrs(context.Background(), slog.LevelInfo, "footprint listening",
			slog.String("url", b.URL), slog.String("explorer", b.URL+"/explorer/"), slog.String("docs", b.URL+"/docs/"), slog.String("spec", b.URL+"/openapi.yaml"),
			slog.String("store", b.Store), slog.Any("embedders", embedders), auth,
			slog.String("metrics", b.Metrics), slog.String("tracing", b.Tracing))
		return
	}
	fmt.Fprintf(w, "footprint listening on %s\n", b.URL)
	fmt.Fprintf(w, "  explorer:  %s/explorer/\n", b.URL)
	fmt.Fprintf(w, "  API docs:  %s/docs/   (spec: %s/openapi.yaml)\n", b.URL, b.URL)
	fmt.Fprintf(w, "  store:     %s\n", b.Store)
	fmt.Fprintf(w, "  embedders: %s\n", describeEmbedders(b.Embedders))
	if open {
		fmt.Fprintf(w, "  auth:      OPEN — no FOOTPRINT_API_KEYS set, every request is tenant %q\n", core.DefaultTenant)
	} else {
		fmt.Fprintf(w, "  auth:      bearer keys for %d tenant key(s)\n", len(cfg.APIKeys))
	}
	fmt.Fprintf(w, "  metrics:   %s\n", b.Metrics)
	fmt.Fprintf(w, "  tracing:   %s\n", b.Tracing)
}

// printStopped says the server stopped, in the banner's format.
func printStopped(w io.Writer, cfg Config) {
	if cfg.LogFormat == "json" {
		slog.New(slog.NewJSONHandler(w, nil)).Info("footprint stopped")
		return
	}
	fmt.Fprintln(w, "footprint stopped")
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

// newMetricsServer serves /metrics alone, for FOOTPRINT_METRICS_ADDR.
func newMetricsServer(g prometheus.Gatherer, logger *slog.Logger) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", server.MetricsHandler(g))
	// Its 404s and 405s (POST /metrics) are problems, as on the main listener.
	return &http.Server{Handler: server.ProblemsOnError(mux), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
}

// flushTraces sends the spans still buffered before the program exits, within
// a few seconds even when the collector does not answer.
func flushTraces(ctx context.Context, t *telemetry.Tracing, logger *slog.Logger) {
	if !t.Enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := t.Shutdown(ctx); err != nil {
		logger.Warn("flushing traces at exit failed", "error", err)
	}
}
