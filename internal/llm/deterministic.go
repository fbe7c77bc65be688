package llm

import (
	"context"
	"fmt"

	"github.com/footprint/footprint/internal/core"
)

// NewScripted returns a deterministic core.LLM for tests and demos: it makes
// no network call and answers each request with fn's result. It is not a
// real provider and must never be configured in production.
//
// Before calling fn it resolves req.Model to model when empty, and fails
// with ctx.Err() if ctx is already done. A response without Model gets the
// resolved model. A nil fn echoes the last message's content. Safe for
// concurrent use if fn is.
func NewScripted(id, model string, fn func(core.ChatRequest) (core.ChatResponse, error)) core.LLM {
	return &scripted{info: core.LLMInfo{ID: id, Model: model}, fn: fn}
}

type scripted struct {
	info core.LLMInfo
	fn   func(core.ChatRequest) (core.ChatResponse, error)
}

func (s *scripted) Info() core.LLMInfo { return s.info }

func (s *scripted) Complete(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	if err := ctx.Err(); err != nil {
		return core.ChatResponse{}, fmt.Errorf("llm %q: %w", s.info.ID, err)
	}
	if req.Model == "" {
		req.Model = s.info.Model
	}
	var (
		resp core.ChatResponse
		err  error
	)
	if s.fn != nil {
		resp, err = s.fn(req)
	} else if n := len(req.Messages); n > 0 {
		resp.Content = req.Messages[n-1].Content
	}
	if err != nil {
		return core.ChatResponse{}, err
	}
	if resp.Model == "" {
		resp.Model = req.Model
	}
	return resp, nil
}
