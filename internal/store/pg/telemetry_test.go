package pg

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestStatementName(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string]string{
		"BEGIN":           "BEGIN",
		lockNamespacesSQL: "SELECT pg_advisory_xact_lock",
		genericPlanSQL:    "SELECT set_config",
		"INSERT INTO entries (\n\ttenant, id) VALUES ($1, $2)":             "INSERT entries",
		"UPDATE runs SET next_index = $3 WHERE tenant = $1":                "UPDATE runs",
		"DELETE FROM run_events WHERE tenant = $1":                         "DELETE run_events",
		"SELECT model, dims FROM embedding_fingerprints WHERE tenant = $1": "SELECT embedding_fingerprints",
		"  select 1": "SELECT 1",
	} {
		if got := statementName(context.Background(), sql); got != want {
			t.Errorf("statementName(%.40q) = %q, want %q", sql, got, want)
		}
	}
}

func TestCommitSpan(t *testing.T) {
	t.Parallel()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	tel := telemetry{tp: tp, tracer: tp.Tracer("test")}
	var members []*pendingTurn
	var requests []trace.SpanContext
	for range 3 {
		ctx, span := tp.Tracer("test").Start(context.Background(), "request")
		members = append(members, &pendingTurn{ctx: ctx})
		requests = append(requests, span.SpanContext())
	}
	// One write: its statements are under its request already; no span.
	_, end := tel.commitSpan(members[0].ctx, members[:1], 1)
	end(nil)
	// Three writes of two conversations: a child of the first request, linked to all three.
	_, end = tel.commitSpan(members[0].ctx, members, 2)
	end(errors.New("stale guess"))
	spans := sr.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	var links []trace.SpanContext
	for _, l := range s.Links() {
		links = append(links, l.SpanContext)
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if s.Name() != "commit turns" || s.Parent().SpanID() != requests[0].SpanID() || !slices.EqualFunc(links, requests, trace.SpanContext.Equal) ||
		attrs["footprint.commit.writes"] != "3" || attrs["footprint.commit.namespaces"] != "2" || s.Status().Code != codes.Error {
		t.Errorf("commit span %q: parent %s, links %v (want %v), attributes %v, status %v", s.Name(), s.Parent().SpanID(), links, requests, attrs, s.Status())
	}
}
