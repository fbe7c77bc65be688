package recall

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
)

// Observer is told what each recall read, for metrics. Its methods are called
// on the request's goroutine (ReceiptSaved on the receipt's): they must be
// cheap and safe for concurrent use.
type Observer interface {
	// MemoryRead reports one memory's read within a recall.
	MemoryRead(MemoryRead)
	// ReceiptSaved reports a receipt's write: err is nil when it was stored.
	ReceiptSaved(err error)
}

// MemoryRead is what one memory's read cost and found.
type MemoryRead struct {
	Strategy   core.StrategyKind // the memory's strategy (hybrid for a hybrid)
	SearchMode string            // exact or ann when it ranked; "" when it did not
	Duration   time.Duration     // loading, ranking (and embedding the query, for the first memory that needed it), reading
	Considered int
	Admitted   int
}

type nopObserver struct{}

func (nopObserver) MemoryRead(MemoryRead) {}
func (nopObserver) ReceiptSaved(error)    {}

// Attributes of the retrieval spans: the OpenTelemetry GenAI semantic
// conventions' (https://opentelemetry.io/docs/specs/semconv/gen-ai/), and
// footprint's own evidence under footprint.recall.*.
const (
	attrOperation  = "gen_ai.operation.name"
	attrDataSource = "gen_ai.data_source.id"
	attrTopK       = "gen_ai.retrieval.top_k"
	attrDocuments  = "gen_ai.retrieval.documents"
	attrQueryText  = "gen_ai.retrieval.query.text" // only with the content opt-in
	attrErrorType  = "error.type"
)

// maxSpanDocuments bounds gen_ai.retrieval.documents, so that a memory
// admitting hundreds of entries cannot make a span of megabytes.
const maxSpanDocuments = 100

// memoryRead is one memory's read in progress: its retrieval span (nil when
// tracing is off) and its clock.
type memoryRead struct {
	s     *Service
	span  trace.Span
	start time.Time
}

// startRead starts one memory's read: a GenAI retrieval span named
// "retrieval <memoryId>", whose children are the store's calls and the
// summarize model call. The query text is an attribute only when the
// deployment opted in to content capture.
func (s *Service) startRead(ctx context.Context, m core.Memory, query string) (context.Context, memoryRead) {
	r := memoryRead{s: s, start: time.Now()}
	if s.tracer == nil {
		return ctx, r
	}
	ctx, r.span = s.tracer.Start(ctx, "retrieval "+m.ID, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String(attrOperation, "retrieval"), attribute.String(attrDataSource, m.ID),
			attribute.String("footprint.memory.type", string(m.Type)), attribute.String("footprint.recall.strategy", string(m.Strategy.Kind))))
	if s.captureContent && r.span.IsRecording() {
		r.span.SetAttributes(attribute.String(attrQueryText, query))
	}
	return ctx, r
}

// fail ends the read's span with err and returns err.
func (r memoryRead) fail(err error) error {
	if r.span != nil {
		r.span.RecordError(err)
		r.span.SetStatus(codes.Error, "")
		r.span.SetAttributes(attribute.String(attrErrorType, errorType(err)))
		r.span.End()
	}
	return err
}

// end reports the read's outcome to the observer and ends its span with the
// evidence: the documents ([{id, score}] of the candidates it offered or
// ranked within its k, best first), the counts, the threshold, the search
// mode and the nearest miss.
func (r memoryRead) end(rec MemoryRecall) {
	ev := rec.Evidence
	sum := summarizeEvidence(ev)
	r.s.obs.MemoryRead(MemoryRead{Strategy: ev.Strategy, SearchMode: sum.searchMode, Duration: time.Since(r.start),
		Considered: ev.ConsideredCount, Admitted: ev.AdmittedCount})
	if r.span == nil {
		return
	}
	if r.span.IsRecording() {
		attrs := []attribute.KeyValue{
			attribute.String(attrDocuments, spanDocuments(ev)),
			attribute.Int("footprint.recall.considered", ev.ConsideredCount),
			attribute.Int("footprint.recall.admitted", ev.AdmittedCount),
			attribute.Int("footprint.recall.rejected", ev.RejectedCount),
			attribute.Bool("footprint.recall.candidates_complete", ev.CandidatesComplete),
		}
		if sum.k > 0 {
			attrs = append(attrs, attribute.Int(attrTopK, sum.k))
		}
		if sum.searchMode != "" {
			attrs = append(attrs, attribute.String("footprint.recall.search_mode", sum.searchMode))
		}
		if sum.threshold != nil {
			attrs = append(attrs, attribute.Float64("footprint.recall.threshold", *sum.threshold))
		}
		if sum.nearestMiss != nil {
			attrs = append(attrs, attribute.Float64("footprint.recall.nearest_miss", *sum.nearestMiss))
		}
		if sum.embedder != "" {
			attrs = append(attrs, attribute.String("footprint.recall.embedder", sum.embedder))
		}
		if ev.Fold != nil {
			attrs = append(attrs, attribute.String("footprint.recall.fold", ev.Fold.Status))
		}
		r.span.SetAttributes(attrs...)
	}
	r.span.End()
}

// evidenceSummary is a memory's evidence in the few figures a span and a
// metric carry: a hybrid's from its ranking parts (the first ranking part's
// k, mode, threshold and embedder; the best nearest miss of all).
type evidenceSummary struct {
	k           int
	searchMode  string
	threshold   *float64
	nearestMiss *float64
	embedder    string
}

func summarizeEvidence(ev Evidence) evidenceSummary {
	var s evidenceSummary
	var visit func(Evidence)
	visit = func(e Evidence) {
		if e.Strategy == core.TopK && s.searchMode == "" {
			s.k, s.searchMode, s.threshold, s.embedder = e.K, e.SearchMode, e.Threshold, e.EmbedderID
		}
		if e.NearestMiss != nil && (s.nearestMiss == nil || *e.NearestMiss > *s.nearestMiss) {
			s.nearestMiss = e.NearestMiss
		}
		for _, p := range e.Parts {
			visit(p)
		}
	}
	visit(ev)
	return s
}

// spanDocument is one entry of gen_ai.retrieval.documents.
type spanDocument struct {
	ID    string   `json:"id"`
	Score *float64 `json:"score,omitempty"`
}

// spanDocuments is gen_ai.retrieval.documents as a JSON string (the Go API
// has no structured attribute values): for each read (each part of a
// hybrid), its admitted candidates and, for a ranking, every candidate ranked
// within k (those a threshold refused included), in rank order; at most
// maxSpanDocuments in all.
func spanDocuments(ev Evidence) string {
	docs := []spanDocument{}
	var visit func(Evidence)
	visit = func(e Evidence) {
		if len(e.Parts) > 0 {
			for _, p := range e.Parts {
				visit(p)
			}
			return
		}
		for _, c := range e.Candidates {
			if len(docs) == maxSpanDocuments {
				return
			}
			if c.Admitted || (e.K > 0 && c.Rank <= e.K && c.Score != nil) {
				docs = append(docs, spanDocument{ID: c.ID, Score: c.Score})
			}
		}
	}
	visit(ev)
	b, _ := json.Marshal(docs) // ids and floats: cannot fail
	return string(b)
}

// errorType is error.type for a failed read: the error's kind, a
// low-cardinality name a backend can group by.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, core.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, core.ErrInvalid):
		return "invalid"
	case errors.Is(err, core.ErrNotFound):
		return "not_found"
	case errors.Is(err, core.ErrConflict):
		return "conflict"
	}
	return "_OTHER"
}
