package server

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Request tracing: otelhttp (OpenTelemetry's own net/http instrumentation)
// makes one server span per request, continuing the trace of the caller's
// W3C traceparent/tracestate when it sent one. Once chi has routed the
// request, the span is named by the route template ("POST
// /v1/conversations/{conversationId}/turns"), never the raw path, and carries
// http.route and the request id (nameSpan, called by the access log). The
// probes and /metrics are not traced: a load balancer's polls would bury the
// traces worth reading.

// untraced are the paths no span is made for.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// traced wraps h in the server spans when tp is set.
func traced(h http.Handler, tp trace.TracerProvider) http.Handler {
	if tp == nil {
		return h
	}
	return otelhttp.NewHandler(h, "footprint",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithFilter(func(r *http.Request) bool { return !untraced[r.URL.Path] }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	)
}

// nameSpan names the request's span by its route template; unmatched
// requests keep the method alone, as the HTTP conventions say.
func nameSpan(r *http.Request, route string) {
	span := trace.SpanFromContext(r.Context())
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("footprint.request_id", requestIDFrom(r.Context())))
	if route == "unmatched" {
		return
	}
	span.SetName(r.Method + " " + route)
	span.SetAttributes(attribute.String("http.route", route))
}
