package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
)

// Metrics are the domain's instruments on a Prometheus registry. Every label
// takes a bounded set of values (strategy kinds, search modes, configured
// embedder and LLM ids, fixed outcome words): never a tenant, conversation,
// memory or run id. Each is documented in the README (Metrics). Safe for
// concurrent use.
type Metrics struct {
	recallDuration   *prometheus.HistogramVec
	recallConsidered *prometheus.HistogramVec
	recallAdmitted   *prometheus.HistogramVec
	receipts         *prometheus.CounterVec

	turnsWritten   prometheus.Counter
	entriesWritten prometheus.Counter
	turnNoops      *prometheus.CounterVec
	replays        prometheus.Counter

	eventsAppended  prometheus.Counter
	eventsRepeated  prometheus.Counter
	eventsDropped   prometheus.Counter
	eventsTruncated prometheus.Counter

	embedDuration *prometheus.HistogramVec
	embedErrors   *prometheus.CounterVec
	llmCalls      *prometheus.CounterVec
	folds         *prometheus.CounterVec

	commitWrites     prometheus.Histogram
	commitNamespaces prometheus.Histogram
}

var _ app.Observer = (*Metrics)(nil)

// countBuckets suit counts of candidates per read: 0 to a thousand.
var countBuckets = []float64{0, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000}

// NewMetrics registers the domain's instruments on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	latency := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	m := &Metrics{
		recallDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "footprint_recall_read_duration_seconds",
			Help:    "Time to read one memory within a recall (load or rank, read; the first ranking memory also embeds the query), by strategy and search mode (exact, ann, none).",
			Buckets: latency,
		}, []string{"strategy", "search_mode"}),
		recallConsidered: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "footprint_recall_candidates_considered",
			Help:    "Candidates one memory's read considered, by strategy.",
			Buckets: countBuckets,
		}, []string{"strategy"}),
		recallAdmitted: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "footprint_recall_candidates_admitted",
			Help:    "Candidates one memory's read admitted into the prompt, by strategy.",
			Buckets: countBuckets,
		}, []string{"strategy"}),
		receipts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "footprint_recall_receipts_total",
			Help: "Recall receipts written, by outcome (written, failed).",
		}, []string{"outcome"}),
		turnsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "footprint_turns_written_total",
			Help: "Turns written (each took a turn number).",
		}),
		entriesWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "footprint_turn_entries_written_total",
			Help: "Entries (messages, snapshots, facts, beats) the written turns stored.",
		}),
		turnNoops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "footprint_turn_noops_total",
			Help: "Turns that wrote nothing and took no number, by reason (no-messages, no-user-message, no-writing-memory).",
		}, []string{"reason"}),
		replays: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "footprint_idempotent_replays_total",
			Help: "Turn retries answered with the first answer stored for their Idempotency-Key.",
		}),
		eventsAppended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "footprint_run_events_appended_total",
			Help: "Run events appended (every event of every accepted batch).",
		}),
		eventsRepeated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "footprint_run_events_repeated_total",
			Help: "Appended context.injected announcements identical to one held: kept as repeats that hold no slot.",
		}),
		eventsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "footprint_run_events_dropped_total",
			Help: "Run events evicted, oldest first, to keep recordings within their cap.",
		}),
		eventsTruncated: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "footprint_run_events_truncated_total",
			Help: "Run events whose payload was over the limit and kept truncated.",
		}),
		embedDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "footprint_embedder_call_duration_seconds",
			Help:    "Embedder calls (one Embed of one or more texts, retries included), by embedder id.",
			Buckets: latency,
		}, []string{"embedder"}),
		embedErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "footprint_embedder_errors_total",
			Help: "Failed embedder calls, by embedder id and kind (unavailable: retry later; failed: the provider refused or answered unusably; canceled: the caller went away or its deadline passed).",
		}, []string{"embedder", "kind"}),
		llmCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "footprint_llm_calls_total",
			Help: "LLM provider calls by provider and outcome (ok, retry, error).",
		}, []string{"provider", "outcome"}),
		folds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "footprint_summarize_folds_total",
			Help: "Summarize fold attempts by provider and outcome (folded, refused, failed).",
		}, []string{"provider", "outcome"}),
		commitWrites: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "footprint_pg_turn_commit_writes",
			Help:    "Turn writes per shared Postgres transaction (group commit; 1: a predicted write that went alone).",
			Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64},
		}),
		commitNamespaces: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "footprint_pg_turn_commit_namespaces",
			Help:    "Conversations (namespaces) per shared Postgres transaction of turn writes.",
			Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64},
		}),
	}
	reg.MustRegister(m.recallDuration, m.recallConsidered, m.recallAdmitted, m.receipts,
		m.turnsWritten, m.entriesWritten, m.turnNoops, m.replays,
		m.eventsAppended, m.eventsRepeated, m.eventsDropped, m.eventsTruncated,
		m.embedDuration, m.embedErrors, m.llmCalls, m.folds, m.commitWrites, m.commitNamespaces)
	return m
}

