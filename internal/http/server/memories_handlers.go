package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/http/gen"
)

func (h *handlers) CreateMemory(ctx context.Context, req gen.CreateMemoryRequestObject) (gen.CreateMemoryResponseObject, error) {
	dryRun := deref(req.Params.DryRun)
	m, wasReplayed, err := h.svc.Memories.DefineMemoryWithKey(ctx, tenantFrom(ctx), memoryParamsIn(*req.Body), dryRun, deref(req.Params.IdempotencyKey))
	if err != nil {
		return nil, err
	}
	out, err := memoryOut(m)
	if err != nil {
		return nil, err
	}
	if dryRun {
		// Nothing was stored: the definition without a version or times.
		return gen.CreateMemory200JSONResponse{Body: gen.MemoryDraft{ID: out.ID, Type: out.Type, Strategy: out.Strategy,
			Description: out.Description, ReadOnly: out.ReadOnly, TTLMs: out.TTLMs, Tier: out.Tier, Embedder: out.Embedder,
			Projection: out.Projection, Corpus: out.Corpus, Flavor: out.Flavor, Scope: out.Scope}}, nil
	}
	return gen.CreateMemory201JSONResponse{Body: out, Headers: gen.CreateMemory201ResponseHeaders{Location: "/v1/memories/" + m.ID,
		ETag: revisionTag(m.Revision()), IdempotentReplayed: replayedHeader(wasReplayed)}}, nil
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
	tag := revisionTag(m.Revision())
	if matches(req.Params.IfNoneMatch, tag) {
		return gen.GetMemory304Response{Headers: gen.NotModifiedResponseHeaders{ETag: tag}}, nil
	}
	out, err := memoryOut(m)
	if err != nil {
		return nil, err
	}
	return gen.GetMemory200JSONResponse{Body: out, Headers: gen.GetMemory200ResponseHeaders{ETag: tag}}, nil
}

func (h *handlers) ReplaceMemory(ctx context.Context, req gen.ReplaceMemoryRequestObject) (gen.ReplaceMemoryResponseObject, error) {
	m, err := h.svc.Memories.ReplaceMemoryIfMatch(ctx, tenantFrom(ctx), req.MemoryID, memoryReplaceIn(*req.Body), req.Body.Version,
		ifMatchRevisions(req.Params.IfMatch))
	if err != nil {
		return nil, err
	}
	out, err := memoryOut(m)
	if err != nil {
		return nil, err
	}
	return gen.ReplaceMemory200JSONResponse{Body: out, Headers: gen.ReplaceMemory200ResponseHeaders{ETag: revisionTag(m.Revision())}}, nil
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

// revisionTag is the strong ETag of a resource revision (core.Memory.Revision, runs.Run.Revision).
func revisionTag(rev string) string { return `"` + rev + `"` }

// ifMatchRevisions turns an If-Match header into the revisions it names, "*" for any, for the
// domain to compare under its lock: nil when the header is absent. Tags are compared strongly
// (RFC 9110 §13.1.1): a weak tag, or anything not a quoted tag, names no revision (and so
// never matches).
func ifMatchRevisions(h *string) []string {
	if h == nil {
		return nil
	}
	out := []string{}
	for _, t := range strings.Split(*h, ",") {
		t = strings.TrimSpace(t)
		switch {
		case t == "*":
			out = append(out, "*")
		case len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"':
			out = append(out, t[1:len(t)-1])
		}
	}
	return out
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
