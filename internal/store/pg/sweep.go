package pg

import (
	"context"
	"time"

	"github.com/footprint/footprint/internal/core"
)

var _ core.Sweeper = (*Store)(nil)

// sweepBatch bounds one sweep statement, so a large backlog is reclaimed in
// short transactions that never hold many row locks at once.
const sweepBatch = 5000

// Sweep deletes expired idempotency keys and expired entries, in batches,
// and returns how many rows went. Reads never depend on it.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int64, error) {
	var total int64
	for _, q := range []string{
		`DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2))`,
		`DELETE FROM entries WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM entries WHERE expires_at <= $1 LIMIT $2))`,
	} {
		for {
			tag, err := s.pool.Exec(ctx, q, now, sweepBatch)
			if err != nil {
				return total, translate(err, "sweep", "", "")
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < sweepBatch {
				break
			}
		}
	}
	runs, err := s.sweepRuns(ctx, now)
	total += runs
	if err != nil {
		return total, err
	}
	// Recall receipts and ablations are audit records with the recordings' retention.
	s.runs.mu.Lock()
	d := s.runs.retention
	s.runs.mu.Unlock()
	if d < 0 {
		return total, nil
	}
	if d == 0 {
		d = DefaultRunRetention
	}
	for _, q := range []string{
		`DELETE FROM recalls WHERE ctid = ANY (ARRAY(SELECT ctid FROM recalls WHERE created_at < $1 LIMIT $2))`,
		`DELETE FROM ablations WHERE ctid = ANY (ARRAY(SELECT ctid FROM ablations WHERE created_at < $1 LIMIT $2))`,
	} {
		for {
			tag, err := s.pool.Exec(ctx, q, now.Add(-d), sweepBatch)
			if err != nil {
				return total, translate(err, "sweep", "", "")
			}
			total += tag.RowsAffected()
			if tag.RowsAffected() < sweepBatch {
				break
			}
		}
	}
	return total, nil
}
