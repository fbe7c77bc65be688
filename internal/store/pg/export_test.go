package pg

// MaxLiveTurnSQL exposes the turn-derivation query to the external tests, which EXPLAIN it.
const MaxLiveTurnSQL = maxLiveTurnSQL
