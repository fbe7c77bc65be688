package pg

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/memories"
)

// CreateMemory stores m. It returns memories.ErrMemoryExists if the
// tenant already has a memory with m.ID: a plain INSERT, so of any number of concurrent
// creates of one id exactly one wins and the primary key refuses the rest.
func (s *Store) CreateMemory(ctx context.Context, m core.Memory, once *core.Once) error {
	args, err := memoryArgs(m)
	if err != nil {
		return err
	}
	const insert = `INSERT INTO memories (` + memoryColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`
	if once == nil {
		_, err = s.pool.Exec(ctx, insert, args...)
	} else {
		err = s.inOnce(ctx, m.Tenant, once, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, insert, args...)
			return err
		})
	}
	if errors.Is(err, core.ErrKeyReused) {
		return err
	}
	// The one unique key of memories is (tenant, id): a unique violation, whatever the
	// constraint is called (Citus suffixes it per shard), is the id taken.
	if isUniqueViolation(err) {
		return memories.ErrMemoryExists
	}
	return translate(err, "create memory", "memory", m.ID)
}

// GetMemory returns the tenant's memory, or a *core.NotFoundError.
func (s *Store) GetMemory(ctx context.Context, tenant, id string) (core.Memory, error) {
	m, err := scanMemory(s.pool.QueryRow(ctx,
		`SELECT `+memoryColumns+` FROM memories WHERE tenant = $1 AND id = $2`, tenant, id))
	if err != nil {
		return core.Memory{}, translate(err, "get memory", "memory", id)
	}
	return m, nil
}

// ListMemories returns up to limit of the tenant's memories with id > after, in byte order of
// id (the column is COLLATE "C"), so paging with the last id seen as after visits every
// memory once. limit <= 0 returns none. The result is never nil.
func (s *Store) ListMemories(ctx context.Context, tenant, after string, limit int) ([]core.Memory, error) {
	out := []core.Memory{}
	if limit <= 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+memoryColumns+` FROM memories
		WHERE tenant = $1 AND id > $2 ORDER BY id LIMIT $3`, tenant, after, limit)
	if err != nil {
		return nil, translate(err, "list memories", "", "")
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, translate(err, "list memories", "", "")
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(err, "list memories", "", "")
	}
	return out, nil
}

// UpdateMemory locks the tenant's memory (SELECT ... FOR UPDATE), applies fn to it and writes
// the result, in one transaction: concurrent updates of one memory queue on the row lock, so
// none is lost. It returns a *core.NotFoundError if there is no such memory, and fn's error
// unchanged if fn fails (then nothing is written).
//
// fn may change every field except Tenant, ID and CreatedAt, which identify the row and are
// restored after fn returns. The store writes what fn leaves (it does not bump Version or set
// UpdatedAt itself). fn may run more than once if the transaction is retried after a
// deadlock, so it must only compute on *Memory. It runs while the row lock is held: it must
// be quick and must not call the store.
func (s *Store) UpdateMemory(ctx context.Context, tenant, id string, fn func(*core.Memory) error) (core.Memory, error) {
	var (
		out   core.Memory
		fnErr error
	)
	err := s.tx(ctx, func(t pgx.Tx) error {
		m, err := scanMemory(t.QueryRow(ctx,
			`SELECT `+memoryColumns+` FROM memories WHERE tenant = $1 AND id = $2 FOR UPDATE`, tenant, id))
		if err != nil {
			return err
		}
		createdAt := m.CreatedAt
		if err := fn(&m); err != nil {
			fnErr = err
			return err
		}
		m.Tenant, m.ID, m.CreatedAt = tenant, id, createdAt
		args, err := memoryArgs(m)
		if err != nil {
			return err
		}
		// Every column from the same list as INSERT but the tenant, so the two cannot drift
		// apart; the id and created_at are rewritten with their own values. The tenant is
		// never assigned: on Citus it is the distribution column, which an UPDATE may not set
		// ("modifying the partition value of rows is not allowed"), even to itself. RETURNING
		// gives back exactly what was stored (timestamps at Postgres's precision).
		out, err = scanMemory(t.QueryRow(ctx, `UPDATE memories SET (`+memoryColumnsButTenant+`)
			= ($2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
			WHERE tenant = $1 AND id = $2
			RETURNING `+memoryColumns, args...))
		return err
	})
	if fnErr != nil && errors.Is(err, fnErr) {
		return core.Memory{}, fnErr
	}
	if err != nil {
		return core.Memory{}, translate(err, "update memory", "memory", id)
	}
	return out, nil
}

// DeleteMemory removes the tenant's memory, or returns a *core.NotFoundError. With purge it
// also erases, in the same transaction, every entry stored under the memory in every
// namespace, and the memory's embedding fingerprints (so a memory re-created with the same id
// may use another embedder). Without purge the entries stay: a memory re-created with the
// same id sees them again.
func (s *Store) DeleteMemory(ctx context.Context, tenant, id string, purge bool) error {
	const deleteMemory = `DELETE FROM memories WHERE tenant = $1 AND id = $2`
	if !purge {
		tag, err := s.pool.Exec(ctx, deleteMemory, tenant, id)
		if err == nil && tag.RowsAffected() == 0 {
			err = pgx.ErrNoRows
		}
		return translate(err, "delete memory", "memory", id)
	}
	err := s.tx(ctx, func(t pgx.Tx) error {
		tag, err := t.Exec(ctx, deleteMemory, tenant, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return pgx.ErrNoRows
		}
		// Both by the (tenant, memory_id) prefix of their primary keys.
		if _, err := t.Exec(ctx, `DELETE FROM entries WHERE tenant = $1 AND memory_id = $2`, tenant, id); err != nil {
			return err
		}
		for _, table := range []string{"lexical_terms", "lexical_totals"} {
			if _, err := t.Exec(ctx, `DELETE FROM `+table+` WHERE tenant = $1 AND memory_id = $2`, tenant, id); err != nil {
				return err
			}
		}
		_, err = t.Exec(ctx, `DELETE FROM embedding_fingerprints WHERE tenant = $1 AND memory_id = $2`, tenant, id)
		return err
	})
	return translate(err, "delete memory", "memory", id)
}
