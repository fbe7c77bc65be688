package pg

import (
	"context"
	"strings"
	"sync"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// telemetry is the store's tracing and its group-commit observer.
//
// Statements are traced by otelpgx, a maintained implementation of pgx's own
// tracer interfaces (query, batch, COPY, prepare, connect): one client span
// per statement or pipelined batch, named by what it does to which table
// ("INSERT entries", "SELECT embedding_fingerprints", statementName), with the
// server's address and database; never the values sent, and not the
// statement's text either: a turn's statements are kilobytes of SQL that every
// exported span would carry again, for what the name says. A pipelined batch
// (one round trip: BEGIN, the lock, the check, the entries, COMMIT) is one
// span, "BATCH", whose statements are its events, in order, each named so and
// marked when it failed: a span apiece would cost more than the round trip
// they share tells. Statements run outside any traced request (the sweep,
// migrations) make no span. Pool acquisition is not traced: it would add a
// span to every request for a wait the pool's own figures show.
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
	cfg.ConnConfig.Tracer = batchEvents{otelpgx.NewTracer(otelpgx.WithTracerProvider(t.tp), otelpgx.WithDisableAcquireTracer(),
		otelpgx.WithDisableSQLStatementInAttributes(), otelpgx.WithSpanNameCtxFunc(statementName))}
}

// batchEvents is otelpgx's tracer with a pipelined batch as one span and its statements as
// the span's events.
type batchEvents struct{ *otelpgx.Tracer }

func (b batchEvents) TraceBatchStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	ctx = b.Tracer.TraceBatchStart(ctx, conn, data)
	trace.SpanFromContext(ctx).SetName("BATCH")
	return ctx
}

func (b batchEvents) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if data.Err != nil {
		span.AddEvent(statementName(ctx, data.SQL), trace.WithAttributes(attribute.Bool("error", true)))
		return
	}
	span.AddEvent(statementName(ctx, data.SQL))
}

// statementNames caches statementName: the store's statements are a bounded set of constants.
var statementNames sync.Map

// statementName names a statement by its operation and the table it works on, as the code
// writes them (keywords upper case): "INSERT entries", "UPDATE runs", "DELETE run_events",
// "SELECT entries" (the first FROM a table), "SELECT set_config" (a function, when nothing is
// read FROM a table), "SELECT pg_advisory_xact_lock" (every statement that takes a lock), "BEGIN".
func statementName(_ context.Context, sql string) string {
	if v, ok := statementNames.Load(sql); ok {
		return v.(string)
	}
	name := nameOf(sql)
	if len(sql) <= 1<<14 {
		statementNames.Store(sql, name)
	}
	return name
}

func nameOf(sql string) string {
	sql = strings.TrimSpace(sql)
	op, rest, _ := strings.Cut(sql, " ")
	op = strings.ToUpper(strings.TrimSpace(op))
	word := func(s string) string {
		s = strings.TrimLeft(s, " \t\n(")
		name := func(r rune) bool {
			return r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		}
		end := strings.IndexFunc(s, func(r rune) bool { return !name(r) })
		if end >= 0 {
			s = s[:end]
		}
		return s
	}
	// after is the first name after kw that is not a subquery's SELECT.
	after := func(kw string) string {
		for from := rest; ; {
			i := strings.Index(from, kw+" ")
			if j := strings.Index(from, kw+"\n"); j >= 0 && (i < 0 || j < i) {
				i = j
			}
			if i < 0 {
				return ""
			}
			if w := word(from[i+len(kw):]); w != "" && w != "SELECT" {
				return w
			}
			from = from[i+len(kw):]
		}
	}
	if strings.Contains(sql, "pg_advisory_xact_lock(") {
		return "SELECT pg_advisory_xact_lock" // what such a statement is for: taking the lock
	}
	var table string
	switch op {
	case "INSERT":
		table = after("INTO")
	case "UPDATE":
		table = word(rest)
	case "DELETE":
		table = after("FROM")
	case "SELECT", "WITH":
		if table = after("FROM"); table == "" {
			table = word(rest)
		}
	}
	if table == "" {
		return op
	}
	return op + " " + table
}

// commitSpan starts the span of a shared transaction of more than one turn
// write. It is the child of the first write's request (the transaction runs
// in that context) and links to every write's span, so that each request's
// trace leads to the transaction that committed it. A transaction of one
// write needs none: its statements are already under its request. end
// records err.
func (t telemetry) commitSpan(ctx context.Context, members []*pendingTurn, namespaces int) (context.Context, func(err error)) {
	if t.tracer == nil || len(members) < 2 || !trace.SpanFromContext(ctx).IsRecording() {
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
