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
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// Defaults and limits.
const (
	DefaultOpenAIBaseURL = "https://api.openai.com"
	DefaultTimeout       = 60 * time.Second
	DefaultMaxRetries    = 3
	MaxMaxRetries        = 10
	DefaultBackoffBase   = 500 * time.Millisecond
	DefaultBackoffMax    = 4 * time.Second
	DefaultMaxRetryAfter = 10 * time.Second

	// SchemaName is the json_schema name sent with ChatRequest.JSONSchema.
	SchemaName = "footprint"

	maxResponseBytes = 16 << 20 // a completion is text; more is a broken server
	maxDrainBytes    = 64 << 10 // read from an error body so the connection is reused
)

// Outcomes passed to Config.Counter.
const (
	OutcomeOK    = "ok"    // the call succeeded
	OutcomeRetry = "retry" // an attempt failed and will be retried
	OutcomeError = "error" // the call failed
)

// Backoff tunes the delays between retries. The zero value means the
// defaults.
type Backoff struct {
	// Base is the nominal delay before the first retry (default 500ms); it
	// doubles for each further retry up to Max (default 4s). The actual
	// delay is drawn uniformly from [nominal/2, nominal] (jitter).
	Base, Max time.Duration
	// MaxRetryAfter is the longest Retry-After (on 429 and 503) honoured,
	// default 10s. A provider asking for longer gets no retry: the call
	// fails at once with core.ErrUnavailable and ProviderError.RetryAfter
	// set, rather than holding the caller's request open.
	MaxRetryAfter time.Duration
}

func (b Backoff) delay(n int) time.Duration {
	d := b.Base
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	return d/2 + rand.N(d-d/2+1)
}

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
}

// ProviderError is a failed call. Its message carries only the provider id,
// the HTTP status and fixed text, so it is safe to log and to return.
//
// It unwraps to core.ErrUnavailable when retrying later may help (transport
// error, timeout, 429, 5xx) and to nothing otherwise (another 4xx such as a
// bad key or unknown model, or a malformed response).
type ProviderError struct {
	Provider   string        // the provider id
	StatusCode int           // the HTTP status, 0 if no response arrived
	Attempts   int           // requests made
	RetryAfter time.Duration // the provider's Retry-After, if any
	Temporary  bool          // whether it wraps core.ErrUnavailable
	reason     string        // fixed text composed in this package
	cause      error         // the transport error, if any
	retryable  bool          // whether this attempt may be retried
}

