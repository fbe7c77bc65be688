package benchkit

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/footprint/footprint/internal/telemetry/telemetrytest"
)

// Tracing is a trace pipeline as cmd/server builds it with OTEL_TRACES_EXPORTER=otlp and
// sampling 1.0: every span, the batch span processor with its defaults, the OTLP/HTTP
// protobuf exporter, sending to an in-process receiver that reads and discards each export
// (what the service pays is the export; decoding is a collector's cost, elsewhere).
type Tracing struct {
	Provider *sdktrace.TracerProvider
	receiver *telemetrytest.Receiver
}

// StartTracing starts the receiver and the provider exporting to it.
func StartTracing(ctx context.Context) (*Tracing, error) {
	rcv, err := telemetrytest.Start(false)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(rcv.URL+"/v1/traces"))
	if err != nil {
		rcv.Close()
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "footprint-bench"))))
	return &Tracing{Provider: tp, receiver: rcv}, nil
}

// Received describes what reached the receiver.
func (t *Tracing) Received() string {
	n, bytes := t.receiver.Received()
	return fmt.Sprintf("%d OTLP/HTTP exports, %.1f MB", n, float64(bytes)/1e6)
}

// Close flushes the spans still buffered and stops the receiver.
func (t *Tracing) Close(ctx context.Context) {
	_ = t.Provider.Shutdown(ctx)
	t.receiver.Close()
}
