package server

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/turns"
	"github.com/footprint/footprint/internal/http/apitime"
	"github.com/footprint/footprint/internal/http/gen"
)

// The read side for frontends, across areas (conversations and turns, receipts by
// conversation, ablations, where an entry was used): what the explorer is built on, and any
// other frontend can be. Every answer links the resources it names by path (links.*).

// pageLimit is a list's page size from its limit parameter.
func pageLimit(p *int) int {
	if p == nil {
		return defaultPageSize
	}
	return min(max(*p, 1), maxPageSize)
}

// openCursor opens a list's cursor, bound to the tenant and query; "" when there is none.
func (h *handlers) openCursor(cursor *string, tenant, query string) (string, error) {
	c := deref(cursor)
	if c == "" {
		return "", nil
	}
	after, err := h.cursors.open(c, tenant, query)
	if err != nil {
		pr := newProblem(http.StatusBadRequest, "invalid-cursor", "The cursor is not one this server issued for this query; start again without `cursor`.")
		pr.Path = "cursor"
		return "", pr
	}
	return after, nil
}

// nextCursor signs the position of the next page, or nil when there is none.
func (h *handlers) nextCursor(tenant, query, next string) *string {
	if next == "" {
		return nil
	}
	c := h.cursors.sign(tenant, query, next)
	return &c
}

