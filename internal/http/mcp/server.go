// Package mcp serves footprint's memory as Model Context Protocol tools, over the Streamable
// HTTP transport of the official Go SDK, at /mcp of the same server as the REST API.
//
// Each tool IS one REST operation of api/openapi.yaml (list_strategies is listStrategies,
// post_turn is postTurn, ...): its arguments are the operation's parameters and the members
// of its JSON body, under the names the REST API gives them; its input and output schemas are
// the operation's schemas from the spec; and a call is served by the REST layer's own handler
// chain (request validation, the generated strict handler, the domain services), handed to
// this package as Options.Backend. There is no second implementation of anything: a refusal
// is the very problem the REST API would have sent, returned as a tool error whose text is
// that problem's JSON (code, path, detail, fix, requestId).
//
// Authentication, tenancy, rate limiting and request ids are the REST layer's middleware,
// wrapped around this handler by the server: the context a tool runs in carries the tenant
// and request id of the HTTP request that carried the call.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configures the handler.
type Options struct {
	// Spec is the contract the tools are read from (gen.GetSpec()).
	Spec *openapi3.T
	// Backend serves the REST operations the tools are: the /v1 routes, past authentication and
	// rate limiting (the caller's context already carries the tenant and the request id).
	Backend http.Handler
	// RequestID returns the request id a context carries, for the log lines.
	RequestID func(context.Context) string
	Logger    *slog.Logger
	// Timeout bounds each tool call, as the REST API bounds each request; 0: 30 s.
	Timeout time.Duration
	// MaxBodyBytes bounds one MCP message, as the REST API bounds a body.
	MaxBodyBytes int64
	// Registerer receives the tool-call counter; nil: none is registered.
	Registerer prometheus.Registerer
	// Version is the server version announced to clients.
	Version string
	// KeysRequired says every request must carry an API key. Without keys the SDK's
	// DNS-rebinding protection stays on: a request reaching a loopback address under another
	// host name (a web page that rebound its name to 127.0.0.1) is refused. With keys such a
	// page cannot authenticate, and a reverse proxy on the same host may forward its own name.
	KeysRequired bool
}

// instructions are what an MCP client may show its model about this server as a whole.
const instructions = `footprint is the agent's memory, with evidence for everything it recalls.
A turn: recall (start of the turn, with the user's message as query) → answer with the system-prompt text it returns → post_turn (when the turn is finished, with the messages, the recallId and the evidence).
Set up once with list_strategies and define_memory. When an answer looks wrong, explain_turn walks it back to the stored entries behind it.
Record a run's context with open_run, append_events and finish_run to make explanations exact.
A refused call returns the server's problem as JSON: code, the field at fault (path), what went wrong (detail) and a value that works (fix).`

// New returns the MCP endpoint's handler.
func New(o Options) (http.Handler, error) {
	if o.Spec == nil || o.Backend == nil {
		return nil, errors.New("mcp: Spec and Backend are required")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.RequestID == nil {
		o.RequestID = func(context.Context) string { return "" }
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	tools, err := buildTools(o.Spec)
	if err != nil {
		return nil, err
	}
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "footprint_mcp_tool_calls_total",
		Help: "MCP tool calls, by tool and outcome (ok, or the refusal's problem code).",
	}, []string{"tool", "outcome"})
	if o.Registerer != nil {
		if err := o.Registerer.Register(calls); err != nil {
			return nil, fmt.Errorf("mcp: register metrics: %w", err)
		}
	}
	// The SDK logs every stateless request's session at info level, three lines a call; the
	// access log and the tool-call line already say what happened, so it speaks only of trouble.
	sdkLogger := slog.New(minLevel{o.Logger.Handler(), slog.LevelWarn})
	server := sdk.NewServer(&sdk.Implementation{Name: "footprint", Title: "footprint memory", Version: o.Version},
		&sdk.ServerOptions{Instructions: instructions, Logger: sdkLogger})
	for _, t := range tools {
		d := &dispatcher{tool: t, backend: o.Backend, requestID: o.RequestID, logger: o.Logger, timeout: o.Timeout, calls: calls}
		server.AddTool(t.sdkTool(), d.handle)
	}
	// Stateless: every POST is served on its own, so any replica can take any call and a
	// server keeps no session state; footprint never calls back into the client. JSON
	// answers, not a stream: a tool call is one request and one answer.
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server }, &sdk.StreamableHTTPOptions{
		Stateless:                  true,
		JSONResponse:               true,
		Logger:                     sdkLogger,
		MaxRequestBodyBytes:        o.MaxBodyBytes,
		DisableLocalhostProtection: o.KeysRequired,
	}), nil
}

func (t *tool) sdkTool() *sdk.Tool {
	notOpen := false
	destructive := t.spec.destructive
	return &sdk.Tool{
		Name:         t.spec.name,
		Title:        t.spec.title,
		Description:  t.spec.description,
		InputSchema:  t.input,
		OutputSchema: t.output,
		Annotations: &sdk.ToolAnnotations{
			Title:           t.spec.title,
			ReadOnlyHint:    t.spec.readOnly,
			DestructiveHint: &destructive,
			IdempotentHint:  t.spec.idempotent,
			OpenWorldHint:   &notOpen,
		},
	}
}

// ToolNames lists the tools' names, in order.
func ToolNames() []string {
	names := make([]string, len(toolSpecs))
	for i, s := range toolSpecs {
		names[i] = s.name
	}
	return names
}

// lowerCamel turns a header name into an argument name: Idempotency-Key → idempotencyKey.
func lowerCamel(header string) string {
	parts := strings.Split(header, "-")
	for i, p := range parts {
		if i == 0 {
			parts[i] = strings.ToLower(p)
			continue
		}
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + strings.ToLower(p[1:])
		}
	}
	return strings.Join(parts, "")
}

// minLevel passes on records at or above its level only.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.level && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(as), m.level}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{m.Handler.WithGroup(name), m.level}
}
