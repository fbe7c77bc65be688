package memory

import (
	"context"
	"encoding/json"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// Sweep drops expired entries, finished and expired idempotency claims and, as p says, audit
// records (finished recordings, recall receipts, ablations).
func (s *Store) Sweep(ctx context.Context, p core.SweepPolicy) (int64, error) {
	now := p.Now
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
	if p.AuditBefore.IsZero() {
		return n, nil
	}
	runs, err := s.DeleteFinishedRuns(ctx, p.AuditBefore)
	n += runs
	if err != nil {
		return n, err
	}
	cutoff := p.AuditBefore
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
