package pg

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
)

// MaxLiveTurn exposes the turn-derivation query to the external tests, which EXPLAIN it.
var MaxLiveTurn = maxLiveTurn

// PredictionStats reports how many turn writes committed on a predicted turn and how many
// predictions were stale (and redone the long way).
func PredictionStats(s *Store) (hits, stale int64) { return s.turns.hits.Load(), s.turns.stale.Load() }

// GroupCommits reports how many transactions wrote two or more queued turn writes.
func GroupCommits(s *Store) int64 { return s.turns.groups.Load() }

// Pool is the store's connection pool, for tests that look at its sessions.
func Pool(s *Store) *pgxpool.Pool { return s.pool }

// SaveReceiptSQL is the receipt's INSERT, for the test that checks its commit setting.
const SaveReceiptSQL = saveReceiptSQL

// ExactCorpusDocs sets how many chunks a corpus may hold and still be ranked lexically by an
// exact scan (0: every corpus goes through the GIN index), for the tests of that path.
func ExactCorpusDocs(n int) Option { return func(o *options) { o.exactCorpusDocs = n } }

// ExplainLexicalCandidates runs EXPLAIN (ANALYZE) on the corpus's lexical candidate statement
// for terms (every one generating), with the statistics given, and returns the plan's lines.
func (s *Store) ExplainLexicalCandidates(ctx context.Context, q recall.RankQuery, st core.TermStats) ([]string, error) {
	sc := core.NewLexicalScorer(q.Terms, st)
	args := append([]any{q.Tenant, q.Namespace, q.MemoryID, kindNames(q.Kinds), q.Now, pgvector.NewVector(q.Vector), q.Model,
		q.Limit, q.Terms, maxLexicalCandidates}, lexicalArgs(q.Terms, sc)...)
	rows, err := s.pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+lexicalCandidatesSQL(len(q.Vector), q.Ranking == core.RankHybrid), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
