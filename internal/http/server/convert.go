package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
	"github.com/footprint/footprint/internal/core/turns"
	"github.com/footprint/footprint/internal/http/apitime"
	"github.com/footprint/footprint/internal/http/gen"
)

// This file is the one seam between generated API types and core types.

func strategyInfoOut(s strategies.StrategyInfo) gen.StrategyInfo {
	reqs := make([]gen.Requirement, len(s.Requirements))
	for i, r := range s.Requirements {
		reqs[i] = gen.Requirement(r)
	}
	types := make([]gen.MemoryType, len(s.Types))
	for i, t := range s.Types {
		types[i] = gen.MemoryType(t)
	}
	scopes := make([]gen.MemoryScope, len(s.Scopes))
	for i, sc := range s.Scopes {
		scopes[i] = gen.MemoryScope(sc)
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
		Scopes:       scopes,
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
		ge := gen.EmbedderInfo{
			ID: e.ID, Kind: gen.EmbedderKind(e.Kind), Dimensions: e.Dimensions,
			Model: optString(e.Model), Default: e.Default, Description: e.Description,
		}
		ge.Ranking.Default = gen.Ranking(cmp.Or(e.Ranking.Ranking, core.RankVector))
		ge.Ranking.Alpha, ge.Ranking.Calibration = e.Ranking.Alpha, e.Ranking.Calibration
		th := func(r core.Ranking) *float64 {
			if v, ok := e.Ranking.Thresholds[r]; ok {
				return &v
			}
			return nil
		}
		ge.Ranking.Thresholds.Vector, ge.Ranking.Thresholds.Lexical, ge.Ranking.Thresholds.Hybrid =
			th(core.RankVector), th(core.RankLexical), th(core.RankHybrid)
		out.Embedders = append(out.Embedders, ge)
	}
	for _, l := range c.LLMs {
		out.LLMs = append(out.LLMs, gen.LLMInfo{ID: l.ID, Model: optString(l.Model)})
	}
	for _, sc := range strategies.Scopes() {
		types := make([]gen.MemoryType, len(sc.Types))
		for i, t := range sc.Types {
			types[i] = gen.MemoryType(t)
		}
		out.Scopes = append(out.Scopes, gen.ScopeInfo{Scope: gen.MemoryScope(sc.Scope), Description: sc.Description, Types: types})
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
		Scope:       scopeOut(m.Scope),
		Version:     m.Version,
		CreatedAt:   apitime.Of(m.CreatedAt),
		UpdatedAt:   apitime.Of(m.UpdatedAt),
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

func memoryParamsIn(in gen.MemoryInput) strategies.MemoryParams {
	return strategies.MemoryParams{
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
		Scope:       string(deref(in.Scope)),
	}
}

func memoryReplaceIn(in gen.MemoryReplace) strategies.MemoryParams {
	return strategies.MemoryParams{
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
		Scope:       string(deref(in.Scope)),
	}
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// optInt maps 0 (unset) to nil.
func optInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func identity(ctx context.Context, conversationID string, principal *string) core.Identity {
	return core.Identity{Tenant: tenantFrom(ctx), Principal: deref(principal), ConversationID: conversationID}
}

// turnParamsIn maps a turn body to core. JSON "any" values (decision
// evidence, tool args) are re-encoded as raw JSON.
func turnParamsIn(id core.Identity, in gen.TurnInput, key *string) turns.TurnParams {
	p := turns.TurnParams{
		Identity:       id,
		TurnNumber:     in.TurnNumber,
		Messages:       make([]core.Message, len(in.Messages)),
		RunID:          deref(in.RunID),
		Memories:       in.Memories,
		IdempotencyKey: deref(key),
		RecallIDs:      in.RecallIds,
	}
	for i, m := range in.Messages {
		p.Messages[i] = core.Message{Role: string(m.Role), Content: m.Content}
	}
	if e := in.Evidence; e != nil {
		// Absent (or null) fields stay nil: not reported. An empty array is reported.
		ev := &turns.TurnEvidence{Iterations: e.Iterations, DurationMs: e.DurationMs}
		if e.TokenUsage != nil {
			ev.TokenUsage = &core.TokenUsage{Input: e.TokenUsage.Input, Output: e.TokenUsage.Output}
		}
		if e.Decisions != nil {
			ev.Decisions = []core.Decision{}
		}
		if e.ToolCalls != nil {
			ev.ToolCalls = []core.ToolCall{}
		}
		for _, d := range e.Decisions {
			ev.Decisions = append(ev.Decisions, core.Decision{StageID: d.StageID, Chosen: d.Chosen, Rule: deref(d.Rule), Evidence: rawJSON(d.Evidence)})
		}
		for _, c := range e.ToolCalls {
			ev.ToolCalls = append(ev.ToolCalls, core.ToolCall{Name: c.Name, Args: rawJSON(c.Args), ResultPreview: deref(c.ResultPreview), Errored: deref(c.Errored)})
		}
		p.Evidence = ev
	}
	if ce := in.Embeddings; ce != nil {
		p.Embeddings = &turns.ClientEmbeddings{Model: ce.EmbeddingModel, Query: ce.Query, Messages: ce.Messages}
	}
	return p
}

func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func turnResultOut(r turns.TurnResult) gen.TurnResult {
	out := gen.TurnResult{Written: make([]gen.TurnWritten, 0, len(r.Written)), Skipped: make([]gen.TurnSkipped, 0, len(r.Skipped))}
	if r.Turn > 0 {
		t := r.Turn
		out.Turn = &t
	}
	for _, w := range r.Written {
		out.Written = append(out.Written, gen.TurnWritten{MemoryID: w.MemoryID, Ids: w.IDs})
	}
	for _, s := range r.Skipped {
		out.Skipped = append(out.Skipped, gen.TurnSkipped{MemoryID: s.MemoryID, Reason: gen.SkipReason(s.Reason), Detail: optString(s.Detail)})
	}
	if r.Noop != nil {
		out.Noop = &gen.TurnNoop{Reason: gen.NoopReason(r.Noop.Reason), Detail: r.Noop.Detail}
	}
	for _, n := range r.Extraction {
		note := gen.ExtractionNote{MemoryID: n.MemoryID, Extractor: gen.ExtractionNoteExtractor(n.Extractor), FallbackReason: optString(n.FallbackReason)}
		if n.InputTokens > 0 || n.OutputTokens > 0 {
			in, out := n.InputTokens, n.OutputTokens
			note.InputTokens, note.OutputTokens = &in, &out
		}
		out.Extraction = append(out.Extraction, note)
	}
	return out
}

func entryOut(e core.Entry, withEmbedding bool) gen.Entry {
	out := gen.Entry{
		ID:             e.ID,
		MemoryID:       e.MemoryID,
		Kind:           gen.EntryKind(e.Kind),
		Value:          json.RawMessage(e.Value),
		Metadata:       map[string]any{},
		Version:        e.Version,
		CreatedAt:      apitime.Of(e.CreatedAt),
		UpdatedAt:      apitime.Of(e.UpdatedAt),
		LastAccessedAt: apitime.Of(e.LastAccessedAt),
		AccessCount:    e.AccessCount,
		Tier:           optTier(e.Tier),
		Source:         gen.EntrySource{Turn: e.SourceTurn, RunID: optString(e.SourceRunID)},
		EmbeddingModel: optString(e.EmbeddingModel),
		ConversationID: optString(e.SourceConversation),
	}
	if sup := e.Supersedes; sup != nil {
		out.Supersedes = &gen.Superseded{Value: map[string]any{}, ConversationID: optString(sup.Conversation)}
		_ = json.Unmarshal(sup.Value, &out.Supersedes.Value) // a stored fact is always a JSON object
		if sup.Turn > 0 {
			t := sup.Turn
			out.Supersedes.Turn = &t
		}
	}
	if len(e.Metadata) > 0 {
		_ = json.Unmarshal(e.Metadata, &out.Metadata) // stored metadata is always a JSON object
	}
	if e.Turn > 0 {
		t := e.Turn
		out.Turn = &t
	}
	if e.Kind == core.KindMessage || e.Kind == core.KindBeat {
		i := e.Index
		out.Index = &i
	}
	out.ExpiresAt = apitime.Opt(e.ExpiresAt)
	if n := len(e.Embedding); n > 0 {
		out.EmbeddingDims = &n
		if withEmbedding {
			out.Embedding = e.Embedding
		}
	}
	return out
}

func optTier(t string) *gen.Tier {
	if t == "" {
		return nil
	}
	x := gen.Tier(t)
	return &x
}

// scopeOut is a memory's scope as the API spells it (a stored "" is the default).
func scopeOut(s core.MemoryScope) *gen.MemoryScope {
	out := gen.MemoryScope(core.ScopeConversation)
	if s != "" {
		out = gen.MemoryScope(s)
	}
	return &out
}
