package core

import (
	"context"
	"time"
)

// MemoryStore persists memory definitions, keyed by (tenant, id).
// Implementations must be safe for concurrent use and must never return a
// driver-specific error: they translate to ErrNotFound, ErrConflict and
// ErrUnavailable (wrapped), everything else is an internal error.
type MemoryStore interface {
	// CreateMemory stores m. It returns a *ConflictError (ErrConflict) if
	// the tenant already has a memory with m.ID.
	CreateMemory(ctx context.Context, m Memory) error
	// GetMemory returns the tenant's memory, or ErrNotFound.
	GetMemory(ctx context.Context, tenant, id string) (Memory, error)
	// ListMemories returns up to limit of the tenant's memories with
	// id > after, ordered by id ascending.
	ListMemories(ctx context.Context, tenant, after string, limit int) ([]Memory, error)
	// UpdateMemory loads the tenant's memory, applies fn to it and stores
	// the result atomically (the store owns the transaction, the caller owns
	// the change). It returns ErrNotFound if there is no such memory, and
	// fn's error unchanged if fn fails (nothing is stored then).
	UpdateMemory(ctx context.Context, tenant, id string, fn func(*Memory) error) (Memory, error)
	// DeleteMemory removes the tenant's memory, or returns ErrNotFound.
	// With purge it also erases every entry stored under that memory, in
	// the same transaction.
	DeleteMemory(ctx context.Context, tenant, id string, purge bool) error
}

// Store is everything the service needs from a persistence backend.
type Store interface {
	MemoryStore
	EntryStore
	RecallStore
	ExplainStore
	RunStore
	// Ping reports whether the backend is reachable (for /readyz).
	Ping(ctx context.Context) error
	// Info describes the backend for /v1/capabilities.
	Info() StoreInfo
}

// StoreInfo describes a store implementation.
type StoreInfo struct {
	Kind         string // "memory" or "postgres"
	RanksVectors bool   // can rank stored vectors by similarity (topK)
}

// Sweeper is implemented by stores that can reclaim the space of expired
// rows (entries past their ttl, idempotency keys past their period).
// Correctness never depends on it: every read already ignores expired rows.
type Sweeper interface {
	Sweep(ctx context.Context, now time.Time) (int64, error)
}
