package server

import (
	"context"
	"encoding/json"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/http/apitime"
	"github.com/footprint/footprint/internal/http/gen"
)

func (h *handlers) ExplainTurn(ctx context.Context, req gen.ExplainTurnRequestObject) (gen.ExplainTurnResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	depth := 1
	if req.Params.Depth != nil {
		depth = *req.Params.Depth
	}
	ex, err := h.svc.Explain.Explain(ctx, id, req.Turn, depth)
	if err != nil {
		return nil, err
	}
	body, err := explanationOut(ex)
	if err != nil {
		return nil, err
	}
	return gen.ExplainTurn200JSONResponse{Body: body}, nil
}

func (h *handlers) ListInfluenceStrategies(_ context.Context, req gen.ListInfluenceStrategiesRequestObject) (gen.ListInfluenceStrategiesResponseObject, error) {
	list := gen.InfluenceStrategyList{Strategies: []gen.InfluenceStrategyInfo{}}
	for _, s := range h.svc.Explain.InfluenceStrategies() {
		info := gen.InfluenceStrategyInfo{Name: gen.InfluenceStrategy(s.Name), Description: s.Description, Offerable: s.Offerable,
			Requirements: []gen.InfluenceRequirement{}, Missing: []gen.InfluenceRequirement{}}
		for _, r := range s.Requirements {
			info.Requirements = append(info.Requirements, gen.InfluenceRequirement(r))
		}
		for _, r := range s.Missing {
			info.Missing = append(info.Missing, gen.InfluenceRequirement(r))
		}
		list.Strategies = append(list.Strategies, info)
	}
	tag := etagOf(list)
	if matches(req.Params.IfNoneMatch, tag) {
		return gen.ListInfluenceStrategies304Response{Headers: gen.NotModifiedResponseHeaders{ETag: tag}}, nil
	}
	return gen.ListInfluenceStrategies200JSONResponse{Body: list, Headers: gen.ListInfluenceStrategies200ResponseHeaders{ETag: tag}}, nil
}

func (h *handlers) RecordAblation(ctx context.Context, req gen.RecordAblationRequestObject) (gen.RecordAblationResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	a, wasReplayed, err := h.svc.Explain.RecordAblationWithKey(ctx, id, req.Turn, req.Body.Excluded, req.Body.Answer, req.Body.Flipped,
		deref(req.Params.IdempotencyKey))
	if err != nil {
		return nil, err
	}
	return gen.RecordAblation201JSONResponse{Body: gen.Ablation{ID: a.ID, Excluded: a.Excluded, Flipped: a.Flipped, CreatedAt: apitime.Of(a.CreatedAt)},
		Headers: gen.RecordAblation201ResponseHeaders{Location: ablationPath(id, req.Turn, a.ID), IdempotentReplayed: replayedHeader(wasReplayed)}}, nil
}

func (h *handlers) GetRunContext(ctx context.Context, req gen.GetRunContextRequestObject) (gen.GetRunContextResponseObject, error) {
	rc, err := h.svc.Explain.RunContext(ctx, tenantFrom(ctx), req.RunID)
	if err != nil {
		return nil, err
	}
	return gen.GetRunContext200JSONResponse{Body: runContextOut(rc)}, nil
}

