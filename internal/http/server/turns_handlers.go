package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/gen"
)

var replayed = "true"

// replayedHeader is the Idempotent-Replayed header of an answer: "true" for a replay, absent
// otherwise.
func replayedHeader(wasReplayed bool) *string {
	if wasReplayed {
		return &replayed
	}
	return nil
}

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
	return gen.PostTurn201JSONResponse{Body: body, Headers: gen.PostTurn201ResponseHeaders{IdempotentReplayed: hdr, Location: turnPath(id, res.Turn)}}, nil
}

func (h *handlers) ListEntries(ctx context.Context, req gen.ListEntriesRequestObject) (gen.ListEntriesResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	p := req.Params
	body, err := h.listEntries(ctx, id, entryFilters{p.Memory, p.Kind, p.Tier, p.Include, p.Limit, p.Cursor},
		func(q core.EntryQuery) ([]core.Entry, string, error) {
			q.Namespace = id.Namespace()
			return h.svc.Turns.ListEntries(ctx, q)
		})
	if err != nil {
		return nil, err
	}
	return gen.ListEntries200JSONResponse{Body: body}, nil
}

func (h *handlers) ListPrincipalEntries(ctx context.Context, req gen.ListPrincipalEntriesRequestObject) (gen.ListPrincipalEntriesResponseObject, error) {
	id := core.Identity{Tenant: tenantFrom(ctx), Principal: req.Principal}
	p := req.Params
	body, err := h.listEntries(ctx, id, entryFilters{p.Memory, p.Kind, p.Tier, p.Include, p.Limit, p.Cursor},
		func(q core.EntryQuery) ([]core.Entry, string, error) {
			return h.svc.Turns.ListPrincipalEntries(ctx, id, q)
		})
	if err != nil {
		return nil, err
	}
	return gen.ListPrincipalEntries200JSONResponse{Body: body}, nil
}

// entryFilters are the query parameters every entry listing takes.
type entryFilters struct {
	memory  *gen.ResourceID
	kind    *gen.EntryKind
	tier    *gen.Tier
	include *gen.Include
	limit   *gen.Limit
	cursor  *gen.Cursor
}

// listEntries lists one page of entries with list (a conversation's, a principal's), the cursor
// bound to the tenant, the namespace listed and the filters.
func (h *handlers) listEntries(ctx context.Context, id core.Identity, f entryFilters, list func(core.EntryQuery) ([]core.Entry, string, error)) (gen.EntryList, error) {
	limit := defaultPageSize
	if f.limit != nil {
		limit = min(max(*f.limit, 1), maxPageSize)
	}
	q := core.EntryQuery{
		Tenant:        id.Tenant,
		MemoryID:      deref(f.memory),
		Kind:          core.EntryKind(deref(f.kind)),
		Tier:          string(deref(f.tier)),
		Limit:         limit,
		WithEmbedding: deref(f.include) == gen.EntryIncludeEmbedding,
	}
	where := id.Namespace()
	if id.ConversationID == "" {
		where = id.PrincipalNamespace()
	}
	query := "entries\x00" + where + "\x00" + q.MemoryID + "\x00" + string(q.Kind) + "\x00" + q.Tier
	if c := deref(f.cursor); c != "" {
		after, err := h.cursors.open(c, id.Tenant, query)
		if err != nil {
			pr := newProblem(http.StatusBadRequest, "invalid-cursor", "The cursor is not one this server issued for this query; start again without `cursor`.")
			pr.Path = "cursor"
			return gen.EntryList{}, pr
		}
		q.After = after
	}
	entries, next, err := list(q)
	if err != nil {
		return gen.EntryList{}, err
	}
	body := gen.EntryList{Entries: make([]gen.Entry, 0, len(entries))}
	for _, e := range entries {
		body.Entries = append(body.Entries, entryOut(e, q.WithEmbedding))
	}
	if next != "" {
		c := h.cursors.sign(id.Tenant, query, next)
		body.NextCursor = &c
	}
	return body, nil
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
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	erased, kept, err := h.svc.Turns.ForgetConversation(ctx, id)
	if err != nil {
		return nil, err
	}
	body := gen.ForgetResult{Erased: erased}
	if id.Principal != "" {
		body.PrincipalEntriesKept = &kept
		if kept > 0 {
			note := fmt.Sprintf("%d entries of principal-scoped memories written from this conversation were kept: they are what the service knows about principal %q, not the conversation's. DELETE /v1/principals/%s forgets them (and the principal everywhere).",
				kept, id.Principal, url.PathEscape(id.Principal))
			body.Note = &note
		}
	}
	return gen.ForgetConversation200JSONResponse{Body: body}, nil
}

func (h *handlers) ForgetPrincipal(ctx context.Context, req gen.ForgetPrincipalRequestObject) (gen.ForgetPrincipalResponseObject, error) {
	rep, err := h.svc.Turns.ForgetPrincipal(ctx, core.Identity{Tenant: tenantFrom(ctx), Principal: req.Principal})
	if err != nil {
		return nil, err
	}
	return gen.ForgetPrincipal200JSONResponse{Body: gen.PrincipalForgetResult{
		Conversations: rep.Conversations, ConversationEntries: rep.ConversationEntries, PrincipalEntries: rep.PrincipalEntries,
		Recalls: rep.Recalls, Runs: rep.Runs, Ablations: rep.Ablations,
	}}, nil
}
