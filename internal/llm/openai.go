// Package llm holds the chat-completions providers behind core.LLM: an
// OpenAI-compatible HTTP client (OpenAI, Ollama's /v1 endpoint, vLLM, LM
// Studio), the FOOTPRINT_LLMS spec parser that configures them, and a
// scripted provider for tests and demos.
//
// Error messages from this package are built only from the provider id, the
// HTTP status and fixed text: never the API key, the URL or the provider's
// response body, so they are safe to log and to show to clients.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/providerclient"
)

// Defaults and limits.
const (
	DefaultOpenAIBaseURL = "https://api.openai.com"
	DefaultTimeout       = 60 * time.Second
	DefaultMaxRetries    = providerclient.DefaultMaxRetries
	MaxMaxRetries        = providerclient.MaxMaxRetries
	DefaultBackoffBase   = 500 * time.Millisecond
	DefaultBackoffMax    = 4 * time.Second
	DefaultMaxRetryAfter = providerclient.DefaultMaxRetryAfter

	// SchemaName is the json_schema name sent with ChatRequest.JSONSchema.
	SchemaName = "footprint"

	maxResponseBytes = 16 << 20 // a completion is text; more is a broken server
)

// Outcomes passed to Config.Counter.
const (
	OutcomeOK    = providerclient.OutcomeOK    // the call succeeded
	OutcomeRetry = providerclient.OutcomeRetry // an attempt failed and will be retried
	OutcomeError = providerclient.OutcomeError // the call failed
)

// Backoff tunes the delays between retries (see providerclient.Backoff). A zero
// field means its default: Base 500ms (doubling per retry up to Max, with
// jitter), Max 4s, MaxRetryAfter 10s.
type Backoff = providerclient.Backoff

// Config configures an OpenAI-compatible chat-completions client.
type Config struct {
	ID string // the provider id; must match core.IDPattern
	// BaseURL is the server root, e.g. "https://api.openai.com" or
	// "http://ollama:11434"; requests go to {BaseURL}/v1/chat/completions.
	// A base already ending in /v1 is accepted. Default DefaultOpenAIBaseURL.
	BaseURL string
	APIKey  string // sent as "Authorization: Bearer"; omitted when empty
	// Model is the default model, used when ChatRequest.Model is empty. It
	// may be empty, and then every request must name one.
	Model string
	// Timeout bounds each attempt, response body included (default 60s).
	// The caller's context bounds the whole call.
	Timeout time.Duration
	// MaxRetries bounds retries after the first attempt: 0 means the
	// default (3), a negative value means none, at most MaxMaxRetries.
	MaxRetries int
	Backoff    Backoff
	HTTPClient *http.Client // optional; its own Timeout should be 0
	// Counter, if set, is called with the provider id and OutcomeRetry for
	// each failed attempt that will be retried, then exactly once per call
	// that reached the provider with OutcomeOK or OutcomeError. Requests
	// refused before sending (no model, no messages) are not counted. It
	// must be safe for concurrent use.
	Counter func(provider, outcome string)
	// TracerProvider, if set, traces each Complete as a GenAI "chat" span
	// (model, token usage) and sends the caller's W3C trace context to the
	// provider; nil: neither (telemetry.go).
	TracerProvider trace.TracerProvider
	// CaptureContent adds the messages sent and the completion to the chat
	// span (gen_ai.input.messages, gen_ai.output.messages): an opt-in, off
	// by default, since they hold users' text.
	CaptureContent bool
}

// ProviderError is a failed call (see providerclient.Error). Its message carries
// only the provider id, the HTTP status and fixed text, so it is safe to log
// and to return; it unwraps to core.ErrUnavailable when retrying later may
// help.
type ProviderError = providerclient.Error

// Client is an OpenAI-compatible chat-completions client. Safe for
// concurrent use.
type Client struct {
	id, model string
	http      *providerclient.Client
	capture   bool
}

var _ core.LLM = (*Client)(nil)

