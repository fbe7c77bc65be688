package llm

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/providerclient"
)

// startSpan starts a completion's GenAI "chat {model}" span with what was
// asked (model, max tokens, temperature, output type) and, only with the
// content opt-in, the messages.
func (c *Client) startSpan(ctx context.Context, req core.ChatRequest, model string) (context.Context, trace.Span) {
	output := "text"
	if req.JSONSchema != nil {
		output = "json"
	}
	attrs := []attribute.KeyValue{attribute.String("gen_ai.output.type", output)}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, attribute.Float64("gen_ai.request.temperature", *req.Temperature))
	}
	ctx, span := c.http.StartSpan(ctx, "chat", "openai", model, attrs...)
	if c.capture && span.IsRecording() {
		msgs := make([]spanMessage, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = textMessage(m.Role, m.Content)
		}
		span.SetAttributes(attribute.String("gen_ai.input.messages", encode(msgs)))
	}
	return ctx, span
}

// endSpan records what the provider answered: the model that answered, the
// token usage it reported and, with the content opt-in, the completion.
func (c *Client) endSpan(span trace.Span, out core.ChatResponse, err error) {
	if err == nil && span.IsRecording() {
		span.SetAttributes(attribute.String(providerclient.AttrResponseModel, out.Model),
			attribute.Int64("gen_ai.usage.input_tokens", out.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", out.OutputTokens))
		if c.capture {
			span.SetAttributes(attribute.String("gen_ai.output.messages", encode([]spanMessage{textMessage("assistant", out.Content)})))
		}
	}
	providerclient.EndSpan(span, err)
}

// spanMessage is a message as the GenAI conventions' input and output
// message schemas write it.
type spanMessage struct {
	Role  string     `json:"role"`
	Parts []spanPart `json:"parts"`
}

type spanPart struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

func textMessage(role, content string) spanMessage {
	return spanMessage{Role: role, Parts: []spanPart{{Type: "text", Content: content}}}
}

func encode(msgs []spanMessage) string {
	b, _ := json.Marshal(msgs) // strings only: cannot fail
	return string(b)
}