// conversationPath is the path of a conversation's resource rel ("turns", "turns/3", ...) with
// the principal's query; extra query parameters follow.
func conversationPath(id core.Identity, rel string, extra url.Values) string {
	q := url.Values{}
	if id.Principal != "" {
		q.Set("principal", id.Principal)
	}
	for k, vs := range extra {
		q[k] = vs
	}
	p := "/v1/conversations/" + url.PathEscape(id.ConversationID) + "/" + rel
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

func turnPath(id core.Identity, turn int) string {
	return conversationPath(id, "turns/"+strconv.Itoa(turn), nil)
}

func ablationPath(id core.Identity, turn int, ablationID string) string {
	return conversationPath(id, "turns/"+strconv.Itoa(turn)+"/ablations/"+url.PathEscape(ablationID), nil)
}

func (h *handlers) ListConversations(ctx context.Context, req gen.ListConversationsRequestObject) (gen.ListConversationsResponseObject, error) {
	tenant := tenantFrom(ctx)
	p := turns.ConversationsParams{Tenant: tenant, Principal: deref(req.Params.Principal), MemoryID: deref(req.Params.Memory),
		Limit: pageLimit(req.Params.Limit)}
	query := "conversations\x00" + p.Principal + "\x00" + p.MemoryID
	after, err := h.openCursor(req.Params.Cursor, tenant, query)
	if err != nil {
		return nil, err
	}
	p.After = after
	cs, next, err := h.svc.Turns.ListConversations(ctx, p)
	if err != nil {
		return nil, err
	}
	body := gen.ConversationList{Conversations: make([]gen.ConversationSummary, 0, len(cs)), NextCursor: h.nextCursor(tenant, query, next)}
	for _, c := range cs {
		out := gen.ConversationSummary{
			ConversationID: c.Identity.ConversationID,
			Principal:      optString(c.Identity.Principal),
			EntryCount:     c.Entries,
			Memories:       make([]gen.MemoryEntryCount, 0, len(c.Memories)),
			CreatedAt:      apitime.Of(c.CreatedAt),
			UpdatedAt:      apitime.Of(c.UpdatedAt),
			Links: gen.ConversationLinks{
				Turns:   conversationPath(c.Identity, "turns", nil),
				Entries: conversationPath(c.Identity, "entries", nil),
				Recalls: conversationPath(c.Identity, "recalls", nil),
				Runs:    runsPath(c.Identity),
			},
		}
		if c.LastTurn > 0 {
			out.LastTurn = &c.LastTurn
		}
		for _, m := range c.Memories {
			out.Memories = append(out.Memories, gen.MemoryEntryCount{MemoryID: m.MemoryID, EntryCount: m.Entries})
		}
		body.Conversations = append(body.Conversations, out)
	}
	return gen.ListConversations200JSONResponse{Body: body}, nil
}

// runsPath lists a conversation's runs.
func runsPath(id core.Identity) string {
	q := url.Values{"conversationId": {id.ConversationID}}
	if id.Principal != "" {
		q.Set("principal", id.Principal)
	}
	return "/v1/runs?" + q.Encode()
}

func (h *handlers) ListTurns(ctx context.Context, req gen.ListTurnsRequestObject) (gen.ListTurnsResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	query := "turns\x00" + id.Namespace()
	after, err := h.openCursor(req.Params.Cursor, id.Tenant, query)
	if err != nil {
		return nil, err
	}
	before, _ := strconv.Atoi(after) // signed by this server: always a turn number
	ts, next, err := h.svc.Turns.ListTurns(ctx, id, before, pageLimit(req.Params.Limit))
	if err != nil {
		return nil, err
	}
	body := gen.TurnList{Turns: make([]gen.ConversationTurn, 0, len(ts))}
	for _, t := range ts {
		body.Turns = append(body.Turns, turnOut(t, true))
	}
	if next > 0 {
		body.NextCursor = h.nextCursor(id.Tenant, query, strconv.Itoa(next))
	}
	return gen.ListTurns200JSONResponse{Body: body}, nil
}

func (h *handlers) GetTurn(ctx context.Context, req gen.GetTurnRequestObject) (gen.GetTurnResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	t, err := h.svc.Turns.GetTurn(ctx, id, req.Turn)
	if err != nil {
		return nil, err
	}
	return gen.GetTurn200JSONResponse{Body: turnOut(t, false)}, nil
}

// turnOut renders a turn; preview cuts its messages as a list shows them.
func turnOut(t turns.Turn, preview bool) gen.ConversationTurn {
	rel := "turns/" + strconv.Itoa(t.Number)
	out := gen.ConversationTurn{
		Turn:           t.Number,
		ConversationID: t.Identity.ConversationID,
		Principal:      optString(t.Identity.Principal),
		Messages:       make([]gen.TurnMessage, 0, len(t.Messages)),
		Entries:        make([]gen.TurnEntryIds, 0, len(t.Entries)),
		RunIds:         t.RunIDs,
		RecallIds:      t.RecallIDs,
		Links: gen.TurnLinks{
			Self:      turnPath(t.Identity, t.Number),
			Explain:   conversationPath(t.Identity, rel+"/explain", nil),
			Ablations: conversationPath(t.Identity, rel+"/ablations", nil),
			Recalls:   conversationPath(t.Identity, "recalls", url.Values{"turn": {strconv.Itoa(t.Number)}}),
		},
	}
	out.CreatedAt = apitime.Opt(t.CreatedAt)
	out.MessagesMemoryID = optString(t.MessagesMemoryID)
	for _, m := range t.Messages {
		content, n, cut := m.Content, len([]rune(m.Content)), false
		if preview {
			content, n, cut = turns.Preview(m.Content)
		}
		out.Messages = append(out.Messages, gen.TurnMessage{Role: gen.MessageRole(m.Role), Content: content, Length: n, Truncated: cut})
	}
	if s := t.Snapshot; s != nil {
		snap := &gen.TurnSnapshotSummary{MemoryID: s.MemoryID, EntryID: s.EntryID, Query: s.Query, FinalContent: s.FinalContent,
			Reported: s.Reported, Iterations: s.Iterations, Decisions: s.Decisions, ToolCalls: s.ToolCalls,
			ErroredToolCalls: s.ErroredToolCalls, DurationMs: s.DurationMs}
		if s.TokenUsage != nil {
			snap.TokenUsage = &gen.TokenUsage{Input: s.TokenUsage.Input, Output: s.TokenUsage.Output}
		}
		out.Snapshot = snap
	}
	for _, e := range t.Entries {
		out.Entries = append(out.Entries, gen.TurnEntryIds{MemoryID: e.MemoryID, Ids: e.IDs})
	}
	return out
}

func (h *handlers) ListRecalls(ctx context.Context, req gen.ListRecallsRequestObject) (gen.ListRecallsResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	q := recall.RecallQuery{Tenant: id.Tenant, Namespace: id.Namespace(), Turn: deref(req.Params.Turn), Limit: pageLimit(req.Params.Limit)}
	query := "recalls\x00" + q.Namespace + "\x00" + strconv.Itoa(q.Turn)
	after, err := h.openCursor(req.Params.Cursor, id.Tenant, query)
	if err != nil {
		return nil, err
	}
	q.After = after
	rs, next, err := h.svc.Recall.ListRecalls(ctx, q)
	if err != nil {
		return nil, err
	}
	body := gen.RecallSummaryList{Recalls: make([]gen.RecallSummary, 0, len(rs)), NextCursor: h.nextCursor(id.Tenant, query, next)}
	for _, r := range rs {
		out := gen.RecallSummary{RecallID: r.ID, CreatedAt: apitime.Of(r.CreatedAt), QueryHash: r.QueryHash, Admitted: r.Admitted,
			RunID: optString(r.RunID), Links: gen.RecallLinks{Self: "/v1/recalls/" + url.PathEscape(r.ID)}}
		if r.Turn > 0 {
			out.Turn = &r.Turn
			out.Links.Turn = optString(turnPath(id, r.Turn))
		}
		body.Recalls = append(body.Recalls, out)
	}
	return gen.ListRecalls200JSONResponse{Body: body}, nil
}

func (h *handlers) ListAblations(ctx context.Context, req gen.ListAblationsRequestObject) (gen.ListAblationsResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	query := "ablations\x00" + id.Namespace() + "\x00" + strconv.Itoa(req.Turn)
	after, err := h.openCursor(req.Params.Cursor, id.Tenant, query)
	if err != nil {
		return nil, err
	}
	as, next, err := h.svc.Explain.ListAblations(ctx, id, req.Turn, after, pageLimit(req.Params.Limit))
	if err != nil {
		return nil, err
	}
	body := gen.AblationList{Ablations: make([]gen.AblationRecord, 0, len(as)), NextCursor: h.nextCursor(id.Tenant, query, next)}
	for _, a := range as {
		body.Ablations = append(body.Ablations, ablationOut(id, req.Turn, a))
	}
	return gen.ListAblations200JSONResponse{Body: body}, nil
}

func (h *handlers) GetAblation(ctx context.Context, req gen.GetAblationRequestObject) (gen.GetAblationResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	a, err := h.svc.Explain.GetAblation(ctx, id, req.Turn, req.AblationID)
	if err != nil {
		return nil, err
	}
	return gen.GetAblation200JSONResponse{Body: ablationOut(id, req.Turn, a)}, nil
}

func ablationOut(id core.Identity, turn int, a explain.Ablation) gen.AblationRecord {
	excluded := a.Excluded
	if excluded == nil {
		excluded = []string{}
	}
	return gen.AblationRecord{ID: a.ID, Turn: turn, Excluded: excluded, Answer: a.Answer, Flipped: a.Flipped, CreatedAt: apitime.Of(a.CreatedAt),
		Links: gen.AblationLinks{Self: ablationPath(id, turn, a.ID), Turn: turnPath(id, turn)}}
}

func (h *handlers) GetEntryUsage(ctx context.Context, req gen.GetEntryUsageRequestObject) (gen.GetEntryUsageResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	query := "usage\x00" + id.Namespace() + "\x00" + req.Params.Memory + "\x00" + req.EntryID
	after, err := h.openCursor(req.Params.Cursor, id.Tenant, query)
	if err != nil {
		return nil, err
	}
	uses, next, err := h.svc.Explain.EntryUsage(ctx, id, req.Params.Memory, req.EntryID, after, pageLimit(req.Params.Limit))
	if err != nil {
		return nil, err
	}
	body := gen.EntryUsage{MemoryID: req.Params.Memory, EntryID: req.EntryID, InjectionID: recall.EntryInjectionID(req.Params.Memory, req.EntryID),
		Recalls: make([]gen.EntryAdmission, 0, len(uses)), Turns: explain.UsageTurns(uses), NextCursor: h.nextCursor(id.Tenant, query, next)}
	for _, u := range uses {
		a := gen.EntryAdmission{RecallID: u.RecallID, CreatedAt: apitime.Of(u.CreatedAt), RunID: optString(u.RunID), Score: u.Score,
			Rank: max(u.Rank, 1), Threshold: u.Threshold, Turns: u.Turns, Links: gen.RecallLinks{Self: "/v1/recalls/" + url.PathEscape(u.RecallID)}}
		if u.Turn > 0 {
			a.Turn = &u.Turn
			a.Links.Turn = optString(turnPath(id, u.Turn))
		}
		body.Recalls = append(body.Recalls, a)
	}
	return gen.GetEntryUsage200JSONResponse{Body: body}, nil
}
