package pg

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
)

// This file is the seam between rows and core values: the only code that knows how a
// core.Memory is laid out in columns. Optional fields are NULL in the database and zero values
// in core; timestamps come back in UTC at microsecond precision (Postgres's), which is what
// the in-memory store normalises to as well.

// memoryColumns lists memories' columns in the order scanMemory reads and memoryArgs writes.
const memoryColumns = `tenant, id, type, strategy, description, read_only, ttl_ms, tier,
	embedder, projection, corpus, flavor, version, created_at, updated_at`

// memoryArgs returns m's column values in memoryColumns order.
func memoryArgs(m core.Memory) ([]any, error) {
	strategy, err := json.Marshal(m.Strategy)
	if err != nil {
		return nil, fmt.Errorf("encode strategy of memory %q: %w", m.ID, err)
	}
	return []any{
		m.Tenant, m.ID, string(m.Type), string(strategy), m.Description, m.ReadOnly,
		nullInt64(m.TTLMs), nullString(m.Tier), nullString(m.Embedder), nullString(m.Projection),
		m.Corpus, m.Flavor, m.Version, m.CreatedAt, m.UpdatedAt,
	}, nil
}

// scanMemory reads one row of memoryColumns. A row whose strategy no longer parses is an
// internal error naming the memory, never a panic later.
func scanMemory(row pgx.Row) (core.Memory, error) {
	var (
		m                          core.Memory
		typ                        string
		strategy                   []byte
		ttl                        *int64
		tier, embedder, projection *string
		createdAt, updatedAt       time.Time
	)
	err := row.Scan(&m.Tenant, &m.ID, &typ, &strategy, &m.Description, &m.ReadOnly,
		&ttl, &tier, &embedder, &projection, &m.Corpus, &m.Flavor, &m.Version, &createdAt, &updatedAt)
	if err != nil {
		return core.Memory{}, err
	}
	if err := json.Unmarshal(strategy, &m.Strategy); err != nil {
		return core.Memory{}, fmt.Errorf("decode stored strategy of memory %q: %w", m.ID, err)
	}
	m.Type = core.MemoryType(typ)
	m.TTLMs = deref(ttl)
	m.Tier = deref(tier)
	m.Embedder = deref(embedder)
	m.Projection = deref(projection)
	m.CreatedAt = createdAt.UTC()
	m.UpdatedAt = updatedAt.UTC()
	return m, nil
}

// nullString maps "" (unset) to NULL.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nullInt64 maps 0 (unset) to NULL.
func nullInt64(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
