package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"

	"github.com/footprint/footprint/internal/http/gen"
	"github.com/footprint/footprint/internal/jsonenc"
)

func (h *handlers) Recall(ctx context.Context, req gen.RecallRequestObject) (gen.RecallResponseObject, error) {
	id := identity(ctx, req.ConversationID, req.Params.Principal)
	res, saved, err := h.svc.Recall.RecallAsync(ctx, recallParamsIn(id, *req.Body))
	if err != nil {
		return nil, err
	}
	// The answer is converted and encoded while the receipt is being written;
	// it is sent only once the receipt is stored, so a recallId a client sees
	// can always be read back.
	body, err := recallOut(res)
	var encoded *jsonenc.Buffer
	if err == nil {
		encoded, err = jsonenc.Marshal(body, true) // with a newline, as every other answer (json.Encoder)
	}
	if serr := saved(); serr != nil {
		encoded.Release()
		return nil, serr
	}
	if err != nil {
		return nil, err
	}
	return encodedRecall{body: encoded, etag: receiptTag(res.RecallID)}, nil
}

// receiptTag is a recall receipt's ETag: a receipt never changes, so its id decides it.
func receiptTag(recallID string) string {
	sum := sha256.Sum256([]byte("recall\x00" + recallID))
	return revisionTag(hex.EncodeToString(sum[:8]))
}

// encodedRecall is a 200 answer to Recall, already encoded as JSON.
type encodedRecall struct {
	body *jsonenc.Buffer
	etag string
}

func (b encodedRecall) VisitRecallResponse(w http.ResponseWriter) error {
	defer b.body.Release()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("ETag", b.etag)
	// Its length is known: a client sees the size up front, without chunked framing.
	w.Header().Set("Content-Length", strconv.Itoa(b.body.Len()))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b.body.Bytes())
	return err
}

func (h *handlers) GetRecall(ctx context.Context, req gen.GetRecallRequestObject) (gen.GetRecallResponseObject, error) {
	res, err := h.svc.Recall.GetRecall(ctx, tenantFrom(ctx), req.RecallID)
	if err != nil {
		return nil, err
	}
	tag := receiptTag(res.RecallID)
	if matches(req.Params.IfNoneMatch, tag) {
		return gen.GetRecall304Response{Headers: gen.NotModifiedResponseHeaders{ETag: tag}}, nil
	}
	body, err := recallOut(res)
	if err != nil {
		return nil, err
	}
	return gen.GetRecall200JSONResponse{Body: body, Headers: gen.GetRecall200ResponseHeaders{ETag: tag}}, nil
}

func (h *handlers) IndexDocuments(ctx context.Context, req gen.IndexDocumentsRequestObject) (gen.IndexDocumentsResponseObject, error) {
	indexed, wasReplayed, err := h.svc.Recall.IndexDocumentsWithKey(ctx, tenantFrom(ctx), req.MemoryID, documentsIn(*req.Body), deref(req.Params.IdempotencyKey))
	if err != nil {
		return nil, err
	}
	body := gen.IndexResult{Indexed: make([]gen.IndexedDocument, 0, len(indexed))}
	for _, d := range indexed {
		body.Indexed = append(body.Indexed, gen.IndexedDocument{ID: d.ID, Chunks: d.Chunks})
		body.Chunks += d.Chunks
	}
	return gen.IndexDocuments200JSONResponse{Body: body, Headers: gen.IndexDocuments200ResponseHeaders{IdempotentReplayed: replayedHeader(wasReplayed)}}, nil
}
