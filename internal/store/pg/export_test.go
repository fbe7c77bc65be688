package pg

import "github.com/jackc/pgx/v5/pgxpool"

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
