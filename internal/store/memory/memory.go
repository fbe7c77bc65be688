// Package memory is footprint's in-memory store: core.Store over maps, for zero-dependency
// runs (no DATABASE_URL) and fast tests. It passes the same conformance suite as the Postgres
// store (internal/store/storetest), so code that works against one works against the other.
//
// Nothing survives a restart. Values are copied in and out, so callers can never alias
// stored state.
package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/explain"
	"github.com/footprint/footprint/internal/core/memories"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
	"github.com/footprint/footprint/internal/core/turns"
)

// Store is the in-memory implementation of core.Store. It is safe for concurrent use.
type Store struct {
	mu sync.RWMutex
	// memories maps tenant → memory id → stored memory. Tenant first, as in Postgres: no
	// lookup can reach another tenant's data without naming that tenant.
	memories map[string]map[string]record

	// es holds entries (entries.go), under its own locks.
	es entryStore
	// ex holds explain links, ablations and tombstones (explain.go), under es.mu.
	ex explainState
	// rs holds run recordings (runs.go), under its own lock.
	rs runStore
}

// The Store serves every area of the domain.
var (
	_ memories.Store = (*Store)(nil)
	_ turns.Store    = (*Store)(nil)
	_ recall.Store   = (*Store)(nil)
	_ runs.Store     = (*Store)(nil)
	_ explain.Store  = (*Store)(nil)
	_ core.Sweeper   = (*Store)(nil)
)

// record is a memory at rest. The strategy is held as its JSON, exactly as Postgres holds it:
// a stored memory then round-trips through the same encoding in both stores, and every read
// gets a fresh, unaliased Strategy (its slices and maps are not shared).
type record struct {
	m        core.Memory // Strategy zeroed
	strategy []byte
}

// New returns an empty Store.
func New() *Store {
	return &Store{memories: make(map[string]map[string]record)}
}

// CreateMemory stores a copy of m. It returns memories.ErrMemoryExists if the tenant already
// has a memory with m.ID.
func (s *Store) CreateMemory(ctx context.Context, m core.Memory, once *core.Once) error {
	return s.inOnce(ctx, m.Tenant, once, func() error { return s.createMemory(ctx, m) })
}

func (s *Store) createMemory(ctx context.Context, m core.Memory) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, err := toRecord(m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	byID := s.memories[m.Tenant]
	if _, exists := byID[m.ID]; exists {
		return memories.ErrMemoryExists
	}
	if byID == nil {
		byID = make(map[string]record)
		s.memories[m.Tenant] = byID
	}
	byID[m.ID] = r
	return nil
}

// GetMemory returns a copy of the tenant's memory, or a *core.NotFoundError.
func (s *Store) GetMemory(ctx context.Context, tenant, id string) (core.Memory, error) {
	if err := ctx.Err(); err != nil {
		return core.Memory{}, err
	}
	s.mu.RLock()
	r, ok := s.memories[tenant][id]
	s.mu.RUnlock()
	if !ok {
		return core.Memory{}, &core.NotFoundError{What: "memory", ID: id}
	}
	return r.memory()
}

// ListMemories returns copies of up to limit of the tenant's memories with id > after, in
// byte order of id (Go string order, which is what Postgres's COLLATE "C" gives). limit <= 0
// returns none. The result is never nil.
//
// It sorts the tenant's ids on every call: fine for the sizes an in-memory deployment holds.
func (s *Store) ListMemories(ctx context.Context, tenant, after string, limit int) ([]core.Memory, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := []core.Memory{}
	if limit <= 0 {
		return out, nil
	}
	s.mu.RLock()
	var page []record
	byID := s.memories[tenant]
	ids := make([]string, 0, len(byID))
	for id := range byID {
		if id > after {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	for _, id := range ids {
		page = append(page, byID[id])
	}
	s.mu.RUnlock()

	for _, r := range page {
		m, err := r.memory()
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// UpdateMemory applies fn to a copy of the tenant's memory and stores the result, holding the
// write lock throughout so concurrent updates never lose one another. It returns a
// *core.NotFoundError if there is no such memory, and fn's error unchanged if fn fails (then
// nothing is stored).
//
// As in the Postgres store, fn may change every field except Tenant, ID and CreatedAt, which
// are restored after it returns, and the store does not bump Version or set UpdatedAt. fn
// runs under the store's lock: it must be quick and must not call the store.
func (s *Store) UpdateMemory(ctx context.Context, tenant, id string, fn func(*core.Memory) error) (core.Memory, error) {
	if err := ctx.Err(); err != nil {
		return core.Memory{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.memories[tenant][id]
	if !ok {
		return core.Memory{}, &core.NotFoundError{What: "memory", ID: id}
	}
	m, err := r.memory()
	if err != nil {
		return core.Memory{}, err
	}
	createdAt := m.CreatedAt
	if err := fn(&m); err != nil {
		return core.Memory{}, err
	}
	m.Tenant, m.ID, m.CreatedAt = tenant, id, createdAt
	updated, err := toRecord(m)
	if err != nil {
		return core.Memory{}, err
	}
	s.memories[tenant][id] = updated
	return updated.memory()
}

// DeleteMemory removes the tenant's memory, or returns a *core.NotFoundError. With purge it
// also erases every entry stored under the memory, in every namespace, before the memory
// lock is released.
func (s *Store) DeleteMemory(ctx context.Context, tenant, id string, purge bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.memories[tenant][id]; !ok {
		return &core.NotFoundError{What: "memory", ID: id}
	}
	delete(s.memories[tenant], id)
	if len(s.memories[tenant]) == 0 {
		delete(s.memories, tenant)
	}
	if purge {
		s.purgeEntries(tenant, id)
	}
	return nil
}

// Ping always succeeds: there is nothing to reach.
func (s *Store) Ping(ctx context.Context) error { return ctx.Err() }

// Info describes this store for /v1/capabilities. It ranks vectors by exact scan.
func (s *Store) Info() core.StoreInfo {
	return core.StoreInfo{Kind: "memory", RanksVectors: true}
}

// toRecord copies m for storage. Timestamps are normalised the way Postgres stores them (UTC,
// microseconds, no monotonic reading), so both stores return identical values.
func toRecord(m core.Memory) (record, error) {
	strategy, err := json.Marshal(m.Strategy)
	if err != nil {
		return record{}, fmt.Errorf("encode strategy of memory %q: %w", m.ID, err)
	}
	m.Strategy = core.Strategy{}
	m.CreatedAt = normalise(m.CreatedAt)
	m.UpdatedAt = normalise(m.UpdatedAt)
	return record{m: m, strategy: strategy}, nil
}

// memory returns a fresh copy of the stored memory.
func (r record) memory() (core.Memory, error) {
	m := r.m
	if err := json.Unmarshal(r.strategy, &m.Strategy); err != nil {
		return core.Memory{}, fmt.Errorf("decode stored strategy of memory %q: %w", m.ID, err)
	}
	return m, nil
}

func normalise(t time.Time) time.Time {
	return t.UTC().Truncate(time.Microsecond)
}