func (e *ProviderError) Error() string {
	msg := fmt.Sprintf("llm %q: %s", e.Provider, e.reason)
	if e.Attempts > 1 {
		msg += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return msg
}

// Unwrap returns core.ErrUnavailable for temporary failures, else nil. It
// does not return the transport error, so an attempt's own timeout never
// passes for the caller's context.DeadlineExceeded.
func (e *ProviderError) Unwrap() error {
	if e.Temporary {
		return core.ErrUnavailable
	}
	return nil
}

// Cause returns the underlying transport error, for debugging only: its
// text is NOT safe to log (net/http quotes the URL).
func (e *ProviderError) Cause() error { return e.cause }

// Client is an OpenAI-compatible chat-completions client. Safe for
// concurrent use.
type Client struct {
	id, model, endpoint, apiKey string
	timeout                     time.Duration
	retries                     int
	backoff                     Backoff
	http                        *http.Client
	counter                     func(provider, outcome string)
}

var (
	_    core.LLM = (*Client)(nil)
	idRE          = regexp.MustCompile(core.IDPattern)
)

// NewOpenAI validates cfg and returns a client. It makes no request. Its
// errors never quote the URL or the key.
func NewOpenAI(cfg Config) (*Client, error) {
	if !idRE.MatchString(cfg.ID) {
		return nil, fmt.Errorf("llm id %q does not match %s", cfg.ID, core.IDPattern)
	}
	fail := func(format string, args ...any) (*Client, error) {
		return nil, fmt.Errorf("llm %q: %s", cfg.ID, fmt.Sprintf(format, args...))
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return fail("base URL does not parse")
	case u.Scheme != "http" && u.Scheme != "https":
		return fail("base URL must start with http:// or https://")
	case u.Host == "":
		return fail("base URL has no host")
	case u.User != nil:
		return fail("base URL must not carry credentials; set the API key instead")
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fail("base URL must not have a query or fragment")
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") + "/v1/chat/completions"
	if strings.ContainsFunc(cfg.APIKey, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fail("API key contains control characters")
	}
	c := &Client{id: cfg.ID, model: strings.TrimSpace(cfg.Model), endpoint: u.String(), apiKey: cfg.APIKey,
		timeout: cfg.Timeout, retries: cfg.MaxRetries, backoff: cfg.Backoff, http: cfg.HTTPClient, counter: cfg.Counter}
	switch {
	case c.timeout == 0:
		c.timeout = DefaultTimeout
	case c.timeout < 0:
		return fail("timeout must be positive, got %s", c.timeout)
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultMaxRetries
	case c.retries < 0:
		c.retries = 0
	case c.retries > MaxMaxRetries:
		return fail("max retries must be at most %d, got %d", MaxMaxRetries, c.retries)
	}
	b := &c.backoff
	if b.Base < 0 || b.Max < 0 || b.MaxRetryAfter < 0 {
		return fail("backoff durations must not be negative")
	}
	if b.Base == 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Max == 0 {
		b.Max = max(DefaultBackoffMax, b.Base)
	}
	if b.MaxRetryAfter == 0 {
		b.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.http == nil {
		c.http = &http.Client{} // no client-wide timeout: each attempt has its own
	}
	return c, nil
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
func (c *Client) Complete(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	body, model, err := c.encode(req)
	if err != nil {
		return core.ChatResponse{}, err
	}
	out, err := c.call(ctx, body, model)
	if c.counter != nil {
		if err != nil {
			c.counter(c.id, OutcomeError)
		} else {
			c.counter(c.id, OutcomeOK)
		}
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
	data, attempts, err := c.post(ctx, body)
	if err != nil {
		return core.ChatResponse{}, err
	}
	malformed := func(reason string) (core.ChatResponse, error) {
		return core.ChatResponse{}, &ProviderError{Provider: c.id, StatusCode: http.StatusOK, Attempts: attempts,
			reason: "malformed response: " + reason}
	}
	var resp chatResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return malformed(describeJSONError(err))
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

// post sends body, retrying transport errors, timeouts and
// 429/500/502/503/504 at most c.retries times, and returns the 2xx body and
// the number of attempts. It returns promptly when ctx is done.
func (c *Client) post(ctx context.Context, body []byte) ([]byte, int, error) {
	for attempt := 1; ; attempt++ {
		data, perr := c.once(ctx, body)
		if perr == nil {
			return data, attempt, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, attempt, fmt.Errorf("llm %q: %w", c.id, err)
		}
		perr.Attempts = attempt
		if !perr.retryable || attempt > c.retries {
			return nil, attempt, perr
		}
		wait := c.backoff.delay(attempt)
		if perr.RetryAfter > 0 {
			if perr.RetryAfter > c.backoff.MaxRetryAfter {
				perr.reason += fmt.Sprintf("; provider asked to wait %s, longer than the %s allowed", perr.RetryAfter, c.backoff.MaxRetryAfter)
				return nil, attempt, perr
			}
			wait = perr.RetryAfter
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			perr.reason += "; no time left to retry before the request deadline"
			return nil, attempt, perr
		}
		if c.counter != nil {
			c.counter(c.id, OutcomeRetry)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, attempt, fmt.Errorf("llm %q: %w", c.id, ctx.Err())
		case <-timer.C:
		}
	}
}

// once makes one attempt with its own timeout.
func (c *Client) once(ctx context.Context, body []byte) ([]byte, *ProviderError) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, &ProviderError{Provider: c.id, reason: "cannot build request"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "footprint")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(err, actx)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
		perr := &ProviderError{Provider: c.id, StatusCode: resp.StatusCode,
			Temporary: resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
			reason:    fmt.Sprintf("provider returned HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))}
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			perr.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			perr.retryable = true
		case http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
			perr.retryable = true
		}
		return nil, perr
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, c.transportError(err, actx)
	}
	if len(data) > maxResponseBytes {
		return nil, &ProviderError{Provider: c.id, StatusCode: resp.StatusCode,
			reason: fmt.Sprintf("malformed response: larger than %d MiB", maxResponseBytes>>20)}
	}
	return data, nil
}

// transportError classifies err into fixed text; err's own message is not
// used because net/http's quotes the URL.
func (c *Client) transportError(err error, actx context.Context) *ProviderError {
	reason := "transport error"
	var (
		dnsErr  *net.DNSError
		netErr  net.Error
		certErr *tls.CertificateVerificationError
		recErr  tls.RecordHeaderError
	)
	switch {
	case errors.Is(actx.Err(), context.DeadlineExceeded):
		reason = fmt.Sprintf("timed out after %s", c.timeout)
	case errors.As(err, &dnsErr):
		reason = "DNS lookup of the provider's host failed"
	case errors.Is(err, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.As(err, &certErr) || errors.As(err, &recErr):
		reason = "TLS handshake failed"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		reason = "connection closed by the provider"
	case errors.As(err, &netErr) && netErr.Timeout():
		reason = "network timeout"
	}
	return &ProviderError{Provider: c.id, Temporary: true, retryable: true, reason: "request failed: " + reason, cause: err}
}

// parseRetryAfter reads delay-seconds or an HTTP date; 0 if absent,
// malformed or past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(min(max(secs, 0), 1<<20)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// describeJSONError describes a decoding error without quoting the body
// (encoding/json's messages can include offending values).
func describeJSONError(err error) string {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q has a value of the wrong type", typ.Field)
	default:
		return "invalid JSON"
	}
}
