package pg

import (
	"context"

	"github.com/footprint/footprint/internal/core"
)

// sweepBatch bounds one sweep statement, so a large backlog is reclaimed in
// short transactions that never hold many row locks at once.
const sweepBatch = 5000

// Sweep deletes expired idempotency keys and expired entries and, as p says, audit records
// (finished recordings, recall receipts, ablations), in batches, and returns how many rows went.
// Reads never depend on it.
func (s *Store) Sweep(ctx context.Context, p core.SweepPolicy) (int64, error) {
	now := p.Now
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
	if p.AuditBefore.IsZero() {
		return total, nil
	}
	runs, err := s.DeleteFinishedRuns(ctx, p.AuditBefore)
	total += runs
	if err != nil {
		return total, err
	}
	for _, q := range []string{
		`DELETE FROM recalls WHERE ctid = ANY (ARRAY(SELECT ctid FROM recalls WHERE created_at < $1 LIMIT $2))`,
		`DELETE FROM ablations WHERE ctid = ANY (ARRAY(SELECT ctid FROM ablations WHERE created_at < $1 LIMIT $2))`,
	} {
		for {
			tag, err := s.pool.Exec(ctx, q, p.AuditBefore, sweepBatch)
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
