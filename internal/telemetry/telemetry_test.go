package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSetupTracing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string // the description; "" with err: the error's mention
		err  string
	}{
		{env: nil, want: "off (OTEL_TRACES_EXPORTER unset)"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none"}, want: "off (OTEL_TRACES_EXPORTER=none)"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, want: "off (OTEL_SDK_DISABLED=true)"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: "OTEL_TRACES_EXPORTER"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "-1"}, err: "OTEL_TRACES_SAMPLER_ARG"},
	} {
		tr, err := SetupTracing(context.Background(), env(tc.env), slog.New(slog.DiscardHandler))
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want one naming %s", tc.env, err, tc.err)
			}
		case err != nil || tr.Description != tc.want || tr.Enabled():
			t.Errorf("%v: %+v %v, want %q and off", tc.env, tr, err, tc.want)
		}
	}
	// The endpoint as the exporter resolves it, without credentials.
	for e, want := range map[string]string{
		"":                               "http://localhost:4318/v1/traces",
		"http://user:pw@collector:4318/": "http://collector:4318/v1/traces",
	} {
		got := otlpEndpoint(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": e}))
		if got != want {
			t.Errorf("endpoint %q: %q, want %q", e, got, want)
		}
	}
}

func TestLogHandlerAddsTheSpan(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	logger := slog.New(LogHandler(slog.NewTextHandler(&buf, nil)))
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "op")
	logger.InfoContext(ctx, "inside")
	span.End()
	logger.InfoContext(context.Background(), "outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	sc := span.SpanContext()
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id="+sc.TraceID().String()) || !strings.Contains(lines[0], "span_id="+sc.SpanID().String()) ||
		strings.Contains(lines[1], "trace_id") {
		t.Errorf("log lines:\n%s", buf.String())
	}
}
