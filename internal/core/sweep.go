package core

import (
	"context"
	"time"
)

// DefaultAuditRetention is how long audit records — finished run recordings,
// recall receipts and ablations — are kept unless the deployment says
// otherwise. Forgetting a conversation leaves them (an explanation can then
// say that an origin was forgotten); the retention removes them.
const DefaultAuditRetention = 30 * 24 * time.Hour

// SweepPolicy says what a store's sweep may reclaim. Expired entries and
// expired idempotency keys at Now always go; audit records created (for
// recordings: finished) before AuditBefore go too, unless AuditBefore is
// zero (keep them forever).
type SweepPolicy struct {
	Now         time.Time
	AuditBefore time.Time
}

// NewSweepPolicy is the policy at now for an audit retention: 0 means
// DefaultAuditRetention, a negative retention keeps audit records forever.
func NewSweepPolicy(now time.Time, retention time.Duration) SweepPolicy {
	p := SweepPolicy{Now: now.UTC()}
	switch {
	case retention == 0:
		p.AuditBefore = p.Now.Add(-DefaultAuditRetention)
	case retention > 0:
		p.AuditBefore = p.Now.Add(-retention)
	}
	return p
}

// Sweeper is implemented by stores that can reclaim the space of rows a
// SweepPolicy lets go. Correctness never depends on it: every read already
// ignores expired rows.
type Sweeper interface {
	// Sweep deletes what p lets go, in short batches, and returns how many
	// rows went.
	Sweep(ctx context.Context, p SweepPolicy) (int64, error)
}
