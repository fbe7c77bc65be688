package pg

import (
	"context"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// telemetry is the store's tracing and its group-commit observer.
//
// Statements are traced by otelpgx, a maintained implementation of pgx's own
// tracer interfaces (query, batch — each statement of a pipelined batch is a
// span of its own —, COPY, prepare, connect): one client span per statement,
// named by its operation (SELECT, INSERT, ...), with the statement's text as
// written in this package (db.query.text: placeholders, never the values sent)
// and the server's address. Statements run outside any traced request (the
// sweep, migrations) make no span. Pool acquisition is not traced: it would
// double the spans of every request for a wait the pool's own figures show.
type telemetry struct {
	tp       trace.TracerProvider // nil: not traced
	tracer   trace.Tracer
	onCommit func(writes, namespaces int)
}

// WithTracerProvider traces the store's statements, and its shared commits of
// turn writes, with tp.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) {
		if tp != nil {
			o.tel.tp, o.tel.tracer = tp, tp.Tracer("github.com/footprint/footprint/internal/store/pg")
		}
	}
}

// WithCommitObserver is told, after each shared transaction of turn writes
// commits (turncommit.go), how many writes it held and for how many
// namespaces: the sizes group commit reaches.
func WithCommitObserver(f func(writes, namespaces int)) Option {
	return func(o *options) { o.tel.onCommit = f }
}

func (t telemetry) instrument(cfg *pgxpool.Config) {
	if t.tp == nil {
		return
	}
	cfg.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTracerProvider(t.tp), otelpgx.WithDisableAcquireTracer())
}

// commitSpan starts the span of a shared transaction of turn writes. It is
// the child of the first write's request (the transaction runs in that
// context) and links to every write's span, so that each request's trace
// leads to the transaction that committed it. end records err.
func (t telemetry) commitSpan(ctx context.Context, members []*pendingTurn, namespaces int) (context.Context, func(err error)) {
	if t.tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, func(error) {}
	}
	links := make([]trace.Link, 0, len(members))
	for _, pt := range members {
		if sc := trace.SpanContextFromContext(pt.ctx); sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	ctx, span := t.tracer.Start(ctx, "commit turns", trace.WithSpanKind(trace.SpanKindInternal), trace.WithLinks(links...),
		trace.WithAttributes(attribute.String("db.system.name", "postgresql"),
			attribute.Int("footprint.commit.writes", len(members)), attribute.Int("footprint.commit.namespaces", namespaces)))
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
}

func (t telemetry) committed(writes, namespaces int) {
	if t.onCommit != nil {
		t.onCommit(writes, namespaces)
	}
}