// NewOpenAI validates cfg and returns a client. It makes no request. Its
// errors never quote the URL or the key.
func NewOpenAI(cfg Config) (*Client, error) {
	if !providerclient.ValidID(cfg.ID) {
		return nil, fmt.Errorf("llm id %q does not match %s", cfg.ID, core.IDPattern)
	}
	hc, err := providerclient.New(providerclient.Config{
		Label: "llm", ID: cfg.ID,
		BaseURL: cfg.BaseURL, DefaultBaseURL: DefaultOpenAIBaseURL, Path: "/v1/chat/completions", APIKey: cfg.APIKey,
		Timeout: cfg.Timeout, DefaultTimeout: DefaultTimeout, MaxRetries: cfg.MaxRetries,
		Backoff: cfg.Backoff, DefaultBackoff: Backoff{Base: DefaultBackoffBase, Max: DefaultBackoffMax, MaxRetryAfter: DefaultMaxRetryAfter},
		MaxResponseBytes: maxResponseBytes, HTTPClient: cfg.HTTPClient, Counter: cfg.Counter,
		TracerProvider: cfg.TracerProvider,
	})
	if err != nil {
		return nil, fmt.Errorf("llm %q: %s", cfg.ID, err.Error())
	}
	return &Client{id: cfg.ID, model: strings.TrimSpace(cfg.Model), http: hc, capture: cfg.CaptureContent}, nil
}

// Info describes the provider.
func (c *Client) Info() core.LLMInfo { return core.LLMInfo{ID: c.id, Model: c.model} }

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

type jsonSchema struct {
	Name   string         `json:"name"`
	Schema map[string]any `json:"schema"`
	Strict bool           `json:"strict"`
}

type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// Complete runs one chat completion. req.Model defaults to Config.Model; a
// request with neither, with no messages, or with an out-of-range
// temperature or max tokens is refused with core.ErrInvalid before any
// request. Provider failures are *ProviderError (temporary ones wrap
// core.ErrUnavailable); if ctx ends first the error wraps ctx.Err().
func (c *Client) Complete(ctx context.Context, req core.ChatRequest) (out core.ChatResponse, err error) {
	body, model, err := c.encode(req)
	if err != nil {
		return core.ChatResponse{}, err
	}
	if c.http.Traced() {
		var span trace.Span
		ctx, span = c.startSpan(ctx, req, model)
		defer func() { c.endSpan(span, out, err) }()
	}
	out, err = c.call(ctx, body, model)
	if err != nil {
		c.http.Count(OutcomeError)
	} else {
		c.http.Count(OutcomeOK)
	}
	return out, err
}

func (c *Client) encode(req core.ChatRequest) ([]byte, string, error) {
	invalid := func(detail string) ([]byte, string, error) {
		return nil, "", fmt.Errorf("llm %q: %s: %w", c.id, detail, core.ErrInvalid)
	}
	model := strings.TrimSpace(req.Model)
	if model == "" {
		model = c.model
	}
	switch {
	case model == "":
		return invalid("no model: the request names none and the provider has no default")
	case len(req.Messages) == 0:
		return invalid("no messages")
	case req.MaxTokens < 0:
		return invalid("max tokens must not be negative")
	case req.Temperature != nil && !(*req.Temperature >= 0 && *req.Temperature <= 2):
		return invalid("temperature must be within 0..2")
	}
	cr := chatRequest{Model: model, Messages: make([]chatMessage, len(req.Messages)),
		MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	for i, m := range req.Messages {
		cr.Messages[i] = chatMessage(m)
	}
	if req.JSONSchema != nil {
		cr.ResponseFormat = &responseFormat{Type: "json_schema",
			JSONSchema: &jsonSchema{Name: SchemaName, Schema: req.JSONSchema, Strict: true}}
	}
	body, err := json.Marshal(cr)
	if err != nil {
		// Not quoted: encoding/json's message can include schema values.
		return invalid("the request (schema) cannot be encoded as JSON")
	}
	return body, model, nil
}

// call posts body with retries and decodes the answer.
func (c *Client) call(ctx context.Context, body []byte, model string) (core.ChatResponse, error) {
	data, attempts, err := c.http.Post(ctx, body)
	if err != nil {
		return core.ChatResponse{}, err
	}
	malformed := func(reason string) (core.ChatResponse, error) {
		return core.ChatResponse{}, c.http.Malformed(attempts, reason)
	}
	var resp chatResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return malformed(providerclient.DescribeJSONError(err))
	}
	if len(resp.Choices) == 0 {
		return malformed("no choices")
	}
	msg := resp.Choices[0].Message
	if msg.Content == nil || strings.TrimSpace(*msg.Content) == "" {
		if msg.Refusal != nil && *msg.Refusal != "" {
			return malformed("the model refused") // the refusal text is the provider's, not quoted
		}
		return malformed("empty content")
	}
	if resp.Usage.PromptTokens < 0 || resp.Usage.CompletionTokens < 0 {
		return malformed("negative token counts")
	}
	if resp.Model == "" {
		resp.Model = model
	}
	return core.ChatResponse{Content: *msg.Content, Model: resp.Model,
		InputTokens: resp.Usage.PromptTokens, OutputTokens: resp.Usage.CompletionTokens}, nil
}
