package pg

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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

// Distributed reports whether Open found the tenant tables distributed (Citus).
func Distributed(s *Store) bool { return s.distributed }

// WorkerSettings opens a transaction exactly as the store does for what (an "exact" ranking, an
// "ann" corpus search, a "hybrid" corpus search, a "receipt", or a "write" transaction), then reads the current values of
// names with a statement on tenant's shard of memories, which Citus runs on the worker that
// holds it: what the worker's session really runs with, not what was asked on the coordinator.
func WorkerSettings(ctx context.Context, s *Store, what, tenant string, names []string) ([]string, error) {
	b := &pgx.Batch{}
	var head int
	switch what {
	case "exact":
		head = s.queueSettings(b, genericPlanSQL, nil, exactSettingsCitus)
	case "ann":
		head = s.queueSettings(b, annSettingsSQL, []any{strconv.Itoa(AnnEfSearch(10)), scanIterative}, annSettingsCitus(AnnEfSearch(10), scanIterative))
	case "hybrid":
		if !s.distributed {
			return nil, fmt.Errorf("a hybrid corpus search sets annSettingsSQL after its candidates on one node")
		}
		head = s.queueSettings(b, "", nil, annLexicalSettingsCitus(AnnEfSearch(10)))
	case "receipt":
		if !s.distributed {
			return nil, fmt.Errorf("receipts set synchronous_commit inside their INSERT on one node")
		}
		head = s.queueSettings(b, "", nil, receiptSettingsCitus)
	case "write":
		head = s.queueBegin(b)
	default:
		return nil, fmt.Errorf("unknown %q", what)
	}
	cols := make([]string, len(names))
	for i, n := range names {
		cols[i] = "current_setting(" + literal(n) + ")"
	}
	b.Queue(`SELECT `+strings.Join(cols, ", ")+`, count(*) FROM memories WHERE tenant = $1`, tenant)
	if what == "write" {
		b.Queue("COMMIT")
	} else {
		s.queueSettingsEnd(b)
	}
	var values []string
	err := s.pipelinedTx(ctx, func(c *pgx.Conn) error {
		br := c.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		if err := readN(br, head); err != nil {
			return err
		}
		values = make([]string, len(names))
		dest := make([]any, len(names)+1)
		for i := range values {
			dest[i] = &values[i]
		}
		var n int64
		dest[len(names)] = &n
		if err := br.QueryRow().Scan(dest...); err != nil {
			return err
		}
		return br.Close()
	})
	return values, err
}
