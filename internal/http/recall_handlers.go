package httpapi

import (
	"context"

	gen "github.com/footprint/footprint/internal/http/api"
)

func (h *handlers) Recall(ctx context.Context, req gen.RecallRequestObject) (gen.RecallResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	res, err := h.svc.Recall(ctx, recallParamsIn(id, *req.Body))
	if err != nil {
		return nil, err
	}
	body, err := recallOut(res)
	if err != nil {
		return nil, err
	}
	return gen.Recall200JSONResponse{Body: body}, nil
}

func (h *handlers) GetRecall(ctx context.Context, req gen.GetRecallRequestObject) (gen.GetRecallResponseObject, error) {
	res, err := h.svc.GetRecall(ctx, tenantFrom(ctx), req.RecallID)
	if err != nil {
		return nil, err
	}
	body, err := recallOut(res)
	if err != nil {
		return nil, err
	}
	return gen.GetRecall200JSONResponse{Body: body}, nil
}

func (h *handlers) IndexDocuments(ctx context.Context, req gen.IndexDocumentsRequestObject) (gen.IndexDocumentsResponseObject, error) {
	indexed, err := h.svc.IndexDocuments(ctx, tenantFrom(ctx), req.MemoryID, documentsIn(*req.Body))
	if err != nil {
		return nil, err
	}
	body := gen.IndexResult{Indexed: make([]gen.IndexedDocument, 0, len(indexed))}
	for _, d := range indexed {
		body.Indexed = append(body.Indexed, gen.IndexedDocument{ID: d.ID, Chunks: d.Chunks})
		body.Chunks += d.Chunks
	}
	return gen.IndexDocuments200JSONResponse{Body: body}, nil
}