func explanationOut(ex explain.Explanation) (gen.Explanation, error) {
	out := gen.Explanation{
		Turn:           ex.Turn,
		ConversationID: ex.Identity.ConversationID,
		Principal:      optString(ex.Identity.Principal),
		Answer:         gen.ExplanationAnswer{Source: gen.AnswerSource(ex.Answer.Source), MemoryID: optString(ex.Answer.MemoryID), EntryID: optString(ex.Answer.EntryID), RunID: optString(ex.Answer.RunID)},
		Context:        gen.ExplanationContext{Runs: []gen.RunContext{}, Recalls: []gen.RecallResult{}},
		Origins:        []gen.Origin{},
		Honesty:        []gen.HonestyFlag{},
		Suspects:       []gen.Suspect{},
		Earlier:        []gen.Explanation{},
	}
	if snap := ex.Answer.Snapshot; snap != nil {
		// Only what the agent reported; `unreported` names the rest, left out.
		a := &out.Answer
		a.Query, a.FinalContent = &snap.Query, &snap.FinalContent
		if snap.Reported(core.EvidenceIterations) {
			a.Iterations = &snap.Iterations
		}
		if snap.Reported(core.EvidenceDurationMs) {
			a.DurationMs = &snap.DurationMs
		}
		if snap.Reported(core.EvidenceTokenUsage) {
			a.TokenUsage = &gen.TokenUsage{Input: snap.TokenUsage.Input, Output: snap.TokenUsage.Output}
		}
		if snap.Reported(core.EvidenceDecisions) {
			a.Decisions = []gen.Decision{}
			for _, d := range snap.Decisions {
				a.Decisions = append(a.Decisions, gen.Decision{StageID: d.StageID, Chosen: d.Chosen, Rule: optString(d.Rule), Evidence: anyJSON(d.Evidence)})
			}
		}
		if snap.Reported(core.EvidenceToolCalls) {
			a.ToolCalls = []gen.ToolCall{}
			for _, c := range snap.ToolCalls {
				errored := c.Errored
				a.ToolCalls = append(a.ToolCalls, gen.ToolCall{Name: c.Name, Args: anyJSON(c.Args), ResultPreview: optString(c.ResultPreview), Errored: &errored})
			}
		}
		for _, f := range snap.Unreported {
			a.Unreported = append(a.Unreported, gen.EvidenceField(f))
		}
	}
	if len(ex.Answer.Messages) > 0 {
		out.Answer.Messages = messagesOut(ex.Answer.Messages)
	}
	for _, rc := range ex.Context.Runs {
		out.Context.Runs = append(out.Context.Runs, runContextOut(rc))
	}
	for _, r := range ex.Context.Recalls {
		rr, err := recallOut(r)
		if err != nil {
			return gen.Explanation{}, err
		}
		out.Context.Recalls = append(out.Context.Recalls, rr)
	}
	for _, o := range ex.Origins {
		g := gen.Origin{InjectionID: o.InjectionID, MemoryID: o.MemoryID, EntryID: o.EntryID, RecallID: optString(o.RecallID),
			Score: o.Score, Threshold: o.Threshold, Status: gen.OriginStatus(o.Status),
			Exposure: gen.Exposure(o.Exposure), ShownIn: make([]gen.ModelCallRef, 0, len(o.ShownIn))}
		for _, c := range o.ShownIn {
			g.ShownIn = append(g.ShownIn, gen.ModelCallRef{RunID: c.RunID, Iteration: c.Iteration})
		}
		if o.Rank > 0 {
			rank := o.Rank
			g.Rank = &rank
		}
		if e := o.Entry; e != nil {
			oe := &gen.OriginEntry{Kind: gen.EntryKind(e.Kind), UpdatedAt: apitime.Of(e.UpdatedAt), RunID: optString(e.RunID),
				Query: optString(e.Query), FinalContent: optString(e.FinalContent), Text: optString(e.Text),
				ConversationID: optString(e.ConversationID)}
			if e.Turn > 0 {
				t := e.Turn
				oe.Turn = &t
			}
			g.Entry = oe
		}
		out.Origins = append(out.Origins, g)
	}
	for _, f := range ex.Honesty {
		g := gen.HonestyFlag{Flag: gen.HonestyFlagCode(f.Flag), Detail: f.Detail, RunID: optString(f.RunID), EntryID: optString(f.EntryID)}
		if f.DroppedEvents > 0 {
			d := f.DroppedEvents
			g.DroppedEvents = &d
		}
		out.Honesty = append(out.Honesty, g)
	}
	for _, s := range ex.Suspects {
		out.Suspects = append(out.Suspects, gen.Suspect{InjectionID: s.InjectionID, Strategy: gen.InfluenceStrategy(s.Strategy), Score: s.Score,
			Rank: s.Rank, Verdict: gen.SuspectVerdict(s.Verdict), Reruns: s.Reruns, Flips: s.Flips, Note: s.Note,
			Exposure: gen.SuspectExposure(s.Exposure)})
	}
	for _, e := range ex.Earlier {
		g, err := explanationOut(e)
		if err != nil {
			return gen.Explanation{}, err
		}
		out.Earlier = append(out.Earlier, g)
	}
	return out, nil
}

func runContextOut(rc explain.RunContext) gen.RunContext {
	out := gen.RunContext{RunID: rc.RunID, Complete: rc.Complete, DroppedEvents: rc.DroppedEvents, Calls: []gen.ModelCall{}}
	for _, c := range rc.Calls {
		mc := gen.ModelCall{Iteration: c.Iteration, Pieces: []gen.ContextPiece{}}
		for _, p := range c.Pieces {
			piece := gen.ContextPiece{Slot: optString(p.Slot), Source: optString(p.Source), SourceID: optString(p.SourceID),
				ContentHash: optString(p.ContentHash), Summary: optString(p.Summary), Reason: optString(p.Reason),
				Score: p.Score, Threshold: p.Threshold, Repeats: int64(p.Repeats)}
			if p.Rank != nil {
				r := int64(*p.Rank)
				piece.Rank = &r
			}
			mc.Pieces = append(mc.Pieces, piece)
		}
		out.Calls = append(out.Calls, mc)
	}
	return out
}

// anyJSON turns stored raw JSON into a value the generated types marshal
// back unchanged (nil for none).
func anyJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}
