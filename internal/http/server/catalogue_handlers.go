package server

import (
	"context"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
	"github.com/footprint/footprint/internal/http/gen"
)

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
