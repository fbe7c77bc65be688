package httpapi

import (
	"context"
	"net/http"

	gen "github.com/footprint/footprint/internal/http/api"
)

// Placeholder until run recordings land: every run operation answers 404
// with a plain problem. Replaced by the run-recording work.
func notYet() error {
	return newProblem(http.StatusNotFound, "not-found", "Run recordings are not available on this server yet.")
}

func (h *handlers) OpenRun(context.Context, gen.OpenRunRequestObject) (gen.OpenRunResponseObject, error) {
	return nil, notYet()
}
func (h *handlers) ListRuns(context.Context, gen.ListRunsRequestObject) (gen.ListRunsResponseObject, error) {
	return nil, notYet()
}
func (h *handlers) GetRun(context.Context, gen.GetRunRequestObject) (gen.GetRunResponseObject, error) {
	return nil, notYet()
}
func (h *handlers) AppendEvents(context.Context, gen.AppendEventsRequestObject) (gen.AppendEventsResponseObject, error) {
	return nil, notYet()
}
func (h *handlers) FinishRun(context.Context, gen.FinishRunRequestObject) (gen.FinishRunResponseObject, error) {
	return nil, notYet()
}
func (h *handlers) ListRunEvents(context.Context, gen.ListRunEventsRequestObject) (gen.ListRunEventsResponseObject, error) {
	return nil, notYet()
}
