package pg

// MaxLiveTurn exposes the turn-derivation query to the external tests, which EXPLAIN it.
var MaxLiveTurn = maxLiveTurn

// PredictionStats reports how many turn writes committed on a predicted turn and how many
// predictions were stale (and redone the long way).
func PredictionStats(s *Store) (hits, stale int64) { return s.turns.hits.Load(), s.turns.stale.Load() }

// GroupCommits reports how many transactions wrote two or more queued turn writes.
func GroupCommits(s *Store) int64 { return s.turns.groups.Load() }
