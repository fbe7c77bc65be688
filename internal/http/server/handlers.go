package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/gen"
)

const (
	defaultPageSize = 50
	maxPageSize     = 200
)

// handlers implements the generated strict server over the domain's services (app.App),
// one file per area: catalogue_, memories_, turns_, recall_, runs_ and explain_handlers.go.
// Handlers return domain errors; the strict server's error hook renders
// them as problems through problemFor.
type handlers struct {
	svc      *app.App
	logger   *slog.Logger
	cursors  cursors
	draining func() bool
	limits   core.Limits

	maxOpenRuns int              // per-tenant open run recordings (runs_handlers.go)
	followers   prometheus.Gauge // open event streams (runs_handlers.go)
}

var _ gen.StrictServerInterface = (*handlers)(nil)

// Error lets a *Problem travel as an error from a handler to the hook.
func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

func (h *handlers) GetHealth(context.Context, gen.GetHealthRequestObject) (gen.GetHealthResponseObject, error) {
	return gen.GetHealth200JSONResponse{Body: gen.Health{Status: gen.HealthStatusOk}}, nil
}

func (h *handlers) GetReadiness(ctx context.Context, _ gen.GetReadinessRequestObject) (gen.GetReadinessResponseObject, error) {
	if h.draining() {
		p := newProblem(http.StatusServiceUnavailable, "unavailable", "The server is shutting down.")
		p.retryAfter = 1
		return nil, p
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := h.svc.Ping(ctx); err != nil {
		h.logger.LogAttrs(ctx, slog.LevelWarn, "readiness: store unreachable", slog.String("error", err.Error()))
		p := newProblem(http.StatusServiceUnavailable, "unavailable", "The store is not reachable.")
		p.retryAfter = 1
		return nil, p
	}
	return gen.GetReadiness200JSONResponse{Body: gen.Readiness{Status: gen.ReadinessStatusReady, Store: gen.StoreKind(h.svc.Capabilities().Store.Kind)}}, nil
}
