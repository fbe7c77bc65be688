package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
	"github.com/footprint/footprint/internal/http/gen"
)

const (
	defaultPageSize = 50
	maxPageSize     = 200
)

// handlers implements the generated strict server over core.Service.
// Handlers return domain errors; the strict server's error hook renders
// them as problems through problemFor.
type handlers struct {
	svc      *app.App
	logger   *slog.Logger
	cursors  cursors
	draining func() bool
	limits   core.Limits

	maxOpenRuns int // per-tenant open run recordings (runs_handlers.go)
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

func (h *handlers) capabilities() core.Capabilities {
	c := h.svc.Capabilities()
	c.Limits = h.limits
	return c
}

func (h *handlers) GetCapabilities(_ context.Context, req gen.GetCapabilitiesRequestObject) (gen.GetCapabilitiesResponseObject, error) {
	body := capabilitiesOut(h.capabilities())
	tag := etagOf(body)
	if matches(req.Params.IfNoneMatch, tag) {
		return gen.GetCapabilities304Response{Headers: gen.NotModifiedResponseHeaders{ETag: tag}}, nil
	}
	return gen.GetCapabilities200JSONResponse{Body: body, Headers: gen.GetCapabilities200ResponseHeaders{ETag: tag}}, nil
}

func (h *handlers) ListStrategies(_ context.Context, req gen.ListStrategiesRequestObject) (gen.ListStrategiesResponseObject, error) {
	list := gen.StrategyList{Strategies: []gen.StrategyInfo{}}
	for _, s := range strategies.Catalogue(h.capabilities()) {
		if req.Params.Type != nil && !containsType(s.Types, core.MemoryType(*req.Params.Type)) {
			continue
		}
		if req.Params.Offerable != nil && s.Offerable != *req.Params.Offerable {
			continue
		}
		list.Strategies = append(list.Strategies, strategyInfoOut(s))
	}
	tag := etagOf(list)
	if matches(req.Params.IfNoneMatch, tag) {
		return gen.ListStrategies304Response{Headers: gen.NotModifiedResponseHeaders{ETag: tag}}, nil
	}
	return gen.ListStrategies200JSONResponse{Body: list, Headers: gen.ListStrategies200ResponseHeaders{ETag: tag}}, nil
}

func (h *handlers) GetStrategy(_ context.Context, req gen.GetStrategyRequestObject) (gen.GetStrategyResponseObject, error) {
	info, err := strategies.LookupStrategy(req.Kind, h.capabilities())
	if err != nil {
		return nil, err
	}
	body := strategyInfoOut(info)
	tag := etagOf(body)
	if matches(req.Params.IfNoneMatch, tag) {
		return gen.GetStrategy304Response{Headers: gen.NotModifiedResponseHeaders{ETag: tag}}, nil
	}
	return gen.GetStrategy200JSONResponse{Body: body, Headers: gen.GetStrategy200ResponseHeaders{ETag: tag}}, nil
}

func (h *handlers) CreateMemory(ctx context.Context, req gen.CreateMemoryRequestObject) (gen.CreateMemoryResponseObject, error) {
	dryRun := deref(req.Params.DryRun)
	m, err := h.svc.Memories.DefineMemory(ctx, tenantFrom(ctx), memoryParamsIn(*req.Body), dryRun)
	if err != nil {
		return nil, err
	}
	out, err := memoryOut(m)
	if err != nil {
		return nil, err
	}
	if dryRun {
		return gen.CreateMemory200JSONResponse{Body: out}, nil
	}
	return gen.CreateMemory201JSONResponse{Body: out, Headers: gen.CreateMemory201ResponseHeaders{Location: "/v1/memories/" + m.ID}}, nil
}

func (h *handlers) ListMemories(ctx context.Context, req gen.ListMemoriesRequestObject) (gen.ListMemoriesResponseObject, error) {
	tenant := tenantFrom(ctx)
	limit := defaultPageSize
	if req.Params.Limit != nil {
		limit = min(max(*req.Params.Limit, 1), maxPageSize)
	}
	after := ""
	if c := deref(req.Params.Cursor); c != "" {
		var err error
		if after, err = h.cursors.open(c, tenant, "memories"); err != nil {
			p := newProblem(http.StatusBadRequest, "invalid-cursor", "The cursor is not one this server issued for this query; start again without `cursor`.")
			p.Path = "cursor"
			return nil, p
		}
	}
	ms, more, err := h.svc.Memories.ListMemories(ctx, tenant, after, limit)
	if err != nil {
		return nil, err
	}
	body := gen.MemoryList{Memories: make([]gen.Memory, 0, len(ms))}
	for _, m := range ms {
		out, err := memoryOut(m)
		if err != nil {
			return nil, err
		}
		body.Memories = append(body.Memories, out)
	}
	if more && len(ms) > 0 {
		next := h.cursors.sign(tenant, "memories", ms[len(ms)-1].ID)
		body.NextCursor = &next
	}
	return gen.ListMemories200JSONResponse{Body: body}, nil
}

func (h *handlers) GetMemory(ctx context.Context, req gen.GetMemoryRequestObject) (gen.GetMemoryResponseObject, error) {
	m, err := h.svc.Memories.GetMemory(ctx, tenantFrom(ctx), req.MemoryID)
	if err != nil {
		return nil, err
	}
	out, err := memoryOut(m)
	if err != nil {
		return nil, err
	}
	return gen.GetMemory200JSONResponse{Body: out}, nil
}

func (h *handlers) ReplaceMemory(ctx context.Context, req gen.ReplaceMemoryRequestObject) (gen.ReplaceMemoryResponseObject, error) {
	m, err := h.svc.Memories.ReplaceMemory(ctx, tenantFrom(ctx), req.MemoryID, memoryReplaceIn(*req.Body), req.Body.Version)
	if err != nil {
		return nil, err
	}
	out, err := memoryOut(m)
	if err != nil {
		return nil, err
	}
	return gen.ReplaceMemory200JSONResponse{Body: out}, nil
}

func (h *handlers) DeleteMemory(ctx context.Context, req gen.DeleteMemoryRequestObject) (gen.DeleteMemoryResponseObject, error) {
	if err := h.svc.Memories.DeleteMemory(ctx, tenantFrom(ctx), req.MemoryID, deref(req.Params.Purge)); err != nil {
		return nil, err
	}
	return gen.DeleteMemory204Response{}, nil
}

func containsType(ts []core.MemoryType, t core.MemoryType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// etagOf is a strong validator over the response's JSON bytes: the body is
// a pure function of the deployment and the query, so equal bytes mean an
// equal representation.
func etagOf(v any) string {
	b, _ := json.Marshal(v) // generated response types always marshal
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// matches implements If-None-Match: `*`, or a comma-separated list of
// entity tags compared weakly (RFC 9110 §13.1.2).
func matches(ifNoneMatch *string, tag string) bool {
	if ifNoneMatch == nil {
		return false
	}
	for _, t := range strings.Split(*ifNoneMatch, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == tag {
			return true
		}
	}
	return false
}