// MemoryRead implements recall.Observer.
func (m *Metrics) MemoryRead(r recall.MemoryRead) {
	mode := r.SearchMode
	if mode == "" {
		mode = "none"
	}
	strategy := string(r.Strategy)
	m.recallDuration.WithLabelValues(strategy, mode).Observe(r.Duration.Seconds())
	m.recallConsidered.WithLabelValues(strategy).Observe(float64(r.Considered))
	m.recallAdmitted.WithLabelValues(strategy).Observe(float64(r.Admitted))
}

// ReceiptSaved implements recall.Observer.
func (m *Metrics) ReceiptSaved(err error) {
	if err != nil {
		m.receipts.WithLabelValues("failed").Inc()
		return
	}
	m.receipts.WithLabelValues("written").Inc()
}

// TurnWritten implements turns.Observer.
func (m *Metrics) TurnWritten(entries int) {
	m.turnsWritten.Inc()
	m.entriesWritten.Add(float64(entries))
}

// TurnNoop implements turns.Observer.
func (m *Metrics) TurnNoop(reason string) { m.turnNoops.WithLabelValues(reason).Inc() }

// TurnReplayed implements turns.Observer.
func (m *Metrics) TurnReplayed() { m.replays.Inc() }

// EventsAppended implements runs.Observer.
func (m *Metrics) EventsAppended(c runs.BatchCounts) {
	m.eventsAppended.Add(float64(c.Appended))
	m.eventsRepeated.Add(float64(c.Repeats))
	m.eventsDropped.Add(float64(c.Dropped))
	m.eventsTruncated.Add(float64(c.Truncated))
}

// EmbedderCall records one embedder call (embedder.WithObserver).
func (m *Metrics) EmbedderCall(embedder string, _ int, d time.Duration, err error) {
	m.embedDuration.WithLabelValues(embedder).Observe(d.Seconds())
	if err == nil {
		return
	}
	kind := "failed"
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		kind = "canceled"
	case errors.Is(err, core.ErrUnavailable):
		kind = "unavailable"
	}
	m.embedErrors.WithLabelValues(embedder, kind).Inc()
}

// LLMCall counts one LLM provider call or retry (llm.BuildCounted's counter).
func (m *Metrics) LLMCall(provider, outcome string) {
	m.llmCalls.WithLabelValues(provider, outcome).Inc()
}

// Fold counts one summarize fold attempt (app.WithFoldObserver).
func (m *Metrics) Fold(provider, outcome string) { m.folds.WithLabelValues(provider, outcome).Inc() }

// TurnCommit records one shared transaction of turn writes (pg.WithCommitObserver).
func (m *Metrics) TurnCommit(writes, namespaces int) {
	m.commitWrites.Observe(float64(writes))
	m.commitNamespaces.Observe(float64(namespaces))
}
