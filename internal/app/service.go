// Package app wires footprint's domain services over one store: what
// cmd/server serves, and what the HTTP tests and the benchmarks build. It
// holds no rules of its own; each lives in its area's package under
// internal/core.
package app

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/memories"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
	"github.com/footprint/footprint/internal/core/turns"
)

// App is the domain's services, for the transports. Safe for concurrent use.
type App struct {
	Memories *memories.Service
	Turns    *turns.Service
	Recall   *recall.Service
	Runs     *runs.Service
	Explain  *explain.Service

	store Store
	caps  core.Capabilities
}

// config is what the options set.
type config struct {
	now       func() time.Time
	embedders map[string]core.Embedder
	llms      map[string]core.LLM
	cacheTTL  time.Duration
	keyTTL    time.Duration
	onFold    func(llm, status string)
	observer  Observer
	tracer    trace.Tracer
	capture   bool
}

// Observer is told what the domain does, for metrics: each area's observer
// in one (telemetry.Metrics implements it).
type Observer interface {
	turns.Observer
	recall.Observer
	runs.Observer
}

// WithObserver reports turns, recalls and run appends to o.
func WithObserver(o Observer) Option {
	return func(c *config) { c.observer = o }
}

// WithTracing makes the domain's spans (one GenAI retrieval span per memory a
// recall reads) with tp; captureContent lets query text into them. Without
// it the domain makes no span.
func WithTracing(tp trace.TracerProvider, captureContent bool) Option {
	return func(c *config) {
		if tp != nil {
			c.tracer = tp.Tracer("github.com/footprint/footprint/internal/core/recall")
		}
		c.capture = captureContent
	}
}

// Option configures an App.
type Option func(*config)

// WithClock replaces the wall clock (tests).
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// WithEmbedders makes embedders available by their Info().ID. Their Info
// is also what Capabilities publishes, unless caps already lists them.
func WithEmbedders(es ...core.Embedder) Option {
	return func(c *config) {
		for _, e := range es {
			c.embedders[e.Info().ID] = e
		}
	}
}

// WithMemoryCacheTTL sets how long a tenant's memory definitions are
// cached for the turn and recall paths (default memories.DefaultCacheTTL;
// 0 disables). Changes made through this App are seen at once; changes
// made through another replica are seen within the TTL.
func WithMemoryCacheTTL(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			d = -1
		}
		c.cacheTTL = d
	}
}

// WithLLMs makes chat providers available by their Info().ID (summarize,
// LLM extraction). Their Info is published in Capabilities.
func WithLLMs(ls ...core.LLM) Option {
	return func(c *config) {
		for _, l := range ls {
			c.llms[l.Info().ID] = l
		}
	}
}

// WithFoldObserver is called after every summarize fold attempt with the
// provider id and the outcome (folded, refused, failed), e.g. for metrics.
func WithFoldObserver(f func(llm, status string)) Option {
	return func(c *config) { c.onFold = f }
}

// WithIdempotencyTTL sets how long idempotency keys are kept (default
// core.DefaultIdempotencyTTL).
func WithIdempotencyTTL(d time.Duration) Option {
	return func(c *config) { c.keyTTL = d }
}

// New returns the services over store for a deployment with caps.
// caps.Store is filled from the store itself.
func New(store Store, caps core.Capabilities, opts ...Option) *App {
	c := config{now: time.Now, embedders: map[string]core.Embedder{}, llms: map[string]core.LLM{}}
	for _, o := range opts {
		o(&c)
	}
	caps.Store = store.Info()
	if len(caps.LLMs) == 0 {
		for _, l := range c.llms {
			caps.LLMs = append(caps.LLMs, l.Info())
		}
		slices.SortFunc(caps.LLMs, func(a, b core.LLMInfo) int { return strings.Compare(a.ID, b.ID) })
	}
	if len(caps.Embedders) == 0 {
		for _, e := range c.embedders {
			caps.Embedders = append(caps.Embedders, e.Info())
		}
		slices.SortFunc(caps.Embedders, func(a, b core.EmbedderInfo) int { return strings.Compare(a.ID, b.ID) })
	}
	defs := memories.New(memories.Deps{Store: store, Caps: caps, Now: c.now, CacheTTL: c.cacheTTL, KeyTTL: c.keyTTL})
	var (
		turnObs   turns.Observer
		recallObs recall.Observer
		runObs    runs.Observer
	)
	if c.observer != nil {
		turnObs, recallObs, runObs = c.observer, c.observer, c.observer
	}
	return &App{
		Memories: defs,
		Turns: turns.New(turns.Deps{Store: store, Definitions: defs, Caps: caps, Embedders: c.embedders, LLMs: c.llms,
			Now: c.now, KeyTTL: c.keyTTL, Observer: turnObs}),
		Recall: recall.New(recall.Deps{Store: store, Definitions: defs, Caps: caps, Embedders: c.embedders, LLMs: c.llms,
			Now: c.now, OnFold: c.onFold, Observer: recallObs, Tracer: c.tracer, CaptureContent: c.capture, KeyTTL: c.keyTTL}),
		Runs:    runs.New(runs.Deps{Store: store, Now: c.now, Observer: runObs, KeyTTL: c.keyTTL}),
		Explain: explain.New(explain.Deps{Store: store, Caps: caps, Embedders: c.embedders, Now: c.now, KeyTTL: c.keyTTL}),
		store:   store,
		caps:    caps,
	}
}

// Capabilities returns what this deployment can run.
func (a *App) Capabilities() core.Capabilities { return a.caps }

// Ping reports whether the store is reachable.
func (a *App) Ping(ctx context.Context) error { return a.store.Ping(ctx) }
