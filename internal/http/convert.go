package httpapi

import (
	"encoding/json"
	"fmt"

	"github.com/footprint/footprint/internal/core"
	gen "github.com/footprint/footprint/internal/http/api"
)

// This file is the one seam between generated API types and core types.

func strategyInfoOut(s core.StrategyInfo) gen.StrategyInfo {
	reqs := make([]gen.Requirement, len(s.Requirements))
	for i, r := range s.Requirements {
		reqs[i] = gen.Requirement(r)
	}
	types := make([]gen.MemoryType, len(s.Types))
	for i, t := range s.Types {
		types[i] = gen.MemoryType(t)
	}
	missing := make([]gen.Requirement, len(s.Missing))
	for i, r := range s.Missing {
		missing[i] = gen.Requirement(r)
	}
	return gen.StrategyInfo{
		Kind:         gen.StrategyKind(s.Kind),
		Description:  s.Description,
		Requirements: reqs,
		Types:        types,
		Example:      gen.Strategy(s.Example),
		Params:       s.Params,
		Offerable:    s.Offerable,
		Missing:      missing,
	}
}

func capabilitiesOut(c core.Capabilities) gen.Capabilities {
	out := gen.Capabilities{
		Embedders: make([]gen.EmbedderInfo, 0, len(c.Embedders)),
		LLMs:      make([]gen.LLMInfo, 0, len(c.LLMs)),
		Store:     gen.StoreInfo{Kind: gen.StoreKind(c.Store.Kind), RanksVectors: c.Store.RanksVectors},
		Limits:    gen.Limits{MaxBodyBytes: c.Limits.MaxBodyBytes, DefaultPageSize: c.Limits.DefaultPageSize, MaxPageSize: c.Limits.MaxPageSize},
	}
	for _, e := range c.Embedders {
		out.Embedders = append(out.Embedders, gen.EmbedderInfo{
			ID: e.ID, Kind: gen.EmbedderKind(e.Kind), Dimensions: e.Dimensions,
			Model: optString(e.Model), Default: e.Default, Description: e.Description,
		})
	}
	for _, l := range c.LLMs {
		out.LLMs = append(out.LLMs, gen.LLMInfo{ID: l.ID, Model: optString(l.Model)})
	}
	return out
}

func memoryOut(m core.Memory) (gen.Memory, error) {
	strategy, err := json.Marshal(m.Strategy)
	if err != nil {
		return gen.Memory{}, fmt.Errorf("marshal strategy of memory %q: %w", m.ID, err)
	}
	out := gen.Memory{
		ID:          m.ID,
		Type:        gen.MemoryType(m.Type),
		Strategy:    strategy,
		Description: optString(m.Description),
		ReadOnly:    m.ReadOnly,
		Embedder:    optString(m.Embedder),
		Corpus:      m.Corpus,
		Flavor:      gen.Flavor(m.Flavor),
		Version:     m.Version,
		CreatedAt:   m.CreatedAt.UTC(),
		UpdatedAt:   m.UpdatedAt.UTC(),
	}
	if m.TTLMs > 0 {
		ttl := m.TTLMs
		out.TTLMs = &ttl
	}
	if m.Tier != "" {
		t := gen.Tier(m.Tier)
		out.Tier = &t
	}
	if m.Projection != "" {
		p := gen.Projection(m.Projection)
		out.Projection = &p
	}
	return out, nil
}

func memoryParamsIn(in gen.MemoryInput) core.MemoryParams {
	return core.MemoryParams{
		ID:          in.ID,
		Type:        string(in.Type),
		Strategy:    in.Strategy,
		Description: deref(in.Description),
		ReadOnly:    deref(in.ReadOnly),
		TTLMs:       in.TTLMs,
		Tier:        string(deref(in.Tier)),
		Embedder:    deref(in.Embedder),
		Projection:  string(deref(in.Projection)),
		Corpus:      deref(in.Corpus),
		Flavor:      string(deref(in.Flavor)),
	}
}

func memoryReplaceIn(in gen.MemoryReplace) core.MemoryParams {
	return core.MemoryParams{
		ID:          deref(in.ID),
		Type:        string(in.Type),
		Strategy:    in.Strategy,
		Description: deref(in.Description),
		ReadOnly:    deref(in.ReadOnly),
		TTLMs:       in.TTLMs,
		Tier:        string(deref(in.Tier)),
		Embedder:    deref(in.Embedder),
		Projection:  string(deref(in.Projection)),
		Corpus:      deref(in.Corpus),
		Flavor:      string(deref(in.Flavor)),
	}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
