package pg

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/footprint/footprint/internal/core/recall"
)

// Diagnostics of RankEntries for operators and benchmarks: what Postgres does with the very
// statement and settings the store uses, and the index search alone at another ef_search.

// ExplainRank runs EXPLAIN (ANALYZE, BUFFERS, SETTINGS) on the ranking statement RankEntries runs for q,
// under the settings it runs it with (a corpus at an indexed dimension: the HNSW search; any
// other: the exact scan), and returns the plan's lines. It executes the query.
func (s *Store) ExplainRank(ctx context.Context, q recall.RankQuery) ([]string, error) {
	kinds := kindNames(q.Kinds)
	dims := len(q.Vector)
	var plan []string
	err := pgx.BeginFunc(ctx, s.pool, func(t pgx.Tx) error {
		sql := exactRankSQL(dims)
		settings := genericPlanSQL
		if searchesIndex(q) {
			settings = ""
			if _, err := t.Exec(ctx, annSettingsSQL, strconv.Itoa(AnnEfSearch(q.Limit)), scanOnce); err != nil {
				return err
			}
			sql = annRankSQL(dims)
		}
		if settings != "" {
			if _, err := t.Exec(ctx, settings); err != nil {
				return err
			}
		}
		rows, err := t.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, SETTINGS) "+sql,
			q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, pgvector.NewVector(q.Vector), q.Model, q.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			plan = append(plan, line)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("explain rank: %w", err)
	}
	return plan, nil
}

// SearchCorpus is the corpus HNSW search alone (searchCorpus), at the given hnsw.ef_search,
// with no exact fallback: its result may be short. For tuning ef_search against exact answers.
func (s *Store) SearchCorpus(ctx context.Context, q recall.RankQuery, efSearch int) (recall.RankResult, error) {
	kinds := kindNames(q.Kinds)
	if !searchesIndex(q) {
		return recall.RankResult{}, fmt.Errorf("search corpus: no HNSW index for namespace %q at %d dimensions", q.Namespace, len(q.Vector))
	}
	res, _, err := s.searchCorpus(ctx, q, kinds, pgvector.NewVector(q.Vector), efSearch)
	return res, err
}
