package server

import (
	"context"
	"net/http"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/gen"
)

var replayed = "true"

func (h *handlers) PostTurn(ctx context.Context, req gen.PostTurnRequestObject) (gen.PostTurnResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	res, err := h.svc.Turns.PostTurn(ctx, turnParamsIn(id, *req.Body, req.Params.IdempotencyKey))
	if err != nil {
		return nil, err
	}
	body := turnResultOut(res)
	var hdr *string
	if res.Replayed {
		hdr = &replayed
	}
	if res.Noop != nil {
		return gen.PostTurn200JSONResponse{Body: body, Headers: gen.PostTurn200ResponseHeaders{IdempotentReplayed: hdr}}, nil
	}
	return gen.PostTurn201JSONResponse{Body: body, Headers: gen.PostTurn201ResponseHeaders{IdempotentReplayed: hdr}}, nil
}

func (h *handlers) ListEntries(ctx context.Context, req gen.ListEntriesRequestObject) (gen.ListEntriesResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	p := req.Params
	limit := defaultPageSize
	if p.Limit != nil {
		limit = min(max(*p.Limit, 1), maxPageSize)
	}
	q := core.EntryQuery{
		Tenant:        id.Tenant,
		Namespace:     id.Namespace(),
		MemoryID:      deref(p.Memory),
		Kind:          core.EntryKind(deref(p.Kind)),
		Tier:          string(deref(p.Tier)),
		Limit:         limit,
		WithEmbedding: deref(p.Include) == gen.EntryIncludeEmbedding,
	}
	// The cursor is bound to the tenant, the conversation and the filters.
	query := "entries\x00" + q.Namespace + "\x00" + q.MemoryID + "\x00" + string(q.Kind) + "\x00" + q.Tier
	if c := deref(p.Cursor); c != "" {
		after, err := h.cursors.open(c, id.Tenant, query)
		if err != nil {
			pr := newProblem(http.StatusBadRequest, "invalid-cursor", "The cursor is not one this server issued for this query; start again without `cursor`.")
			pr.Path = "cursor"
			return nil, pr
		}
		q.After = after
	}
	entries, next, err := h.svc.Turns.ListEntries(ctx, q)
	if err != nil {
		return nil, err
	}
	body := gen.EntryList{Entries: make([]gen.Entry, 0, len(entries))}
	for _, e := range entries {
		body.Entries = append(body.Entries, entryOut(e, q.WithEmbedding))
	}
	if next != "" {
		c := h.cursors.sign(id.Tenant, query, next)
		body.NextCursor = &c
	}
	return gen.ListEntries200JSONResponse{Body: body}, nil
}

func (h *handlers) GetEntry(ctx context.Context, req gen.GetEntryRequestObject) (gen.GetEntryResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	e, err := h.svc.Turns.GetEntry(ctx, id, req.Params.Memory, req.EntryID)
	if err != nil {
		return nil, err
	}
	return gen.GetEntry200JSONResponse{Body: entryOut(e, deref(req.Params.Include) == gen.EntryIncludeEmbedding)}, nil
}

func (h *handlers) ForgetConversation(ctx context.Context, req gen.ForgetConversationRequestObject) (gen.ForgetConversationResponseObject, error) {
	n, err := h.svc.Turns.ForgetConversation(ctx, identity(ctx, req.ConversationID, req.Params.Principal))
	if err != nil {
		return nil, err
	}
	return gen.ForgetConversation200JSONResponse{Body: gen.ForgetResult{Erased: n}}, nil
}
