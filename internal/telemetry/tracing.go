// Package telemetry is how footprint is observed: OpenTelemetry traces
// configured by the standard OTEL_* environment variables, log lines that
// carry the active span's ids, and the domain's metrics on the Prometheus
// registry that /metrics serves.
//
// The domain (internal/core) never imports this package: it speaks the
// OpenTelemetry API (go.opentelemetry.io/otel/trace) for its retrieval spans
// and reports its metrics through the small observer interfaces each area
// declares, which Metrics implements. Only cmd/server, the tests and the
// benchmarks build an SDK.
package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is service.name when OTEL_SERVICE_NAME (or service.name
// in OTEL_RESOURCE_ATTRIBUTES) does not say otherwise.
const DefaultServiceName = "footprint"

// EnvCaptureContent is the opt-in that lets query and message text into span
// attributes (gen_ai.retrieval.query.text, gen_ai.input.messages,
// gen_ai.output.messages). The name is the one OpenTelemetry's GenAI
// instrumentations read. Off unless it says true.
const EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// Propagator is the only context propagation the service speaks: W3C Trace
// Context (traceparent, tracestate), read from requests and sent on calls to
// embedders and LLMs. Baggage is neither read nor sent: it could carry a
// caller's data to a provider.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Tracing is the trace pipeline the environment asked for.
type Tracing struct {
	// Provider makes the service's tracers; nil when tracing is off, and then
	// nothing traces at all: no middleware, no span, no propagation.
	Provider trace.TracerProvider
	// Description says in one line what is exported where, for the start-up
	// banner ("off (OTEL_TRACES_EXPORTER unset)" when off).
	Description string
	sdk         *sdktrace.TracerProvider
}

// Enabled reports whether spans are made.
func (t *Tracing) Enabled() bool { return t != nil && t.Provider != nil }

// Shutdown flushes the spans still buffered and stops the exporter; it is a
// no-op when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// SetupTracing builds the trace pipeline from the process environment, as
// every OpenTelemetry SDK does, through autoexport: OTEL_TRACES_EXPORTER
// (otlp, console or none; unlike the SDK's own default, none when unset),
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf or grpc), the other
// OTEL_EXPORTER_OTLP_* settings, OTEL_TRACES_SAMPLER and _ARG,
// OTEL_SERVICE_NAME (default footprint), OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SDK_DISABLED. getenv reads them (os.Getenv in the program); the
// exporters read their own settings from the process environment. Errors
// name the variable and what it accepts.
func SetupTracing(ctx context.Context, getenv func(string) string, logger *slog.Logger) (*Tracing, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	if v := strings.TrimSpace(getenv("OTEL_SDK_DISABLED")); v != "" {
		disabled, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("OTEL_SDK_DISABLED=%q: want true or false", v)
		}
		if disabled {
			return &Tracing{Description: "off (OTEL_SDK_DISABLED=true)"}, nil
		}
	}
	switch name {
	case "":
		return &Tracing{Description: "off (OTEL_TRACES_EXPORTER unset)"}, nil
	case "none":
		return &Tracing{Description: "off (OTEL_TRACES_EXPORTER=none)"}, nil
	case "otlp", "console":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: want otlp, console or none (one exporter)", name)
	}
	sampler, err := samplerDescription(getenv)
	if err != nil {
		return nil, err
	}
	if name == "otlp" {
		switch p := otlpProtocol(getenv); p {
		case "http/protobuf", "grpc":
		default:
			return nil, fmt.Errorf("OTLP protocol %q (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL): want http/protobuf or grpc", p)
		}
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: %w", name, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", DefaultServiceName)),
		resource.WithFromEnv(), // OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME
		resource.WithTelemetrySDK(),
		resource.WithHost(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// The SDK reads OTEL_TRACES_SAMPLER itself (checked above); the batcher
	// reads OTEL_BSP_*. What the SDK cannot do (an export that failed) it
	// reports to its global error handler: to the service's log.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry: exporting traces failed", "error", err)
	}))
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	service := DefaultServiceName
	if v, ok := res.Set().Value("service.name"); ok {
		service = v.AsString()
	}
	desc := name
	if name == "otlp" {
		desc = fmt.Sprintf("otlp %s to %s", otlpProtocol(getenv), otlpEndpoint(getenv))
	}
	return &Tracing{Provider: sdk, sdk: sdk,
		Description: fmt.Sprintf("%s (service %s, sampler %s)", desc, service, sampler)}, nil
}

// NewTracing wraps a provider built elsewhere (tests, benchmarks).
func NewTracing(p *sdktrace.TracerProvider, description string) *Tracing {
	return &Tracing{Provider: p, sdk: p, Description: description}
}

// samplerDescription checks OTEL_TRACES_SAMPLER and _ARG as the SDK will read
// them (the SDK itself only reports a bad value to its error handler and
// samples everything), and names the sampler for the banner.
func samplerDescription(getenv func(string) string) (string, error) {
	s := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	switch s {
	case "":
		return "parentbased_always_on", nil
	case "always_on", "always_off", "parentbased_always_on", "parentbased_always_off":
		return s, nil
	case "traceidratio", "parentbased_traceidratio":
		if arg == "" {
			return s + " 1.0", nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(r >= 0 && r <= 1) {
			return "", fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1 for %s", arg, s)
		}
		return s + " " + arg, nil
	}
	return "", fmt.Errorf("OTEL_TRACES_SAMPLER=%q: want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio", s)
}

func otlpProtocol(getenv func(string) string) string {
	return cmp.Or(strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")),
		strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL")), "http/protobuf")
}

// otlpEndpoint names where the OTLP exporter sends, as its own defaults
// resolve it, without any credentials or query the URL may hold.
func otlpEndpoint(getenv func(string) string) string {
	e := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	if e == "" {
		e = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		if e == "" {
			if otlpProtocol(getenv) == "grpc" {
				return "localhost:4317"
			}
			return "http://localhost:4318/v1/traces"
		}
		if otlpProtocol(getenv) != "grpc" {
			e = strings.TrimSuffix(e, "/") + "/v1/traces"
		}
	}
	if u, err := url.Parse(e); err == nil && u.Host != "" {
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		return u.String()
	}
	return e
}

// CaptureContent reads EnvCaptureContent: true lets query and message text
// into spans; unset or false keeps them out.
func CaptureContent(getenv func(string) string) (bool, error) {
	v := strings.TrimSpace(getenv(EnvCaptureContent))
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", EnvCaptureContent, v)
	}
	return b, nil
}
