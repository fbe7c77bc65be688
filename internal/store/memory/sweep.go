package memory

import (
	"context"
	"encoding/json"
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
	n += runs
	if err != nil {
		return n, err
	}
	// Recall receipts and ablations are audit records with the recordings' retention.
	s.rs.mu.Lock()
	d := s.rs.retention
	s.rs.mu.Unlock()
	if d < 0 {
		return n, nil
	}
	if d == 0 {
		d = DefaultRunRetention
	}
	cutoff := now.Add(-d)
	s.es.mu.Lock()
	defer s.es.mu.Unlock()
	for k, b := range s.es.recalls {
		var r struct {
			CreatedAt time.Time `json:"createdAt"`
		}
		if json.Unmarshal(b, &r) == nil && r.CreatedAt.Before(cutoff) {
			delete(s.es.recalls, k)
			n++
		}
	}
	for k, as := range s.ex.ablations {
		kept := as[:0]
		for _, a := range as {
			if a.CreatedAt.Before(cutoff) {
				n++
				continue
			}
			kept = append(kept, a)
		}
		s.ex.ablations[k] = kept
	}
	return n, nil
}
