package pg

import (
	"context"

	"github.com/footprint/footprint/internal/core"
)

// sweepBatch bounds one sweep statement, so a large backlog is reclaimed in
// short transactions that never hold many row locks at once.
const sweepBatch = 5000

// sweepEntriesSQL deletes a batch of expired entries and takes the corpus chunks among them
// out of their corpus's lexical statistics (PutDocuments keeps them), in the same statement,
// the rows it updates in key order (the order PutDocuments locks them in), and counts them.
const sweepEntriesSQL = `WITH gone AS (
		DELETE FROM entries WHERE (tenant, memory_id, namespace, id) IN (
			SELECT tenant, memory_id, namespace, id FROM entries WHERE expires_at <= $1 LIMIT $2)
		RETURNING tenant, memory_id, namespace, kind, lex_terms, lex_length),
	terms AS (
		INSERT INTO lexical_terms (tenant, memory_id, namespace, term, df)
		SELECT tenant, memory_id, namespace, term, -count(*)::int
		FROM gone, unnest(gone.lex_terms) AS term WHERE kind = 'doc'
		GROUP BY tenant, memory_id, namespace, term ORDER BY tenant, memory_id, namespace, term
		ON CONFLICT (tenant, memory_id, namespace, term) DO UPDATE SET df = lexical_terms.df + EXCLUDED.df),
	totals AS (
		INSERT INTO lexical_totals (tenant, memory_id, namespace, docs, length)
		SELECT tenant, memory_id, namespace, -count(*), -sum(lex_length)
		FROM gone WHERE kind = 'doc' AND lex_length IS NOT NULL
		GROUP BY tenant, memory_id, namespace ORDER BY tenant, memory_id, namespace
		ON CONFLICT (tenant, memory_id, namespace) DO UPDATE
		SET docs = lexical_totals.docs + EXCLUDED.docs, length = lexical_totals.length + EXCLUDED.length)
	SELECT count(*) FROM gone`

// Sweep deletes expired idempotency keys and expired entries and, as p says, audit records
// (finished recordings, recall receipts, ablations), in batches, and returns how many rows went.
// Reads never depend on it.
//
// A batch is chosen by primary key, (key) IN (SELECT key ... LIMIT n), which both Postgres and
// Citus plan: on Citus the subquery runs first over every shard, then each shard deletes the
// rows of the batch it holds (by ctid, the form before, Citus refuses to plan a multi-shard
// DELETE: "Recursively planned distributed modifications with ctid on where clause are not
// supported").
func (s *Store) Sweep(ctx context.Context, p core.SweepPolicy) (int64, error) {
	now := p.Now
	var total int64
	for _, q := range []string{
		`WITH gone AS (DELETE FROM idempotency_keys WHERE (tenant, key) IN (
			SELECT tenant, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2) RETURNING 1)
		SELECT count(*) FROM gone`,
		sweepEntriesSQL,
	} {
		for {
			var n int64
			if err := s.pool.QueryRow(ctx, q, now, sweepBatch).Scan(&n); err != nil {
				return total, translate(err, "sweep", "", "")
			}
			total += n
			if n < sweepBatch {
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
		`DELETE FROM recalls WHERE (tenant, id) IN (SELECT tenant, id FROM recalls WHERE created_at < $1 LIMIT $2)`,
		`DELETE FROM ablations WHERE (tenant, id) IN (SELECT tenant, id FROM ablations WHERE created_at < $1 LIMIT $2)`,
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
