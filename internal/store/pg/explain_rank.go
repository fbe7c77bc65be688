package pg

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
)

// Diagnostics of RankEntries for operators and benchmarks: what Postgres does with the very
// statement and settings the store uses, and the index search alone at another ef_search.

// ExplainRank runs EXPLAIN (ANALYZE, BUFFERS, SETTINGS) on the ranking statement RankEntries runs for q,
// under the settings it runs it with (a vector ranking of a corpus at an indexed dimension: the
// HNSW search; a lexical or hybrid ranking of a conversation: the exact read whose rows the
// store scores in Go; any other: the exact scan), and returns the plan's lines. It executes the
// query. A corpus's lexical candidates: ExplainLexicalCandidates in the tests.
//
// The statement is prepared and explained through EXECUTE, as the store's connections run it:
// under force_generic_plan the plan shown is the generic one, made without the parameters'
// values, which is the plan a pooled connection keeps (an EXPLAIN of the statement with bound
// parameters would show a custom plan instead, which the store never runs).
//
// On a distributed database the settings are the SET LOCALs Citus sends on to the worker, and
// the plan is the coordinator's (a Citus Adaptive scan of one task) with the worker's plan of
// the shard under it, as the worker ran it with those settings.
func (s *Store) ExplainRank(ctx context.Context, q recall.RankQuery) ([]string, error) {
	kinds := kindNames(q.Kinds)
	dims := len(q.Vector)
	var plan []string
	err := pgx.BeginFunc(ctx, s.pool, func(t pgx.Tx) error {
		sql := exactRankSQL(dims)
		settingsSQL, setArgs, citus := genericPlanSQL, []any(nil), exactSettingsCitus
		lexical := false
		switch {
		case recall.UsesLexical(q.Ranking):
			sql, lexical = exactLexicalSQL(dims, q.Ranking == core.RankHybrid), true
		case searchesIndex(q):
			ef := AnnEfSearch(q.Limit)
			settingsSQL, setArgs, citus = annSettingsSQL, []any{strconv.Itoa(ef), scanOnce}, annSettingsCitus(ef, scanOnce)
			sql = annRankSQL(dims)
		}
		if !s.distributed {
			citus = nil
			if _, err := t.Exec(ctx, settingsSQL, setArgs...); err != nil {
				return err
			}
		}
		for _, st := range citus {
			if _, err := t.Exec(ctx, st.setLocal()); err != nil {
				return err
			}
		}
		if _, err := t.Exec(ctx, "PREPARE footprint_explain_rank AS "+sql); err != nil {
			return err
		}
		defer func() { _, _ = t.Exec(context.WithoutCancel(ctx), "DEALLOCATE footprint_explain_rank") }()
		// EXECUTE's arguments cannot be bound parameters (EXPLAIN is a utility statement): they are
		// written as literals, each escaped. The lexical read takes no limit.
		kindList := make([]string, len(kinds))
		for i, k := range kinds {
			kindList[i] = literal(k)
		}
		args := []string{literal(q.Tenant), literal(q.Namespace), literal(q.MemoryID), "ARRAY[" + strings.Join(kindList, ", ") + "]::text[]",
			literal(q.Now.UTC().Format(time.RFC3339Nano)) + "::timestamptz", literal(pgvector.NewVector(q.Vector).String()) + "::vector", literal(q.Model)}
		if !lexical {
			args = append(args, strconv.Itoa(q.Limit))
		}
		rows, err := t.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, SETTINGS) EXECUTE footprint_explain_rank("+strings.Join(args, ", ")+")")
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

// literal is s as an SQL string literal (standard_conforming_strings, Postgres' default since 9.1).
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// GenericPlanSettings is the statement that precedes a per-conversation ranking in its pipelined
// batch: the planner settings its generic plan is made under (genericPlanSQL).
const GenericPlanSettings = genericPlanSQL

// RankStatement is the per-conversation ranking statement RankEntries runs for q (the exact
// vector ranking, or the read whose rows a lexical or hybrid ranking scores in Go) and its
// arguments, for benchmarks that time the statement alone under other planner settings.
func RankStatement(q recall.RankQuery) (sql string, args []any) {
	kinds, vec := kindNames(q.Kinds), pgvector.NewVector(q.Vector)
	if recall.UsesLexical(q.Ranking) {
		return exactLexicalSQL(len(q.Vector), q.Ranking == core.RankHybrid), []any{q.Tenant, q.Namespace, q.MemoryID, kinds, q.Now, vec, q.Model}
	}
	return exactRank(q, kinds, vec)
}
