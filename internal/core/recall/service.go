package recall

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
)

// Definitions is where recall reads a tenant's memory definitions
// (memories.Service, through its cache).
type Definitions interface {
	Memories(ctx context.Context, tenant string) ([]core.Memory, error)
	GetMemory(ctx context.Context, tenant, id string) (core.Memory, error)
}

// Deps is what a Service needs.
type Deps struct {
	Store       Store
	Definitions Definitions
	Caps        core.Capabilities
	// Embedders by id (Info().ID); LLMs by id, for summarize.
	Embedders map[string]core.Embedder
	LLMs      map[string]core.LLM
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// OnFold, when set, is called after every summarize fold attempt with the
	// provider id and the outcome (folded, refused, failed), e.g. for metrics.
	OnFold func(llm, status string)
	// Observer is told what each recall read (nil: nobody).
	Observer Observer
	// Tracer, when set, makes one GenAI retrieval span per memory a recall
	// reads (telemetry.go); nil: no spans.
	Tracer trace.Tracer
	// CaptureContent lets the query text into the retrieval spans
	// (gen_ai.retrieval.query.text); off, it never appears in telemetry.
	CaptureContent bool
	// KeyTTL is how long an Idempotency-Key is kept (0: core.DefaultIdempotencyTTL).
	KeyTTL time.Duration
}

// Service is the read side of every memory: recall with its evidence and
// receipts, and the indexing of document corpora. Safe for concurrent use.
type Service struct {
	store     Store
	defs      Definitions
	caps      core.Capabilities
	embedders map[string]core.Embedder
	llms      map[string]core.LLM
	now       func() time.Time
	onFold    func(llm, status string)

	obs            Observer
	tracer         trace.Tracer // nil: tracing off
	captureContent bool
	keyTTL         time.Duration
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Observer == nil {
		d.Observer = nopObserver{}
	}
	return &Service{store: d.Store, defs: d.Definitions, caps: d.Caps, embedders: d.Embedders, llms: d.LLMs, now: d.Now, onFold: d.OnFold,
		obs: d.Observer, tracer: d.Tracer, captureContent: d.CaptureContent, keyTTL: d.KeyTTL}
}

func (s *Service) countFold(llm, status string) {
	if s.onFold != nil {
		s.onFold(llm, status)
	}
}
