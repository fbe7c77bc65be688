package memory

import (
	"context"
	"time"

	"github.com/footprint/footprint/internal/core"
)

var _ core.Sweeper = (*Store)(nil)

// Sweep drops expired entries and finished, expired idempotency claims.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now = normalise(now)
	var n int64
	s.es.mu.Lock()
	for _, byID := range s.es.entries {
		for k, e := range byID {
			if !live(e, now) {
				delete(byID, k)
				n++
			}
		}
	}
	s.es.mu.Unlock()
	s.es.keysMu.Lock()
	for k, c := range s.es.keys {
		if !c.expires.After(now) && isClosed(c.done) {
			delete(s.es.keys, k)
			n++
		}
	}
	s.es.keysMu.Unlock()
	runs, err := s.sweepRuns(ctx, now)
	return n + runs, err
}
