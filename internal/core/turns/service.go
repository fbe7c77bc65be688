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
}

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
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.KeyTTL <= 0 {
		d.KeyTTL = core.DefaultIdempotencyTTL
	}
	return &Service{store: d.Store, defs: d.Definitions, caps: d.Caps, embedders: d.Embedders, llms: d.LLMs, now: d.Now, keyTTL: d.KeyTTL}
}
