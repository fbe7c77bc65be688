package turns

import (
	"context"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// Definitions is where the turn path reads a tenant's memory definitions
// (memories.Service, through its cache).
type Definitions interface {
	Memories(ctx context.Context, tenant string) ([]core.Memory, error)
}

// Deps is what a Service needs.
type Deps struct {
	Store       Store
	Definitions Definitions
	Caps        core.Capabilities
	// Embedders by id (Info().ID); LLMs by id, for LLM extraction.
	Embedders map[string]core.Embedder
	LLMs      map[string]core.LLM
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// KeyTTL is how long an Idempotency-Key is kept (0: core.DefaultIdempotencyTTL).
	KeyTTL time.Duration
	// Observer is told what each turn did (nil: nobody).
	Observer Observer
}

// Observer is told what each accepted turn did, for metrics. It is called on
// the request's goroutine: it must be cheap and safe for concurrent use.
type Observer interface {
	// TurnWritten: a turn took a number and wrote entries (entries may be 0
	// when a turn only claimed its number).
	TurnWritten(entries int)
	// TurnNoop: a turn wrote nothing and took no number (reason as in
	// TurnNoop.Reason).
	TurnNoop(reason string)
	// TurnReplayed: a retry with the same Idempotency-Key got the first
	// answer again.
	TurnReplayed()
}

type nopObserver struct{}

func (nopObserver) TurnWritten(int) {}
func (nopObserver) TurnNoop(string) {}
func (nopObserver) TurnReplayed()   {}

// Service is the write side of every memory: it resolves a turn's number
// inside the store's transaction and writes messages, snapshots, facts and
// beats together. Safe for concurrent use.
type Service struct {
	store     Store
	defs      Definitions
	caps      core.Capabilities
	embedders map[string]core.Embedder
	llms      map[string]core.LLM
	now       func() time.Time
	keyTTL    time.Duration
	obs       Observer
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.KeyTTL <= 0 {
		d.KeyTTL = core.DefaultIdempotencyTTL
	}
	if d.Observer == nil {
		d.Observer = nopObserver{}
	}
	return &Service{store: d.Store, defs: d.Definitions, caps: d.Caps, embedders: d.Embedders, llms: d.LLMs, now: d.Now, keyTTL: d.KeyTTL, obs: d.Observer}
}

// observe reports an accepted turn's outcome to the observer.
func (s *Service) observe(r TurnResult) {
	switch {
	case r.Replayed:
		s.obs.TurnReplayed()
	case r.Noop != nil:
		s.obs.TurnNoop(r.Noop.Reason)
	default:
		n := 0
		for _, w := range r.Written {
			n += len(w.IDs)
		}
		s.obs.TurnWritten(n)
	}
}
