package memories

import (
	"context"
	"fmt"

	"github.com/footprint/footprint/internal/core"
)

// ErrMemoryExists is what a Store returns when the tenant already has a
// memory with the id being created; the service turns it into the refusal a
// client reads.
var ErrMemoryExists = fmt.Errorf("memory id taken: %w", core.ErrConflict)

// Store persists memory definitions, keyed by (tenant, id).
// Implementations must be safe for concurrent use and must never return a
// driver-specific error: they translate to ErrNotFound, ErrConflict and
// ErrUnavailable (wrapped), everything else is an internal error.
type Store interface {
	// CreateMemory stores m. It returns ErrMemoryExists if the tenant
	// already has a memory with m.ID. With once, the create is idempotent
	// (see core.Once): a replay stores nothing and sets once.Replay; a key
	// used by another request is core.ErrKeyReused.
	CreateMemory(ctx context.Context, m core.Memory, once *core.Once) error
	// GetMemory returns the tenant's memory, or ErrNotFound.
	GetMemory(ctx context.Context, tenant, id string) (core.Memory, error)
	// ListMemories returns up to limit of the tenant's memories with
	// id > after, ordered by id ascending.
	ListMemories(ctx context.Context, tenant, after string, limit int) ([]core.Memory, error)
	// UpdateMemory loads the tenant's memory, applies fn to it and stores
	// the result atomically (the store owns the transaction, the caller owns
	// the change). It returns ErrNotFound if there is no such memory, and
	// fn's error unchanged if fn fails (nothing is stored then).
	UpdateMemory(ctx context.Context, tenant, id string, fn func(*core.Memory) error) (core.Memory, error)
	// DeleteMemory removes the tenant's memory, or returns ErrNotFound.
	// With purge it also erases every entry stored under that memory, in
	// the same transaction.
	DeleteMemory(ctx context.Context, tenant, id string, purge bool) error
}
