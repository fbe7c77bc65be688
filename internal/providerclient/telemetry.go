package providerclient

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
)

// Tracing of provider calls. A traced Client makes, for each logical call
// (StartSpan, retries included), a GenAI client span as the OpenTelemetry
// GenAI semantic conventions describe it ("embeddings {model}", "chat
// {model}"), and under it one HTTP client span per attempt (otelhttp), which
// also sends the W3C traceparent and tracestate of the caller's trace to the
// provider. Nothing of the texts sent or received is recorded unless the
// caller adds it (content capture is the caller's opt-in).

const tracerName = "github.com/footprint/footprint/internal/providerclient"

// GenAI attribute keys shared by the embedders and the chat providers.
const (
	AttrOperation     = "gen_ai.operation.name"
	AttrProvider      = "gen_ai.provider.name"
	AttrRequestModel  = "gen_ai.request.model"
	AttrResponseModel = "gen_ai.response.model"
	AttrErrorType     = "error.type"
)

// traceContext is the only propagation sent to providers: W3C Trace Context,
// never baggage.
var traceContext propagation.TextMapPropagator = propagation.TraceContext{}

// tracedClient returns a copy of c whose transport traces each request and
// injects the trace context.
func tracedClient(c *http.Client, tp trace.TracerProvider) *http.Client {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cp := *c
	cp.Transport = otelhttp.NewTransport(base, otelhttp.WithTracerProvider(tp), otelhttp.WithPropagators(traceContext))
	return &cp
}

func portOf(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// Traced reports whether this client makes spans.
func (c *Client) Traced() bool { return c.tracer != nil }

// StartSpan starts the span of one logical call: name "{operation} {model}",
// kind client, with the operation, the provider's API flavour (provider, e.g.
// "openai"), the model, the provider's host and port, footprint's id for the
// provider (footprint.provider.id) and attrs. Untraced, it returns ctx and a
// non-recording span.
func (c *Client) StartSpan(ctx context.Context, operation, provider, model string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if c.tracer == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	all := append([]attribute.KeyValue{
		attribute.String(AttrOperation, operation),
		attribute.String(AttrProvider, provider),
		attribute.String(AttrRequestModel, model),
		attribute.String("server.address", c.host),
		attribute.Int("server.port", c.port),
		attribute.String("footprint.provider.id", c.id),
	}, attrs...)
	return c.tracer.Start(ctx, operation+" "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(all...))
}

// EndSpan ends a call's span, with err's error.type and an error status when
// the call failed. The error's message is recorded only when it is log-safe
// (this package's and core's provider errors are; a transport error's text
// is not, and is not recorded).
func EndSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetAttributes(attribute.String(AttrErrorType, ErrorType(err)))
		span.SetStatus(codes.Error, safeMessage(err))
	}
	span.End()
}

// ErrorType is a failed call's error.type: the HTTP status the provider
// answered with, "timeout", "canceled", "malformed_response", "transport" or
// "_OTHER".
func ErrorType(err error) string {
	var (
		perr *Error
		eerr *core.EmbedderError
	)
	status, malformed, temporary := 0, false, false
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &perr):
		status, malformed, temporary = perr.StatusCode, perr.StatusCode >= 200 && perr.StatusCode <= 299, perr.Temporary
	case errors.As(err, &eerr):
		if eerr.CallerDeadline {
			return "timeout"
		}
		status, malformed, temporary = eerr.StatusCode, eerr.Malformed, eerr.Temporary
	default:
		return "_OTHER"
	}
	switch {
	case malformed:
		return "malformed_response"
	case status != 0:
		return strconv.Itoa(status)
	case temporary:
		return "transport"
	}
	return "_OTHER"
}

func safeMessage(err error) string {
	var (
		perr *Error
		eerr *core.EmbedderError
	)
	switch {
	case errors.As(err, &perr):
		return perr.Error()
	case errors.As(err, &eerr):
		return eerr.Error()
	}
	return ""
}
